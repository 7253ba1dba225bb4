# Shared helpers for migr's build and test-bed scripts (sourced, not run).
# shellcheck shell=bash

MIGR_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MIGR_CACHE=${MIGR_CACHE:-$HOME/.cache/migr}
MIGR_BUILD=${MIGR_BUILD:-$MIGR_TOP/build}
# Both may be absent on a fresh clone / fresh machine; scripts log into them.
mkdir -p "$MIGR_BUILD" "$MIGR_CACHE"

die() { echo "${0##*/}: error: $*" >&2; exit 1; }
log() { echo "${0##*/}: $*" >&2; }

# wait_lock FD -x|-s SECONDS WHAT: take the lock open on FD; if another
# holds it (WHAT), say so and wait for it at most SECONDS. Builds and
# VMs run side by side (tests/run.sh), and no wait is unbounded.
wait_lock() {
	flock -n "$2" "$1" && return 0
	log "waiting for $4 (at most $(($3 / 60)) min)"
	flock -w "$3" "$2" "$1" || die "$4 held its lock for $(($3 / 60)) minutes"
}

# Base URL of the Debian archive (and of its security archive), read from
# this machine's apt sources so no mirror is ever written in the repo.
apt_uris() {
	{
		cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
			awk '/^URIs:/ { for (i = 2; i <= NF; i++) print $i }'
		cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
			awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /:\/\//) { print $i; break } }'
	} | sed 's:/*$::' | awk '!seen[$0]++'
}

debian_mirror() {
	local u
	u=$(apt_uris | grep -v -- '-security' | head -n1)
	[ -n "$u" ] || die "no Debian archive URI found in /etc/apt/sources.list{,.d}"
	echo "$u"
}

debian_security_mirror() {
	local u
	u=$(apt_uris | grep -- '-security' | head -n1)
	[ -n "$u" ] || u="$(debian_mirror)-security"
	echo "$u"
}

# fetch URL DEST SHA256: download once into the cache, refuse a bad checksum.
fetch_verified() {
	local url=$1 dest=$2 sha=$3 tmp
	if [ -f "$dest" ] && echo "$sha  $dest" | sha256sum -c --quiet - 2>/dev/null; then
		return 0
	fi
	mkdir -p "$(dirname "$dest")"
	tmp=$dest.part
	curl -fsSL --retry 3 -o "$tmp" "$url" || die "download failed: $url"
	if ! echo "$sha  $tmp" | sha256sum -c --quiet - 2>/dev/null; then
		rm -f "$tmp"
		die "checksum mismatch for $url (expected sha256 $sha); refusing it"
	fi
	mv "$tmp" "$dest"
}

# Compiler output is cached (ccache) under $MIGR_CACHE/ccache-NAME: a clean
# clone recompiles only what changed, not upstream's unchanged sources.
# ccache_vars NAME: its environment, one VAR=value a line (paths taken
# relative to the repo, so that another clone's builds hit too).
ccache_vars() {
	mkdir -p "$MIGR_CACHE/ccache-$1"
	printf '%s\n' "CCACHE_DIR=$MIGR_CACHE/ccache-$1" "CCACHE_BASEDIR=$MIGR_TOP" \
		CCACHE_NOHASHDIR=true CCACHE_MAXSIZE=2G
}

# apt_install PKG...: install what is missing, quietly and idempotently.
apt_install() {
	local missing=() p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	log "installing ${missing[*]}"
	# Builds run side by side (tests/run.sh): one apt at a time, in turn,
	# each waiting a bounded time for the other (and for dpkg's own lock)
	mkdir -p "$MIGR_CACHE"
	(
		wait_lock 9 -x 900 "another apt-get of ours"
		if [ ! -f "$MIGR_CACHE/.apt-updated" ] || [ -n "$(find "$MIGR_CACHE/.apt-updated" -mmin +360 2>/dev/null)" ]; then
			apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null || die "apt-get update failed"
			touch "$MIGR_CACHE/.apt-updated"
		fi
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
			--no-install-recommends "${missing[@]}" >/dev/null ||
			die "apt-get install ${missing[*]} failed"
	) 9>"$MIGR_CACHE/apt.lock" || exit 1
}

# The product target: Debian 13 (trixie) with its updates and security suites.
trixie_apt_lines() {
	local m s
	m=$(debian_mirror) s=$(debian_security_mirror)
	printf 'deb %s trixie main\ndeb %s trixie-updates main\ndeb %s trixie-security main\n' "$m" "$m" "$s"
}

# trixie_index [--refresh]: print "BASE-URL PACKAGES-PATH" for trixie's amd64
# indices, each checked against its suite's InRelease, whose signature gpgv
# checks with the host's debian-archive-keyring. Cached a day in $MIGR_CACHE/dl.
trixie_index() {
	local url suite dir rel sha
	while read -r _ url suite _; do
		dir=$MIGR_CACHE/dl/dists/$suite
		mkdir -p "$dir"
		# builds run side by side (tests/run.sh): one refresh at a time,
		# the next one finding the index fresh
		exec 7>"$dir.lock"
		wait_lock 7 -x 600 "another refresh of $suite's index"
		if [ "${1:-}" = --refresh ] && [ -n "$(find "$dir/Packages" -mmin -1 2>/dev/null)" ]; then
			: # refreshed by another one a moment ago
		elif [ "${1:-}" = --refresh ] || [ ! -s "$dir/Packages" ] ||
			[ -n "$(find "$dir/Packages" -mmin +1440)" ]; then
			curl -fsSL --retry 3 -o "$dir/InRelease" "$url/dists/$suite/InRelease" ||
				die "download failed: $url/dists/$suite/InRelease"
			rel=$(gpgv --keyring /usr/share/keyrings/debian-archive-keyring.gpg \
				--output - "$dir/InRelease" 2>/dev/null) || die "bad signature on $suite's InRelease"
			sha=$(awk '/^SHA256:/ { s = 1; next } /^[^ ]/ { s = 0 }
				s && $3 == "main/binary-amd64/Packages.xz" { print $1 }' <<<"$rel")
			[ -n "$sha" ] || die "$suite's InRelease lists no main/binary-amd64/Packages.xz"
			rm -f "$dir/Packages.xz"
			fetch_verified "$url/dists/$suite/main/binary-amd64/Packages.xz" "$dir/Packages.xz" "$sha"
			xz -dc "$dir/Packages.xz" >"$dir/Packages.tmp" && mv "$dir/Packages.tmp" "$dir/Packages"
		fi
		exec 7>&-
		echo "$url $dir/Packages"
	done < <(trixie_apt_lines)
}

# fetch_trixie_deb PKG[=VERSION] DIR: download a trixie .deb into DIR (a cache),
# checked against the signed index; print its path. Without VERSION the newest.
fetch_trixie_deb() {
	local name=${1%%=*} ver='' dir=$2 idx best='' url path hv hf hs
	[ "$name" != "$1" ] && ver=${1#*=}
	for idx in "" --refresh; do
		while read -r url path; do
			while read -r hv hf hs; do
				if [ -z "$best" ] || dpkg --compare-versions "$hv" gt "${best%% *}"; then
					best="$hv $url/$hf $hs"
				fi
			done < <(awk -v n="$name" -v v="$ver" '
				/^Package: / { p = $2 } /^Version: / { ve = $2 } /^Filename: / { f = $2 }
				/^SHA256: / { s = $2 } /^$/ { if (p == n && (v == "" || ve == v)) print ve, f, s; p = "" }' "$path")
		done < <(trixie_index $idx)
		[ -n "$best" ] && break
	done
	[ -n "$best" ] || die "$1 is not in trixie's index"
	set -- $best
	fetch_verified "$2" "$dir/${2##*/}" "$3"
	echo "$dir/${2##*/}"
}

# rxe_source: print the directory of Linux's rxe driver (drivers/infiniband/
# sw/rxe) that kernel/rxe/patches apply to, from the linux-source deb of
# kernel/rxe/source.conf (fetched from trixie's archive and checked against
# its index). Only that directory of the 150 MB tarball is kept, in
# $MIGR_CACHE/kernel-src: unpacking takes a while.
rxe_source() {
	local KSRC_PACKAGE KSRC_VERSION KSRC_TARBALL KERNEL src deb
	. "$MIGR_TOP/kernel/rxe/source.conf"
	src=$MIGR_CACHE/kernel-src/$KSRC_VERSION
	if [ ! -f "$src/drivers/infiniband/sw/rxe/rxe.c" ]; then
		deb=$(fetch_trixie_deb "$KSRC_PACKAGE=$KSRC_VERSION" "$MIGR_CACHE/dl") || exit 1
		log "unpacking rxe's source from $deb"
		rm -rf "$src.tmp" && mkdir -p "$src.tmp"
		dpkg-deb --fsys-tarfile "$deb" | tar -xO "./$KSRC_TARBALL" |
			tar -xJ -C "$src.tmp" --strip-components=1 "$KSRC_PACKAGE/drivers/infiniband/sw/rxe" ||
			die "no drivers/infiniband/sw/rxe in $deb"
		rm -rf "$src" && mv "$src.tmp" "$src"
	fi
	echo "$src/drivers/infiniband/sw/rxe"
}
