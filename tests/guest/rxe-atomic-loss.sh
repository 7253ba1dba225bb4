#!/bin/bash
# Not in the suite: a check of soft-RoCE itself, which fails on trixie's
# 6.12 rxe. With packets dropped on the link (netem), migr-traffic between
# A and B over plain rxe0 (no migr anywhere) sees an atomic complete with
# success and its result never written: rxe acknowledges a duplicate SEND
# or WRITE with a plain ACK carrying the last PSN it executed; when that
# PSN is an atomic's whose own ACK was lost, the requester completes the
# atomic from that plain ACK. migr's switch is not involved; this is why
# partner.sh runs no atomics on the pair whose moves take seconds.
# usage (host): buildlib/testbed/run.sh --two --nics 2 --timeout 600 \
#   --a "tests/guest/rxe-atomic-loss.sh a" --b "tests/guest/rxe-atomic-loss.sh b"
#   [DEV [LOSS [SECONDS]]] after a|b: default rxe0 2% 150
. "$(dirname "$0")/lib.sh"
role=${1:?a or b}
dev=${2:-rxe0} loss=${3:-2%} secs=${4:-150}
A_IP=10.9.0.1
two_host_env rxe-atomic-loss
modprobe sch_netem || { echo "no netem in this kernel" >&2; exit 3; }
tc qdisc replace dev eth0 root netem loss "$loss" || exit 3
echo "    netem: $loss of eth0's packets dropped"
log=$LOGDIR/rxe-atomic-loss-$role.log
T=(-d "$dev" --qps 2 -D "$secs" -r 30 --stall-timeout 120 --port 18650)
if [ "$role" = a ]; then
	rm -rf "${SYNC%/*}" && mkdir -p "$SYNC"
	migr-traffic "${T[@]}" --server >"$log" 2>&1 &
	P=$!
	say a.up
	wait $P
else
	await a.up || { fail server_up; summary "rxe-atomic-loss $role"; exit; }
	migr-traffic "${T[@]}" --client $A_IP --connect-timeout 60 >"$log" 2>&1
fi
rc=$?
tc qdisc del dev eth0 root
c=/sys/class/infiniband/$dev/ports/1/hw_counters
echo "    $dev: duplicate_request=$(cat $c/duplicate_request) completer_retry_err=$(cat $c/completer_retry_err)"
tail -n 1 "$log" | sed 's/^/    /'
if [ $rc -eq 0 ]; then pass "atomics_intact_$role"; else fail "atomics_intact_$role" "$log"; fi
summary "rxe-atomic-loss $role"
