#!/bin/bash
# In the guest: upstream rdma-core's own test suite (tests/ of the patched
# tree build/src/rdma-core-VER, run with the guest build's pyverbs) on rxe0,
# then on its twin migr_rxe0; tests/upstream-suite/compare.py then compares
# the two runs against tests/upstream-suite/allowlist.txt. Exit status:
# compare.py's (0 same, 1 unexplained difference, 2 a run crashed or is not
# sane), or 2 if the runs cannot even start.
#
# usage (host): buildlib/testbed/run.sh --mem 3G --timeout 1800 -- tests/guest/upstream-suite.sh
# Environment: UPSTREAM_SUITE_TIMEOUT  limit per run in seconds (default 800)
#              UPSTREAM_SUITE_DEVS     "RAW MIGR" (default "rxe0 migr_rxe0")
#              UPSTREAM_SUITE_BASELINE a directory with upstream-RAW.log and its
#                .rc from an earlier run of the same build and test bed: RAW
#                is not run again (tests/upstream-suite/run.sh keeps them)
# Logs: build/test-logs/upstream-<dev>.log (+ .rc: its exit status),
#       build/test-logs/upstream-compare.txt (the report).
. "$(dirname "$0")/lib.sh"
. "$MIGR_TOP/buildlib/upstream.conf"

SRC=${MIGR_BUILD:-$MIGR_TOP/build}/src/rdma-core-$UPSTREAM_VERSION
TESTS=$SRC/tests
LIMIT=${UPSTREAM_SUITE_TIMEOUT:-800}
read -r RAW MIGR <<<"${UPSTREAM_SUITE_DEVS:-rxe0 migr_rxe0}"
COMPARE=$MIGR_TOP/tests/upstream-suite/compare.py

die() { echo "upstream-suite: error: $*" >&2; exit 2; }

# Preconditions, each with a plain message rather than 321 confusing errors.
[ -f "$TESTS/run_tests.py" ] || die "no upstream test suite at $TESTS (run buildlib/upstream.sh)"
grep -q 'def release_contexts' "$TESTS/base.py" ||
	die "$TESTS/base.py lacks patch 0005 (it crashes under Python 3.13); re-run buildlib/upstream.sh"
python3 -c 'import pyverbs.device' 2>/dev/null ||
	die "pyverbs does not import from $RDMA_BUILD/python (is the guest build complete?)"
for t in rdma ip timeout; do command -v $t >/dev/null || die "the guest lacks '$t'"; done
devs=$(python3 -c 'import pyverbs.device as d; print(" ".join(x.name.decode() for x in d.get_device_list()))')
for dev in "$RAW" "$MIGR"; do
	[[ " $devs " == *" $dev "* ]] || die "no verbs device $dev (devices: ${devs:-none})"
done

echo "upstream rdma-core $UPSTREAM_VERSION test suite ($TESTS), $RAW vs $MIGR, python $(python3 -c 'import platform; print(platform.python_version())')"
work=$(mktemp -d) # the suite's working directory: keep its files out of the repo
trap 'rm -rf "$work"' EXIT
declare -A took=()
base=${UPSTREAM_SUITE_BASELINE:-}
for dev in "$RAW" "$MIGR"; do
	log=$LOGDIR/upstream-$dev.log
	if [ "$dev" = "$RAW" ] && [ -n "$base" ] && [ -s "$base/upstream-$dev.log" ] && [ -s "$base/upstream-$dev.log.rc" ]; then
		cp "$base/upstream-$dev.log" "$log" && cp "$base/upstream-$dev.log.rc" "$log.rc" ||
			die "cannot copy the baseline from $base"
		took[$dev]=cached
		echo "== $dev: the baseline's log, from an earlier run of this build and test bed ($base) > $log"
		echo "   exit status $(cat "$log.rc"): $(grep -E '^(Ran [0-9]+ tests|OK|FAILED)' "$log" | tr '\n' ' ')"
		continue
	fi
	echo "== $dev: python3 $TESTS/run_tests.py --dev $dev -v (limit ${LIMIT}s) > $log"
	t0=$SECONDS
	# -u and a single stream keep the tests' own output where it happened;
	# the fault handler prints the Python stack if the interpreter crashes.
	(cd "$work" && PYTHONFAULTHANDLER=1 timeout -k 30 "$LIMIT" \
		python3 -u "$TESTS/run_tests.py" --dev "$dev" -v) >"$log" 2>&1
	rc=$?
	took[$dev]=$((SECONDS - t0))
	echo "$rc" >"$log.rc"
	echo "   exit status $rc after ${took[$dev]}s: $(grep -E '^(Ran [0-9]+ tests|OK|FAILED)' "$log" | tr '\n' ' ')"
done

echo "== compare"
python3 "$COMPARE" --raw-dev "$RAW" --migr-dev "$MIGR" --min-tests 300 --min-passed 50 \
	"$LOGDIR/upstream-$RAW.log" "$LOGDIR/upstream-$MIGR.log" | tee "$LOGDIR/upstream-compare.txt"
status=${PIPESTATUS[0]}
# The rdma_cm tests find their device by name in the kernel, which knows no
# twin (see the allow-list); run them once more the way rdma_cm users reach
# the twin: twins listed first, so rdma_cm resolves the address to it.
log=$LOGDIR/upstream-rdmacm-first.log
echo "== rdma_cm tests over $MIGR: RDMAV_STACKED_DEVICES=first run_tests.py --dev $RAW test_rdmacm > $log"
rm -f "$log.verbs"
(cd "$work" && RDMAV_STACKED_DEVICES=first VERBS_LOG_LEVEL=3 VERBS_LOG_FILE=$log.verbs \
	timeout -k 30 "$LIMIT" python3 -u "$TESTS/run_tests.py" --dev "$RAW" -v test_rdmacm) >"$log" 2>&1
rc=$?
echo "   exit status $rc: $(grep -E '^(Ran [0-9]+ tests|OK|FAILED)' "$log" | tr '\n' ' ')"
ran=$(sed -n 's/^Ran \([0-9]*\) tests.*/\1/p' "$log")
if [ $rc -ne 0 ] || [ "${ran:-0}" -lt 10 ] || ! grep -q "$MIGR: .*opened over $RAW" "$log.verbs"; then
	echo "upstream-suite: rdma_cm tests over $MIGR failed (rc=$rc, ran ${ran:-0}, twin opened: $(grep -c "opened over" "$log.verbs" 2>/dev/null))"
	tail -n 20 "$log"
	[ "$status" -eq 0 ] && status=1
fi
[ "${took[$RAW]}" = cached ] || took[$RAW]+=s
echo "timing: $RAW ${took[$RAW]}, $MIGR ${took[$MIGR]}s (report: $LOGDIR/upstream-compare.txt)"
# CI reads the last line: keep compare.py's "N passed, N failed, N skipped" last.
tail -n 1 "$LOGDIR/upstream-compare.txt"
exit "$status"
