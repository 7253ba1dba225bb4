#!/bin/bash
# A Debian 13 (trixie) build root, so that what we build for the trixie guest
# (pyverbs for cpython-313, kernel modules with gcc-14) is built with trixie's
# toolchain on whatever Debian the host runs.
#
# usage: buildlib/buildroot.sh ensure [--upgrade]   create it, or bring it to the package set
#        buildlib/buildroot.sh run [--] CMD...      run CMD inside it (creating it if needed)
#        buildlib/buildroot.sh path                 print where it lives
#
# The root lives in $MIGR_CACHE/buildroot-trixie. `run` bind-mounts the repo
# (and $MIGR_BUILD) at the same absolute path, keeps the cwd, and runs CMD as
# root in private mount+pid namespaces, with only PATH, HOME and LANG set.
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"

ROOT=$MIGR_CACHE/buildroot-trixie
STAMP=$ROOT/etc/migr-buildroot.stamp
LOCK=$MIGR_CACHE/buildroot-trixie.lock
APTLOG=$MIGR_CACHE/buildroot-trixie.log

# rdma-core 56.1's Build-Depends (debian/control) for a cmake/ninja build with
# pyverbs and the man pages, plus libdrm-dev so the DMABUF paths get built,
# and migr's own: OpenSSL (migrd's peer link), jansson (JSON) and CRIU's
# plugin header (the CRIU plugin).
# (debhelper/dh-python/dpkg-dev only matter for packaging, and buildd has dpkg-dev.)
PACKAGES=(
	cmake ninja-build pkgconf gcc
	libnl-3-dev libnl-route-3-dev libudev-dev libsystemd-dev libdrm-dev
	libssl-dev libjansson-dev libcriu-dev
	python3-dev cython3 pandoc python3-docutils valgrind ccache
	# migr's rdma_rxe (buildlib/build-rxe-module.sh): the test bed's kernel's
	# headers, and dkms, which builds it as the migr-rxe-dkms package does.
	# (The headers bring linux-kbuild, whose objtool and resolve_btfids come
	# built, with libelf1t64 and pahole: no libelf-dev needed.)
	linux-headers-6.12.107+deb13-amd64 dkms
)

usage() { sed -n '6,8s/^# \{0,1\}//p' "$0" >&2; exit 2; }

[ "$(id -u)" = 0 ] || die "must run as root (chroot, mounts and namespaces)"

stamp_text() {
	printf 'suite: trixie (+updates, +security)\npackages: %s\n' "${PACKAGES[*]}"
}

# inroot CMD...: run CMD in the root: private mount+pid namespaces (every mount
# and process goes away with it), /dev, /sys, a fresh /proc and /tmp, the repo
# at its own path, a clean environment.
inroot() {
	local cwd=$PWD binds=("$MIGR_TOP") cc
	case $MIGR_BUILD/ in "$MIGR_TOP"/*) ;; *) [ -d "$MIGR_BUILD" ] && binds+=("$MIGR_BUILD") ;; esac
	# ccache's directory at its own path too; its compilers come first
	mapfile -t cc < <(ccache_vars trixie)
	binds+=("${cc[0]#CCACHE_DIR=}")
	# The root sees only the repo: elsewhere, say so and run at the repo's top.
	case $cwd/ in
	"$MIGR_TOP"/* | "$MIGR_BUILD"/*) ;;
	*) log "warning: cwd $cwd is not shared with the build root; running in $MIGR_TOP"; cwd=$MIGR_TOP ;;
	esac
	# The bash below is the namespace's PID 1 (which ignores signals it has no
	# handler for, and reaps orphans); CMD runs as its child so that Ctrl-C and
	# kill work on it. --kill-child: the namespace dies with this script.
	env "${cc[@]}" unshare --mount --pid --fork --kill-child --propagation private --mount-proc="$ROOT/proc" \
		/bin/bash -c '
		set -e
		R=$1 cwd=$2 n=$3; shift 3
		mount --rbind /dev "$R/dev"
		mount -t sysfs sysfs "$R/sys"
		mount -t tmpfs -o mode=1777 tmpfs "$R/tmp"
		mount -t tmpfs -o mode=1777 tmpfs "$R/dev/shm"
		cp /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null || true
		# mount points made after the fresh /tmp: a repo under /tmp
		for i in $(seq "$n"); do mkdir -p "$R$1"; mount --rbind "$1" "$R$1"; shift; done
		set +e
		chroot "$R" /usr/bin/env -i \
			PATH=/usr/lib/ccache:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			CCACHE_DIR="$CCACHE_DIR" CCACHE_BASEDIR="$CCACHE_BASEDIR" \
			CCACHE_NOHASHDIR="$CCACHE_NOHASHDIR" CCACHE_MAXSIZE="$CCACHE_MAXSIZE" \
			HOME=/root LANG=C.UTF-8 /bin/sh -c "cd \"\$0\" && exec \"\$@\"" "$cwd" "$@"
		rc=$?
		exit $rc
		' _ "$ROOT" "$cwd" "${#binds[@]}" "${binds[@]}" "$@"
}

# apt_in_root ARGS...: apt-get inside the root, its output in a log shown on failure.
apt_in_root() {
	(cd "$MIGR_TOP" && inroot env DEBIAN_FRONTEND=noninteractive apt-get -q -o Dpkg::Use-Pty=0 "$@") \
		>>"$APTLOG" 2>&1 || { tail -n 20 "$APTLOG" >&2; die "apt-get $* in the build root failed (log: $APTLOG)"; }
}

create() {
	local tmp=$ROOT.tmp
	apt_install mmdebstrap
	log "creating the trixie build root in $ROOT (takes about a minute)"
	rm -rf "$tmp"
	local -a mirrors
	mapfile -t mirrors < <(trixie_apt_lines)
	mmdebstrap --quiet --variant=buildd --mode=root \
		--include="$(IFS=,; echo "${PACKAGES[*]}")" \
		--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		trixie "$tmp" "${mirrors[@]}" >"$APTLOG" 2>&1 ||
		{ tail -n 20 "$APTLOG" >&2; rm -rf "$tmp"; die "mmdebstrap of the trixie build root failed (log: $APTLOG)"; }
	stamp_text >"$tmp/etc/migr-buildroot.stamp"
	mv "$tmp" "$ROOT"
}

root_sources() { grep -v '^\s*$' "$ROOT/etc/apt/sources.list" 2>/dev/null || true; }

# up_to_date: the root exists with our package set and the host's mirror.
up_to_date() {
	[ -x "$ROOT/usr/bin/apt-get" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$(stamp_text)" ] &&
		[ "$(root_sources)" = "$(trixie_apt_lines)" ]
}

# ensure [--upgrade]: create the root, or (re)install when the package set or
# the host's mirror changed; --upgrade also applies trixie's updates.
ensure() {
	local upgrade=0
	[ "${1:-}" = --upgrade ] && upgrade=1
	[ $upgrade = 0 ] && up_to_date && return 0
	mkdir -p "$MIGR_CACHE"
	exec 9>"$LOCK"
	# `run` holds this lock shared while its command runs.
	wait_lock 9 -x 3600 "commands running in the build root"
	if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
		rm -rf "$ROOT"
		create
		return
	fi
	local sources
	sources=$(trixie_apt_lines)
	if [ "$(root_sources)" != "$sources" ]; then
		echo "$sources" >"$ROOT/etc/apt/sources.list"
		rm -f "$STAMP"
	fi
	if [ $upgrade = 1 ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$(stamp_text)" ]; then
		log "bringing the build root up to date"
		rm -f "$STAMP"
		: >"$APTLOG"
		apt_in_root update
		[ $upgrade = 1 ] && apt_in_root -y full-upgrade
		apt_in_root -y install --no-install-recommends "${PACKAGES[@]}"
		apt_in_root clean
		stamp_text >"$STAMP"
	fi
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
ensure)
	ensure "$@"
	log "build root ready: $ROOT"
	;;
run)
	[ "${1:-}" = -- ] && shift
	[ $# -gt 0 ] || usage
	# Creates the root on a fresh machine; no lock or network when up to date.
	up_to_date || ( ensure )
	exec 9>"$LOCK"
	wait_lock 9 -s 3600 "the build root's making or upgrade"
	inroot "$@"
	;;
path) echo "$ROOT" ;;
*) usage ;;
esac
