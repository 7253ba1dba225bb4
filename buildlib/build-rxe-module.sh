#!/bin/bash
# Build migr's rdma_rxe for the test bed's kernel, as the migr-rxe-dkms
# package builds it: Debian 13's rxe source (drivers/infiniband/sw/rxe of
# linux-source-6.12, fetched from the archive and checked against its index)
# laid out with kernel/rxe/patches and dkms.conf by kernel/rxe/dkms-source.sh,
# then `dkms build` against that kernel's headers in the trixie build root.
#
# usage: buildlib/build-rxe-module.sh    -> $MIGR_BUILD/kernel/rxe/rdma_rxe.ko
# Prints the module's path on stdout. The DKMS source and tree are kept in
# $MIGR_BUILD/kernel/rxe/dkms/{src,tree} (the build's log: tree/migr-rxe/
# VERSION/KERNEL/x86_64/log/make.log, or VERSION/build/make.log if it
# failed); nothing is added to the build root's /usr/src or /var/lib/dkms.
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"
. "$MIGR_TOP/kernel/rxe/source.conf"

out=$MIGR_BUILD/kernel/rxe
kdir=$MIGR_TOP/kernel/rxe
# The module's DKMS version: the packages' (debian/changelog), as in migr-rxe-dkms
ver=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' "$MIGR_TOP/debian/changelog")
[ -n "$ver" ] || die "no version in debian/changelog"

stamp=$( (echo "$KSRC_PACKAGE=$KSRC_VERSION $KERNEL migr-rxe/$ver"
	  cat "$kdir/patches/series" "$kdir/dkms.conf" "$kdir/dkms-source.sh"
	  grep -v '^#' "$kdir/patches/series" | while read -r p; do [ -n "$p" ] && cat "$kdir/patches/$p"; done
	  cat "$MIGR_TOP/kernel-uapi/rdma/migr_rxe_abi.h") | sha256sum | cut -d' ' -f1)
if [ -f "$out/rdma_rxe.ko" ] && [ "$(cat "$out/.migr-stamp" 2>/dev/null)" = "$stamp" ]; then
	echo "$out/rdma_rxe.ko"
	exit 0
fi

rxe=$(rxe_source)
rm -rf "$out"
mkdir -p "$out/dkms/src" "$out/dkms/tree"
"$kdir/dkms-source.sh" "$rxe" "$out/dkms/src/migr-rxe-$ver" "$ver" ||
	die "could not lay out the DKMS source of migr-rxe $ver"
# dkms build (which adds the module first) with the source and the DKMS tree
# under $out, which the build root sees at the same path. dkms signs
# nothing here: the root has no openssl to make its key with (so it says
# "modules won't be signed"); an unsigned module only taints a kernel that
# does not enforce signatures, as the test bed's does not.
log "dkms build -m migr-rxe -v $ver -k $KERNEL"
"$MIGR_TOP/buildlib/buildroot.sh" run -- dkms build -m migr-rxe -v "$ver" -k "$KERNEL" \
	--sourcetree "$out/dkms/src" --dkmstree "$out/dkms/tree" >&2 ||
	die "dkms build of migr-rxe $ver failed for $KERNEL (log: $out/dkms/tree/migr-rxe/$ver/build/make.log)"
# dkms compresses the module as the kernel's own are (xz on Debian 13)
ko=$out/dkms/tree/migr-rxe/$ver/$KERNEL/x86_64/module/rdma_rxe.ko
if [ -f "$ko" ]; then
	cp "$ko" "$out/rdma_rxe.ko"
elif [ -f "$ko.xz" ]; then
	xz -dc "$ko.xz" >"$out/rdma_rxe.ko"
else
	die "dkms built no $ko or $ko.xz"
fi
echo "$stamp" >"$out/.migr-stamp"
log "rdma_rxe with migr's methods built by DKMS for $KERNEL: $out/rdma_rxe.ko"
echo "$out/rdma_rxe.ko"
