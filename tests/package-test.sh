#!/bin/bash
# Package install test (host side): build the Debian packages if their inputs
# changed, prepare the stock guest root (Debian 13 with Debian's rdma-core),
# and run tests/guest/package-install.sh in a VM booted from it: install ours
# over Debian's, use migr_rxe0, go back to Debian's, check nothing is left.
# migr-rxe-dkms's file list is checked on the host (it is not installed).
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
# migr-rxe-dkms is not installed in the guest: its configuration would build
# the module (DKMS, kernel headers the stock image lacks, minutes under TCG).
# Its file list is checked here instead: a wrong layout fails the test.
dkms_deb=$(ls "$MIGR_BUILD"/debs/migr-rxe-dkms_*_all.deb 2>/dev/null | head -n1)
[ -n "$dkms_deb" ] || die "no migr-rxe-dkms package in $MIGR_BUILD/debs"
dkms_ver=$(dpkg-deb -f "$dkms_deb" Version)
dkms_files=$(dpkg-deb -c "$dkms_deb" | sed -E 's/^([^ ]+ +){5}//')
for f in dkms.conf Makefile rxe.c rxe_migr.c rxe_verbs.c include/rdma/migr_rxe_abi.h; do
	grep -qxF "./usr/src/migr-rxe-$dkms_ver/$f" <<<"$dkms_files" ||
		die "migr-rxe-dkms $dkms_ver lacks /usr/src/migr-rxe-$dkms_ver/$f"
done
stray=$(grep -v -e "^\./usr/src/migr-rxe-$dkms_ver/" -e '^\./usr/share/doc/migr-rxe-dkms/' <<<"$dkms_files" |
	grep -vx -e ./ -e ./usr/ -e ./usr/src/ -e ./usr/share/ -e ./usr/share/doc/ || true)
[ -z "$stray" ] || die "migr-rxe-dkms $dkms_ver has files outside /usr/src/migr-rxe-$dkms_ver: $(echo $stray)"
log "ok: migr-rxe-dkms $dkms_ver ships /usr/src/migr-rxe-$dkms_ver ($(grep -c '[^/]$' <<<"$dkms_files") files)"
buildlib/testbed/prepare-stock.sh
# prepare-stock.sh must not rebuild the root under our VM.
exec 9>"$MIGR_CACHE/testbed-stock.lock"
wait_lock 9 -s 3600 "the stock guest's preparation"
buildlib/testbed/run.sh --rootfs "$(buildlib/testbed/prepare-stock.sh --path)" --timeout "$timeout" \
	-e MIGR_DEBS="$MIGR_BUILD/debs" -- tests/guest/package-install.sh
