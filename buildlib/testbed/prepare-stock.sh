#!/bin/bash
# Prepare a second guest root for the package install test: a clean Debian 13
# with the distribution's own RDMA packages installed by apt, as a user would
# have it, and the exact stock .debs of those packages (checksum-verified
# against trixie's signed index) in /var/cache/migr-stock/, so the guest can
# go back to them without network. Boot it with
#   buildlib/testbed/run.sh --rootfs "$(buildlib/testbed/prepare-stock.sh --path)" -- CMD
#
# usage: buildlib/testbed/prepare-stock.sh [--check | --refresh | --path]
#   --check    exit 0 if the stock root is prepared and current (no network), 1 if not
#   --refresh  rebuild it with trixie's newest packages
#   --path     print where it lives
# Unlike the main rootfs, man pages and docs are kept: the test checks what
# the packages install. Cached in $MIGR_CACHE/testbed/rootfs-stock.
set -euo pipefail
. "$(dirname "$0")/../lib/common.sh"

# libjansson4: ours depend on it (the provider, migrd and migrctl read JSON
# with jansson); the offline guest cannot fetch it as a user's apt would,
# so the stock system has it (and keeps it when it goes back)
PACKAGES=(
	kmod iproute2 procps util-linux busybox iputils-ping
	ibverbs-utils ibverbs-providers rdmacm-utils python3-pyverbs perftest
	libjansson4
)
TB=$MIGR_CACHE/testbed
R=$TB/rootfs-stock
STAMP=$TB/stamps/rootfs-stock
LOCK=$MIGR_CACHE/testbed-stock.lock

mode=${1:-}
case $mode in '' | --check | --refresh) ;; --path) echo "$R"; exit 0 ;; *) sed -n '9,12s/^# \{0,1\}//p' "$0" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || die "must run as root (mmdebstrap)"

want() {
	echo "trixie minbase: ${PACKAGES[*]}"
	cat "$TB/stamps/kernel" 2>/dev/null
}
current() { [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$(want)" ] && [ -x "$R/usr/bin/ibv_devices" ]; }

if [ "$mode" = --check ]; then
	"$MIGR_TOP/buildlib/testbed/prepare.sh" --check && current
	exit
fi
# The kernel (and its modules) come from the main test bed.
"$MIGR_TOP/buildlib/testbed/prepare.sh" --check || "$MIGR_TOP/buildlib/testbed/prepare.sh"
mkdir -p "$TB/stamps"
exec 9>"$LOCK"
# tests/package-test.sh holds this lock shared while its VM runs.
wait_lock 9 -x 3600 "the running install test"
[ "$mode" = --refresh ] && rm -f "$STAMP"
current && { log "stock root ready: $R"; exit 0; }

K=$(sed -n 's/^linux-image-\(.*\)=.*/\1/p' "$TB/stamps/kernel")
log "stock root (trixie minbase + ${PACKAGES[*]}; about a minute)"
mapfile -t mirrors < <(trixie_apt_lines)
rm -rf "$R.tmp"
mmdebstrap --quiet --variant=minbase --mode=root --include="$(IFS=,; echo "${PACKAGES[*]}")" \
	trixie "$R.tmp" "${mirrors[@]}" >"$TB/rootfs-stock.log" 2>&1 ||
	{ tail -n 20 "$TB/rootfs-stock.log" >&2; rm -rf "$R.tmp"; die "mmdebstrap of the stock root failed (log: $TB/rootfs-stock.log)"; }
mkdir -p "$R.tmp/usr/lib/modules"
cp -a "$TB/kernel/usr/lib/modules/$K" "$R.tmp/usr/lib/modules/"

# The stock .debs of every installed package built from rdma-core, at the
# installed version: what the test downgrades to.
mkdir -p "$R.tmp/var/cache/migr-stock"
n=0
while read -r pkg ver src; do
	[ "${src%% *}" = rdma-core ] || continue
	deb=$(fetch_trixie_deb "$pkg=$ver" "$TB/dl") || exit 1
	cp "$deb" "$R.tmp/var/cache/migr-stock/"
	n=$((n + 1))
done < <(chroot "$R.tmp" dpkg-query -W -f='${Package} ${Version} ${source:Package}\n')
[ $n -gt 0 ] || die "no rdma-core package got installed in the stock root"
rm -rf "$R"
mv "$R.tmp" "$R"
want >"$STAMP"
log "stock root ready: $R ($n stock rdma-core debs in /var/cache/migr-stock)"
