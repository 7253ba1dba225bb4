#!/bin/bash
# In one guest: a process whose RC QPs talk to each other (tests/switch/
# selfpair) is live-switched between two soft-RoCE devices, rxe0 and rxe1,
# many times while its traffic runs and is checked; then the fault cases.
# rxe0 (veth0) and rxe1 (veth1) never exchange traffic with each other:
# each carries the process's loopback traffic while it is there.
# Repetition counts: CI's by default; tests/soak.sh runs it with more
# (MIGR_SWITCHES=20 MIGR_SWITCH_ROUNDS=10 MIGR_TRAFFIC_SWITCHES=10
# MIGR_SWITCH_PAIRS="32 256").
#   MIGR_SWITCHES          the polling selfpair's switches (4)
#   MIGR_SWITCH_ROUNDS     events, threads, sharedq, type 2 windows (2:
#                          there and back)
#   MIGR_TRAFFIC_SWITCHES  each migr-traffic run's (switch_traffic, 2)
#   MIGR_SWITCH_PAIRS      the many-QP runs' pairs of QPs ("32"; the soak
#                          adds 256: 512 QPs)
. "$(dirname "$0")/lib.sh"
SWITCHES=${MIGR_SWITCHES:-4}
ROUNDS=${MIGR_SWITCH_ROUNDS:-2}
export SWITCH_TRAFFIC_MOVES=${MIGR_TRAFFIC_SWITCHES:-2}
SELFPAIR=$MIGR_BUILD_DIR/tests/switch/selfpair
SHAREDQ=$MIGR_BUILD_DIR/tests/switch/sharedq
CONTROL=$MIGR_TOP/tests/switch/control.py
export VERBS_LOG_LEVEL=3

ensure_rxe1 && pass rxe1_active || fail rxe1_active

# start_prog PROGRAM NAME SECONDS ARGS...: run a test program on migr_rxe0
# in the background (pid in SP), logging to NAME.log
start_prog() {
	local prog=$1 name=$2 secs=$3; shift 3
	export VERBS_LOG_FILE=$LOGDIR/$name.verbs.log
	rm -f "$VERBS_LOG_FILE"
	"$prog" migr_rxe0 "$secs" "$@" >"$LOGDIR/$name.log" 2>&1 &
	SP=$!
	# running once it printed its first progress line
	for _ in $(seq 100); do grep -Eq 'rounds=|sends=' "$LOGDIR/$name.log" && break; sleep 0.1; done
}

start_selfpair() { # NAME SECONDS ARGS...
	start_prog "$SELFPAIR" "$@"
}

# switch_many NAME N: switch the running selfpair N times back and forth
switch_many() {
	check "switch_${2}_times_$1" sh -c "python3 $CONTROL $SP alternate $2 rxe1 rxe0 >$LOGDIR/$1.switches.jsonl"
}

# stop_selfpair NAME: end the run (it stops at SIGTERM) and check its verdict
stop_selfpair() {
	kill -TERM $SP 2>/dev/null
	wait $SP; rc=$?
	check "traffic_intact_$1" sh -c "[ $rc -eq 0 ] && grep -Eq '(selfpair|sharedq): OK' $LOGDIR/$1.log"
	sed -n '$p' "$LOGDIR/$1.log"
}

# Polling mode: $SWITCHES switches under traffic; the process's checks all pass.
start_selfpair poll 0
switch_many poll "$SWITCHES"
stop_selfpair poll

# The process held no device fd or mapping between release and rebuild,
# and every QP kept its number (selfpair checks wc.qp_num against it).
check no_device_held_when_released python3 - "$LOGDIR/poll.switches.jsonl" <<'PY'
import json, sys
n = 0
for line in open(sys.argv[1]):
    for ctx in json.loads(line)["switch"]:
        assert ctx["ok"], ctx
        assert ctx["device_fds_after_release"] == 0, ctx
        assert ctx["device_maps_after_release"] == 0, ctx
        assert ctx["lost"] == 0, ctx
        n += 1
assert n > 0
PY

# Event mode: completion channel, same checks.
start_selfpair events 0 --events
switch_many events "$ROUNDS"
stop_selfpair events

# Four threads posting and polling at once (each on its own pairs and
# CQs): the switch must catch every one of them outside the lower provider.
start_selfpair threads 0 --pairs 8 --threads 4
switch_many threads "$ROUNDS"
stop_selfpair threads
start_selfpair threads-events 0 --pairs 8 --threads 4 --events
switch_many threads-events "$ROUNDS"
stop_selfpair threads-events

# Four threads posting to one send queue and one SRQ at once: the SENDs
# counted and the RECVs logged for a switch must stay exact when two
# threads share a queue (queue_owner.h), or a buffer is posted twice.
start_prog "$SHAREDQ" sharedq 0 --threads 4
switch_many sharedq "$ROUNDS"
stop_selfpair sharedq

# Two contexts in one process, every op of the generator checked, moved
# $SWITCH_TRAFFIC_MOVES times per run (switch_traffic in lib.sh): event-driven, legacy API;
# event-driven with extended CQs and ibv_wr_*() alone or mixed with
# ibv_post_send(); polling, legacy and extended (the application polls
# while the switch drains: the runs that found the CQ-flag races).
switch_traffic event:legacy:legacy event:ex:wr event:ex:mixed \
	poll:legacy:legacy poll:ex:wr
# The same with each context's RC QPs receiving through one SRQ: its
# unused RECVs, counted from the completions its CQs handed out, are
# posted again on the rebuilt SRQ. Then with a UD QP pair too.
switch_traffic event:legacy:legacy:srq poll:ex:mixed:srq \
	event:legacy:legacy:ud poll:ex:mixed:srq:ud
# Remote ops through type 1 memory windows, bound again on each device
switch_traffic poll:legacy:legacy:mw
# Type 2 windows: A reaches B's area through a window bound via B's QP;
# each round A's SEND_WITH_INV or B's LOCAL_INV unbinds it and B binds it
# again with the next key. A switch binds each again through its rebuilt
# QP as it stood (or not, if unbound), and the invalidated key a
# completion names stays the one B knows (selfpair checks both).
start_selfpair mw2 0 --mw2 --pairs 2
switch_many mw2 "$ROUNDS"
check type2_windows_moved python3 - "$LOGDIR/mw2.switches.jsonl" "$ROUNDS" <<'PY'
import json, sys
n = 0
for line in open(sys.argv[1]):
    for c in json.loads(line)["switch"]:
        assert c["ok"] and c["lost"] == 0 and c["objects"]["mws"] == 2, c
        n += 1
assert n == int(sys.argv[2]), n
PY
stop_selfpair mw2

# Faults: each is refused with a reason and the process keeps running.
start_selfpair faults 0 --stall 60
check unknown_device_refused sh -c "! python3 $CONTROL $SP switch nosuchdev | tee $LOGDIR/f1.json | grep -q '\"ok\":true' && grep -q 'no RDMA device named nosuchdev' $LOGDIR/f1.json"
check same_device_refused sh -c "! python3 $CONTROL $SP switch rxe0 | tee $LOGDIR/f2.json | grep -q '\"ok\":true' && grep -q 'already on rxe0' $LOGDIR/f2.json"
# another user gets nothing at all: the connection is closed unread (no
# reply, exit 2), and the process goes on answering its own user
# (from a copy it can read: a checkout under /root is root's alone)
OTHER=$(mktemp -d) && chmod 0755 "$OTHER" && install -m 0644 "$CONTROL" "$OTHER/control.py"
setpriv --reuid=65534 --regid=65534 --clear-groups python3 "$OTHER/control.py" $SP status >$LOGDIR/f3.out 2>&1
check other_user_refused sh -c "[ $? -eq 2 ] && ! grep -q '[{]' $LOGDIR/f3.out && kill -0 $SP && python3 $CONTROL $SP status | grep -q contexts"
check bad_request_refused sh -c "python3 $CONTROL $SP frobnicate | grep -q 'bad request'"
# A 1 ms bound on the drain: refused and rolled back (or, rarely, fast
# enough); either way the traffic goes on intact on a working device.
check tight_wait_bound_rolls_back sh -c "python3 $CONTROL $SP switch rxe1 1 | tee $LOGDIR/f3.json | grep -Eq '\"ok\":true|did not drain within 1 ms'"
# A SEND that cannot complete (its receiver posts no RECV until told, a
# second SIGUSR1, once the switch is over: python3 alone may take seconds
# to start on a loaded TCG guest): the drain hits its 1 s bound with it in
# flight and the switch rolls back; once RECVs come, that SEND and all
# after it complete, checked as ever.
other_device() {
	case "$(python3 "$CONTROL" "$SP" status)" in
	*'"lower":"rxe1"'*) echo rxe0 ;;
	*) echo rxe1 ;;
	esac
}
dev=$(other_device)
kill -USR1 "$SP"
for _ in $(seq 100); do grep -q 'selfpair: stalled' "$LOGDIR/faults.log" && break; sleep 0.1; done
check wait_bound_exceeded_with_a_send_in_flight_rolls_back sh -c "python3 $CONTROL $SP switch $dev 1000 | tee $LOGDIR/f-stall.json | grep -q '\"rolled_back\":true' && grep -q 'did not drain within 1000 ms' $LOGDIR/f-stall.json && ! grep -q '\"ok\":true' $LOGDIR/f-stall.json"
kill -USR1 "$SP"
for _ in $(seq 300); do grep -q 'selfpair: stall over' "$LOGDIR/faults.log" && break; sleep 0.1; done
check stalled_send_completed_after_rollback grep -q 'selfpair: stall over' "$LOGDIR/faults.log"
check status_lists_qps sh -c "python3 $CONTROL $SP status | tee $LOGDIR/status.json | grep -q '\"self\":true'"
# ... and switches as before (to whichever device it is not on)
check still_switches_after_faults python3 "$CONTROL" "$SP" switch "$(other_device)"
stop_selfpair faults

# The same stall with MIGR_REPLAY=1, an unsignaled READ just before the
# SEND: the SEND provably never ran (B had no RECV left and took every
# SEND that completed) and a READ changes nothing at B, so the switch goes
# on past the bound and posts both again on the new QP. Once B posts RECVs
# the message arrives exactly once (a second copy would fail selfpair's
# next check) and the READ's data is checked. Plain switches of a logging
# process first, then after the replay.
export MIGR_REPLAY=1
start_selfpair replay 0 --stall 60 --stall-read
unset MIGR_REPLAY
switch_many replay 6
dev=$(other_device)
kill -USR1 "$SP"
for _ in $(seq 100); do grep -q 'selfpair: stalled' "$LOGDIR/replay.log" && break; sleep 0.1; done
check wait_bound_exceeded_with_a_send_in_flight_replays sh -c "python3 $CONTROL $SP switch $dev 1000 | tee $LOGDIR/r-stall.json | grep -q '\"ok\":true' && grep -q '\"rolled_back\":false' $LOGDIR/r-stall.json && grep -q '\"replayed_wrs\":2,' $LOGDIR/r-stall.json && grep -q '\"lost\":0,' $LOGDIR/r-stall.json"
check replay_logged sh -c "grep -q 'did not drain within 1000 ms.*replaying what never ran' $LOGDIR/replay.verbs.log"
kill -USR1 "$SP"
for _ in $(seq 300); do grep -q 'selfpair: stall over' "$LOGDIR/replay.log" && break; sleep 0.1; done
check replayed_send_arrived_once grep -q 'selfpair: stall over' "$LOGDIR/replay.log"
check switch_6_times_after_replay sh -c "python3 $CONTROL $SP alternate 6 $(other_device) $dev >$LOGDIR/replay-after.switches.jsonl"
stop_selfpair replay
# Every op of the generator on a logging process, switched as ever
switch_traffic event:legacy:legacy:replay poll:legacy:legacy:srq:replay

# Both ends in one process, each receiving through an SRQ that posts no
# RECV until told: every QP's SENDs wait on RNR. Past the 1 s bound each
# peer's SRQ has none left and took exactly the SENDs completed, so the
# unfinished WRs of both directions run again on the new QPs, once.
export VERBS_LOG_FILE=$LOGDIR/replay-srq.verbs.log
MIGR_REPLAY=1 migr-traffic -d migr_rxe0 --loopback -q 2 --depth 8 --size 512 \
	--api legacy --mode poll --srq --hold-recvs 60 -D 600 --stall-timeout 90 \
	>"$LOGDIR/replay-srq.log" 2>&1 &
SP=$!
started $SP || fail replay_srq_started
sleep 2
hold_recvs own_srq_receives_held "$SP" "$LOGDIR/replay-srq.log"
check own_srq_receivers_replayed sh -c "python3 $CONTROL $SP switch rxe1 1000 >$LOGDIR/replay-srq.json && python3 -c '
import json, sys
for c in json.load(open(sys.argv[1]))[\"switch\"]:
    assert c[\"ok\"] and not c[\"rolled_back\"] and c[\"lost\"] == 0, c
    assert c[\"replayed_wrs\"] >= 1 and c[\"objects\"][\"srqs\"] == 2, c
' $LOGDIR/replay-srq.json"
kill -USR1 "$SP"
for _ in $(seq 300); do grep -q 'receives posted again' "$LOGDIR/replay-srq.log" && break; sleep 0.1; done
sleep 2
check own_srq_switched_after_replay sh -c "python3 $CONTROL $SP alternate 2 rxe0 rxe1 0.5 >$LOGDIR/replay-srq.switches.jsonl"
kill -TERM "$SP"
traffic_verdict own_srq_replay_traffic_verified "$SP" "$LOGDIR/replay-srq.log"

# UC QPs cannot move yet (a SEND whose sender completed may still be on
# its way, and nothing tells the drain when it landed): refused before
# anything is touched, and the traffic goes on intact.
start_selfpair uc 0 --uc --pairs 2
check uc_refused sh -c "! python3 $CONTROL $SP switch rxe1 | tee $LOGDIR/f4.json | grep -q '\"ok\":true' && grep -q 'a QP of a type other than RC or UD' $LOGDIR/f4.json"
stop_selfpair uc

# Rebuild in place (what a restore does): new physical QPNs and keys on the
# same device behind the same virtual ones; selfpair checks wc.qp_num and
# every byte, the status shows each QP's physical number moved.
start_selfpair rebuild 0 --pairs 2
check rebuild_5_times sh -c "for i in 1 2 3 4 5; do python3 $CONTROL $SP rebuild || exit 1; sleep 0.3; done >$LOGDIR/rebuild.switches.jsonl"
# (on migr's rdma_rxe, migr_rxe(7), each QP is rebuilt on its own number)
check rebuilt_qps_renumbered sh -c "python3 $CONTROL $SP status | python3 -c '
import json, sys
ctxs = json.load(sys.stdin)[\"contexts\"]
qps = [q for c in ctxs for q in c[\"qps\"]]
kept = all(c[\"numbers\"][\"can_ask\"] for c in ctxs)
assert len(qps) == 4 and all((q[\"phys\"] == q[\"qpn\"]) == kept for q in qps), qps'"
stop_selfpair rebuild

# Many QPs: 32 pairs (64 QPs; the soak adds 256 pairs, 512 QPs) switched
# there and back
for pairs in ${MIGR_SWITCH_PAIRS:-32}; do
	start_selfpair "pairs$pairs" 0 --pairs $pairs
	switch_many "pairs$pairs" 4
	stop_selfpair "pairs$pairs"
done

# Phase times, for the record (also in switch-phases.txt)
python3 - "$LOGDIR" <<'PY' | tee "$LOGDIR/switch-phases.txt" || true
import json, os, sys
keys = ["suspend", "drain", "release", "rebuild", "replay"]
print("%-27s %4s %3s " % ("run", "QPs", "n") + " ".join("%8s" % k for k in keys) + " %8s %8s" % ("median", "max"))
for run in ["poll", "events", "threads", "threads-events", "traffic-event-legacy-legacy", "traffic-event-ex-wr", "traffic-event-ex-mixed", "rebuild", "pairs32", "pairs256"]:
    path = os.path.join(sys.argv[1], run + ".switches.jsonl")
    if not os.path.exists(path):
        continue
    rows = [c for l in open(path) for c in json.loads(l).get("switch", []) if c["ok"]]
    if not rows:
        continue
    avg = {k: sum(r["phases_ms"][k] for r in rows) / len(rows) for k in keys}
    tot = sorted(r["total_ms"] for r in rows)
    print("%-27s %4d %3d " % (run, rows[0]["objects"]["qps"], len(rows)) +
          " ".join("%8.2f" % avg[k] for k in keys) +
          " %8.2f %8.2f" % (tot[len(tot) // 2], tot[-1]))
print("(milliseconds, mean per phase; QEMU TCG guest, soft-RoCE)")
PY
summary switch
