#!/bin/bash
# Package install test, in a guest booted from the stock root (a clean Debian
# 13 with Debian's own rdma-core packages; buildlib/testbed/prepare-stock.sh).
# Run by tests/package-test.sh. The guest has no network: our .debs come from
# the repo's share ($MIGR_DEBS), Debian's from /var/cache/migr-stock.
#
#   1. stock: ibv_devices sees rxe0 and no twin; snapshot /etc, /usr, dpkg
#   2. apt install our .debs of the installed packages + ibverbs-providers-migr:
#      versions, files, ibv_devices/ibv_devinfo on migr_rxe0, pyverbs, ib_write_bw
#   3. apt remove ibverbs-providers-migr (no purge): no twin, no warning;
#      reinstall it: the twin is back
#   4. downgrade to Debian's debs (purging ibverbs-providers-migr): the
#      snapshot is as before, no leftover, ibv_devices as before
set -uo pipefail
[ "${MIGR_GUEST:-}" = 1 ] || { echo "package-install.sh: run it in a test-bed guest (tests/package-test.sh)" >&2; exit 2; }
TOP=$(cd "$(dirname "$0")/../.." && pwd)
DEBS=${MIGR_DEBS:-$TOP/build/debs}
STOCK=/var/cache/migr-stock
LOG=${LOGDIR:-$TOP/build/test-logs}/install-test
rm -rf "$LOG" && mkdir -p "$LOG"
export DEBIAN_FRONTEND=noninteractive
APT=(apt-get -y -q -o Dpkg::Use-Pty=0 --no-install-recommends)
MIGR_SO=/usr/lib/x86_64-linux-gnu/libibverbs/libmigr-rdmav34.so

PASSED=0 FAILED=0 FAILED_NAMES=()
pass() { PASSED=$((PASSED + 1)); echo "PASS $1"; }
fail() {
	FAILED=$((FAILED + 1)); FAILED_NAMES+=("$1"); echo "FAIL $1"
	[ -n "${2:-}" ] && [ -s "$2" ] && tail -n 25 "$2" | sed 's/^/    | /'
	return 0
}
# check NAME CMD...: pass if CMD exits 0 (output in $LOG/NAME.log)
check() {
	local name=$1; shift
	local run=(timeout 180)
	declare -F "$1" >/dev/null && run=() # shell functions run as they are
	if "${run[@]}" "$@" >"$LOG/$name.log" 2>&1; then pass "$name"; else fail "$name" "$LOG/$name.log"; fi
}
t0=$(date +%s)
phase() { echo "--- $* ($(($(date +%s) - t0)) s)"; }

# The system's state: files under /etc and /usr (type, mode, owner, size,
# link target; content hashes under /etc), dpkg's packages and conffiles.
# Volatile: /etc/ld.so.cache's bytes (ldconfig rewrites it), __pycache__
# (py3compile/py3clean), the kernel modules test bed copies in.
snapshot() {
	{
		find /etc /usr -xdev \( -path /usr/lib/modules -o -name __pycache__ \) -prune -o \
			-type d -printf '%p d %m %U:%G\n' -o -printf '%p %y %m %U:%G %s %l\n'
		find /etc -xdev -type f ! -path /etc/ld.so.cache -exec sha256sum {} + | awk '{ print $2, "sha256", $1 }'
	} | LC_ALL=C sort >"$1.files"
	dpkg-query -W -f='${binary:Package} ${Version} ${db:Status-Abbrev}\n' | LC_ALL=C sort >"$1.packages"
	dpkg-query -W -f='${binary:Package}:${Conffiles}\n' | grep -v ':$' | LC_ALL=C sort >"$1.conffiles"
}
# devices LABEL: ibv_devices' output and stderr
devices() { ibv_devices >"$LOG/$1.out" 2>"$LOG/$1.err"; }
lists() { awk -v d="$2" '$1 == d { f = 1 } END { exit !f }' "$LOG/$1.out"; }
rdma_pkgs() { dpkg-query -W -f='${Package} ${Version} ${source:Package}\n' | awk '$3 == "rdma-core" { print $1, $2 }'; }

phase "1. stock system"
[ -d "$DEBS" ] && ls "$DEBS"/libibverbs1_*.deb >/dev/null 2>&1 || { echo "no packages in $DEBS (buildlib/build-debs.sh)"; exit 1; }
[ -d "$STOCK" ] || { echo "no $STOCK: not the stock root (buildlib/testbed/prepare-stock.sh)"; exit 1; }
rdma_pkgs >"$LOG/stock-versions.txt"
sed 's/^/    /' "$LOG/stock-versions.txt"
check stock-is-debian sh -c "! grep -q migr '$LOG/stock-versions.txt'"
devices stock
check stock-lists-rxe0 lists stock rxe0
check stock-no-twin sh -c "! grep -q migr_ '$LOG/stock.out'"
check stock-no-warning test ! -s "$LOG/stock.err"
snapshot "$LOG/before"

phase "2. install our packages"
ours=()
while read -r pkg _; do
	f=$(ls "$DEBS/${pkg}_"*.deb 2>/dev/null | head -n1)
	[ -n "$f" ] && ours+=("$f") || echo "    (no package of ours for $pkg)"
done <"$LOG/stock-versions.txt"
ours+=("$(ls "$DEBS"/ibverbs-providers-migr_*.deb | head -n1)")
version=$(dpkg-deb -f "${ours[0]}" Version)
printf '    %s\n' "${ours[@]##*/}"
check apt-install-ours "${APT[@]}" install "${ours[@]}"
ours_installed() { # every package of ours is installed at our version
	# (their names from the files', as found above; one dpkg-query for
	# all: each start costs about a second in a TCG guest)
	local f pkgs=() st
	for f in "${ours[@]}"; do f=${f##*/}; pkgs+=("${f%%_*}"); done
	st=$(dpkg-query -W -f='${binary:Package} ${Version} ${db:Status-Abbrev}\n' "${pkgs[@]}") || return 1
	echo "$st"
	[ "$(wc -l <<<"$st")" -eq ${#pkgs[@]} ] &&
		awk -v v="$version" '$2 != v || $3 != "ii" { bad = 1 } END { exit bad }' <<<"$st"
}
check ours-installed ours_installed
check migr-provider-installed test -f "$MIGR_SO"
check migr-driver-is-symlink sh -c 'readlink -e /etc/libibverbs.d/migr.driver && grep -qx "driver migr" /etc/libibverbs.d/migr.driver'
check stacking-conf-is-conffile sh -c "dpkg-query -W -f='\${Conffiles}\n' ibverbs-providers-migr | grep -q ' /etc/libibverbs.d/stacking.conf '"
check man-migr-7 sh -c 'zcat /usr/share/man/man7/migr.7.gz | grep -q stacking.conf'
check dpkg-verify-ours dpkg --verify $(rdma_pkgs | awk '{ print $1 }') ibverbs-providers-migr
devices ours
check ours-lists-rxe0 lists ours rxe0
check ours-lists-migr_rxe0 lists ours migr_rxe0
check ours-no-warning test ! -s "$LOG/ours.err"
guid() { ibv_devinfo -d "$1" | awk '$1 == "node_guid:" { print $2 }'; }
check ibv_devinfo-migr_rxe0 sh -c 'ibv_devinfo -d migr_rxe0 && [ -n "$(ibv_devinfo -d migr_rxe0 | grep PORT_ACTIVE)" ]'
check twin-has-rxe0-guid sh -c "[ -n \"$(guid rxe0)\" ] && [ \"$(guid migr_rxe0)\" = \"$(guid rxe0)\" ]"
check pyverbs-smoke python3 - <<'EOF'
import pyverbs.device as d
import pyverbs.enums as e
from pyverbs.cq import CQ
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPCap, QPInitAttr

names = [dev.name.decode() for dev in d.get_device_list()]
assert 'rxe0' in names and 'migr_rxe0' in names, names
with d.Context(name='migr_rxe0') as ctx:
    ctx.query_device()
    assert ctx.query_port(1).state == e.IBV_PORT_ACTIVE
    with PD(ctx) as pd:
        with MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE) as mr:
            with CQ(ctx, 16) as cq:
                cap = QPCap(max_send_wr=4, max_recv_wr=4)
                with QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap)) as qp:
                    print('pyverbs on migr_rxe0: qpn', qp.qp_num, 'lkey', mr.lkey)
EOF
# ib_write_bw loopback on the twin: server, then the client once it listens.
timeout 150 ib_write_bw -d migr_rxe0 -x 1 -F -n 200 >"$LOG/ib_write_bw.server.log" 2>&1 &
spid=$!
for _ in $(seq 300); do ss -ltn '( sport = :18515 )' | grep -q LISTEN && break; sleep 0.1; done
timeout 120 ib_write_bw -d migr_rxe0 -x 1 -F -n 200 127.0.0.1 >"$LOG/ib_write_bw.client.log" 2>&1
crc=$?
wait $spid
src=$?
if [ $crc -eq 0 ] && [ $src -eq 0 ] && grep -q '^ 65536 ' "$LOG/ib_write_bw.client.log"; then
	pass ib_write_bw-migr_rxe0
	grep -A1 '#bytes' "$LOG/ib_write_bw.client.log" | sed 's/^/    /'
else
	fail ib_write_bw-migr_rxe0 "$LOG/ib_write_bw.server.log"
	echo "    server rc=$src client rc=$crc"; tail -n 10 "$LOG/ib_write_bw.client.log" | sed 's/^/    | /'
fi

# The CRIU plugin's package (not installed here: the stock system has no
# criu, which it depends on; tests/guest/criu.sh runs the plugin itself)
CRIU_DEB=$(ls "$DEBS"/migr-criu-plugin_*.deb 2>/dev/null | head -n1)
check criu-plugin-packaged sh -c "[ -n '$CRIU_DEB' ] && dpkg-deb -c '$CRIU_DEB' | grep -q ' ./usr/lib/criu/migr_plugin.so\$'"
check criu-plugin-depends-on-criu sh -c "dpkg-deb -f '$CRIU_DEB' Depends | grep -qw criu"
check criu-plugin-same-version test "$(dpkg-deb -f "$CRIU_DEB" Version 2>/dev/null)" = "$version"

phase "3. remove ibverbs-providers-migr (no purge), then reinstall it"
check apt-remove-migr "${APT[@]}" remove ibverbs-providers-migr
devices removed
check removed-no-twin sh -c "! grep -q migr_ '$LOG/removed.out'"
check removed-lists-rxe0 lists removed rxe0
check removed-no-warning test ! -s "$LOG/removed.err"
check removed-no-driver-file test ! -e /etc/libibverbs.d/migr.driver -a ! -L /etc/libibverbs.d/migr.driver
check removed-keeps-conffile test -f /etc/libibverbs.d/stacking.conf
check apt-reinstall-migr "${APT[@]}" install "$(ls "$DEBS"/ibverbs-providers-migr_*.deb | head -n1)"
devices reinstalled
check reinstalled-lists-migr_rxe0 lists reinstalled migr_rxe0
check reinstalled-no-warning test ! -s "$LOG/reinstalled.err"

phase "4. downgrade to Debian's packages"
stock=()
while read -r pkg ver; do
	f=$(ls "$STOCK/${pkg}_${ver//:/%3a}_"*.deb 2>/dev/null | head -n1)
	[ -n "$f" ] && stock+=("$f") || fail "stock-deb-$pkg" /dev/null
done <"$LOG/stock-versions.txt"
check apt-downgrade "${APT[@]}" install --allow-downgrades --purge "${stock[@]}" ibverbs-providers-migr-
snapshot "$LOG/after"
for k in packages conffiles files; do
	if diff -u "$LOG/before.$k" "$LOG/after.$k" >"$LOG/diff.$k"; then pass "same-$k-as-before"; else fail "same-$k-as-before" "$LOG/diff.$k"; fi
done
# Anything new under /etc or /usr, and whether dpkg knows it.
grep '^+/' "$LOG/diff.files" | cut -c2- | awk '{ print $1 }' | sort -u | while read -r f; do
	echo "    new: $f ($(dpkg -S "$f" 2>/dev/null | cut -d: -f1 || echo 'unknown to dpkg'))"
done
check no-migr-left sh -c '! ls /etc/libibverbs.d/migr.driver /etc/libibverbs.d/stacking.conf '"$MIGR_SO"' /usr/share/man/man7/migr.7.gz 2>/dev/null | grep .'
check dpkg-verify-stock dpkg --verify $(awk '{ print $1 }' "$LOG/stock-versions.txt")
devices downgraded
check downgraded-lists-rxe0 lists downgraded rxe0
check downgraded-no-twin sh -c "! grep -q migr_ '$LOG/downgraded.out'"
check downgraded-no-warning test ! -s "$LOG/downgraded.err"
check downgraded-same-devices diff "$LOG/stock.out" "$LOG/downgraded.out"
check ibv_devinfo-rxe0 ibv_devinfo -d rxe0

phase "done"
echo "install test: $PASSED passed, $FAILED failed ($(($(date +%s) - t0)) s; logs: $LOG)"
[ $FAILED -eq 0 ] || { printf '  failed: %s\n' "${FAILED_NAMES[@]}"; exit 1; }
