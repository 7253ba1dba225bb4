#!/bin/bash
# Host side of the upstream suite (a step of tests/run.sh): boots the guest
# for tests/guest/upstream-suite.sh, which runs rdma-core's suite on rxe0,
# then on migr_rxe0, and compares the two.
#
# The rxe0 run is the baseline. It depends on the guest build (our
# libibverbs, rxe's provider and pyverbs; migr's provider is loaded beside
# rxe's, but rxe0's tests never call it, so it is left out of the key),
# upstream's tests, the test bed (kernel, initramfs, root, its packages) and
# the scripts that boot and run it, and on nothing else. Its log is cached
# under ~/.cache/migr/upstream-baseline/KEY/, KEY the sha256 of all of
# those, once a step with it passed; the next run with the same KEY gives
# it to the guest instead of running rxe0 again (about 45-90 s here). The
# migr_rxe0 run, the comparison and the rdma_cm runs are made every time.
# The cache is never required; MIGR_UPSTREAM_BASELINE=fresh ignores it.
#
# usage: tests/upstream-suite/run.sh [buildlib/testbed/run.sh options]
set -uo pipefail
. "$(dirname "$0")/../../buildlib/lib/common.sh"
. "$MIGR_TOP/buildlib/upstream.conf"
cd "$MIGR_TOP" || exit 1

CACHE=$MIGR_CACHE/upstream-baseline
LOGS=$MIGR_TOP/build/test-logs # the guest's LOGDIR (tests/guest/lib.sh)
STAGE=$MIGR_BUILD/upstream-baseline # shared with the guest
RAW=rxe0

# key: everything the rxe0 run depends on; fails if a part is missing
key() {
	local rdma=$MIGR_BUILD/trixie/rdma-core src=$MIGR_BUILD/src/rdma-core-$UPSTREAM_VERSION
	local tb=$MIGR_CACHE/testbed
	set -o pipefail
	{
		# not migr's provider: the rxe0 run calls rxe alone, and a change
		# of migr's that breaks listing devices shows in the migr_rxe0 run
		(cd "$rdma" && find lib python etc -name __pycache__ -prune -o \( -type f -o -type l \) -print0 |
			grep -zv '^lib/libmigr-rdmav[0-9]*\.so$' | sort -z | xargs -0 sha256sum) || return 1
		(cd "$src" && find tests -name __pycache__ -prune -o -type f -print0 | sort -z | xargs -0 sha256sum) || return 1
		cat "$tb/stamps/kernel" "$tb/stamps/initramfs" "$tb/stamps/rootfs" "$tb/stamps/modules" || return 1
		sha256sum "$tb/rootfs/var/lib/dpkg/status" || return 1
		sha256sum tests/guest/upstream-suite.sh tests/guest/lib.sh buildlib/upstream.conf \
			buildlib/testbed/guest-init.sh buildlib/testbed/run.sh || return 1
	} | sha256sum | cut -d' ' -f1
}

k=$(key 2>/dev/null) || k=
env=()
rm -rf "$STAGE"
if [ -z "$k" ]; then
	echo "upstream-suite: no baseline key (a part of the build or test bed is missing): rxe0 runs"
elif [ "${MIGR_UPSTREAM_BASELINE:-}" = fresh ]; then
	echo "upstream-suite: MIGR_UPSTREAM_BASELINE=fresh: rxe0 runs"
elif [ -s "$CACHE/$k/upstream-$RAW.log" ] && [ -s "$CACHE/$k/upstream-$RAW.log.rc" ]; then
	mkdir -p "$STAGE"
	cp "$CACHE/$k/upstream-$RAW.log" "$CACHE/$k/upstream-$RAW.log.rc" "$STAGE/"
	env=(-e UPSTREAM_SUITE_BASELINE="$STAGE")
	echo "upstream-suite: $RAW's run from the cache, key $k (same build, tests and test bed; MIGR_UPSTREAM_BASELINE=fresh runs it)"
else
	echo "upstream-suite: no cached $RAW run for key $k: rxe0 runs"
fi
# the guest's build is the one the key was taken of
buildlib/testbed/run.sh -e MIGR_BUILD="$MIGR_BUILD" -e MIGR_BUILD_DIR="$MIGR_BUILD/trixie" "${env[@]}" "$@" \
	-- tests/guest/upstream-suite.sh
rc=$?
rm -rf "$STAGE"
# a fresh rxe0 run of a step that passed becomes the baseline for its key
if [ $rc -eq 0 ] && [ -n "$k" ] && [ ${#env[@]} -eq 0 ] && [ -s "$LOGS/upstream-$RAW.log" ] &&
	[ "$(key 2>/dev/null)" = "$k" ]; then
	mkdir -p "$CACHE/$k.tmp" &&
		cp "$LOGS/upstream-$RAW.log" "$LOGS/upstream-$RAW.log.rc" "$CACHE/$k.tmp/" &&
		rm -rf "$CACHE/$k" && mv "$CACHE/$k.tmp" "$CACHE/$k" &&
		echo "upstream-suite: $RAW's run cached (key $k)"
	# keep the 10 newest keys
	ls -1td "$CACHE"/*/ 2>/dev/null | tail -n +11 | xargs -r rm -rf
fi
exit $rc
