# Helpers for tests of workloads in namespaces of their own (sourced after
# lib.sh): what an operator does to start one (docs/namespaces.md).
# shellcheck shell=bash

# ns_make NAME ADDR/PREFIX MAC [PARENT]: /run/netns/NAME with one macvlan
# (bridge mode) on PARENT (default eth0), named eth0 in there, with ADDR
# and MAC, up; lo up. A macvlan talks to the others of its parent, not to
# the parent host itself (a peer on the same host: in a netns of its own)
ns_make() {
	local name=$1 addr=$2 mac=$3 parent=${4:-eth0}
	ip netns add "$name" &&
		ip link add "mv-$name" link "$parent" address "$mac" type macvlan mode bridge &&
		ip link set "mv-$name" netns "$name" &&
		ip -n "$name" link set "mv-$name" name eth0 &&
		ip -n "$name" addr add "$addr" dev eth0 &&
		ip -n "$name" link set eth0 up &&
		ip -n "$name" link set lo up
}

# ns_del NAME: the namespace and its interface (once no process holds it)
ns_del() { ip netns del "$1" 2>/dev/null; }

# ns_run NAME LOG CMD...: CMD in the background as the init (pid 1) of a
# pid namespace of its own, in the network namespace NAME, in migrd's
# mount namespace (no "ip netns exec": its mount namespace would have to
# move too), leading a session of its own (CRIU refuses a tree whose
# session leader is outside its pid namespace). NS_PID: CMD's pid here; NS_HOLDER: the unshare that waits
# for it (not moved; it ends when CMD ends here). No --kill-child: CRIU
# would restore its parent-death signal, and the restored root's parent,
# criu restore, exits
ns_run() {
	local name=$1 log=$2
	shift 2
	nsenter --net="/run/netns/$name" unshare --pid --fork setsid "$@" </dev/null >"$log" 2>&1 &
	NS_HOLDER=$!
	NS_PID=
	for _ in $(seq 100); do
		NS_PID=$(cat /proc/"$NS_HOLDER"/task/*/children 2>/dev/null | awk '{ print $1; exit }')
		[ -n "$NS_PID" ] && return 0
		sleep 0.1
	done
	return 1
}

# ns_started PID: PID serves its control socket, "@migr/<its pid there>"
# in its own network namespace
ns_started() {
	local nspid
	nspid=$(awk '/^NSpid:/ { print $NF }' /proc/"$1"/status 2>/dev/null)
	[ -n "$nspid" ] || return 1
	for _ in $(seq 300); do
		grep -q "@migr/$nspid\$" /proc/"$1"/net/unix 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# ns_children PID: PID's children (pids here)
ns_children() { cat /proc/"$1"/task/*/children 2>/dev/null; }

# (functions, not commands: not for lib.sh's check, which runs a command)
# grows LOG REGEX [SECONDS]: the last number REGEX captures (a sed -E
# group 1) in LOG goes up within SECONDS (20)
last_num() { sed -nE "s/.*$2.*/\1/p" "$1" 2>/dev/null | tail -n 1; }
grows() {
	local v0 v
	v0=$(last_num "$1" "$2")
	for _ in $(seq $((${3:-20} * 5))); do
		sleep 0.2
		v=$(last_num "$1" "$2")
		[ "${v:-0}" -gt "${v0:-0}" ] && return 0
	done
	return 1
}
