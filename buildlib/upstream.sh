#!/bin/bash
# Prepare the rdma-core fork: fetch Debian's pinned rdma-core orig tarball,
# unpack it, apply rdma-core/patches/series and put providers-migr/ in place
# as providers/migr, migrd/ (daemon and tool) as migrd, criu/ (the CRIU
# plugin) as criu, common/ (what the provider, migrd and the plugin share)
# as common, and the uapi header of migr's rdma_rxe methods
# (kernel-uapi/rdma/) in kernel-headers/rdma/.
#
# usage: buildlib/upstream.sh [--dest DIR] [--copy] [--force]
#   --dest DIR  where the prepared tree goes (default build/src/rdma-core-VER)
#   --copy      copy providers-migr/, migrd/, criu/ and common/ instead of
#               linking them
#   --force     re-create the tree even if it is up to date
# Prints the prepared tree's path on stdout.
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"
. "$MIGR_TOP/buildlib/upstream.conf"

dest="" copy=0 force=0
while [ $# -gt 0 ]; do
	case $1 in
	--dest) dest=$2; shift 2 ;;
	--copy) copy=1; shift ;;
	--force) force=1; shift ;;
	*) die "unknown option '$1'" ;;
	esac
done
dest=${dest:-$MIGR_BUILD/src/rdma-core-$UPSTREAM_VERSION}
patches=$MIGR_TOP/rdma-core/patches

# Our folders and where each goes in the tree
placed="providers-migr:providers/migr migrd:migrd criu:criu common:common"
# The stamp names everything the tree is made of; a change re-creates it.
stamp=$( (echo "$UPSTREAM_ORIG_SHA256 copy=$copy placed=$placed"; cat "$patches/series";
	  grep -v '^#' "$patches/series" | while read -r p; do [ -n "$p" ] && cat "$patches/$p"; done) |
	 sha256sum | cut -d' ' -f1)
up_to_date() { [ $force -eq 0 ] && [ -f "$dest/.migr-stamp" ] && [ "$(cat "$dest/.migr-stamp")" = "$stamp" ]; }
if up_to_date; then
	echo "$dest"
	exit 0
fi
# The host's and the guest's builds may prepare it side by side
# (tests/run.sh): one at a time, the second finding it done
mkdir -p "${dest%/*}"
exec 8>"$dest.lock"
wait_lock 8 -x 600 "another upstream.sh preparing $dest"
if up_to_date; then
	echo "$dest"
	exit 0
fi

command -v curl >/dev/null || apt_install curl ca-certificates
command -v patch >/dev/null || apt_install patch
tarball=$MIGR_CACHE/dl/$UPSTREAM_ORIG
fetch_verified "$(debian_mirror)/$UPSTREAM_POOL/$UPSTREAM_ORIG" "$tarball" "$UPSTREAM_ORIG_SHA256"

rm -rf "$dest" "$dest.tmp"
mkdir -p "$dest.tmp"
tar -xzf "$tarball" -C "$dest.tmp" --strip-components=1
n=0
while read -r p; do
	case $p in '' | '#'*) continue ;; esac
	[ -f "$patches/$p" ] || die "series names missing patch $p"
	patch -d "$dest.tmp" -p1 -s --no-backup-if-mismatch -F0 <"$patches/$p" ||
		die "patch $p does not apply to rdma-core $UPSTREAM_VERSION"
	n=$((n + 1))
done <"$patches/series"

for f in $placed; do
	if [ $copy -eq 1 ]; then
		cp -a "$MIGR_TOP/${f%%:*}" "$dest.tmp/${f#*:}"
	else
		ln -s "$MIGR_TOP/${f%%:*}" "$dest.tmp/${f#*:}"
	fi
done
if [ $copy -eq 1 ]; then
	cp "$MIGR_TOP/kernel-uapi/rdma/migr_rxe_abi.h" "$dest.tmp/kernel-headers/rdma/"
else
	ln -s "$MIGR_TOP/kernel-uapi/rdma/migr_rxe_abi.h" "$dest.tmp/kernel-headers/rdma/"
fi
echo "$stamp" >"$dest.tmp/.migr-stamp"
mv "$dest.tmp" "$dest"
log "rdma-core $UPSTREAM_VERSION prepared in $dest ($n patches)"
echo "$dest"
