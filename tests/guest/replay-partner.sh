#!/bin/bash
# In one guest: replay after the wait bound toward a partner in another
# process. A migr-traffic client and its server, two processes on
# migr_rxe0, both with MIGR_REPLAY=1. At SIGUSR1 the server posts no RECV
# until the next one (--hold-recvs): the client's SENDs wait on RNR, its send queues
# full behind them. The client is rebuilt in place (new QPs behind the same
# numbers, what a restore does; its partner follows through migrd as in a
# switch) with a 1 s drain bound. The server answers the "recvs" step: it
# has no RECV left and took exactly the SENDs the client saw complete. So
# the client goes on and posts its unfinished WRs again on its new QPs;
# once the server's RECVs come back they arrive once, in order, checked by
# both sides to the byte. Then the other way: the client holds its RECVs
# and the server's unfinished WRs are posted again on its new QPs. Both
# again with each side receiving through an SRQ, and with ibv_wr_*()
# batches alternating with ibv_post_send(). Last, a server without
# MIGR_REPLAY: the client's switch rolls back instead. (rxe0 and rxe1 must
# not carry traffic between them, hence a rebuild, not a switch: the
# partner steps are the same.)
. "$(dirname "$0")/lib.sh"
role=a
CONTROL=$MIGR_TOP/tests/switch/control.py
two_host_env replay-partner
# plain rebuilds of the logging client before the replays (after them,
# half as many): CI's 2, more for a soak (MIGR_REPLAY_REBUILDS)
REBUILDS=${MIGR_REPLAY_REBUILDS:-2}
AFTER=$(((REBUILDS + 1) / 2))
# polling, at a bounded rate: two processes polling flat out took both
# of the guest's CPUs from the rebuilds and the partner steps
TRAFFIC="-d migr_rxe0 --qps 2 --depth 8 --size 512 --api legacy --mode poll --rate 200 -D 600 --stall-timeout 60 --port 18651"

start_test_migrd replay-partner "$LOGDIR/replay-partner-migrd.log"

# hold_recvs (lib.sh) NAME PID LOG: PID stops posting RECVs; release PID: it
# posts them again. The hold lasts until released (60 s at most): python3
# alone can take seconds to start in a busy TCG guest, and a hold that
# ended on its own before the switch came let the queues drain (seen in CI).
release() { kill -USR1 "$1"; }

# both_ways NAME PORT [OPTION...]: a client and its server, both logging;
# each in turn holds its RECVs while the client is rebuilt past the bound
both_ways() {
	local name=$1 port=$2 traffic
	shift 2
	traffic="${TRAFFIC/--port 18651/--port $port} $*"
	export MIGR_REPLAY=1
	migr-traffic $traffic --server --hold-recvs 60 >"$LOGDIR/$name-server.log" 2>&1 &
	S=$!
	started "$S" || fail "${name}_server_started"
	migr-traffic $traffic --client 127.0.0.1 --hold-recvs 60 >"$LOGDIR/$name-client.log" 2>&1 &
	C=$!
	started "$C" || fail "${name}_client_started"
	unset MIGR_REPLAY
	sleep 2

	# Logging processes move as ever, the partner following
	check "${name}_client_rebuilt_${REBUILDS}_times" sh -c "for i in \$(seq $REBUILDS); do python3 $CONTROL $C rebuild 3000 || exit 1; sleep 0.5; done >$LOGDIR/$name-rebuilds.jsonl"

	hold_recvs "${name}_server_holds_receives" "$S" "$LOGDIR/$name-server.log"
	check "${name}_rebuild_past_bound_replays_toward_partner" sh -c "python3 $CONTROL $C rebuild 1000 >$LOGDIR/$name-partner.json"
	check "${name}_replayed_and_nothing_lost" python3 - "$LOGDIR/$name-partner.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for c in r["switch"]:
    assert c["ok"] and not c["rolled_back"], c
    assert c["replayed_wrs"] >= 1 and c["lost"] == 0 and c["partners"] == 2, c
    print("    drain %.0f ms (bound 1000), %d WRs replayed" % (
        c["phases_ms"]["drain"], c["replayed_wrs"]))
PY
	release "$S"
	for _ in $(seq 300); do grep -q 'receives posted again' "$LOGDIR/$name-server.log" && break; sleep 0.1; done
	check "${name}_server_posted_receives_again" grep -q 'receives posted again' "$LOGDIR/$name-server.log"
	sleep 1

	# The other way: the client (the mover) holds its receives, so the
	# server's SENDs wait; its send queue does not drain within the bound.
	# It answers "undrained", decides from the client's RECV counts at
	# "recvs", and posts its unfinished WRs again once it resumes on its
	# new QPs.
	local logged
	logged=$(stat -c %s "$VERBS_LOG_FILE" 2>/dev/null || echo 0)
	hold_recvs "${name}_client_holds_receives" "$C" "$LOGDIR/$name-client.log"
	check "${name}_rebuild_with_partner_past_bound_partner_replays" sh -c "python3 $CONTROL $C rebuild 1000 >$LOGDIR/$name-partner2.json"
	check "${name}_partner_replayed" python3 - "$LOGDIR/$name-partner2.json" "$VERBS_LOG_FILE" "$logged" <<'PY'
import json, re, sys
r = json.load(open(sys.argv[1]))
for c in r["switch"]:
    assert c["ok"] and not c["rolled_back"] and c["lost"] == 0, c
log = open(sys.argv[2], "rb")
log.seek(int(sys.argv[3]))
n = sum(int(m) for m in re.findall(rb"(\d+) unfinished WRs posted again toward its moved peer", log.read()))
assert n >= 1, n
# the mover's report counts what its partner said it posted again
got = sum(c["partner_replayed_wrs"] for c in r["switch"])
assert got == n, (got, n)
print("    the server posted %d WRs again; the client's report says %d" % (n, got))
PY
	release "$C"
	for _ in $(seq 300); do grep -q 'receives posted again' "$LOGDIR/$name-client.log" && break; sleep 0.1; done
	check "${name}_client_posted_receives_again" grep -q 'receives posted again' "$LOGDIR/$name-client.log"
	sleep 1
	check "${name}_client_rebuilt_after_replay" sh -c "for i in \$(seq $AFTER); do python3 $CONTROL $C rebuild 3000 || exit 1; sleep 0.5; done >>$LOGDIR/$name-rebuilds.jsonl"

	kill -TERM "$C" "$S"
	traffic_verdict "${name}_client_traffic_verified" "$C" "$LOGDIR/$name-client.log"
	traffic_verdict "${name}_server_traffic_verified" "$S" "$LOGDIR/$name-server.log"
}

both_ways replay 18651
# The same with each side receiving through an SRQ: what the SRQ has
# left (posted, minus what the CQs it feeds counted) must be none, and
# it holds its RECVs, for the QPs facing the mover and the others alike
both_ways replay-srq 18653 --srq
# Batches posted with ibv_wr_*() and ibv_post_send() in turn on each QP:
# the builders' batches are written down and posted through the log too
both_ways replay-wr 18654 --api mixed

# A server without MIGR_REPLAY counts nothing: the same stall rolls back,
# naming why, and the SENDs that waited arrive once on the old QPs.
TRAFFIC=${TRAFFIC/--port 18651/--port 18652}
migr-traffic $TRAFFIC --server --hold-recvs 60 >"$LOGDIR/replay-plain-server.log" 2>&1 &
S=$!
started "$S" || fail plain_server_started
MIGR_REPLAY=1 migr-traffic $TRAFFIC --client 127.0.0.1 >"$LOGDIR/replay-plain-client.log" 2>&1 &
C=$!
started "$C" || fail plain_client_started
sleep 2
hold_recvs plain_server_holds_receives "$S" "$LOGDIR/replay-plain-server.log"
check uncounted_partner_rolls_back sh -c "! python3 $CONTROL $C rebuild 1000 >$LOGDIR/replay-plain.json"
check rollback_names_why python3 - "$LOGDIR/replay-plain.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for c in r["switch"]:
    assert not c["ok"] and c["rolled_back"] and c["lost"] == 0, c
    assert "no replay: " in c["error"] and "does not count" in c["error"], c
    print("    " + c["error"])
PY
release "$S"
for _ in $(seq 300); do grep -q 'receives posted again' "$LOGDIR/replay-plain-server.log" && break; sleep 0.1; done
sleep 1
kill -TERM "$C" "$S"
traffic_verdict plain_client_traffic_verified "$C" "$LOGDIR/replay-plain-client.log"
traffic_verdict plain_server_traffic_verified "$S" "$LOGDIR/replay-plain-server.log"
kill "$MIGRD" 2>/dev/null
wait "$MIGRD" 2>/dev/null
summary replay-partner
