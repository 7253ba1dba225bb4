#!/bin/bash
# Build migr's RPMs from redhat/rdma-core.spec with rpmbuild on this Debian
# host, then check what came out: file lists, %config flags, requires/provides,
# scriptlets, man pages; and run rpmlint.
#
# usage: buildlib/build-rpms.sh [--no-rpmlint] [--skip-build]
#   --skip-build  check and lint the last build again (packaging work)
# Output: build/rpms/{RPMS,SRPMS}/..., build/rpms/report.txt (rpm -qp
# --requires/--provides/--scripts/-l of every package), build/rpms/rpmlint.txt.
#
# rpmbuild runs with bash as the build shell and for brp-compress (Debian's
# /bin/sh, dash, cannot run rpm's brp-compress; Fedora's /bin/sh is bash), so
# man pages get compressed and binaries stripped as on Fedora, and with
# --nodeps: the spec's BuildRequires are Fedora package
# names, which Debian's rpm database does not know; the same build tools are
# installed from Debian instead (below). The binaries link against this
# host's (Debian 12) libraries, so these RPMs check the spec; for a dnf
# system, rebuild the SRPM there (README, "Install from packages").
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"
. "$MIGR_TOP/buildlib/upstream.conf"

rpmlint=1 skip_build=0
while [ $# -gt 0 ]; do
	case $1 in
	--no-rpmlint) rpmlint=0; shift ;;
	--skip-build) skip_build=1; shift ;;
	-h | --help) sed -n '6,9s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
	*) die "unknown option '$1'" ;;
	esac
done

SPEC=$MIGR_TOP/redhat/rdma-core.spec
git -C "$MIGR_TOP" rev-parse --git-dir >/dev/null 2>&1 || die "$MIGR_TOP is not a git checkout (the provider's files are taken from git ls-files)"
OUT=$MIGR_BUILD/rpms
TOPDIR=$MIGR_BUILD/rpm-build

apt_install rpm rpmlint file curl ca-certificates cmake ninja-build gcc pkgconf libnl-3-dev libnl-route-3-dev libssl-dev libjansson-dev \
	libudev-dev libsystemd-dev python3-dev cython3 python3-docutils pandoc valgrind
orig=$MIGR_CACHE/dl/$UPSTREAM_ORIG
fetch_verified "$(debian_mirror)/$UPSTREAM_POOL/$UPSTREAM_ORIG" "$orig" "$UPSTREAM_ORIG_SHA256"

# The spec's Patch list must be the series, in order.
series=$(grep -v '^\s*\(#\|$\)' "$MIGR_TOP/rdma-core/patches/series")
specp=$(sed -n 's/^Patch[0-9]*:\s*//p' "$SPEC")
[ "$series" = "$specp" ] || die "redhat/rdma-core.spec's Patch lines differ from rdma-core/patches/series"

if [ $skip_build = 0 ]; then
rm -rf "$TOPDIR" "$OUT"
mkdir -p "$TOPDIR"/{SOURCES,SPECS,BUILD,RPMS,SRPMS} "$OUT"
cp "$orig" "$TOPDIR/SOURCES/rdma-core-$UPSTREAM_VERSION.tar.gz"
for p in $series; do cp "$MIGR_TOP/rdma-core/patches/$p" "$TOPDIR/SOURCES/"; done
# providers-migr/ as it is in the working tree (files git tracks or would track),
# packed reproducibly.
for d in providers-migr migrd criu common; do
	(cd "$MIGR_TOP" && git ls-files --cached --others --exclude-standard "$d") |
		tar -C "$MIGR_TOP" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -T - -cf - |
		gzip -n >"$TOPDIR/SOURCES/$d.tar.gz"
done
# migr-rxe-dkms: kernel/ and kernel-uapi/ (Source4), and the rxe directory of
# Debian's linux-source-6.12 (Source5; the spec's migr_rxe_ksrc must be
# kernel/rxe/source.conf's version)
(cd "$MIGR_TOP" && git ls-files --cached --others --exclude-standard kernel kernel-uapi) |
	tar -C "$MIGR_TOP" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -T - -cf - |
	gzip -n >"$TOPDIR/SOURCES/migr-kernel.tar.gz"
( . "$MIGR_TOP/kernel/rxe/source.conf"
  grep -qx "%global migr_rxe_ksrc $KSRC_VERSION" "$SPEC" ||
	die "redhat/rdma-core.spec's migr_rxe_ksrc is not $KSRC_VERSION (kernel/rxe/source.conf)"
  rxe=$(rxe_source)
  tar -C "$(dirname "$rxe")" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - rxe |
	gzip -n >"$TOPDIR/SOURCES/rxe-linux-source-$KSRC_VERSION.tar.gz" )
cp "$SPEC" "$TOPDIR/SPECS/"

log "rpmbuild -ba --nodeps (about 3 minutes on 2 cores; log: $TOPDIR/rpmbuild.log)"
t0=$SECONDS
rpmbuild --define "_topdir $TOPDIR" --define "_buildshell /bin/bash" \
	--define "__brp_compress /bin/bash /usr/lib/rpm/brp-compress %{?_prefix}" --nodeps -ba "$TOPDIR/SPECS/rdma-core.spec" >"$TOPDIR/rpmbuild.log" 2>&1 ||
	{ tail -n 40 "$TOPDIR/rpmbuild.log" >&2; die "rpmbuild failed (log: $TOPDIR/rpmbuild.log)"; }
log "built in $((SECONDS - t0)) s"
cp -a "$TOPDIR/RPMS" "$TOPDIR/SRPMS" "$OUT/"
fi
[ -d "$OUT/RPMS" ] || die "no RPMs in $OUT"

# ---- checks on the produced RPMs ----
arch=$(rpm --eval '%{_arch}')
ver=$(rpm -q --qf '%{VERSION}-%{RELEASE}\n' --specfile "$SPEC" 2>/dev/null | awk 'NR == 1')
rpmf() { # rpmf NAME: the binary RPM of subpackage NAME
	local f=$OUT/RPMS/$arch/$1-$ver.$arch.rpm
	[ -f "$f" ] || die "no RPM for $1 ($f)"
	echo "$f"
}
fail=0
check() { # check DESCRIPTION CMD...: run CMD, report
	if "${@:2}" >/dev/null 2>&1; then echo "ok   $1"; else echo "FAIL $1"; fail=$((fail + 1)); fi
}
has_file() { rpm -qpl "$1" | grep -x -- "$2" >/dev/null; }
lacks_file() { ! rpm -qpl "$1" | grep -- "$2" >/dev/null; }
file_flags() { rpm -qp --qf '[%{FILENAMES} %{FILEFLAGS:fflags}\n]' "$1" | awk -v f="$2" '$1 == f { print $2 }'; }
is_noreplace() { [ "$(file_flags "$1" "$2")" = cn ]; }
not_config() { case $(file_flags "$1" "$2") in *c*) return 1 ;; *) return 0 ;; esac; }
is_symlink_to() { rpm -qp --qf "[%{FILENAMES} %{FILELINKTOS}\\n]" "$1" | grep -x -- "$2 $3" >/dev/null; }
requires() { rpm -qp --requires "$1" | grep -x -- "$2" >/dev/null; }
provides() { rpm -qp --provides "$1" | grep -x -- "$2" >/dev/null; }
script_has() { rpm -qp --scripts "$1" | grep -- "$2" >/dev/null; }
no_scripts() { [ -z "$(rpm -qp --scripts "$1")" ]; }
man_mentions() { # man_mentions RPM PATH WORD: the man page at PATH (gz) mentions WORD
	rpm2cpio "$1" | (cd "$(mktemp -d)" && cpio -idm --quiet ".$2" && zcat ".$2" | grep -- "$3" >/dev/null)
}

pkgs="rdma-core rdma-core-devel libibverbs libibverbs-migr libibverbs-utils librdmacm librdmacm-utils
libibumad ibacm iwpmd srp_daemon infiniband-diags python3-pyverbs migr-tools"
{
	echo "# RPMs of $ver ($arch), checked by buildlib/build-rpms.sh"
	for p in $pkgs; do check "package $p built" rpmf "$p"; done
	check "source RPM built" test -f "$OUT/SRPMS/rdma-core-$ver.src.rpm"
	m=$(rpmf libibverbs-migr) v=$(rpmf libibverbs) d=$(rpmf rdma-core-devel)
	lib=$(rpm --eval '%{_libdir}')
	check "libibverbs-migr has the provider $lib/libibverbs/libmigr-rdmav34.so" has_file "$m" "$lib/libibverbs/libmigr-rdmav34.so"
	check "libibverbs-migr: stacking.conf is %config(noreplace)" is_noreplace "$m" /etc/libibverbs.d/stacking.conf
	check "libibverbs-migr: migr.driver is a symlink into /usr, not %config" is_symlink_to "$m" /etc/libibverbs.d/migr.driver ../../usr/share/libibverbs-migr/migr.driver
	check "libibverbs-migr: migr.driver is not %config" not_config "$m" /etc/libibverbs.d/migr.driver
	check "libibverbs-migr has the man page migr(7)" has_file "$m" /usr/share/man/man7/migr.7.gz
	check "man page migr(7) documents stacking.conf" man_mentions "$m" /usr/share/man/man7/migr.7.gz stacking.conf
	t=$(rpmf migr-tools)
	check "migr-tools has migrd, migrctl and migrd.service" sh -c "rpm -qpl '$t' | grep -qx /usr/sbin/migrd && rpm -qpl '$t' | grep -qx /usr/bin/migrctl && rpm -qpl '$t' | grep -qx /usr/lib/systemd/system/migrd.service"
	check "migr-tools: migrd.conf is %config(noreplace)" is_noreplace "$t" /etc/migr/migrd.conf
	check "migr-tools has migrd(8) and migrctl(8)" sh -c "rpm -qpl '$t' | grep -qx /usr/share/man/man8/migrd.8.gz && rpm -qpl '$t' | grep -qx /usr/share/man/man8/migrctl.8.gz"
	check "infiniband-diags has no migr man page" lacks_file "$(rpmf infiniband-diags)" migr
	check "rdma-core-devel: ibv_get_device_list(3) documents stacked_devices" man_mentions "$d" /usr/share/man/man3/ibv_get_device_list.3.gz stacked_devices
	check "libibverbs-migr requires libibverbs of exactly its version" requires "$m" "libibverbs(x86-64) = $ver"
	check "libibverbs-migr has no scriptlets" no_scripts "$m"
	check "libibverbs has no migr file" lacks_file "$v" migr
	check "libibverbs has no stacking.conf" lacks_file "$v" stacking.conf
	check "libibverbs: the other .driver files stay %config(noreplace)" is_noreplace "$v" /etc/libibverbs.d/rxe.driver
	check "libibverbs has the rxe provider" has_file "$v" "$lib/libibverbs/librxe-rdmav34.so"
	check "libibverbs provides libibverbs.so.1()(64bit)" provides "$v" "libibverbs.so.1()(64bit)"
	check "libibverbs provides the private ABI libibverbs.so.1(IBVERBS_PRIVATE_34)(64bit)" provides "$v" "libibverbs.so.1(IBVERBS_PRIVATE_34)(64bit)"
	check "libibverbs-migr needs that private ABI" requires "$m" "libibverbs.so.1(IBVERBS_PRIVATE_34)(64bit)"
	check "libibverbs runs ldconfig (post, postun)" script_has "$v" ldconfig
	check "ibacm: systemd scriptlets" script_has "$(rpmf ibacm)" "systemctl --no-reload preset ibacm.service"
	check "rdma-core: udevadm trigger in post" script_has "$(rpmf rdma-core)" "udevadm trigger"
	check "libibverbs-utils has ibv_devices" has_file "$(rpmf libibverbs-utils)" /usr/bin/ibv_devices
	check "libibverbs-migr has the man page migr_rxe(7)" has_file "$m" /usr/share/man/man7/migr_rxe.7.gz
	k=$OUT/RPMS/noarch/migr-rxe-dkms-$ver.noarch.rpm ks=/usr/src/migr-rxe-$ver
	check "package migr-rxe-dkms built (noarch)" test -f "$k"
	for f in dkms.conf Makefile rxe.c rxe_migr.c include/rdma/migr_rxe_abi.h; do
		check "migr-rxe-dkms has $ks/$f" has_file "$k" "$ks/$f"
	done
	check "migr-rxe-dkms: dkms.conf's version is the package's" sh -c "rpm2cpio '$k' | (cd \"\$(mktemp -d)\" && cpio -idm --quiet '.$ks/dkms.conf' && grep -x 'PACKAGE_VERSION=\"$ver\"' '.$ks/dkms.conf')"
	check "migr-rxe-dkms requires dkms" requires "$k" dkms
	check "migr-rxe-dkms: dkms add, build and install in post" script_has "$k" "dkms install -m migr-rxe -v $ver"
	check "migr-rxe-dkms: dkms remove in preun" script_has "$k" "dkms remove -m migr-rxe -v $ver"
	py=$(rpmf python3-pyverbs)
	check "python3-pyverbs has pyverbs/device*.so" sh -c "rpm -qpl '$py' | grep -q '/pyverbs/device.*\.so$'"
} >"$OUT/checks.txt"
cat "$OUT/checks.txt" >&2

{
	for f in "$OUT"/RPMS/*/*.rpm; do
		echo "===== ${f##*/}"
		echo "--- requires"; rpm -qp --requires "$f"
		echo "--- provides"; rpm -qp --provides "$f"
		echo "--- scripts"; rpm -qp --scripts "$f"
		echo "--- files (mode, flags: c = %config, n = noreplace, d = doc; path; link target)"
		rpm -qp --qf '[%{FILEMODES:perms} %{FILEFLAGS:fflags} %{FILENAMES} %{FILELINKTOS}\n]' "$f"
	done
} >"$OUT/report.txt"

if [ $rpmlint = 1 ]; then
	rc=0
	rpmlint -r "$MIGR_TOP/redhat/rpmlintrc" "$OUT"/RPMS/*/*.rpm "$OUT"/SRPMS/*.rpm >"$OUT/rpmlint.txt" 2>&1 || rc=$?
	summary=$(grep -E '[0-9]+ errors, [0-9]+ warnings' "$OUT/rpmlint.txt" | tail -n 1)
	log "rpmlint (exit $rc):$summary"
	# Clean, or filtered with a reason in redhat/rpmlintrc.
	[ $rc -eq 0 ] && [[ $summary == *" 0 errors, 0 warnings"* ]] ||
		{ grep -E ': [EW]: ' "$OUT/rpmlint.txt" >&2; die "rpmlint found errors or warnings (see $OUT/rpmlint.txt)"; }
fi
ls -l "$OUT"/RPMS/*/*.rpm "$OUT"/SRPMS/*.rpm | awk '{ printf "  %8d  %s\n", $5, $NF }' >&2
[ $fail -eq 0 ] || die "$fail check(s) failed (see $OUT/checks.txt, $OUT/report.txt)"
log "RPMs in $OUT; all checks passed; report: $OUT/report.txt"
