#!/bin/bash
# Package install test (host side): build the Debian packages if their inputs
# changed, prepare the stock guest root (Debian 13 with Debian's rdma-core),
# and run tests/guest/package-install.sh in a VM booted from it: install ours
# over Debian's, use migr_rxe0, go back to Debian's, check nothing is left.
#
# usage: tests/package-test.sh [--timeout S]
set -euo pipefail
. "$(dirname "$0")/../buildlib/lib/common.sh"
cd "$MIGR_TOP"

timeout=900
while [ $# -gt 0 ]; do
	case $1 in
	--timeout) timeout=${2:?}; shift 2 ;;
	*) die "unknown option '$1'" ;;
	esac
done

buildlib/build-debs.sh --if-changed
buildlib/testbed/prepare-stock.sh
# prepare-stock.sh must not rebuild the root under our VM.
exec 9>"$MIGR_CACHE/testbed-stock.lock"
flock -s 9
buildlib/testbed/run.sh --rootfs "$(buildlib/testbed/prepare-stock.sh --path)" --timeout "$timeout" \
	-e MIGR_DEBS="$MIGR_BUILD/debs" -- tests/guest/package-install.sh
