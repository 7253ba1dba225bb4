#!/bin/bash
# Build migr's Debian 13 packages: rdma-core 56.1-1 as Debian packages it,
# plus our overlay (debian/), our patch series (rdma-core/patches/) and the
# migr provider, in a clean trixie build root. Then lintian.
#
# usage: buildlib/build-debs.sh [--no-lintian] [--source] [--if-changed]
#   --no-lintian  skip lintian
#   --source      also build the source package (.dsc) into build/debs/source
#   --if-changed  do nothing if build/debs was built from the same inputs
#   --skip-build  collect, check and lint the last build again (packaging work)
# Output: build/debs/*.deb (what to install), build/debs/dbgsym/, lintian.txt,
# the .changes/.buildinfo; the build log is build/deb-build/build.log.
#
# How the tree is made (debian/README.md has the why):
#   Debian's rdma-core_56.1.orig.tar.gz (upstream's debian/ deleted, as
#   dpkg-source does) + Debian's rdma-core_56.1-1.debian.tar.xz (sha256-pinned)
#   + debian/patches/series applied to Debian's packaging, debian/add/* copied
#   in, debian/changelog prepended to Debian's changelog
#   + rdma-core/patches/* and patches generated from providers-migr/, migrd/,
#   criu/, common/, kernel/ and kernel-uapi/ appended to debian/patches (quilt), so
#   dpkg-source applies them like Debian's own. migr-rxe-dkms's rxe source
#   comes from Debian's linux-source-6.12, a Build-Depends-Indep.
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"
. "$MIGR_TOP/buildlib/upstream.conf"
. "$MIGR_TOP/kernel/rxe/source.conf"

DEBIAN_TAR=rdma-core_56.1-1.debian.tar.xz
DEBIAN_TAR_SHA256=4e27344a0ecfd591bd1081486a2006d2edb52782d209cd744da7faf3b8f0ded4
ROOT=$MIGR_CACHE/buildroot-trixie-deb
LOCK=$MIGR_CACHE/buildroot-trixie-deb.lock
WORK=$MIGR_BUILD/deb-build
OUT=$MIGR_BUILD/debs
TREE=$WORK/rdma-core-$UPSTREAM_VERSION

lintian=1 source=0 if_changed=0 skip_build=0
while [ $# -gt 0 ]; do
	case $1 in
	--no-lintian) lintian=0; shift ;;
	--source) source=1; shift ;;
	--if-changed) if_changed=1; shift ;;
	--skip-build) skip_build=1; shift ;;
	-h | --help) sed -n '6,12s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
	*) die "unknown option '$1'" ;;
	esac
done
[ "$(id -u)" = 0 ] || die "must run as root (build root: chroot and namespaces)"
case $WORK/ in "$MIGR_TOP"/*) ;; *) die "MIGR_BUILD ($MIGR_BUILD) must be inside the repo ($MIGR_TOP)" ;; esac
git -C "$MIGR_TOP" rev-parse --git-dir >/dev/null 2>&1 || die "$MIGR_TOP is not a git checkout (the provider's files are taken from git ls-files)"

# inroot CMD...: CMD in the packaging root, the repo bind-mounted at its own
# path, private mount+pid namespaces, a clean environment.
inroot() {
	local cc
	mkdir -p "$ROOT$MIGR_TOP"
	# ccache's directory at its own path; its compilers come first
	mapfile -t cc < <(ccache_vars deb)
	env "${cc[@]}" unshare --mount --pid --fork --kill-child --propagation private --mount-proc="$ROOT/proc" \
		/bin/bash -c '
		set -e
		R=$1 top=$2; shift 2
		mount --rbind /dev "$R/dev"
		mount -t sysfs sysfs "$R/sys"
		mount -t tmpfs -o mode=1777 tmpfs "$R/tmp"
		cp /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null || true
		mkdir -p "$R$top" "$R$CCACHE_DIR" # after the /tmp mount: the repo may live under /tmp
		mount --rbind "$top" "$R$top"
		mount --bind "$CCACHE_DIR" "$R$CCACHE_DIR"
		exec chroot "$R" /usr/bin/env -i \
			PATH=/usr/lib/ccache:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
			CCACHE_DIR="$CCACHE_DIR" CCACHE_BASEDIR="$CCACHE_BASEDIR" \
			CCACHE_NOHASHDIR="$CCACHE_NOHASHDIR" CCACHE_MAXSIZE="$CCACHE_MAXSIZE" \
			HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
		' _ "$ROOT" "$MIGR_TOP" "$@"
}

# What the packages are made of (working tree, tracked or trackable files).
inputs=$( (cd "$MIGR_TOP" && git ls-files --cached --others --exclude-standard -z debian rdma-core/patches \
	providers-migr migrd criu common kernel kernel-uapi buildlib/build-debs.sh buildlib/upstream.conf | sort -z | xargs -0 sha256sum
	echo "$DEBIAN_TAR_SHA256 $UPSTREAM_ORIG_SHA256") | sha256sum | cut -d' ' -f1)
if [ $if_changed = 1 ] && [ "$(cat "$OUT/.inputs" 2>/dev/null)" = "$inputs" ]; then
	log "packages in $OUT are up to date"
	exit 0
fi

mkdir -p "$MIGR_CACHE"
exec 9>"$LOCK"
wait_lock 9 -x 5400 "another build-debs.sh"

# 1. Sources, checksum-verified.
command -v curl >/dev/null || apt_install curl ca-certificates
orig=$MIGR_CACHE/dl/$UPSTREAM_ORIG
fetch_verified "$(debian_mirror)/$UPSTREAM_POOL/$UPSTREAM_ORIG" "$orig" "$UPSTREAM_ORIG_SHA256"
debtar=$MIGR_CACHE/dl/$DEBIAN_TAR
fetch_verified "$(debian_mirror)/$UPSTREAM_POOL/$DEBIAN_TAR" "$debtar" "$DEBIAN_TAR_SHA256"

# 2. The tree.
if [ $skip_build = 0 ]; then
log "preparing the source tree in $TREE"
rm -rf "$WORK"
mkdir -p "$TREE"
tar -xzf "$orig" -C "$TREE" --strip-components=1
rm -rf "$TREE/debian"
tar -xJf "$debtar" -C "$TREE"
cp "$orig" "$WORK/$UPSTREAM_ORIG"
ov=$MIGR_TOP/debian
while read -r p; do
	case $p in '' | '#'*) continue ;; esac
	patch -d "$TREE" -p1 -s --no-backup-if-mismatch -F0 <"$ov/patches/$p" ||
		die "debian/patches/$p does not apply to Debian's packaging of $DEBIAN_TAR"
done <"$ov/patches/series"
(cd "$ov/add" && find . -type f | sort) | while read -r f; do
	[ ! -e "$TREE/debian/$f" ] || die "debian/add/${f#./} would replace Debian's file; make it a patch"
	install -D -m "$(stat -c %a "$ov/add/$f")" "$ov/add/$f" "$TREE/debian/$f"
done
cat "$ov/changelog" "$TREE/debian/changelog" >"$TREE/debian/changelog.new"
mv "$TREE/debian/changelog.new" "$TREE/debian/changelog"
# Our source patches, after Debian's (quilt, applied by dpkg-source with fuzz 0).
mkdir -p "$TREE/debian/patches/migr"
while read -r p; do
	case $p in '' | '#'*) continue ;; esac
	cp "$MIGR_TOP/rdma-core/patches/$p" "$TREE/debian/patches/migr/"
	echo "migr/$p" >>"$TREE/debian/patches/series"
done <"$MIGR_TOP/rdma-core/patches/series"
# gen_patch DIR DEST NAME CHECK DESCRIPTION: our directory DIR (the files
# git tracks or would track) as a patch that adds DEST to the tree, queued
# as migr/NAME.patch; CHECK, a file it must add, guards against an empty one
gen_patch() {
	local dir=$1 dest=$2 name=$3 check=$4 descr=$5 gen=$WORK/gen
	rm -rf "$gen"
	mkdir -p "$gen/a/$(dirname "$dest")" "$gen/b/$dest" "$gen/src"
	(cd "$MIGR_TOP" && git ls-files --cached --others --exclude-standard -z "$dir") |
		(cd "$MIGR_TOP" && xargs -0 -r cp --parents -t "$gen/src") 2>/dev/null ||
		die "could not copy $dir/"
	cp -a "$gen/src/$dir/." "$gen/b/$dest/"
	{
		printf 'Description: %s\n' "$descr"
		printf ' %s, generated by buildlib/build-debs.sh from %s/.\n' "$dest" "$dir"
		printf 'Author: migr maintainers\n---\n'
		(cd "$gen" && diff -Nru a b) || [ $? -eq 1 ]
	} >"$TREE/debian/patches/migr/$name.patch"
	echo "migr/$name.patch" >>"$TREE/debian/patches/series"
	grep -q "^+++ b/$dest/$check" "$TREE/debian/patches/migr/$name.patch" ||
		die "the generated $name.patch lacks $check"
	rm -rf "$gen"
}
gen_patch providers-migr providers/migr providers-migr device.c "the migr stacking verbs provider"
gen_patch migrd migrd migrd daemon/migrd.c "migrd and migrctl, migr's daemon and tool"
gen_patch criu criu criu migr_plugin.c "migr's CRIU plugin"
gen_patch common common common ctl_line.c "what migr's provider, migrd and CRIU plugin share"
# migr-rxe-dkms: debian/rules runs kernel/rxe/dkms-source.sh (patches and
# dkms.conf beside it, the uapi header in kernel-uapi/) on the rxe directory
# of /usr/src/linux-source-6.12.tar.xz
gen_patch kernel kernel kernel rxe/dkms.conf "migr's rdma_rxe: patches over Linux 6.12's rxe, dkms.conf"
gen_patch kernel-uapi kernel-uapi kernel-uapi rdma/migr_rxe_abi.h "migr's uapi header of rdma_rxe's methods"
# the same header where the provider includes it from, as a kernel header
# (rdma-core/patches/0010 lists it in kernel-headers/CMakeLists.txt)
gen_patch kernel-uapi/rdma kernel-headers/rdma kernel-headers-migr-rxe-abi migr_rxe_abi.h \
	"the uapi header of migr's rdma_rxe methods, as kernel-headers/update would place it"
fi
# The linux-source-6.12 that debian/control pins must be the one the patches are for.
grep -q "^ *$KSRC_PACKAGE (= $KSRC_VERSION)" "$TREE/debian/control" ||
	die "debian/control does not build-depend on $KSRC_PACKAGE (= $KSRC_VERSION) (kernel/rxe/source.conf)"

# 3. The packaging build root: trixie buildd + exactly the Build-Depends + lintian.
build_deps=$(sed -n '/^Build-Depends\(-Indep\)\{0,1\}:/,/^[A-Z]/p' "$TREE/debian/control" | grep -v '^Rules-Requires-Root:')
# migr-rxe-dkms build-depends on exactly the linux-source-6.12 its patches are
# for (kernel/rxe/source.conf), which trixie's updates may have superseded:
# apt's build-dep resolver takes only candidates, so that version is pinned.
ksrc_pin=$(printf 'Package: %s\nPin: version %s\nPin-Priority: 1001\n' "$KSRC_PACKAGE" "$KSRC_VERSION")
want_stamp=$(printf '%s\n%s\n%s\nlintian ccache\n' "$(trixie_apt_lines)" "$build_deps" "$ksrc_pin")
if [ ! -x "$ROOT/usr/bin/dpkg-buildpackage" ] || [ "$(cat "$ROOT/etc/migr-pkgroot.stamp" 2>/dev/null)" != "$want_stamp" ]; then
	apt_install mmdebstrap
	if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
		log "creating the trixie packaging root in $ROOT (about a minute)"
		rm -rf "$ROOT.tmp" "$ROOT"
		mapfile -t mirrors < <(trixie_apt_lines)
		mmdebstrap --quiet --variant=buildd --mode=root --include=lintian \
			--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
			--dpkgopt='path-exclude=/usr/share/locale/*' \
			trixie "$ROOT.tmp" "${mirrors[@]}" >"$MIGR_CACHE/buildroot-trixie-deb.log" 2>&1 ||
			{ tail -n 20 "$MIGR_CACHE/buildroot-trixie-deb.log" >&2; rm -rf "$ROOT.tmp"; die "mmdebstrap of the packaging root failed (log: $MIGR_CACHE/buildroot-trixie-deb.log)"; }
		mv "$ROOT.tmp" "$ROOT"
	fi
	trixie_apt_lines >"$ROOT/etc/apt/sources.list"
	mkdir -p "$ROOT/etc/apt/preferences.d"
	echo "$ksrc_pin" >"$ROOT/etc/apt/preferences.d/migr-kernel-source.pref"
	log "installing rdma-core's Build-Depends in the packaging root"
	{ inroot apt-get -q update && inroot sh -c "cd '$TREE' && apt-get -q -y --no-install-recommends build-dep ./" &&
		inroot apt-get -q -y --no-install-recommends install lintian ccache && inroot apt-get clean; } \
		>>"$MIGR_CACHE/buildroot-trixie-deb.log" 2>&1 ||
		{ tail -n 20 "$MIGR_CACHE/buildroot-trixie-deb.log" >&2; die "installing the Build-Depends failed (log: $MIGR_CACHE/buildroot-trixie-deb.log)"; }
	echo "$want_stamp" >"$ROOT/etc/migr-pkgroot.stamp"
fi

# 4. Build. nocheck: nothing here may need RDMA hardware (Debian's rules run no tests anyway).
version=$(inroot dpkg-parsechangelog -l "$TREE/debian/changelog" -S Version)
if [ $skip_build = 0 ]; then
log "building rdma-core $version (dpkg-buildpackage; 5-11 minutes on 2 cores)"
t0=$SECONDS
if [ $source = 1 ]; then bp_opts=(-F); else bp_opts=(-b); fi
inroot sh -c "cd '$TREE' && DEB_BUILD_OPTIONS='nocheck parallel=$(nproc)' dpkg-buildpackage ${bp_opts[*]} -us -uc" \
	>"$WORK/build.log" 2>&1 || { tail -n 40 "$WORK/build.log" >&2; die "dpkg-buildpackage failed (log: $WORK/build.log)"; }
log "built in $((SECONDS - t0)) s"
# dpkg-gensymbols ran at check level 4: a new or missing symbol would have failed
# the build. Say what it compared.
grep -q 'dpkg-gensymbols: warning' "$WORK/build.log" &&
	{ grep -A20 'dpkg-gensymbols: warning' "$WORK/build.log" | head -n 40 >&2; die "dpkg-gensymbols reported differences"; }
fi
[ -n "$(ls "$WORK"/*.changes 2>/dev/null)" ] || die "no build in $WORK"

# 5. Collect.
rm -rf "$OUT"
mkdir -p "$OUT/dbgsym"
arch=$(inroot dpkg-architecture -qDEB_HOST_ARCH)
changes=$WORK/rdma-core_${version}_$arch.changes
[ -f "$changes" ] || die "no $changes"
for f in "$WORK"/*.deb "$WORK"/*.ddeb; do
	[ -e "$f" ] || continue
	case ${f##*/} in *-dbgsym_*) cp "$f" "$OUT/dbgsym/" ;; *) cp "$f" "$OUT/" ;; esac
done
cp "$WORK"/*.changes "$WORK"/*.buildinfo "$OUT/"
if [ -n "$(ls "$WORK"/*.dsc 2>/dev/null)" ]; then
	mkdir -p "$OUT/source"
	cp "$WORK"/*.dsc "$WORK"/*.debian.tar.* "$OUT/source/"
	cp "$WORK/$UPSTREAM_ORIG" "$OUT/source/"
fi

# Every package Debian 13's rdma-core 56.1-1 builds, at our version, plus ours.
expect="ibacm ibverbs-providers ibverbs-providers-migr ibverbs-utils infiniband-diags libibmad-dev
libibmad5 libibnetdisc-dev libibnetdisc5t64 libibumad-dev libibumad3 libibverbs-dev libibverbs1
librdmacm-dev librdmacm1t64 migr-rxe-dkms migr-tools python3-pyverbs rdma-core rdmacm-utils srptools"
for p in $expect; do
	[ -f "$OUT/${p}_${version}_$arch.deb" ] || [ -f "$OUT/${p}_${version}_all.deb" ] ||
		die "package $p $version was not built"
done

# What our packaging promises, checked on the .debs.
deb() { ls "$OUT/${1}_${version}_"*.deb; }
fail=0
check() { if "${@:2}" >/dev/null 2>&1; then echo "ok   $1"; else echo "FAIL $1"; fail=$((fail + 1)); fi; }
has() { dpkg-deb -c "$(deb "$1")" | sed -E 's/^([^ ]+ +){5}//' | grep -xF -- "$2" >/dev/null; }
lacks() { ! dpkg-deb -c "$(deb "$1")" | grep -- "$2" >/dev/null; }
field_has() { dpkg-deb -f "$(deb "$1")" "$2" | tr ',' '\n' | sed 's/^ *//' | grep -xF -- "$3" >/dev/null; }
man_has() { dpkg-deb --fsys-tarfile "$(deb "$1")" | tar -xOf - ".$2" | zcat | grep -- "$3" >/dev/null; }
m=ibverbs-providers-migr ma=$(inroot dpkg-architecture -qDEB_HOST_MULTIARCH)
{
	echo "# packages of $version, checked by buildlib/build-debs.sh"
	check "$m: the provider" has $m "./usr/lib/$ma/libibverbs/libmigr-rdmav34.so"
	check "$m: migr.driver is a symlink into /usr" has $m "./etc/libibverbs.d/migr.driver -> /usr/share/ibverbs-providers-migr/migr.driver"
	check "$m: stacking.conf" has $m ./etc/libibverbs.d/stacking.conf
	check "$m: stacking.conf is its only conffile" sh -c "[ \"\$(dpkg-deb -I '$(deb $m)' conffiles)\" = /etc/libibverbs.d/stacking.conf ]"
	check "$m: migr(7)" has $m ./usr/share/man/man7/migr.7.gz
	check "migr(7) documents stacking.conf" man_has $m /usr/share/man/man7/migr.7.gz stacking.conf
	check "$m depends on libibverbs1 (= $version)" field_has $m Depends "libibverbs1 (= $version)"
	check "ibverbs-providers has no migr file" lacks ibverbs-providers migr
	check "ibverbs-providers has no stacking.conf" lacks ibverbs-providers stacking.conf
	check "ibverbs-providers has rxe" has ibverbs-providers "./usr/lib/$ma/libibverbs/librxe-rdmav34.so"
	check "ibverbs-providers depends on libibverbs1 (= $version)" field_has ibverbs-providers Depends "libibverbs1 (= $version)"
	check "libibverbs1 breaks older ibverbs-providers" field_has libibverbs1 Breaks "ibverbs-providers (<< $version)"
	check "libibverbs1 breaks newer ibverbs-providers" field_has libibverbs1 Breaks "ibverbs-providers (>> $version)"
	check "libibverbs-dev: ibv_get_device_list(3) documents stacked_devices" man_has libibverbs-dev /usr/share/man/man3/ibv_get_device_list.3.gz stacked_devices
	check "libibverbs-dev: the static migr provider" has libibverbs-dev "./usr/lib/$ma/libmigr-rdmav34.a"
	t=migr-tools
	check "$t: migrd" has $t ./usr/sbin/migrd
	check "$t: migrctl" has $t ./usr/bin/migrctl
	check "$t: migrd.service" has $t ./usr/lib/systemd/system/migrd.service
	check "$t: migrd(8), migrctl(8)" sh -c "dpkg-deb -c '$(deb $t)' | grep -q man8/migrd.8.gz && dpkg-deb -c '$(deb $t)' | grep -q man8/migrctl.8.gz"
	check "$t: migrd.conf is its only conffile" sh -c "[ \"\$(dpkg-deb -I '$(deb $t)' conffiles)\" = /etc/migr/migrd.conf ]"
	check "$t depends on $m (= $version)" field_has $t Depends "$m (= $version)"
	check "migr(7) refers to migrd(8)" man_has $m /usr/share/man/man7/migr.7.gz migrd
	check "$m: migr_rxe(7)" has $m ./usr/share/man/man7/migr_rxe.7.gz
	r=migr-rxe-dkms rs=./usr/src/migr-rxe-$version
	for f in dkms.conf Makefile rxe.c rxe_migr.c rxe_pool.c include/rdma/migr_rxe_abi.h; do
		check "$r: $rs/$f" has $r "$rs/$f"
	done
	check "$r: only $rs" sh -c "! dpkg-deb -c '$(deb $r)' | sed -E 's/^([^ ]+ +){5}//' | grep -v -e '^./usr/share/doc/' -e '^$rs/' | grep -vx -e ./ -e ./usr/ -e ./usr/src/ -e ./usr/share/ -e ./usr/share/doc/"
	check "$r: no .orig or .rej file" lacks $r '\.orig$\|\.rej$'
	check "$r: dkms.conf: migr-rxe $version, rdma_rxe" sh -c "dpkg-deb --fsys-tarfile '$(deb $r)' | tar -xOf - '$rs/dkms.conf' | grep -x 'PACKAGE_VERSION=\"$version\"' && dpkg-deb --fsys-tarfile '$(deb $r)' | tar -xOf - '$rs/dkms.conf' | grep -x 'PACKAGE_NAME=\"migr-rxe\"' && dpkg-deb --fsys-tarfile '$(deb $r)' | tar -xOf - '$rs/dkms.conf' | grep -x 'BUILT_MODULE_NAME\[0\]=\"rdma_rxe\"'"
	check "$r: an out-of-tree Makefile" sh -c "dpkg-deb --fsys-tarfile '$(deb $r)' | tar -xOf - '$rs/Makefile' | grep -x 'obj-m += rdma_rxe.o'"
	check "$r depends on dkms" sh -c "dpkg-deb -f '$(deb $r)' Depends | tr ',' '\n' | grep -q '^ *dkms\b'"
	check "$r: postinst adds, builds and installs migr-rxe $version (dh_dkms)" sh -c "dpkg-deb -I '$(deb $r)' postinst | grep -x 'DKMS_NAME=migr-rxe' && dpkg-deb -I '$(deb $r)' postinst | grep -xF 'DKMS_VERSION=$version' && dpkg-deb -I '$(deb $r)' postinst | grep -q /usr/lib/dkms/common.postinst"
	check "$r: prerm removes migr-rxe $version (dh_dkms)" sh -c "dpkg-deb -I '$(deb $r)' prerm | grep -xF 'DKMS_VERSION=$version' && dpkg-deb -I '$(deb $r)' prerm | grep -q 'dkms remove -m .DKMS_NAME -v .DKMS_VERSION --all'"
} >"$OUT/checks.txt"
cat "$OUT/checks.txt" >&2
[ $fail -eq 0 ] || die "$fail check(s) of the packages failed (see $OUT/checks.txt)"

# 6. lintian (in the root: trixie's lintian for trixie's packages).
if [ $lintian = 1 ]; then
	log "lintian"
	rc=0
	# Suppressed: old-fsf-address-in-copyright-file, on every package. It is
	# about Debian's debian/copyright (the FSF's postal address in the GPL-2+
	# notice for debian/*), shared by all rdma-core packages, and Debian's own
	# 56.1-1 packages carry it too. Everything else is an override with its
	# reason in debian/add/*.lintian-overrides.
	inroot lintian --fail-on error,warning --display-info --info --suppress-tags old-fsf-address-in-copyright-file \
		"$changes" >"$OUT/lintian.txt" 2>&1 || rc=$?
	sed 's/^/  /' "$OUT/lintian.txt" >&2
	[ $rc -eq 0 ] || die "lintian found errors or warnings (see $OUT/lintian.txt)"
	log "lintian: no errors or warnings ($(grep -c '^[IP]:' "$OUT/lintian.txt" || true) info/pedantic lines)"
fi

echo "$inputs" >"$OUT/.inputs"
ls -l "$OUT"/*.deb | awk '{ printf "  %8d  %s\n", $5, $NF }' >&2
log "$(ls "$OUT"/*.deb | wc -l) packages, version $version, in $OUT"
