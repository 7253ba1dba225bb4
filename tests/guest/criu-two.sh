#!/bin/bash
# In two guests (buildlib/testbed/run.sh --two): a running RDMA process
# moves A -> B -> A through Debian's unmodified CRIU and migr's plugin.
# Its QPs talk to each other (tests/switch/selfpair, every completion and
# byte checked); the images go through the shared build directory.
# A parks it by hand (as migrctl migrate will) and dumps it; B restores it
# (the plugin queues its resume: it rebuilds on B's rxe0, whose GIDs are
# B's); then B dumps it without a park (the plugin parks it, as in a
# runtime's dump) and A restores it. It starts at a PID far above what a
# fresh guest uses, so that PID is free on both.
# usage: criu-two.sh a|b
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/migrate-lib.sh"
role=${1:?a or b}
SELFPAIR=$MIGR_BUILD_DIR/tests/switch/selfpair
CONTROL=$MIGR_TOP/tests/switch/control.py
PLUGIN_DIR=$MIGR_BUILD_DIR/lib/criu
SYNC=$LOGDIR/criu-two-sync/${MIGR_RUN:-0}
IMG=$LOGDIR/criu-two-img/${MIGR_RUN:-0}
OUT=$LOGDIR/criu-two-selfpair.log
say() { touch "$SYNC/$1"; }
export VERBS_LOG_LEVEL=3

progressing() { selfpair_progressing "$OUT"; }

if [ "$role" = a ]; then
	rm -rf "${SYNC%/*}" "${IMG%/*}" "$OUT" && mkdir -p "$SYNC" "$IMG/ab" "$IMG/ba"
	export VERBS_LOG_FILE=$LOGDIR/criu-two-selfpair.verbs.log
	rm -f "$VERBS_LOG_FILE"
	echo 29999 >/proc/sys/kernel/ns_last_pid
	setsid "$SELFPAIR" migr_rxe0 0 --idle-us 50 </dev/null >>"$OUT" 2>&1 &
	SP=$!
	echo "$SP" >"$SYNC/pid"
	NAME=a_started ok progressing
	check a_park python3 "$CONTROL" "$SP" park
	check a_dump criu dump -t "$SP" -D "$IMG/ab" -L "$PLUGIN_DIR" -o dump.log -v4
	wait "$SP" 2>/dev/null
	say dumped-ab
	await restored-ab 300 || fail a_saw_b_restore
	await dumped-ba 300 || fail a_saw_b_dump
	check a_restore criu restore -D "$IMG/ba" -L "$PLUGIN_DIR" -d -o restore.log -v4
	NAME=back_on_a_traffic_goes_on ok progressing
	check back_on_a_rebuilt_on_rxe0 sh -c "python3 $CONTROL $SP status | grep -q '\"lower\":\"rxe0\"'"
	kill -TERM "$SP"
	for _ in $(seq 100); do kill -0 "$SP" 2>/dev/null || break; sleep 0.1; done
	check traffic_intact_a_b_a grep -q 'selfpair: OK' "$OUT"
	tail -n 1 "$OUT"
	say done
	summary criu-two-a
else
	await dumped-ab 300 || fail b_saw_a_dump
	SP=$(cat "$SYNC/pid")
	check b_pid_free sh -c "! kill -0 $SP 2>/dev/null"
	check b_restore criu restore -D "$IMG/ab" -L "$PLUGIN_DIR" -d -o restore.log -v4
	check b_resume_queued grep -q "migr: pid $SP: resume queued" "$IMG/ab/restore.log"
	NAME=on_b_traffic_goes_on ok progressing
	check on_b_rebuilt_on_rxe0 sh -c "python3 $CONTROL $SP status | grep -q '\"lower\":\"rxe0\"'"
	check on_b_resume_report sh -c "python3 $CONTROL $SP resume >$LOGDIR/criu-two-b.resume.json"
	say restored-ab
	check b_dump criu dump -t "$SP" -D "$IMG/ba" -L "$PLUGIN_DIR" -o dump.log -v4
	check b_dump_parked_it grep -q "migr: pid $SP holds .*: asking it to park" "$IMG/ba/dump.log"
	say dumped-ba
	await done 300 || fail b_saw_a_done
	summary criu-two-b
fi
