#!/bin/bash
# Build migr's rdma_rxe for the test bed's kernel: Debian 13's rxe source
# (drivers/infiniband/sw/rxe of linux-source-6.12, fetched from the archive
# and checked against its index) with kernel/rxe/patches, built against
# that kernel's headers in the trixie build root.
#
# usage: buildlib/build-rxe-module.sh    -> $MIGR_BUILD/kernel/rxe/rdma_rxe.ko
# Prints the module's path on stdout.
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"
. "$MIGR_TOP/kernel/rxe/source.conf"

out=$MIGR_BUILD/kernel/rxe
patches=$MIGR_TOP/kernel/rxe/patches
src=$MIGR_CACHE/kernel-src/$KSRC_VERSION # the pristine rxe directory

stamp=$( (echo "$KSRC_PACKAGE=$KSRC_VERSION $KERNEL"; cat "$patches/series";
	  grep -v '^#' "$patches/series" | while read -r p; do [ -n "$p" ] && cat "$patches/$p"; done
	  cat "$MIGR_TOP/kernel-uapi/rdma/migr_rxe_abi.h") | sha256sum | cut -d' ' -f1)
if [ -f "$out/rdma_rxe.ko" ] && [ "$(cat "$out/.migr-stamp" 2>/dev/null)" = "$stamp" ]; then
	echo "$out/rdma_rxe.ko"
	exit 0
fi

# Only rxe's directory of the 150 MB tarball, kept: unpacking takes a while
if [ ! -d "$src/drivers/infiniband/sw/rxe" ]; then
	deb=$(fetch_trixie_deb "$KSRC_PACKAGE=$KSRC_VERSION" "$MIGR_CACHE/dl")
	log "unpacking rxe's source from $deb"
	rm -rf "$src.tmp" && mkdir -p "$src.tmp"
	dpkg-deb --fsys-tarfile "$deb" | tar -xO "./$KSRC_TARBALL" |
		tar -xJ -C "$src.tmp" --strip-components=1 "$KSRC_PACKAGE/drivers/infiniband/sw/rxe"
	rm -rf "$src" && mv "$src.tmp" "$src"
fi

rm -rf "$out" "$out.tmp" && mkdir -p "$out.tmp"
cp -a "$src/drivers" "$out.tmp/"
while read -r p; do
	case $p in '' | '#'*) continue ;; esac
	patch -d "$out.tmp" -p1 -s --no-backup-if-mismatch -F0 <"$patches/$p" ||
		die "patch $p does not apply to $KSRC_PACKAGE $KSRC_VERSION"
done <"$patches/series"
# An out-of-tree build of that directory, with migr's uapi header
mv "$out.tmp/drivers/infiniband/sw/rxe" "$out"
rm -rf "$out.tmp"
mkdir -p "$out/include/rdma"
cp "$MIGR_TOP/kernel-uapi/rdma/migr_rxe_abi.h" "$out/include/rdma/"
sed -i 's/^obj-\$(CONFIG_RDMA_RXE) += rdma_rxe.o$/obj-m += rdma_rxe.o\nccflags-y += -I$(src)\/include/' "$out/Makefile"
grep -q '^obj-m += rdma_rxe.o' "$out/Makefile" || die "rxe's Makefile has no obj-\$(CONFIG_RDMA_RXE) line"
# No BTF for the module: Debian's kernel has it, pahole is not needed here
"$MIGR_TOP/buildlib/buildroot.sh" run -- make -s -C "/usr/src/linux-headers-$KERNEL" M="$out" \
	CONFIG_DEBUG_INFO_BTF_MODULES= modules >&2 || die "the module did not build (kernel $KERNEL)"
strip --strip-debug "$out/rdma_rxe.ko"
echo "$stamp" >"$out/.migr-stamp"
log "rdma_rxe with migr's methods built for $KERNEL: $out/rdma_rxe.ko"
echo "$out/rdma_rxe.ko"
