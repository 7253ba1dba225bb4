#!/bin/bash
# In one guest: migr's rdma_rxe (buildlib/build-rxe-module.sh) in place of
# the stock module, then its methods (tests/kernel/rxe_methods): numbers
# asked for are given exactly or refused, a fuzz run of random calls, and
# the kernel log stays clean (no warning, oops or leak report).
# usage: kernel-methods.sh [FUZZ_CALLS]     (default 20000)
. "$(dirname "$0")/lib.sh"
KO=${MIGR_BUILD:-$MIGR_TOP/build}/kernel/rxe/rdma_rxe.ko
TOOL=$MIGR_BUILD_DIR/tests/kernel/rxe_methods
FUZZ=${1:-20000}

[ -f "$KO" ] || { echo "kernel-methods: no $KO (buildlib/build-rxe-module.sh)"; exit 2; }
mark=$(dmesg | wc -l)

# swap_module KO: the rxe links as they are, the module replaced, the
# links made again over the same netdevs
swap_module() {
	local links
	links=$(rdma link show | awk '$2 ~ /^rxe/ { split($2, a, "/"); for (i = 1; i <= NF; i++) if ($i == "netdev") print a[1], $(i + 1) }')
	while read -r dev _; do rdma link delete "$dev"; done <<<"$links"
	rmmod rdma_rxe && insmod "$1" || return 1
	while read -r dev nd; do rdma link add "$dev" type rxe netdev "$nd" || return 1; done <<<"$links"
	for _ in $(seq 100); do grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state && return 0; sleep 0.1; done
	return 1
}
if swap_module "$KO"; then pass migr_module_loaded; else fail migr_module_loaded; fi

"$TOOL" rxe0 --fuzz "$FUZZ" >"$LOGDIR/kernel-methods.log" 2>&1
rc=$?
sed 's/^/    /' "$LOGDIR/kernel-methods.log"
[ $rc = 0 ] && pass methods_and_fuzz || fail methods_and_fuzz
# ordinary traffic over the module, every WR and byte checked
check traffic_over_migr_module migr-traffic -d rxe0 --loopback -D 5

dmesg | tail -n +"$((mark + 1))" >"$LOGDIR/kernel-methods.dmesg"
check kernel_log_clean sh -c "! grep -E 'WARNING|BUG|Oops|general protection|leak|refcount' $LOGDIR/kernel-methods.dmesg"
summary kernel-methods
