#!/bin/bash
# In two guests with two NICs each (buildlib/testbed/run.sh --two --nics 2):
# a migr-traffic server on A moves from rxe0 to rxe1 before its client has
# connected. Its QPs and MRs were made at start, so on rxe1 they have other
# numbers and keys than the ones it announces. Then a client on B connects
# to it: at connect, each side's migr library asks the other's, through
# the two migrd, which lower QP to connect to and, once, what its rkeys
# are now ("fetch"). Every WR of both is checked: READs, WRITEs and
# atomics on the moved MRs included. Then the server moves back under
# traffic, its client following. The server runs as nobody.
# usage: late-client.sh a|b    (a: 10.9.0.1/.11, b: 10.9.0.2/.12)
. "$(dirname "$0")/lib.sh"
role=${1:?a or b}
A_IP=10.9.0.1
RUN=/run/migr-late-client
SYNC=$LOGDIR/late-client-sync/${MIGR_RUN:-0}
export MIGRD_SOCKET=$RUN/migrd.sock VERBS_LOG_LEVEL=3
export VERBS_LOG_FILE=$LOGDIR/late-client-$role.verbs.log
TRAFFIC="--qps 2 --depth 8 --size 512 --api mixed -D 900 --stall-timeout 60 --port 18641"
mkdir -p "$RUN"
rm -f "$VERBS_LOG_FILE"

# move NAME PID DEV PARTNERS: one switch, checked (moved, nothing lost,
# PARTNERS partner QPs followed)
move() {
	migrctl switch --pid "$2" --device "$3" --json >"$LOGDIR/$1.json" 2>"$LOGDIR/$1.err"
	check "$1" python3 - "$LOGDIR/$1.json" "$4" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for c in r["reply"]["switch"]:
    assert c["ok"] and c["lost"] == 0 and c["partners"] == int(sys.argv[2]), c
    print("    %s -> %s: %.1f ms, %d partner QPs" % (c["from"], c["to"], c["total_ms"], c["partners"]))
PY
	grep -h " ms, " "$LOGDIR/$1.log"
}

# verdict NAME PID LOG: the traffic checker's, once it was sent SIGTERM
verdict() {
	local rc
	wait "$2"; rc=$?
	check "$1" sh -c "[ $rc -eq 0 ] && grep -q 'migr-traffic: PASS' $3"
	tail -n 1 "$3" | sed 's/^/    /'
}

install -m 0600 /dev/null "$RUN/key"
echo "migr late-client test key" >"$RUN/key"
migrd -f --debug --config /dev/null --socket "$MIGRD_SOCKET" --key "$RUN/key" \
	>"$LOGDIR/late-client-migrd-$role.log" 2>&1 &
MIGRD=$!
for _ in $(seq 50); do [ -S "$MIGRD_SOCKET" ] && break; sleep 0.1; done
ensure_rxe1 && pass "rxe1_active_$role" || fail "rxe1_active_$role"

if [ "$role" = a ]; then
	rm -rf "${SYNC%/*}" && mkdir -p "$SYNC"
	install -m 0666 /dev/null "$VERBS_LOG_FILE"
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		migr-traffic -d migr_rxe0 --server $TRAFFIC >"$LOGDIR/late-client-server.log" 2>&1 &
	S=$!
	started "$S" || fail server_started
	# A QP held on rxe1 by another program: the server's QPs get other
	# numbers there than on rxe0, not the same ones by chance
	ibv_rc_pingpong -d rxe1 -g 1 -p 18642 >/dev/null 2>&1 &
	HOLDER=$!
	sleep 1
	# Nobody connected yet: no partner follows, the numbers change
	move server_moves_before_its_client "$S" rxe1 0
	say a.moved
	await b.running || fail b_running
	move server_moves_back_with_its_client "$S" rxe0 2
	say a.back
	await b.stopping || fail b_stopping
	kill -TERM "$S"
	kill "$HOLDER" 2>/dev/null
	verdict server_traffic_verified "$S" "$LOGDIR/late-client-server.log"
	say a.done
else
	await a.moved || fail a_moved
	migr-traffic -d migr_rxe0 --client $A_IP --connect-timeout 60 $TRAFFIC \
		>"$LOGDIR/late-client-client.log" 2>&1 &
	C=$!
	started "$C" || fail client_started
	sleep 4
	# What the client's library learned at connect, and that it was needed
	check client_fetched_moved_keys grep -q "moved before, is QP 0x[0-9a-f]* there; [1-9][0-9]* of its keys fetched" "$VERBS_LOG_FILE"
	# ... once: its other QP of the same context only asks where it is
	check client_fetched_once sh -c "[ \$(grep -c 'moved before, is QP' $VERBS_LOG_FILE) = 2 ] &&
		[ \$(grep -c 'moved before, is QP 0x[0-9a-f]* there; [1-9]' $VERBS_LOG_FILE) = 1 ]"
	# the server's QPs are not on the numbers it announced
	check client_connected_elsewhere sh -c "grep 'moved before, is QP' $VERBS_LOG_FILE |
		sed -n 's/.*its peer \(0x[0-9a-f]*\) at .* is QP \(0x[0-9a-f]*\) there.*/\1 \2/p' | awk '\$1 != \$2' | grep -q ."
	say b.running
	await a.back || fail a_back
	sleep 2
	say b.stopping
	kill -TERM "$C"
	verdict client_traffic_verified "$C" "$LOGDIR/late-client-client.log"
	await a.done || fail a_done
fi
kill -TERM "$MIGRD" 2>/dev/null
summary "late-client $role"
