#!/bin/bash
# In two guests with two NICs each (buildlib/testbed/run.sh --two --nics 2):
# one migr-traffic server on A serves two client processes on B from one
# device context, the first client on B's rxe0, the second on B's rxe1.
# Both got their QP numbers from a fresh device, so the two clients' QPs
# carry the same numbers: what one announces when it moves must not bend
# the server's QPs facing the other. The first client moves, then the
# server (there and back), then the second client; every WR and byte of
# all three is checked. Each side reaches the other's regions through type
# 2 memory windows, bound through the QP that faces the other: a mover's
# are bound again through its rebuilt QPs, their new rkeys pushed to the
# partners with the MRs'; a partner's are bound again through the QP that
# replaces the one facing the mover, their new rkeys in its reconnect
# answer. The server runs as an ordinary user (nobody), so
# its migrd relays its partner requests only for the QPs that face its
# own, which it checks with the partners and the kernel.
# usage: partner-many.sh a|b    (a: 10.9.0.1/.11, b: 10.9.0.2/.12)
. "$(dirname "$0")/lib.sh"
role=${1:?a or b}
A_IP=10.9.0.1
two_host_env partner-many
TRAFFIC="--qps 2 --depth 8 --size 512 --api mixed --mode event --mw=2 --rate 200 -D 900 --stall-timeout 60 --port 18631"

start_test_migrd partner-many "$LOGDIR/partner-many-migrd-$role.log"
ensure_rxe1 && pass "rxe1_active_$role" || fail "rxe1_active_$role"

if [ "$role" = a ]; then
	rm -rf "${SYNC%/*}" && mkdir -p "$SYNC"
	# the verbs log is shared with root's processes here
	install -m 0666 /dev/null "$VERBS_LOG_FILE"
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		migr-traffic -d migr_rxe0 --server --clients 2 $TRAFFIC >"$LOGDIR/partner-many-server.log" 2>&1 &
	S=$!
	started "$S" || fail server_started
	say a.up
	await b.c1_moved || fail b_c1_moved
	switch_later server_moves_with_two_client_processes "$S" rxe1 4
	switch_later server_moves_back "$S" rxe0 4
	say a.moved
	await b.stopping || fail b_stopping
	kill -TERM "$S"
	traffic_verdict server_traffic_verified "$S" "$LOGDIR/partner-many-server.log"
	say a.done
else
	await a.up || fail a_up
	migr-traffic -d migr_rxe0 --client $A_IP --connect-timeout 60 $TRAFFIC \
		>"$LOGDIR/partner-many-c1.log" 2>&1 &
	C1=$!
	started "$C1" || fail c1_started
	sleep 2 # the server accepts its clients in order
	migr-traffic -d migr_rxe1 --client $A_IP --connect-timeout 60 $TRAFFIC \
		>"$LOGDIR/partner-many-c2.log" 2>&1 &
	C2=$!
	started "$C2" || fail c2_started
	sleep 3
	# The case this test is about: the two clients' QPs share numbers
	migrctl status --pid "$C1" >"$LOGDIR/partner-many-c1.status"
	migrctl status --pid "$C2" >"$LOGDIR/partner-many-c2.status"
	check clients_qp_numbers_collide sh -c "grep -o '^    qp [0-9]*' $LOGDIR/partner-many-c1.status | sort >$LOGDIR/pm1 &&
		grep -o '^    qp [0-9]*' $LOGDIR/partner-many-c2.status | sort >$LOGDIR/pm2 &&
		[ -n \"\$(comm -12 $LOGDIR/pm1 $LOGDIR/pm2)\" ]"
	switch_later first_client_moves "$C1" rxe1 2
	say b.c1_moved
	await a.moved || fail a_moved
	switch_later second_client_moves "$C2" rxe0 2
	sleep 2
	say b.stopping
	kill -TERM "$C1" "$C2"
	traffic_verdict first_client_traffic_verified "$C1" "$LOGDIR/partner-many-c1.log"
	traffic_verdict second_client_traffic_verified "$C2" "$LOGDIR/partner-many-c2.log"
	await a.done || fail a_done
fi
checked_switches
# gone before the next script in this guest starts its own (tests/run.sh)
kill -TERM "$MIGRD" 2>/dev/null
wait "$MIGRD" 2>/dev/null
summary "partner-many $role"
