#!/bin/bash
# In one guest: migr-traffic (tests/traffic) in loopback over rxe0 and over
# its migr twin, in several configurations (post API, completion mode, SRQ,
# UD); then the checker's failure paths: injected faults must be caught
# with one line naming what, bad devices and unreachable peers rejected.
. "$(dirname "$0")/lib.sh"
LOWER=${MIGR_LOWER_DEV:-rxe0}
TRAFFIC="migr-traffic --loopback --stall-timeout 30"
export VERBS_LOG_LEVEL=3

# traffic NAME DEV ARGS...: a loopback run must pass; on the twin, the
# verbs log must show that it really opened migr over the lower device.
traffic() {
	local name=$1 dev=$2 t=$SECONDS; shift 2
	export VERBS_LOG_FILE=$LOGDIR/$name.verbs.log
	rm -f "$VERBS_LOG_FILE"
	check "$name" $TRAFFIC -d "$dev" "$@"
	[ "$dev" = "$LOWER" ] || grep -q "$dev: .*opened over $LOWER" "$VERBS_LOG_FILE" ||
		fail "$name-used-migr" "$VERBS_LOG_FILE"
	grep -h "^migr-traffic: \(server\|client\):" "$LOGDIR/$name.log" | sed 's/^/    /'
	echo "    ($((SECONDS - t)) s)"
}

# expect_fail NAME RC PATTERN CMD...: CMD must exit RC with exactly one
# line on stderr, matching PATTERN.
expect_fail() {
	local name=$1 want=$2 pattern=$3 rc t=$SECONDS; shift 3
	timeout 60 "$@" >"$LOGDIR/$name.log" 2>"$LOGDIR/$name.err"
	rc=$?
	if [ $rc -eq "$want" ] && [ "$(wc -l <"$LOGDIR/$name.err")" -eq 1 ] &&
		grep -q -- "$pattern" "$LOGDIR/$name.err"; then
		pass "$name"
		sed 's/^/    /' "$LOGDIR/$name.err"
	else
		echo "    rc=$rc, wanted $want and one stderr line matching '$pattern'"
		fail "$name" "$LOGDIR/$name.err"
	fi
	echo "    ($((SECONDS - t)) s)"
}

for dev in $LOWER migr_$LOWER; do
	traffic "traffic_legacy_poll_$dev" "$dev" --api legacy --mode poll --iters 1000
	traffic "traffic_wr_event_cqex_$dev" "$dev" --api wr --mode event --cq ex --iters 1000
	traffic "traffic_mixed_srq_ud_$dev" "$dev" --api mixed --mode event --srq --ud \
		--qps 4 --duration 2 --report-interval 0.5
done
unset VERBS_LOG_FILE VERBS_LOG_LEVEL

# A duration run reports progress while it runs and ends in valid JSON.
name=traffic_mixed_srq_ud_migr_$LOWER
n=$(grep -c "^progress server " "$LOGDIR/$name.log")
[ "$n" -ge 2 ] && pass traffic_progress_lines || fail traffic_progress_lines "$LOGDIR/$name.log"
check traffic_json $TRAFFIC -d "migr_$LOWER" --ops send,write,read,faa --iters 100 --json
python3 -c '
import json, sys
s = json.loads(open(sys.argv[1]).read().splitlines()[-1])
assert s["result"] == "pass", s
for e in s["endpoints"]:
    assert e["ops_completed"] == 2 * 100 and e["ops"]["faa"] > 0, e
' "$LOGDIR/traffic_json.log" && pass traffic_json_summary || fail traffic_json_summary "$LOGDIR/traffic_json.log"

# --rate holds each QP to N WRs a second (and a queue): 2 QPs at 50 a
# second for 3 s post at most 2 * (150 + 8) WRs, polling or not; and it
# still posts (more than one queue each).
for mode in poll event; do
	name=traffic_rate_$mode
	check $name $TRAFFIC -d "migr_$LOWER" --mode $mode --qps 2 --depth 8 --rate 50 -D 3 --json
	python3 -c '
import json, sys
s = json.loads(open(sys.argv[1]).read().splitlines()[-1])
for e in s["endpoints"]:
    assert 2 * 8 < e["ops_completed"] <= 2 * (50 * 3.5 + 8), e["ops_completed"]
' "$LOGDIR/$name.log" && pass ${name}_held || fail ${name}_held "$LOGDIR/$name.log"
done

# A test driver may end a run at any time: SIGTERM stops posting, and what
# was posted drains and is verified.
name=traffic_sigterm
t=$SECONDS
timeout 60 $TRAFFIC -d "migr_$LOWER" --iters 1000000000 --report-interval 0.5 \
	>"$LOGDIR/$name.log" 2>&1 &
pid=$!
i=0; until grep -q "^progress" "$LOGDIR/$name.log"; do i=$((i + 1)); [ $i -gt 300 ] && break; sleep 0.1; done
sleep 1
# One SIGTERM, to migr-traffic itself: timeout(1) passes a signal it gets
# to its whole process group, and a second one means "leave now"
pkill -TERM -P $pid
wait $pid
rc=$?
if [ $rc -eq 0 ] && grep -q "^migr-traffic: PASS" "$LOGDIR/$name.log"; then
	pass $name
	grep -h "^migr-traffic: \(server\|client\):" "$LOGDIR/$name.log" | sed 's/^/    /'
else
	echo "    rc=$rc"
	fail $name "$LOGDIR/$name.log"
fi
echo "    ($((SECONDS - t)) s)"

# The checker can fail: each injected fault is caught and named.
DEV=migr_$LOWER
expect_fail traffic_fault_payload 1 "checksum mismatch" $TRAFFIC -d $DEV --ops send,read --inject-fault payload
expect_fail traffic_fault_write 1 "write seq .*checksum mismatch" $TRAFFIC -d $DEV --ops write,send --inject-fault write
expect_fail traffic_fault_imm 1 "imm_data" $TRAFFIC -d $DEV --ops send_imm,write_imm --inject-fault imm
expect_fail traffic_fault_faa 1 "(faa): returned .*, expected" $TRAFFIC -d $DEV --ops faa --inject-fault faa
expect_fail traffic_fault_udloss 1 "1 datagrams lost" $TRAFFIC -d $DEV --ud --ops send --inject-fault udloss
# ... and a loss within --ud-max-loss is counted, not fatal.
check traffic_udloss_tolerated $TRAFFIC -d $DEV --ud --ops send --ud-max-loss 1 --inject-fault udloss
grep -q "server: .*(UD: 0 of the peer's [0-9]* lost)" "$LOGDIR/traffic_udloss_tolerated.log" &&
	grep -q "client: .*(UD: 1 of the peer's [0-9]* lost)" "$LOGDIR/traffic_udloss_tolerated.log" &&
	pass traffic_udloss_counted || fail traffic_udloss_counted "$LOGDIR/traffic_udloss_tolerated.log"
expect_fail traffic_bad_device 3 "no RDMA device named 'nosuchdev'" $TRAFFIC -d nosuchdev
expect_fail traffic_unreachable 3 "cannot reach the server" migr-traffic -d $DEV \
	--client 127.0.0.1 --port 9 --connect-timeout 1

summary traffic
