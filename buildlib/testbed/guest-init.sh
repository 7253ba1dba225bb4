#!/bin/sh
# PID 1 of a test-bed guest (started by the initramfs from the 9p share /migr,
# into which run.sh copies it with env-ROLE and job-ROLE.sh). Sets up the
# system, the repo share and rxe0, runs the job with a timeout, records its
# exit code and dmesg in /migr, and powers off. Must never exit: PID 1.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8
exec </dev/null >/dev/console 2>&1

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs -o mode=755 tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /tmp
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
ln -sf /proc/self/fd /dev/fd 2>/dev/null

ROLE=$(sed -n 's/.*migr\.role=\([^ ]*\).*/\1/p' /proc/cmdline)
# shellcheck disable=SC1090
. "/migr/env-$ROLE" # MIGR_SHARES, MIGR_CACHED_SHARES, MIGR_IP, MIGR_IP1, MIGR_TIMEOUT, MIGR_RXE_KO

finish() { # finish RC: record the result and power off
	dmesg >"/migr/dmesg-$ROLE.txt" 2>/dev/null
	echo "$1" >"/migr/rc-$ROLE"
	sync
	busybox poweroff -f
	sleep 30
}
setup_failed() {
	echo "MIGR-GUEST-SETUP-FAILED: $*" | tee "/migr/setup-failed-$ROLE"
	finish 125
}

ip link set lo up
hostname "migr-$ROLE"
echo "127.0.1.1 migr-$ROLE" >>/etc/hosts

# The host's repo (and build dir) at the same absolute paths, read-write, so an
# IN_PLACE build's RPATHs resolve. Tags share0, share1... in MIGR_SHARES order,
# then MIGR_CACHED_SHARES' (the guest build, over its place in the first ones),
# whose files the guest caches: the host does not change them while it runs.
i=0
for d in $MIGR_SHARES; do
	mkdir -p "$d"
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 "share$i" "$d" || setup_failed "9p mount of $d"
	i=$((i + 1))
done
for d in $MIGR_CACHED_SHARES; do
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=loose "share$i" "$d" ||
		setup_failed "9p mount of $d (cached)"
	echo "$d" >>/run/migr-cached-shares
	i=$((i + 1))
done
# Tests run programs as other users (nobody) from the shares, so every
# directory above one must let them through, also where the clone is under
# /root (0700 in the guest's root as on the host). The guest's root is a
# tmpfs overlay: nothing changes on the host.
for d in $MIGR_SHARES; do
	p=$(dirname "$d")
	while [ "$p" != / ]; do
		chmod o+x "$p" || setup_failed "chmod o+x $p (above the share $d)"
		p=$(dirname "$p")
	done
done

# Soft-RoCE: rxe0 on veth0 (one VM) or on eth0 (two VMs on a QEMU socket link),
# and with MIGR_IP1 (run.sh --two --nics 2) rxe1 on eth1.
# pid_max as systemd sets it on every Debian 13 system (4194304): the
# kernel's default for one or two CPUs, 32768, refused the ns_last_pid
# values the migration tests put their processes' later pids at (35000),
# and those pids then came from the range the moved tree's ids hold
echo 4194304 >/proc/sys/kernel/pid_max || setup_failed "pid_max"
modprobe rdma_rxe || setup_failed "modprobe rdma_rxe"
# MIGR_RXE_KO (run.sh's MIGR_TESTBED_RXE_KO): migr's rdma_rxe in its place,
# its dependencies loaded by the stock one's modprobe above
if [ -n "${MIGR_RXE_KO:-}" ]; then
	{ rmmod rdma_rxe && insmod "$MIGR_RXE_KO"; } || setup_failed "insmod $MIGR_RXE_KO"
fi
if [ -z "$MIGR_IP" ]; then
	modprobe veth || setup_failed "modprobe veth"
	{ ip link add veth0 type veth peer name veth1 &&
		ip addr add 10.0.0.1/24 dev veth0 && ip link set veth0 up && ip link set veth1 up; } ||
		setup_failed "veth0/veth1"
	rdma link add rxe0 type rxe netdev veth0 || setup_failed "rdma link add rxe0"
else
	modprobe virtio_net || setup_failed "modprobe virtio_net"
	last=eth0
	[ -z "${MIGR_IP1:-}" ] || last=eth1
	n=0
	while [ ! -e /sys/class/net/$last ] && [ $n -lt 50 ]; do sleep 0.1; n=$((n + 1)); done
	if [ -n "${MIGR_IP1:-}" ]; then
		# run.sh --nics 2: all four NICs of the two VMs share one segment
		# and one subnet. eth1 is the NIC whose MAC is 52:54:00:4d:01:xx
		# (swap the names if the kernel probed them the other way round).
		case $(cat /sys/class/net/eth0/address 2>/dev/null) in
		52:54:00:4d:01:*)
			{ ip link set eth0 name ethtmp && ip link set eth1 name eth0 && ip link set ethtmp name eth1; } ||
				setup_failed "eth0/eth1 names"
			;;
		esac
		# Each address must answer ARP only on its own NIC (arp_ignore=1)
		# and ask with the NIC's own address (arp_announce=2): rxe hands a
		# packet to the rxe device of the NIC it arrived on, which drops it
		# unless the destination is one of its own GIDs. Replies may arrive
		# on the other NIC than the main table's first route: no rp_filter.
		for c in all default eth0 eth1; do
			echo 1 >/proc/sys/net/ipv4/conf/$c/arp_ignore &&
				echo 2 >/proc/sys/net/ipv4/conf/$c/arp_announce &&
				echo 0 >/proc/sys/net/ipv4/conf/$c/rp_filter || setup_failed "ARP sysctls of $c"
		done
	fi
	{ ip addr add "$MIGR_IP/24" dev eth0 && ip link set eth0 up; } || setup_failed "eth0 $MIGR_IP"
	if [ -n "${MIGR_IP1:-}" ]; then
		# Source-address routing, so that traffic from an address leaves
		# by its NIC (rxe itself always routes out of its own netdev).
		{ ip addr add "$MIGR_IP1/24" dev eth1 && ip link set eth1 up &&
			ip route add 10.9.0.0/24 dev eth0 src "$MIGR_IP" table 100 &&
			ip route add 10.9.0.0/24 dev eth1 src "$MIGR_IP1" table 101 &&
			ip rule add from "$MIGR_IP" table 100 && ip rule add from "$MIGR_IP1" table 101; } ||
			setup_failed "eth1 $MIGR_IP1"
	fi
	rdma link add rxe0 type rxe netdev eth0 || setup_failed "rdma link add rxe0"
	if [ -n "${MIGR_IP1:-}" ]; then
		rdma link add rxe1 type rxe netdev eth1 || setup_failed "rdma link add rxe1"
	fi
fi

# Commands may use rxe0 at once: wait (up to 10 s) for its port to be ACTIVE.
n=0
until grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state 2>/dev/null || [ $n -ge 100 ]; do
	sleep 0.1
	n=$((n + 1))
done
grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state || setup_failed "rxe0 port not ACTIVE"
if [ -n "${MIGR_IP1:-}" ]; then
	n=0
	until grep -q ACTIVE /sys/class/infiniband/rxe1/ports/1/state 2>/dev/null || [ $n -ge 100 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	grep -q ACTIVE /sys/class/infiniband/rxe1/ports/1/state || setup_failed "rxe1 port not ACTIVE"
fi
cut -d' ' -f1 /proc/uptime >"/migr/up-$ROLE"
echo "MIGR-GUEST-UP uptime=$(cat "/migr/up-$ROLE")"

# The job's output goes to the virtio serial port "migr.out" (fast, and not a
# tty, so bytes pass unchanged), which run.sh streams; kernel messages stay on
# the console (serial port).
out=/dev/console
for p in /sys/class/virtio-ports/*; do
	[ "$(cat "$p/name" 2>/dev/null)" = migr.out ] && out=/dev/${p##*/}
done
t0=$(cut -d' ' -f1 /proc/uptime)
setsid -w timeout -k 10 "$MIGR_TIMEOUT" /bin/bash "/migr/job-$ROLE.sh" </dev/null >"$out" 2>&1
rc=$?
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
	awk -v t0="$t0" -v lim="$MIGR_TIMEOUT" '{ exit !($1 - t0 >= lim) }' /proc/uptime && touch "/migr/timeout-$ROLE"
fi
echo "MIGR-GUEST-DONE rc=$rc uptime=$(cut -d' ' -f1 /proc/uptime)"
finish $rc
