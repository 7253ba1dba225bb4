#!/bin/bash
# migr's migration benchmark: migrctl migrate of a running RDMA process
# (tests/switch/selfpair: N pairs of RC QPs talking, M MiB more memory
# registered and written) between the two test-bed VMs, phase by phase
# as MigrRDMA's Fig. 3 names them, with and without pre-copy; beside it,
# in the same run, plain CRIU (dump and restore, no RDMA) of a process
# holding the same memory: what CRIU costs without migr.
# With --module, both guests run migr's rdma_rxe (migr_rxe(7)): objects
# keep their numbers, partners are re-pointed, and the run is made twice,
# the destination holding the mover's numbers from the check on
# (hold_numbers = yes, migrd(8)) and not (no), side by side.
# usage: bench/migrate.sh [--pairs "1 8 32 128 512"] [--mem "0 1 64 256 1024"] [--module]
# Figures and how to read them: docs/performance.md. Not a test: it never
# fails on a figure, only when something does not run.
set -euo pipefail
. "$(dirname "$0")/../buildlib/lib/common.sh"

cd "$MIGR_TOP"
pairs="1 8 32 128 512" mems="0 1 64 256 1024" holds=default
while [ $# -gt 0 ]; do
	case $1 in
	--pairs) pairs=${2:?}; shift 2 ;;
	--mem) mems=${2:?}; shift 2 ;;
	--module) holds="yes no"; shift ;;
	*) sed -n '12p' "$0" >&2; exit 2 ;;
	esac
done
"$MIGR_TOP/buildlib/build-guest.sh" >/dev/null
# the guests load it (tests/guest/lib.sh, load_migr_rxe)
[ "$holds" = default ] || "$MIGR_TOP/buildlib/build-rxe-module.sh" >/dev/null
echo "== test-bed VMs (QEMU TCG, soft-RoCE, Debian 13, CRIU 4.1.1): emulated; read the shares"
# Each guest holds the registered memory, its images (in its tmpfs) and
# the copy restored from them: three times the largest, and 2 GiB more
max=0
for m in $mems; do [ "$m" -le "$max" ] || max=$m; done
for hold in $holds; do
	[ "$hold" = default ] || echo "== migr's rdma_rxe in both guests; the destination holds the mover's numbers: hold_numbers = $hold"
	"$MIGR_TOP/buildlib/testbed/run.sh" --two --mem "$((2048 + 3 * max))M" --timeout 7200 \
		--a "bench/migrate-guest.sh a '$pairs' '$mems' $hold" \
		--b "bench/migrate-guest.sh b '$pairs' '$mems' $hold" 2>&1 |
		sed -n '/ Killed /d; s/^A| //p'
done
