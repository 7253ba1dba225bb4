#!/bin/bash
# In two guests with two NICs each (buildlib/testbed/run.sh --two --nics 2):
# UD peers in other processes follow a switch. migr-traffic on A and on B
# exchange numbered datagrams (and RC traffic) over migr_rxe0; A is moved
# to rxe1 and back, then B, each time with the other side told through
# the two migrd. Then B's migrd stops: A's switch must be refused before
# anything is touched (B could not be told), and A stays where it is. Both
# traffic checkers must pass at the end: every datagram from the peer's UD
# QP (its number as the application knows it), intact, in order, at most
# 1% lost (a few may be in flight while a QP is released). A's process
# runs as nobody, so its moves pass migrd's owner checks.
# usage: ud-peers.sh a|b    (a: 10.9.0.1/.11, b: 10.9.0.2/.12)
. "$(dirname "$0")/lib.sh"
role=${1:?a or b}
A_IP=10.9.0.1
two_host_env ud-peers
MLOG=$LOGDIR/ud-peers-migrd-$role.log
TRAFFIC="-d migr_rxe0 --qps 1 --ud --ud-max-loss 1 --rate 200 -D 900 --port 18604 -r 1"

lower_of() {
	migrctl status --pid "$1" | awk '$1 == "'"$1"'" { print $5; exit }'
}

start_test_migrd ud-peers "$MLOG"
ensure_rxe1 && pass "rxe1_active_$role" || fail "rxe1_active_$role"
if [ "$role" = a ]; then
	rm -rf "${SYNC%/*}" && mkdir -p "$SYNC" && say a.ready
	# not root: migrd relays its UD moves only for QPs the kernel said
	# were its when it probed (the verbs log is shared with root's here)
	install -m 0666 /dev/null "$VERBS_LOG_FILE"
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		migr-traffic $TRAFFIC --server >"$LOGDIR/ud-peers-a.log" 2>&1 &
	P=$!
	say a.up
	await b.up || fail b_up
	sleep 5
	switch_later a_moves "$P" rxe1 1
	sleep 3
	switch_later a_moves_back "$P" rxe0 1
	say a.moved
	await b.moved || fail b_moved
	await b.migrd_stopped || fail b_migrd_stopped
	migrctl switch --pid "$P" --device rxe1 >"$LOGDIR/ud-peers-refused.out" 2>&1
	rc=$?
	check refused_without_peer_migrd sh -c "[ $rc -ne 0 ] && grep -Eq \
		'migrd on 10\.9\.0\.2 is unreachable' $LOGDIR/ud-peers-refused.out"
	sed -n '1p' "$LOGDIR/ud-peers-refused.out" | cut -c1-300 | sed 's/^/    /'
	[ "$(lower_of "$P")" = rxe0 ] && pass stays_on_rxe0 || fail stays_on_rxe0
	sleep 3
	say a.done
	kill -TERM "$P"
	traffic_verdict traffic_a "$P" "$LOGDIR/ud-peers-a.log"
else
	await a.ready || fail a_ready
	await a.up || fail a_up
	migr-traffic $TRAFFIC --client $A_IP --connect-timeout 60 >"$LOGDIR/ud-peers-b.log" 2>&1 &
	P=$!
	started "$P" || fail b_started
	say b.up
	await a.moved || fail a_moved
	check b_told grep -q "UD peer at .* moved to" "$VERBS_LOG_FILE"
	sleep 3
	switch_later b_moves "$P" rxe1 1
	sleep 3
	switch_later b_moves_back "$P" rxe0 1
	sleep 3
	kill -TERM "$MIGRD"
	wait "$MIGRD"
	say b.moved
	say b.migrd_stopped
	await a.done || fail a_done
	kill -TERM "$P"
	traffic_verdict traffic_b "$P" "$LOGDIR/ud-peers-b.log"
fi
checked_switches
# this side's migrd gone (B's stopped already): tests/run.sh runs the next
# script in this guest, whose migrd listens on the same port
kill -TERM "$MIGRD" 2>/dev/null
wait "$MIGRD" 2>/dev/null
summary "ud-peers $role"
