#!/bin/bash
# In two guests with two NICs each (buildlib/testbed/run.sh --two --nics 2):
# every pairing of A's soft-RoCE devices with B's carries traffic, over the
# devices themselves and over their migr twins, and each device's packets
# leave and arrive through its own NIC (the other device's counters stay
# still). A runs the servers, B the clients.
#   A: eth0 10.9.0.1  (rxe0)   eth1 10.9.0.11 (rxe1)
#   B: eth0 10.9.0.2  (rxe0)   eth1 10.9.0.12 (rxe1)
# GID index 1 of every rxe device is its NIC's IPv4 address (RoCE v2).
# usage: two-nic.sh A|B
. "$(dirname "$0")/lib.sh"
role=${1:-}
case $role in A) peer=B ;; B) peer=A ;; *) echo "usage: two-nic.sh A|B" >&2; exit 2 ;; esac
declare -A IP=([A0]=10.9.0.1 [A1]=10.9.0.11 [B0]=10.9.0.2 [B1]=10.9.0.12)
declare -A MAC=([A0]=52:54:00:4d:00:01 [A1]=52:54:00:4d:01:01 [B0]=52:54:00:4d:00:02 [B1]=52:54:00:4d:01:02)
GIDX=1
PORT=18700 # perftest TCP ports and rping ports: one per pairing, so that a
# client can never meet the server of another pairing
NITER=${TWO_NIC_ITERS:-100}
export VERBS_LOG_LEVEL=3
T0=$SECONDS

# sysfs GID of an IPv4 address (IPv4-mapped IPv6)
gid_of() { local a b c d; IFS=. read -r a b c d <<<"$1"; printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$a" "$b" "$c" "$d"; }

# 1. NICs, addresses and devices as promised.
for n in 0 1; do
	check "two_nic_setup_eth${n}_$role" bash -c "
		[ \"\$(cat /sys/class/net/eth$n/address)\" = ${MAC[$role$n]} ] &&
		ip -4 -o addr show dev eth$n | grep -qw ${IP[$role$n]} &&
		rdma link show rxe$n/1 | tee /dev/stderr | grep -Eq 'state ACTIVE .*netdev eth$n( |\$)'"
done

# 2. GID tables: index 1 is the NIC's IPv4 address, RoCE v2, on that NIC,
# and no rxe holds the other NIC's address.
for n in 0 1; do
	g=/sys/class/infiniband/rxe$n/ports/1
	check "two_nic_gid_rxe${n}_$role" bash -c "
		for i in 0 1 2 3; do echo \"rxe$n gid \$i: \$(cat $g/gids/\$i 2>/dev/null) \$(cat $g/gid_attrs/types/\$i 2>/dev/null) \$(cat $g/gid_attrs/ndevs/\$i 2>/dev/null)\"; done
		[ \"\$(cat $g/gids/$GIDX)\" = $(gid_of "${IP[$role$n]}") ] &&
		[ \"\$(cat $g/gid_attrs/types/$GIDX)\" = 'RoCE v2' ] &&
		[ \"\$(cat $g/gid_attrs/ndevs/$GIDX)\" = eth$n ] &&
		! grep -qx $(gid_of "${IP[$role$((1 - n))]}") $g/gids/* 2>/dev/null"
	sed -n 's/^rxe/    rxe/p' "$LOGDIR/two_nic_gid_rxe${n}_$role.log"
done

# 3. IP: each local address reaches both peer addresses through its own NIC,
# and each peer address was resolved to its own NIC's MAC (no ARP flux).
for n in 0 1; do
	for m in 0 1; do
		src=${IP[$role$n]} dst=${IP[$peer$m]}
		check "two_nic_ping_${role}${n}_${peer}${m}" bash -c "
			for i in \$(seq 60); do ping -c1 -W1 -I $src $dst >/dev/null && break; done
			ping -c3 -i 0.2 -W2 -I $src $dst && ip neigh show $dst dev eth$n | tee /dev/stderr | grep -q 'lladdr ${MAC[$peer$m]}'"
	done
done

# counters DEV: "sent rcvd" packet counts of an rxe device
counters() { local c=/sys/class/infiniband/$1/ports/1/hw_counters; echo "$(cat $c/sent_pkts) $(cat $c/rcvd_pkts)"; }
# path_check NAME N: only rxeN of this VM sent and received since "before"
path_check() {
	local name=$1 n=$2 o=$((1 - $2)) d=() a b i
	read -r -a b <<<"$before"
	read -r -a a <<<"$(counters rxe0) $(counters rxe1)"
	for i in 0 1 2 3; do d+=($((a[i] - b[i]))); done # sent0 rcvd0 sent1 rcvd1
	echo "    $name: rxe$n sent +${d[2 * n]} rcvd +${d[2 * n + 1]}; rxe$o sent +${d[2 * o]} rcvd +${d[2 * o + 1]}"
	if [ "${d[2 * n]}" -gt 0 ] && [ "${d[2 * n + 1]}" -gt 0 ] && [ "${d[2 * o]}" -eq 0 ] && [ "${d[2 * o + 1]}" -eq 0 ]; then
		pass "$name"
	else
		fail "$name"
	fi
}
# retry CMD: the client's server may still be starting (its own port: no
# other pairing's server can answer). Three minutes: in CI the guests
# share two cores with the packages' build, and 40 s once ran out; and a
# server that runs again (again(), below) waits for its client until
# check()'s 120 s, after which the next pairing's server starts (the
# clients' checks are bounded at 240 s)
retry() { echo "for i in \$(seq 180); do $* && exit 0; sleep 1; done; exit 1"; }
# again CMD: a perftest server that failed listens once more. On a loaded
# TCG guest a server has exited 1 after its header now and then (as in
# lib.sh's pair()); its client's retry() then finds the second one. A
# second failure counts.
again() { echo "$* || { echo '(the server failed; once more)'; $*; }"; }
# bw_line LOG: perftest's result line
bw_line() { awk '/^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+/ { print "    " $0 }' "$1" | tail -n 1; }

# pairing KIND A_N B_N: one pairing; KIND is write (ib_write_bw on rxe),
# send (ib_send_bw on migr twins) or rping (rdma_cm on migr twins)
pairing() {
	local kind=$1 an=$2 bn=$3 n dev name port t
	n=$([ "$role" = A ] && echo "$an" || echo "$bn")
	port=$((PORT++))
	name=two_nic_${kind}_A${an}_B${bn}
	dev=rxe$n
	[ "$kind" = write ] || dev=migr_rxe$n
	export VERBS_LOG_FILE=$LOGDIR/${name}_$role.verbs.log
	rm -f "$VERBS_LOG_FILE"
	# B's rping client must not knock (a CM request) at A's other device
	# while A still counts the previous pairing's packets
	[ "$kind.$role" != rping.B ] || sleep 3
	before="$(counters rxe0) $(counters rxe1)"
	t=$SECONDS
	case $kind.$role in
	write.A) check "${name}_server" bash -c "$(again ib_write_bw -d "$dev" -x $GIDX -n "$NITER" -s 65536 -p "$port")" ;;
	write.B) CHECK_TIMEOUT=240 check "$name" bash -c "$(retry ib_write_bw -d "$dev" -x $GIDX -n "$NITER" -s 65536 -p "$port" "${IP[A$an]}")" ;;
	send.A) check "${name}_server" bash -c "$(again ib_send_bw -d "$dev" -x $GIDX -n "$NITER" -s 65536 -p "$port")" ;;
	send.B) CHECK_TIMEOUT=240 check "$name" bash -c "$(retry ib_send_bw -d "$dev" -x $GIDX -n "$NITER" -s 65536 -p "$port" "${IP[A$an]}")" ;;
	rping.A) RDMAV_STACKED_DEVICES=first check "${name}_server" rping -s -a "${IP[A$an]}" -p "$port" -C 20 -V ;;
	rping.B) RDMAV_STACKED_DEVICES=first CHECK_TIMEOUT=240 check "$name" bash -c "$(retry rping -c -a "${IP[A$an]}" -I "${IP[B$bn]}" -p "$port" -C 20 -V)" ;;
	esac
	[ "$role" = B ] && [ "$kind" != rping ] && bw_line "$LOGDIR/$name.log"
	echo "    $name: $((SECONDS - t)) s"
	path_check "${name}_path_$role" "$n"
	if [ "$kind" != write ]; then
		grep -q "migr_rxe$n: .*opened over rxe$n\$" "$VERBS_LOG_FILE" && pass "${name}_twin_$role" ||
			fail "${name}_twin_$role" "$VERBS_LOG_FILE"
	fi
}

# 4. Every pairing: the devices (ib_write_bw), then the migr twins
# (ib_send_bw, and rping through rdma_cm, which picks the device from the
# addresses).
for kind in write send rping; do
	for p in "0 0" "1 0" "0 1" "1 1"; do
		# shellcheck disable=SC2086 # two numbers
		pairing "$kind" $p
	done
done

echo "    two-nic $role: $((SECONDS - T0)) s"
summary "two-nic $role"
