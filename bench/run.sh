#!/bin/bash
# migr's data-path benchmark: the cycles migr adds to post_send, post_recv
# and poll_cq, identity path and translated path (after a live switch),
# each side by side with the lower provider measured in the same run.
#   1. host: migr's code over a fake lower provider of constant cost
#   2. test-bed VM (TCG): rxe0 vs migr_rxe0, then rxe1 vs migr after a
#      live switch of the process rxe0 -> rxe1; on the stock rdma_rxe (the
#      numbers translated after the switch), then on migr's (migr_rxe(7):
#      the objects keep their numbers, rows "kept")
# usage: bench/run.sh [--host-only | --vm-only] [--batches N] [--rounds N]
# Figures and how to read them: docs/performance.md. Not a test: it never
# fails on a figure, only when something does not run.
set -euo pipefail
. "$(dirname "$0")/../buildlib/lib/common.sh"

cd "$MIGR_TOP"
host=1 vm=1 batches=4000 rounds=50
while [ $# -gt 0 ]; do
	case $1 in
	--host-only) vm=0; shift ;;
	--vm-only) host=0; shift ;;
	--batches) batches=${2:?}; shift 2 ;;
	--rounds) rounds=${2:?}; shift 2 ;;
	*) sed -n '7p' "$0" >&2; exit 2 ;;
	esac
done

if [ $host = 1 ]; then
	"$MIGR_TOP/buildlib/build-host.sh" migr-bench-fastpath >/dev/null
	echo "== host: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n1), $(nproc) CPUs, $(uname -r)"
	"$MIGR_BUILD/host/bench/migr-bench-fastpath" --batches "$batches"
	echo
fi
if [ $vm = 1 ]; then
	# the program, libibverbs and the two providers it loads
	"$MIGR_TOP/buildlib/build-guest.sh" migr-bench-rxe migr-rdmav34 rxe-rdmav34 >/dev/null
	"$MIGR_TOP/buildlib/build-rxe-module.sh" >/dev/null
	echo "== test-bed VM (QEMU TCG, soft-RoCE): absolute cycles are emulation cycles; read the ratios"
	# the test bed's CPU model with RDTSCP, which the timer needs
	export MIGR_QEMU_CPU=${MIGR_QEMU_CPU:-Westmere,-cx16,+rdtscp}
	# rxe1 carries the process's loopback traffic after the switch only
	# (libibverbs warns about the providers this partial build left out)
	"$MIGR_TOP/buildlib/testbed/run.sh" --timeout 1800 -- bash -c \
		". tests/guest/lib.sh && ensure_rxe1 && echo '## stock rdma_rxe' &&
		 \$MIGR_BUILD_DIR/bench/migr-bench-rxe --rounds $rounds rxe0 migr_rxe0 rxe1 &&
		 load_migr_rxe && echo \"## migr's rdma_rxe\" &&
		 \$MIGR_BUILD_DIR/bench/migr-bench-rxe --rounds $rounds rxe0 migr_rxe0 rxe1" 2>&1 |
		grep -v "couldn't load driver"
fi
