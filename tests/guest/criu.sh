#!/bin/bash
# In one guest: Debian's unmodified CRIU with migr's plugin
# (criu/migr_plugin.c) dumps and restores running RDMA processes.
# - pre-dump of a live migr process passes with the plugin and fails
#   without it (its uverbs mappings);
# - the dump of an RDMA process that is not migr's is refused, naming the
#   pid and the file, and the process runs on, its traffic intact;
# - a migr process parked by hand (control socket "park") is dumped and
#   restored; the plugin queues its resume, and its traffic (every
#   completion and byte checked by selfpair) goes on where it stopped;
# - the same without the park: the plugin parks it itself (CRIU's
#   PAUSE_DEVICES, as for runc or podman);
# - a park undone (a migration that failed before the dump) resumes on the
#   device it left;
# - pre-copy: what the device wrote into a huge page and small ones after
#   the pre-dump is in the restored process, though the huge page was not
#   soft-dirty before the park (tests/switch/mrdirty);
# - a restored copy's own fence: uncommitted in time, it ends itself.
. "$(dirname "$0")/lib.sh"
SELFPAIR=$MIGR_BUILD_DIR/tests/switch/selfpair
CONTROL=$MIGR_TOP/tests/switch/control.py
PLUGIN_DIR=$MIGR_BUILD_DIR/lib/criu
IMG=/run/migr-criu
export VERBS_LOG_LEVEL=3

rm -rf "$IMG" && mkdir -p "$IMG/none"
check plugin_built test -f "$PLUGIN_DIR/migr_plugin.so"

# start NAME DEVICE [PROGRAM ARGS...]: selfpair (or PROGRAM) on DEVICE in
# a session of its own (CRIU dumps it as a tree of its own), appending to
# NAME.log; pid in SP
start() {
	local name=$1 dev=$2
	shift 2
	[ $# -gt 0 ] || set -- "$SELFPAIR" "$dev" 0
	[ "$1" = "$SELFPAIR" ] || set -- "$1" "$dev" "${@:2}"
	export VERBS_LOG_FILE=$LOGDIR/criu-$name.verbs.log
	rm -f "$LOGDIR/criu-$name.log" "$VERBS_LOG_FILE"
	setsid "$@" </dev/null >>"$LOGDIR/criu-$name.log" 2>&1 &
	SP=$!
	for _ in $(seq 100); do grep -q 'rounds=' "$LOGDIR/criu-$name.log" && break; sleep 0.1; done
}

# progressing NAME: its selfpair's rounds go up within 10 s
progressing() { selfpair_progressing "$LOGDIR/criu-$1.log" 10; }

# finish NAME PID [PROGRAM]: SIGTERM, then its verdict (it may not be
# our child)
finish() {
	local prog=${3:-selfpair}
	kill -TERM "$2" 2>/dev/null
	for _ in $(seq 100); do kill -0 "$2" 2>/dev/null || break; sleep 0.1; done
	check "traffic_intact_$1" grep -q "$prog: OK" "$LOGDIR/criu-$1.log"
	grep "$prog:" "$LOGDIR/criu-$1.log" | tail -n 1
}


# 1. Pre-dump of a live migr process: its uverbs mappings need the plugin
start predump migr_rxe0
mkdir -p "$IMG/pre" "$IMG/pre-none"
check predump_refused_without_plugin sh -c "! criu pre-dump -t $SP -D $IMG/pre-none -L $IMG/none -o pre-none.log -v4"
check predump_with_plugin criu pre-dump -t $SP -D "$IMG/pre" -L "$PLUGIN_DIR" --track-mem -o pre.log -v4
if progressing predump; then pass predump_process_runs; else fail predump_process_runs; fi
finish predump $SP
wait $SP 2>/dev/null

# 2. An RDMA process that is not migr's: refused with a reason, runs on
start raw rxe0
mkdir -p "$IMG/raw"
criu dump -t $SP -D "$IMG/raw" -L "$PLUGIN_DIR" -o dump.log -v4 >/dev/null 2>&1
rc=$?
check raw_dump_refused test $rc -ne 0
check raw_refusal_names_pid_and_file grep -E "migr: pid $SP holds fd [0-9]+ /dev/infiniband/uverbs[0-9]+: it is not parked \(not a migr process" "$IMG/raw/dump.log"
if progressing raw; then pass raw_process_runs; else fail raw_process_runs; fi
finish raw $SP
wait $SP 2>/dev/null

# 3. Parked by hand, dumped, restored here: the plugin queues the resume
start parked migr_rxe0
check park_by_hand sh -c "python3 $CONTROL $SP park >$LOGDIR/criu-parked.park.json"
check parked_holds_no_device python3 -c "
import json, sys
r = json.load(open('$LOGDIR/criu-parked.park.json'))['park'][0]
assert r['device_fds_after_release'] == 0 and r['device_maps_after_release'] == 0 and r['lost'] == 0, r"
check parked_status_says_so sh -c "python3 $CONTROL $SP status | grep -q '\"parked\":{\"from\":\"rxe0\"'"
mkdir -p "$IMG/parked"
check parked_dump criu dump -t $SP -D "$IMG/parked" -L "$PLUGIN_DIR" -o dump.log -v4
check parked_source_gone sh -c "! kill -0 $SP 2>/dev/null"
wait $SP 2>/dev/null
check inventory_names_plugin grep -aq migr "$IMG/parked/inventory.img"
check parked_restore criu restore -D "$IMG/parked" -L "$PLUGIN_DIR" -d -o restore.log -v4
check restore_queued_resume grep -q "migr: pid $SP: resume queued" "$IMG/parked/restore.log"
if progressing parked; then pass restored_traffic_goes_on; else fail restored_traffic_goes_on; fi
check restored_status_not_parked sh -c "python3 $CONTROL $SP status | grep -q '\"contexts\":\[{'"
check resume_again_answers_first sh -c "python3 $CONTROL $SP resume >$LOGDIR/criu-parked.resume.json"
finish parked $SP

# 4. Not parked: the plugin parks it (PAUSE_DEVICES), as in runc's dumps
start auto migr_rxe0
mkdir -p "$IMG/auto"
check auto_dump criu dump -t $SP -D "$IMG/auto" -L "$PLUGIN_DIR" -o dump.log -v4
check auto_dump_parked_it grep -q "migr: pid $SP holds .*: asking it to park" "$IMG/auto/dump.log"
wait $SP 2>/dev/null
check auto_restore criu restore -D "$IMG/auto" -L "$PLUGIN_DIR" -d -o restore.log -v4
if progressing auto; then pass auto_traffic_goes_on; else fail auto_traffic_goes_on; fi
finish auto $SP

# 5. A park undone (the migration failed before the dump): resumes here
start undo migr_rxe0
check undo_park python3 "$CONTROL" $SP park
check undo_parked_holds_on sh -c "sleep 1; python3 $CONTROL $SP status | grep -q parked"
check undo_resume sh -c "python3 $CONTROL $SP resume rxe0 >$LOGDIR/criu-undo.resume.json"
if progressing undo; then pass undo_traffic_goes_on; else fail undo_traffic_goes_on; fi
finish undo $SP
wait $SP 2>/dev/null

# The marking itself, on this kernel: an MR's pages soft-dirty again after
# clear_refs (the build host's kernel tracks no soft-dirty bits)
check mr_mark_unit "$MIGR_BUILD_DIR/tests/unit/test_mr_mark"

# 6. Pre-copy: after a pre-dump the device goes on writing into a huge
#    page and into small ones, then stops (SIGUSR1: "quiet"). The premise,
#    read by mrdirty in /proc/self/pagemap before the park: the huge page
#    the device wrote after the pre-dump is not soft-dirty (the small
#    pages are: pinned, clear_refs left them alone), so only the park's
#    marking can make the final dump (incremental, --track-mem) take it
#    instead of the pre-dump's copy. After the park (SIGHUP) it is
#    soft-dirty; after the restore (SIGUSR2) mrdirty checks every word
#    before the device writes again. tests/guest/criu-neg.sh runs the same
#    with the MRs deregistered before the park (ibv_dereg_mr() marks them;
#    before it did, the huge page's words were the pre-dump's).
# wait_line NAME PATTERN: NAME's log has a line matching PATTERN (30 s)
wait_line() {
	for _ in $(seq 300); do grep -q "$2" "$LOGDIR/criu-$1.log" && return 0; sleep 0.1; done
	return 1
}
start precopy migr_rxe0 "$MIGR_BUILD_DIR/tests/switch/mrdirty"
check precopy_huge_page_backs_the_mr grep -q 'mrdirty: thp=1' "$LOGDIR/criu-precopy.log"
mkdir -p "$IMG/pc1" "$IMG/pc2"
check precopy_predump criu pre-dump -t $SP -D "$IMG/pc1" -L "$PLUGIN_DIR" --track-mem -o pre.log -v4
if progressing precopy; then pass precopy_device_writes_after_predump; else fail precopy_device_writes_after_predump; fi
kill -USR1 $SP
if wait_line precopy 'mrdirty: quiet'; then pass precopy_quiet; else fail precopy_quiet "$LOGDIR/criu-precopy.log"; fi
grep 'mrdirty: quiet' "$LOGDIR/criu-precopy.log"
check precopy_premise_huge_page_not_soft_dirty grep -q 'mrdirty: quiet .*huge_soft_dirty=0/512 .*thp=1' "$LOGDIR/criu-precopy.log"
check precopy_park python3 "$CONTROL" $SP park
kill -HUP $SP
if wait_line precopy 'mrdirty: look huge_soft_dirty=512/512 '; then pass precopy_park_marked_huge_page; else fail precopy_park_marked_huge_page "$LOGDIR/criu-precopy.log"; fi
grep 'mrdirty: look' "$LOGDIR/criu-precopy.log"
check precopy_dump criu dump -t $SP -D "$IMG/pc2" --prev-images-dir ../pc1 --track-mem -L "$PLUGIN_DIR" -o dump.log -v4
wait $SP 2>/dev/null
check precopy_dump_incremental test -L "$IMG/pc2/parent"
check precopy_restore criu restore -D "$IMG/pc2" -L "$PLUGIN_DIR" -d -o restore.log -v4
kill -USR2 $SP
if wait_line precopy 'mrdirty: restored words intact'; then pass precopy_device_words_restored; else fail precopy_device_words_restored "$LOGDIR/criu-precopy.log"; fi
grep 'mrdirty: .*region:\|mrdirty: restored' "$LOGDIR/criu-precopy.log"
if progressing precopy; then pass precopy_runs_after_restore; else fail precopy_runs_after_restore; fi
finish precopy $SP mrdirty

# 7. A restored copy's own fence (migrd arms it before it resumes the
# copy): no commit in time, the process ends itself; committed, it runs on
start fence migr_rxe0
check fence_armed python3 "$CONTROL" $SP fence 3000
sleep 6
NAME=fence_ends_uncommitted_copy
if kill -0 $SP 2>/dev/null; then fail $NAME; else pass $NAME; fi
wait $SP 2>/dev/null
check fence_said_why grep -q "no commit of this restored copy in time" "$LOGDIR/criu-fence.verbs.log"
start fence-commit migr_rxe0
# (a python3 start takes a second or two in a TCG guest: 8 s to commit)
check fence_armed_again python3 "$CONTROL" $SP fence 8000
check fence_committed python3 "$CONTROL" $SP commit
sleep 10
if progressing fence-commit; then pass fence_committed_copy_runs_on; else fail fence_committed_copy_runs_on; fi
# refused (1), not unanswered (2)
check fence_commit_without_fence_refused sh -c "python3 $CONTROL $SP commit; [ \$? = 1 ]"
finish fence-commit $SP

summary criu
