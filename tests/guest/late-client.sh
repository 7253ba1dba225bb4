#!/bin/bash
# In two guests with two NICs each (buildlib/testbed/run.sh --two --nics 2):
# a migr-traffic server on A moves from rxe0 to rxe1 before its client has
# connected. Its QPs and MRs were made at start, so on rxe1 they have other
# numbers and keys than the ones it announces. Then a client on B connects
# to it: at connect, each side's migr library asks the other's, through
# the two migrd, which lower QP to connect to and, once, what its rkeys
# are now ("fetch"). The server connects its QPs 3 s after the client
# does: until then its library withholds its rkeys (anybody may ask a QP
# that is not connected yet), and gives them to the client's QPs once it
# has connected ("give"). Every WR of both is checked: READs, WRITEs and
# atomics on the moved MRs included. Then the server moves back under
# traffic, its client following. The server runs as nobody.
# usage: late-client.sh a|b    (a: 10.9.0.1/.11, b: 10.9.0.2/.12)
. "$(dirname "$0")/lib.sh"
role=${1:?a or b}
A_IP=10.9.0.1
two_host_env late-client
TRAFFIC="--qps 2 --depth 8 --size 512 --api mixed --rate 200 -D 900 --stall-timeout 60 --port 18641"

start_test_migrd late-client "$LOGDIR/late-client-migrd-$role.log"
ensure_rxe1 && pass "rxe1_active_$role" || fail "rxe1_active_$role"

if [ "$role" = a ]; then
	rm -rf "${SYNC%/*}" && mkdir -p "$SYNC"
	install -m 0666 /dev/null "$VERBS_LOG_FILE"
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		migr-traffic -d migr_rxe0 --server $TRAFFIC --connect-delay 3 >"$LOGDIR/late-client-server.log" 2>&1 &
	S=$!
	started "$S" || fail server_started
	# A QP held on rxe1 by another program: the server's QPs get other
	# numbers there than on rxe0, not the same ones by chance
	ibv_rc_pingpong -d rxe1 -g 1 -p 18642 >/dev/null 2>&1 &
	HOLDER=$!
	sleep 1
	# Nobody connected yet: no partner follows, the numbers change
	switch_to server_moves_before_its_client "$S" rxe1 0
	# Its QPs are not connected yet: a fetch that asks for its keys (here
	# root's, through migrd, as a process of another host's would come)
	# learns where the QP is, but no key
	check unconnected_qp_withholds_keys python3 - "$S" "$MIGRD_SOCKET" <<'PY'
import json, socket, subprocess, sys
pid, sock = sys.argv[1], sys.argv[2]
st = json.loads(subprocess.check_output(
    ["migrctl", "status", "--pid", pid, "--json"]))
qpn = st["processes"][0]["status"]["contexts"][0]["qps"][0]["qpn"]
# rxe1's RoCE v2 GID of 10.9.0.11
gid = next(open(f"/sys/class/infiniband/rxe1/ports/1/gids/{i}").read()
           .strip().replace(":", "") for i in range(8)
           if open(f"/sys/class/infiniband/rxe1/ports/1/gids/{i}").read()
           .strip().endswith("ffff:0a09:000b"))
s = socket.socket(socket.AF_UNIX)
s.connect(sock)
s.sendall(f"migrd/1 partner 10.9.0.11 0 {qpn} {gid} fetch {gid} {qpn} "
          f"1 1 0000000000000001 0 0\n".encode())
r = json.loads(s.makefile().readline())
print(r)
res = r["reply"]["results"][0]
assert res["ok"] and res["gen"] > 0, r
assert res["keys"] == "" and res.get("withheld") is True, r
PY
	say a.moved
	await b.running || fail b_running
	switch_to server_moves_back_with_its_client "$S" rxe0 2
	say a.back
	await b.stopping || fail b_stopping
	kill -TERM "$S"
	kill "$HOLDER" 2>/dev/null
	traffic_verdict server_traffic_verified "$S" "$LOGDIR/late-client-server.log"
	say a.done
else
	await a.moved || fail a_moved
	migr-traffic -d migr_rxe0 --client $A_IP --connect-timeout 60 $TRAFFIC \
		>"$LOGDIR/late-client-client.log" 2>&1 &
	C=$!
	started "$C" || fail client_started
	# What the client's library learned at connect: where the server's
	# QPs are, but not its keys, before they are connected; then the
	# server gives them
	check client_given_keys sh -c "for i in \$(seq 300); do
		grep -q 'connected now, gave its keys\$' $VERBS_LOG_FILE && exit 0; sleep 0.1; done; exit 1"
	check client_keys_withheld grep -q "moved before, is QP 0x[0-9a-f]* there; its keys are withheld until it connects" "$VERBS_LOG_FILE"
	check client_asked_for_each_qp sh -c "[ \$(grep -c 'moved before, is QP' $VERBS_LOG_FILE) = 2 ]"
	# the server's QPs are not on the numbers it announced
	check client_connected_elsewhere sh -c "grep 'moved before, is QP' $VERBS_LOG_FILE |
		sed -n 's/.*its peer \(0x[0-9a-f]*\) at .* is QP \(0x[0-9a-f]*\) there.*/\1 \2/p' | awk '\$1 != \$2' | grep -q ."
	say b.running
	await a.back || fail a_back
	sleep 2
	say b.stopping
	kill -TERM "$C"
	traffic_verdict client_traffic_verified "$C" "$LOGDIR/late-client-client.log"
	await a.done || fail a_done
fi

# ibv_rc_pingpong reads its GID before it waits for its client: moved to
# rxe1 before the client comes, it hands out rxe0's. The client's migr
# learns at connect (fetch) that the server had that GID before a switch
# and connects to the one that replaced it; without that its QP would
# talk to rxe0, where the server's QP is not, and time out.
PP="ibv_rc_pingpong -d migr_rxe0 -g 1 -p 18644 -n 500 -s 1024"
if [ "$role" = a ]; then
	$PP >"$LOGDIR/late-pingpong-server.log" 2>&1 &
	S=$!
	started "$S" || fail pingpong_server_started
	switch_to pingpong_server_moves_before_its_client "$S" rxe1 0
	say a.pp.moved
	for _ in $(seq 600); do kill -0 "$S" 2>/dev/null || break; sleep 0.2; done
	kill -KILL "$S" 2>/dev/null
	wait "$S"; rc=$?
	check pingpong_server_done sh -c "[ $rc -eq 0 ] && grep -q 'iters in' $LOGDIR/late-pingpong-server.log"
	tail -n 2 "$LOGDIR/late-pingpong-server.log" | sed 's/^/    /'
else
	await a.pp.moved || fail a_pp_moved
	timeout 120 $PP $A_IP >"$LOGDIR/late-pingpong-client.log" 2>&1
	rc=$?
	check pingpong_client_done sh -c "[ $rc -eq 0 ] && grep -q 'iters in' $LOGDIR/late-pingpong-client.log"
	sed -n 's/^ *remote address:/    server said:/p' "$LOGDIR/late-pingpong-client.log"
	check pingpong_client_told_of_the_move grep -q "moved to another GID since it gave it out" "$VERBS_LOG_FILE"
	# ibv_rc_pingpong's server connects before it answers its client:
	# the client fetches its keys at once
	check pingpong_client_fetched_keys grep -q "moved before, is QP 0x[0-9a-f]* there; [1-9][0-9]* of its keys fetched" "$VERBS_LOG_FILE"
fi
# gone before the next script in this guest starts its own (tests/run.sh)
kill -TERM "$MIGRD" 2>/dev/null
wait "$MIGRD" 2>/dev/null
summary "late-client $role"
