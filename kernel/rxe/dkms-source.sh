#!/bin/bash
# Lay out migr's rdma_rxe as a DKMS source tree: Linux's rxe directory
# (drivers/infiniband/sw/rxe) with this directory's patches/, migr's uapi
# header as include/rdma/migr_rxe_abi.h, rxe's Makefile made an out-of-tree
# one, and dkms.conf with its version filled in.
#
# usage: kernel/rxe/dkms-source.sh SRC DEST VERSION
#   SRC      rxe's pristine directory, or a Linux source tarball to take it
#            from (Debian's /usr/src/linux-source-6.12.tar.xz)
#   DEST     the tree to make (replaced if it exists), e.g.
#            /usr/src/migr-rxe-VERSION
#   VERSION  dkms.conf's PACKAGE_VERSION
#
# Used by buildlib/build-rxe-module.sh (the test bed's module), by
# debian/rules (migr-rxe-dkms) and by redhat/rdma-core.spec. Needs bash,
# patch, sed, tar and xz; writes nothing outside DEST.
set -euo pipefail

die() { echo "${0##*/}: error: $*" >&2; exit 1; }

[ $# -eq 3 ] || { sed -n '7,13s/^# \{0,1\}//p' "$0" >&2; exit 2; }
src=$1 dest=${2%/} ver=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
header=$here/../../kernel-uapi/rdma/migr_rxe_abi.h
rxe=drivers/infiniband/sw/rxe

[ -n "$dest" ] && [ "$dest" != / ] || die "bad destination '$2'"
case $ver in '' | *[!-+.~:0-9A-Za-z]*) die "bad version '$ver'" ;; esac
[ -f "$header" ] || die "no $header"
[ -f "$here/dkms.conf" ] && [ -f "$here/patches/series" ] || die "no dkms.conf or patches/series in $here"

tmp=$dest.tmp
rm -rf "$tmp" && mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
if [ -d "$src" ]; then
	[ -f "$src/rxe.c" ] || die "$src is not rxe's directory (no rxe.c)"
	cp -a "$src/." "$tmp/"
elif [ -f "$src" ]; then
	# The tarball's one top directory (linux-source-6.12/), then rxe's
	top=$(tar -tf "$src" 2>/dev/null | head -n1) || true
	top=${top%%/*}
	[ -n "$top" ] || die "$src is not a tarball"
	tar -xf "$src" -C "$tmp" --strip-components=5 "$top/$rxe" || die "no $rxe in $src"
	[ -f "$tmp/rxe.c" ] || die "no $rxe/rxe.c in $src"
else
	die "no such file or directory: $src"
fi

# The patches name a/drivers/infiniband/sw/rxe/FILE: -p5 leaves FILE
while read -r p; do
	case $p in '' | '#'*) continue ;; esac
	patch -d "$tmp" -p5 -s --no-backup-if-mismatch -F0 <"$here/patches/$p" ||
		die "patch $p does not apply to $src"
done <"$here/patches/series"
find "$tmp" -name '*.orig' -o -name '*.rej' | grep -q . && die "patch left .orig or .rej files"

mkdir -p "$tmp/include/rdma"
cp "$header" "$tmp/include/rdma/"
# In the kernel, obj-$(CONFIG_RDMA_RXE); out of tree, always, with the header
sed -i 's/^obj-\$(CONFIG_RDMA_RXE) += rdma_rxe.o$/obj-m += rdma_rxe.o\nccflags-y += -I$(src)\/include/' "$tmp/Makefile"
grep -q '^obj-m += rdma_rxe.o$' "$tmp/Makefile" || die "rxe's Makefile has no obj-\$(CONFIG_RDMA_RXE) line"
rm -f "$tmp/Kconfig"
sed "s/#MODULE_VERSION#/$ver/" "$here/dkms.conf" >"$tmp/dkms.conf"
chmod -R u=rwX,go=rX "$tmp"

rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$tmp" "$dest"
trap - EXIT
