#!/bin/bash
# migr's switch benchmark: a live switch of a running RDMA process
# (tests/switch/selfpair: N pairs of RC QPs talking) between the two
# soft-RoCE devices of one test-bed VM, phase by phase (the medians of
# several switches back and forth): how the RDMA part of a move grows
# with the QPs, without CRIU and a second VM (bench/migrate.sh has those).
# usage: bench/switch.sh [--pairs "8 32 128 512"] [--switches N] [--smp N] [--busy]
# (--smp: the guest's vCPUs, 2 unless told; a migration's guests have one.
# --busy: the process polls in a loop, as perftest does, and as
# bench/migrate.sh's does; else it rests 50 us after an empty poll)
# Figures and how to read them: docs/performance.md. Not a test: it never
# fails on a figure, only when something does not run.
set -euo pipefail
. "$(dirname "$0")/../buildlib/lib/common.sh"

cd "$MIGR_TOP"
pairs="8 32 128 512" switches=6 smp=2 busy=""
while [ $# -gt 0 ]; do
	case $1 in
	--pairs) pairs=${2:?}; shift 2 ;;
	--switches) switches=${2:?}; shift 2 ;;
	--smp) smp=${2:?}; shift 2 ;;
	--busy) busy=busy; shift ;;
	*) sed -n '7p' "$0" >&2; exit 2 ;;
	esac
done
"$MIGR_TOP/buildlib/build-guest.sh" >/dev/null
echo "== test-bed VM (QEMU TCG, $smp vCPUs, soft-RoCE, Debian 13${busy:+, the process polls in a loop}): emulated; read the growth"
"$MIGR_TOP/buildlib/testbed/run.sh" --smp "$smp" --timeout 3000 -- bench/switch-guest.sh "$pairs" "$switches" $busy 2>&1 |
	sed "/ Killed /d"
