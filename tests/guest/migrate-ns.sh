#!/bin/bash
# In two guests (buildlib/testbed/run.sh --two): migrctl migrate moves a
# workload that runs as a container would, in a pid namespace and a
# network namespace of its own (docs/namespaces.md), with its address
# (10.9.0.50, a macvlan) and an established TCP connection: A -> B -> A.
# The tree: a shell as its pid namespace's init (as a container's init,
# it uses no RDMA), two migr-traffic --loopback children (two migr
# processes, parked and resumed together; every op and byte checked), and
# a child holding a TCP connection to a server in B (tests/guest/ns_tcp.py:
# a running counter, every echo checked), which must never break. Before that, refusals that touch nothing and a failed
# restore that puts it back to work on A, connected. Logs on the
# share (the same paths in both guests).
# usage: migrate-ns.sh a|b    (a: 10.9.0.1, b: 10.9.0.2)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ns.sh"
. "$(dirname "$0")/migrate-lib.sh"
role=${1:?a or b}
A_IP=10.9.0.1
B_IP=10.9.0.2
WL_ADDR=10.9.0.50 WL_MAC=02:00:0a:09:00:32 # the workload's
SRV_ADDR=10.9.0.60 SRV_MAC=02:00:0a:09:00:3c SRV_PORT=18700
TRAFFIC=$LOGDIR/migrate-ns-traffic.log TRAFFIC2=$LOGDIR/migrate-ns-traffic2.log
TCPLOG=$LOGDIR/migrate-ns-tcp.log
two_host_env migrate-ns
# The destination's criu restore fails while $FAIL_FLAG exists
criu_wrapper
printf '%s\n' "criu = $RUN/criu" "criu_plugins = $MIGR_BUILD_DIR/lib/criu" "state_dir = $RUN/state" >"$RUN/migrd.conf"
export MIGRD_CONF=$RUN/migrd.conf
start_test_migrd migrate-ns "$LOGDIR/migrate-ns-migrd-$role.log"
[ -S "$MIGRD_SOCKET" ] && pass "migrd_starts_$role" || fail "migrd_starts_$role" "$LOGDIR/migrate-ns-migrd-$role.log"

traffic_goes() { grows "$TRAFFIC" 'ops=([0-9]+)' 30 && grows "$TRAFFIC2" 'ops=([0-9]+)' 30; }
tcp_goes() { grows "$TCPLOG" ' n=([0-9]+)' 60 && ! grep -q BROKEN "$TCPLOG"; }
# goes WHEN: its RDMA traffic and its TCP connection both go on
# (WHEN_traffic_goes, WHEN_tcp_goes), checked side by side: each waits
# for its next count, seconds in a busy TCG guest
goes() {
	local t
	traffic_goes &
	t=$!
	NAME=${1}_tcp_goes ok tcp_goes
	if wait "$t"; then pass "${1}_traffic_goes"; else fail "${1}_traffic_goes"; fi
}
# migr_kids ROOT: the tree's migr processes, ROOT's migr-traffic children
migr_kids() {
	local c
	for c in $(ns_children "$1"); do
		[ "$(cat /proc/"$c"/comm 2>/dev/null)" = migr-traffic ] && echo "$c"
	done
}
# tree_started ROOT / tree_runs_here ROOT: both serve their control
# socket / run over rxe0 here, not parked
tree_started() {
	local c n=0
	for _ in $(seq 100); do [ "$(migr_kids "$1" | wc -l)" = 2 ] && break; sleep 0.1; done
	for c in $(migr_kids "$1"); do ns_started "$c" && n=$((n + 1)); done
	[ $n = 2 ]
}
tree_runs_here() {
	local c n=0
	for c in $(migr_kids "$1"); do runs_here "$c" && n=$((n + 1)); done
	[ $n = 2 ]
}
ns_init() { [ "$(awk '/^NSpid:/ { print $NF }' /proc/"$1"/status)" = 1 ]; }
# pid_there NAME: the moved root's pid on the destination (NAME.out)
pid_there() { grep -o '"pid_there":[0-9]*' "$LOGDIR/$1.out" | tail -n 1 | cut -d: -f2; }
migr_netns() { ip netns list | awk '/^migr-/ { print $1 }'; }

if [ "$role" = a ]; then
	rm -rf "${SYNC%/*}" "$TRAFFIC" "$TCPLOG" && mkdir -p "$SYNC"
	say a-up
	await b-up 120 || fail a_saw_b
	await srv-up 120 || fail a_saw_server
	ns_del wl
	NAME=a_netns_made ok ns_make wl "$WL_ADDR/24" "$WL_MAC"
	rm -f "$TRAFFIC2"
	# shellcheck disable=SC2016 # the shell's own $0 and $@
	ns_run wl "$TRAFFIC" python3 "$MIGR_TOP/tests/guest/ns_tcp.py" hold "$SRV_ADDR" "$SRV_PORT" "$TCPLOG" -- \
		sh -c 'migr-traffic "$@" >"$0" 2>&1 & migr-traffic "$@"; wait' "$TRAFFIC2" \
		-d migr_rxe0 --loopback --rate 200 -D 1500 --stall-timeout 120 -r 2
	WP=$NS_PID
	echo "    the workload: pid $WP here"
	NAME=a_started ok tree_started "$WP"
	NAME=a_root_is_its_pidns_init ok ns_init "$WP"
	goes a

	# Refusals before anything is touched: it runs on, connected
	refused refused_not_a_peer "10.9.0.3 is not a peer of this host" --pid "$WP" --to 10.9.0.3
	ip -n wl addr add 10.9.0.51/24 dev eth0
	refused refused_two_addresses "more than one IPv4 address" --pid "$WP" --to "$B_IP"
	ip -n wl addr del 10.9.0.51/24 dev eth0
	goes after_refusals
	NAME=after_refusals_runs_here ok tree_runs_here "$WP"

	# A restore that fails there, after the final dump: back to work
	# here, its interface up again, its TCP sockets out of repair mode
	say fail-restore
	await restore-fails 60 || fail a_saw_restore_fails
	refused failed_restore_says_why "criu restore failed" --pid "$WP" --to "$B_IP"
	logged failed_restore_runs_here_again "pid $WP runs here again on rxe0" "$LOGDIR/failed_restore_says_why.out"
	check after_rollback_link_up sh -c "ip -n wl addr show eth0 | grep -q 'state UP' && ip -n wl addr show eth0 | grep -q '$WL_ADDR/24'"
	goes after_rollback
	NAME=after_rollback_runs_here ok tree_runs_here "$WP"
	say restore-works
	await restore-works-b 60 || fail a_saw_restore_works

	# A -> B, with pre-copy
	moved migrate_a_to_b --pid "$WP" --to "$B_IP" --pre-copy 1 --json
	check a_to_b_moved_two_migr_processes grep -q '"migr_processes":2' "$LOGDIR/migrate_a_to_b.out"
	pid_there migrate_a_to_b >"$SYNC/pid-b"
	wait "$NS_HOLDER" 2>/dev/null
	NAME=source_tree_gone ok gone "$WP"
	check a_address_released sh -c "! ip -n wl addr show | grep -q '$WL_ADDR'"
	say moved-ab
	await moved-ba 900 || fail a_saw_b_move_back
	AP=$(pid_there migrate_b_to_a)
	echo "    back on A as pid $AP"
	NAME=back_on_a_runs_here ok tree_runs_here "$AP"
	NAME=back_on_a_root_is_its_pidns_init ok ns_init "$AP"
	goes back_on_a
	check back_on_a_in_a_netns_of_migrd sh -c "ip -n $(migr_netns | head -n 1) addr show eth0 | grep -q '$WL_ADDR/24'"
	# The verdicts: the TCP connection's, then both migr-traffic's (the
	# shell ends when they have)
	KIDS=$(migr_kids "$AP")
	for c in $(ns_children "$AP"); do
		case " $(echo $KIDS) " in *" $c "*) ;; *) kill -TERM "$c" ;; esac
	done
	sleep 1
	check tcp_unbroken_a_b_a sh -c "grep -q 'tcp: OK' $TCPLOG && ! grep -q BROKEN $TCPLOG"
	tail -n 1 "$TCPLOG" | sed 's/^/    /'
	# shellcheck disable=SC2086 # two pids
	kill -TERM $KIDS
	for _ in $(seq 600); do gone "$AP" && break; sleep 0.1; done
	check traffic_verified_a_b_a sh -c "grep -q 'migr-traffic: PASS' $TRAFFIC && grep -q 'migr-traffic: PASS' $TRAFFIC2"
	tail -n 2 "$TRAFFIC" "$TRAFFIC2" | sed 's/^/    /'
	logged a_migrd_logged_commit "committed; pid $AP runs here" "$LOGDIR/migrate-ns-migrd-a.log"
	kill -KILL "$AP" 2>/dev/null
	for n in $(migr_netns) wl; do ns_del "$n"; done
	say done
else
	await a-up 120 || fail b_saw_a
	say b-up
	ns_del srv
	rm -f "$LOGDIR/migrate-ns-server.log"
	NAME=b_server_netns_made ok ns_make srv "$SRV_ADDR/24" "$SRV_MAC"
	nsenter --net=/run/netns/srv python3 "$MIGR_TOP/tests/guest/ns_tcp.py" server "$SRV_PORT" "$LOGDIR/migrate-ns-server.log" &
	SRV=$!
	for _ in $(seq 100); do grep -q listening "$LOGDIR/migrate-ns-server.log" 2>/dev/null && break; sleep 0.1; done
	say srv-up

	await fail-restore 300 || fail b_saw_fail_restore
	touch "$FAIL_FLAG"
	say restore-fails
	await restore-works 300 || fail b_saw_restore_works
	rm -f "$FAIL_FLAG"
	check b_failed_restore_left_no_netns sh -c "! ip netns list | grep -q '^migr-'"
	logged b_logged_failed_restore "criu restore failed" "$LOGDIR/migrate-ns-migrd-b.log"
	say restore-works-b

	await moved-ab 900 || fail b_saw_move
	BP=$(cat "$SYNC/pid-b")
	echo "    on B as pid $BP"
	NAME=on_b_runs_here ok tree_runs_here "$BP"
	NAME=on_b_root_is_its_pidns_init ok ns_init "$BP"
	goes on_b
	check on_b_netns_has_its_address sh -c "ip -n $(migr_netns | head -n 1) addr show eth0 | grep -q '$WL_ADDR/24'"
	check on_b_images_removed sh -c "! find $RUN/state/migrations -name '*.img' | grep -q ."
	moved migrate_b_to_a --pid "$BP" --to "$A_IP" --json
	NAME=b_copy_gone ok gone_soon "$BP"
	check b_netns_removed sh -c "! ip netns list | grep -q '^migr-'"
	say moved-ba
	await done 600 || fail b_saw_a_done
	kill "$SRV" 2>/dev/null
	check server_saw_one_connection sh -c "[ \$(grep -c accepted $LOGDIR/migrate-ns-server.log) = 1 ]"
	ns_del srv
fi
# CRIU's logs of every migration, for whoever looks into one
cp -r "$RUN/state/migrations" "$LOGDIR/migrate-ns-criu-logs-$role" 2>/dev/null
# gone before the next script in this guest starts its own (tests/run.sh)
kill "$MIGRD" 2>/dev/null
wait "$MIGRD" 2>/dev/null
summary "migrate-ns $role"
