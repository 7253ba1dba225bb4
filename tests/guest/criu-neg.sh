#!/bin/bash
# Pre-copy's diagnosis run (not part of tests/run.sh): does marking MR
# pages written (the park's, or ibv_dereg_mr()'s) bring what a device
# wrote after a pre-dump to the restored process? The same migration as
# tests/guest/criu.sh section 6, twice, with tests/switch/mrdirty:
# - marked: the target MRs are alive at the park, which releases them and
#   marks their pages written: every word must be right after the restore;
# - deregistered (mrdirty --dereg): mrdirty deregisters the target MRs
#   itself once the device's last words are in, before the park, so the
#   park knows no MR to mark: ibv_dereg_mr() marks them. Every word must be
#   right too. (Before the deregistration marked them, the huge page, not
#   soft-dirty, was taken from the pre-dump and its words were stale: the
#   data an application lost by deregistering an MR during a pre-copy.
#   The small pages stayed right: they were pinned at the pre-dump, and
#   clear_refs does not clean a pinned page's PTE, pte_is_pinned().)
# Prints, for each: mrdirty's pagemap readings (before the park, after
# it), the sizes of both dumps' pages images, CRIU's per-VMA pagemap lines
# for 512-page VMAs, and mrdirty's verdict. Exit 0 if both come out as
# said.
#
# usage (on the test bed):
#   buildlib/testbed/run.sh --timeout 600 -e MIGR_BUILD_DIR=$MIGR_BUILD/trixie \
#       -e LOGDIR=DIR -- tests/guest/criu-neg.sh
. "$(dirname "$0")/lib.sh"
CONTROL=$MIGR_TOP/tests/switch/control.py
PLUGIN_DIR=$MIGR_BUILD_DIR/lib/criu
MRDIRTY=$MIGR_BUILD_DIR/tests/switch/mrdirty
IMG=/run/migr-criu-neg
export VERBS_LOG_LEVEL=3

rm -rf "$IMG" && mkdir -p "$IMG"

# wait_line LOG PATTERN: LOG has a line matching PATTERN (30 s)
wait_line() {
	for _ in $(seq 300); do grep -q "$2" "$1" && return 0; sleep 0.1; done
	return 1
}

# rounds LOG: the last round count mrdirty printed
rounds() { grep -o 'rounds=[0-9]*' "$1" | tail -n 1 | cut -d= -f2; }

# run NAME [MRDIRTY ARGS...]: one migration; mrdirty's log in $LOG
run() {
	local name=$1 pid r0 d=$IMG/$1
	shift
	LOG=$LOGDIR/criu-neg-$name.log
	export VERBS_LOG_FILE=$LOGDIR/criu-neg-$name.verbs.log
	rm -f "$LOG" "$VERBS_LOG_FILE"
	mkdir -p "$d/pc1" "$d/pc2"
	echo "== $name"
	setsid "$MRDIRTY" migr_rxe0 "$@" </dev/null >>"$LOG" 2>&1 &
	pid=$!
	wait_line "$LOG" 'rounds=' || { echo "mrdirty did not start"; cat "$LOG"; return 1; }
	grep 'mrdirty: thp=' "$LOG"
	criu pre-dump -t $pid -D "$d/pc1" -L "$PLUGIN_DIR" --track-mem -o pre.log -v4 ||
		{ echo "pre-dump failed"; tail -n 20 "$d/pc1/pre.log"; return 1; }
	# two more rounds written by the device after the pre-dump
	r0=$(rounds "$LOG")
	for _ in $(seq 100); do
		sleep 0.2
		[ "$(rounds "$LOG")" -gt $((r0 + 1)) ] && break
	done
	echo "rounds at the pre-dump: $r0, before quiet: $(rounds "$LOG")"
	kill -USR1 $pid
	wait_line "$LOG" 'mrdirty: quiet' || { echo "no quiet"; cat "$LOG"; return 1; }
	python3 "$CONTROL" $pid park >"$LOGDIR/criu-neg-$name.park.json" ||
		{ echo "park failed"; cat "$LOGDIR/criu-neg-$name.park.json"; return 1; }
	kill -HUP $pid
	wait_line "$LOG" 'mrdirty: look' || { echo "no look"; return 1; }
	grep 'mrdirty: quiet\|mrdirty: look' "$LOG"
	criu dump -t $pid -D "$d/pc2" --prev-images-dir ../pc1 --track-mem -L "$PLUGIN_DIR" -o dump.log -v4 ||
		{ echo "dump failed"; tail -n 20 "$d/pc2/dump.log"; return 1; }
	wait $pid 2>/dev/null
	echo "parent link: $(readlink "$d/pc2/parent")"
	echo "pages images, bytes: pre-dump $(cat "$d"/pc1/pages-*.img | wc -c), dump $(cat "$d"/pc2/pages-*.img | wc -c)"
	echo "CRIU, 512-page VMAs (pre-dump, then dump):"
	grep -h 'Pagemap generated: .*512 \|Pagemap generated: 512 ' "$d/pc1/pre.log" "$d/pc2/dump.log" | sed 's/^/    /'
	criu restore -D "$d/pc2" -L "$PLUGIN_DIR" -d -o restore.log -v4 ||
		{ echo "restore failed"; tail -n 20 "$d/pc2/restore.log"; return 1; }
	kill -USR2 $pid
	wait_line "$LOG" 'mrdirty: restored\|mrdirty: FAIL'
	grep 'mrdirty: .*region:\|mrdirty: restored\|mrdirty: FAIL' "$LOG"
	kill -TERM $pid 2>/dev/null
	for _ in $(seq 100); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
}

if run marked && grep -q 'mrdirty: restored words intact' "$LOG" &&
	grep -q 'mrdirty: quiet .*huge_soft_dirty=0/512 ' "$LOG"; then
	pass neg_marked_words_right
else
	fail neg_marked_words_right "$LOG"
fi
if run dereg --dereg && grep -q 'mrdirty: restored words intact' "$LOG"; then
	pass neg_dereg_marks_too
else
	fail neg_dereg_marks_too "$LOG"
fi
summary criu-neg
