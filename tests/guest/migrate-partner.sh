#!/bin/bash
# In two guests with two NICs each (buildlib/testbed/run.sh --two --nics 2):
# a process whose partner is a process on the other host (migr-traffic, RC
# QPs through an SRQ, every op of both APIs, every WR and byte checked at
# both ends) leaves the device while its partner holds its posts, then
# comes back elsewhere and the partner follows:
# 1. parked and resumed by its control socket as a migration does it, on
#    A, its partner on B: 18 s parked (longer than a switch's lease), then
#    resumed on rxe1; 2 s, back on rxe0.
# 2. moved between the hosts by migrctl migrate, MIGR_MIGRATIONS times
#    (default 4, as CI runs it; tests/soak.sh 20: A -> B -> A ...), as a container runs (its own pid and
#    network namespaces, address 10.9.0.50; docs/namespaces.md) and as a
#    user that is not root (its partner sessions' grants move with it),
#    its TCP channel to the partner kept; the partner runs on B in a
#    network namespace of its own (10.9.0.60): on the destination host
#    every other move, on the other host the others. Each move's report
#    names the 4 partner QPs and the blackout the partner saw.
# With --module, both guests on migr's rdma_rxe (migr_rxe(7)) and part 2
# alone, MIGR_MIGRATIONS times (default 2): each move's report says every
# partner QP kept its number, that the numbers the destination held for
# the workload from the check on (mig-hold) went to it at the restore, and
# on A, where the workload's numbers are free, that all were held (another
# process that asks for one of them between the hold and the restore is
# refused: a pre-copy round there gives it the time) and every rebuilt
# object has its own (on B its partner's objects,
# made in the same order on a device as new, hold the same numbers: there
# the workload's are translated, and its traffic is checked all the same).
# usage: migrate-partner.sh a|b [--module]   (a: 10.9.0.1/.11, b: 10.9.0.2/.12)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ns.sh"
role=${1:?a or b}
MODULE=
[ "${2:-}" = --module ] && MODULE=1
A_IP=10.9.0.1
B_IP=10.9.0.2
WL_ADDR=10.9.0.50 WL_MAC=02:00:0a:09:00:32 # the workload's
PT_ADDR=10.9.0.60 PT_MAC=02:00:0a:09:00:3c # its partner's, on B
# --module runs after others in the same guests: its own addresses, so
# that what a failed one left behind does not fail it too
[ -z "$MODULE" ] || {
	WL_ADDR=10.9.0.51 WL_MAC=02:00:0a:09:00:33
	PT_ADDR=10.9.0.61 PT_MAC=02:00:0a:09:00:3d
}
MIGRATIONS=${MIGR_MIGRATIONS:-${MODULE:+2}}
MIGRATIONS=${MIGRATIONS:-4}
CONTROL=$MIGR_TOP/tests/switch/control.py
NAME=migrate-partner${MODULE:+-module}
two_host_env "$NAME"
if [ -n "$MODULE" ]; then
	load_migr_rxe && pass "migr_rxe_loaded_$role" || fail "migr_rxe_loaded_$role"
fi
TRAFFIC="-d migr_rxe0 --qps 4 --srq --depth 8 --size 512 --api mixed --mode event --rate 200 -D 1500 --stall-timeout 120"
# on the module, a memory window on each QP too: its key is held and kept
[ -z "$MODULE" ] || TRAFFIC+=" --mw"
WL_LOG=$LOGDIR/$NAME-workload.log # on the share: the same path in both
printf '%s\n' "criu_plugins = $MIGR_BUILD_DIR/lib/criu" "state_dir = $RUN/state" >"$RUN/migrd.conf"
export MIGRD_CONF=$RUN/migrd.conf
start_test_migrd "$NAME" "$LOGDIR/$NAME-migrd-$role.log"
[ -S "$MIGRD_SOCKET" ] && pass "migrd_starts_$role" ||
	fail "migrd_starts_$role" "$LOGDIR/$NAME-migrd-$role.log"
ensure_rxe1 && pass "rxe1_active_$role" || fail "rxe1_active_$role"

# park_resume NAME PID DEV HOLD_S: park PID (partners hold for 60 s at
# most), let HOLD_S pass with nothing on a device, resume it on DEV; the
# resume's report checked: 4 partner QPs followed, none lost, the partner
# held its posts at least HOLD_S
park_resume() {
	local name=$1 pid=$2 dev=$3 hold=$4
	check "${name}_parked" sh -c "python3 $CONTROL $pid park 5000 60000 >$LOGDIR/$name.park.json"
	check "${name}_holds_no_device" python3 - "$LOGDIR/$name.park.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["park"][0]
assert p["ok"] and p["partners"] == 4, p
assert p["device_fds_after_release"] == 0 and p["device_maps_after_release"] == 0, p
PY
	sleep "$hold"
	check "${name}_resumed_on_$dev" sh -c "python3 $CONTROL $pid resume $dev >$LOGDIR/$name.resume.json"
	check "${name}_partner_followed" python3 - "$LOGDIR/$name.resume.json" "$dev" "$hold" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["resume"][0]
assert r["ok"] and not r["rolled_back"] and r["to"] == sys.argv[2], r
assert r["partners"] == 4 and r["lost"] == 0, r
assert r["partner_held_ms"] >= 1000 * float(sys.argv[3]), r
print("    resumed on %s: rebuild %.1f ms, partners reconnected in %.1f ms, "
      "the partner held its posts %.0f ms" % (r["to"], r["phases_ms"]["rebuild"],
      r["phases_ms"]["partner_reconnect"], r["partner_held_ms"]))
PY
	sed 's/^/    /' "$LOGDIR/${name}_partner_followed.log"
}

# move N PID TO: the N-th migration, of PID to host TO, checked: moved,
# its 4 partner QPs followed, the partner saw a blackout; the pid there
# in $SYNC/move-N.pid. Fails if it did not move.
move() {
	local name=move-$1 pid=$2 to=$3 pre=()
	# on the module, to A with a pre-copy round: contend() has its time
	[ -n "$MODULE" ] && [ "$to" = "$A_IP" ] && pre=(--pre-copy 1)
	timeout 600 migrctl migrate --pid "$pid" --to "$to" "${pre[@]}" --json >"$LOGDIR/$name.json" 2>"$LOGDIR/$name.err"
	check "migrated_${1}_to_$to" python3 - "$LOGDIR/$name.json" "$MODULE" "$to" "$A_IP" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] and r["partners"] == 4 and r["partner_blackout_ms"] > 0, r
if sys.argv[2]:
    n = r["numbers"]
    print("    numbers: %d kept, %d translated, %d held there from the check on and"
          " claimed by the restored process: %d; partner QPs on their own numbers: %d" % (
        n["kept"], n["translated"], n["held"], n["claimed"], r["partners_kept"]))
    assert r["partners_kept"] == 4, r
    assert n["kept"] + n["translated"] > 0, r
    # what the destination held went to the process it restored
    assert n["claimed"] == n["held"], r
    # on A the workload's numbers are free: all of them held, all kept
    assert sys.argv[3] != sys.argv[4] or (n["translated"] == 0 and n["held"] > 0), r
ph = r["phases_ms"]
print("    pid %d -> %s (pid %d there): blackout %.0f ms, seen from the partner %.0f ms;"
      " park %.0f, dump %.0f, transfer %.0f, restore %.0f, rebuild %.0f, partners reconnect %.0f ms" % (
      r["pid"], r["to"], r["pid_there"], r["blackout_ms"], r["partner_blackout_ms"], ph["park"],
      ph["dump"], ph["transfer"], ph["restore"], ph["rebuild"], ph["partner_reconnect"]))
PY
	sed 's/^/    /' "$LOGDIR/migrated_${1}_to_$to.log"
	[ -s "$LOGDIR/$name.err" ] && sed 's/^/    /' "$LOGDIR/$name.err"
	grep -o '"pid_there":[0-9]*' "$LOGDIR/$name.json" | cut -d: -f2 >"$SYNC/$name.pid"
	[ -s "$SYNC/$name.pid" ]
}

# moves FIRST: this host's share of the migrations, FIRST (1 on A, 2 on
# B) then every other one; each waits for the one before it. The first
# that fails ends them (moves-over), on both hosts.
moves() {
	local i pid to=$A_IP
	[ "$role" = a ] && to=$B_IP
	for ((i = $1; i <= MIGRATIONS; i += 2)); do
		if [ "$i" -gt 1 ]; then
			await "moved-$((i - 1))" 600 || { fail "saw_move_$((i - 1))"; say moves-over; return; }
			[ -e "$SYNC/moves-over" ] && return
			pid=$(cat "$SYNC/move-$((i - 1)).pid")
		else
			pid=$WP
		fi
		move "$i" "$pid" "$to" || say moves-over
		say "moved-$i"
		[ -e "$SYNC/moves-over" ] && return
	done
}

# moves_end: the last migration made, or one failed; then where_now: the
# workload's pid and host ("a" or "b") now
moves_end() {
	for _ in $(seq 3000); do
		[ -e "$SYNC/moved-$MIGRATIONS" ] || [ -e "$SYNC/moves-over" ] && return 0
		sleep 0.2
	done
	return 1
}
where_now() {
	local k
	for ((k = MIGRATIONS; k > 0; k--)); do
		[ -s "$SYNC/move-$k.pid" ] || continue
		echo "$(cat "$SYNC/move-$k.pid") $([ $((k % 2)) = 1 ] && echo b || echo a)"
		return
	done
	echo "$WP a"
}

# contend QPN: once this host's migrd holds numbers for a move here,
# another process asks rdma_rxe for the workload's QP number QPN, before
# the restore: refused, where without the hold it would have taken it
# (and the workload's QP been translated here)
contend() {
	local log=$LOGDIR/$NAME-migrd-a.log out=$LOGDIR/$NAME-contend.log
	for _ in $(seq 3000); do
		grep -q 'QP numbers held here for the restore' "$log" && break
		sleep 0.1
	done
	timeout 20 "$MIGR_BUILD_DIR/tests/kernel/rxe_methods" rxe0 --hold "$1" >"$out" 2>&1
	grep -q 'restoring pid' "$log" && echo "(the restore had begun)" >>"$out"
}

if [ "$role" = a ]; then
	rm -rf "${SYNC%/*}" "$WL_LOG" && mkdir -p "$SYNC"
	if [ -z "$MODULE" ]; then
		# 1. park and resume, by hand
		migr-traffic $TRAFFIC --server >"$LOGDIR/$NAME-a.log" 2>&1 &
		TR=$!
		say a.up
		await b.up || fail b_up
		started "$TR" || fail a_started
		sleep 3
		# longer than a switch's lease (10 s beyond the drain bound): the
		# park's own keeps the partner waiting
		park_resume park_hold "$TR" rxe1 18
		sleep 3
		park_resume park_back "$TR" rxe0 2
		sleep 3
		say a.parked
		await b.stopping || fail b_stopping
		kill -TERM "$TR" 2>/dev/null
		traffic_verdict traffic_a_verified "$TR" "$LOGDIR/$NAME-a.log"
	fi

	# 2. migrations: the workload with its own network namespace and
	# address, as nobody (in the host's pid namespace: CRIU dumps no
	# unprivileged task whose /proc is not its pid namespace's, which a
	# container gives it; migrate-ns.sh moves a pid namespace's init), at
	# pids neither host uses: its pid and thread ids must be free there
	ns_del wl
	ns_make wl "$WL_ADDR/24" "$WL_MAC" && pass a_netns_made || fail a_netns_made
	# its migr log to its stderr, the log here (nobody writes no file there)
	unset VERBS_LOG_FILE
	echo 19999 >/proc/sys/kernel/ns_last_pid
	nsenter --net=/run/netns/wl setsid setpriv --reuid=65534 --regid=65534 --clear-groups \
		migr-traffic $TRAFFIC --port 18720 --server </dev/null >"$WL_LOG" 2>&1 &
	WP=$!
	# this host's next processes far from its thread ids
	echo 24000 >/proc/sys/kernel/ns_last_pid
	ns_started "$WP" && pass workload_started || fail workload_started
	say a.workload_up
	await b.partner_up || fail b_partner_up
	sleep 3
	echo "$WP" >"$SYNC/move-0.pid"
	if [ -n "$MODULE" ]; then
		qpn=$(migrctl status --pid "$WP" --json | python3 -c '
import json, sys
print("%x" % json.load(sys.stdin)["processes"][0]["status"]["contexts"][0]["qps"][0]["qpn"])')
		contend "$qpn" &
		CONTEND=$!
	fi
	moves 1
	moves_end || fail moves_ended
	read -r last host < <(WP=$WP where_now)
	await b.partner_stopping 600 || fail b_partner_stopping
	[ "$host" = a ] && kill -TERM "$last" 2>/dev/null
	for _ in $(seq 600); do grep -q 'migr-traffic: \(PASS\|FAIL\)' "$WL_LOG" && break; sleep 0.1; done
	check workload_traffic_verified grep -q 'migr-traffic: PASS' "$WL_LOG"
	tail -n 2 "$WL_LOG" | sed 's/^/    /'
	[ "$host" = a ] && kill -KILL "$last" 2>/dev/null
	for n in $(ip netns list | awk '/^migr-/ { print $1 }') wl; do ns_del "$n"; done
	check grants_came_with_each_move_here sh -c "[ \$(grep -c 'has 4 of 4 partner grants' $LOGDIR/$NAME-migrd-a.log) -ge $((MIGRATIONS / 2)) ]"
	if [ -n "$MODULE" ]; then
		# no hold here (no move came): nothing to wait for
		grep -q 'QP numbers held here' "$LOGDIR/$NAME-migrd-a.log" || kill "$CONTEND" 2>/dev/null
		wait "$CONTEND"
		check held_qpn_refused_before_restore sh -c "grep -q 'cannot hold QP 0x$qpn: Device or resource busy' $LOGDIR/$NAME-contend.log && ! grep -q 'restore had begun' $LOGDIR/$NAME-contend.log"
		check window_keys_held_here grep -Eq ' ([1-9][0-9]*) of \1 window keys held here' "$LOGDIR/$NAME-migrd-a.log"
		sed 's/^/    /' "$LOGDIR/$NAME-contend.log"
	fi
	say a.done
else
	if [ -z "$MODULE" ]; then
		await a.up || fail a_up
		migr-traffic $TRAFFIC --client $A_IP --connect-timeout 60 >"$LOGDIR/$NAME-b.log" 2>&1 &
		TR=$!
		started "$TR" || fail b_started
		say b.up
		await a.parked 300 || fail a_parked
		sleep 3
		say b.stopping
		kill -TERM "$TR" 2>/dev/null
		traffic_verdict traffic_b_verified "$TR" "$LOGDIR/$NAME-b.log"
		grep -q "QP 0x[0-9a-f]*: now 0x" "$VERBS_LOG_FILE" && pass partner_side_reconnected ||
			fail partner_side_reconnected "$VERBS_LOG_FILE"
	fi

	# 2. the partner of the migrations, in a network namespace of its own
	await a.workload_up 300 || fail a_workload_up
	ns_del pt
	ns_make pt "$PT_ADDR/24" "$PT_MAC" && pass b_netns_made || fail b_netns_made
	export VERBS_LOG_FILE=$LOGDIR/$NAME-pt.verbs.log
	rm -f "$VERBS_LOG_FILE"
	nsenter --net=/run/netns/pt migr-traffic $TRAFFIC --port 18720 --client $WL_ADDR --connect-timeout 60 \
		>"$LOGDIR/$NAME-pt.log" 2>&1 &
	PT=$!
	ns_started "$PT" && pass partner_started || fail partner_started
	say b.partner_up
	moves 2
	moves_end || fail moves_ended
	sleep 3
	say b.partner_stopping
	WP=$(cat "$SYNC/move-0.pid")
	read -r last host < <(where_now)
	[ "$host" = b ] && kill -TERM "$last" 2>/dev/null
	kill -TERM "$PT" 2>/dev/null
	traffic_verdict partner_traffic_verified "$PT" "$LOGDIR/$NAME-pt.log"
	check partner_reconnected_each_move sh -c "[ \$(grep -Ec 'QP 0x[0-9a-f]*: (now 0x|re-pointed in place)' $VERBS_LOG_FILE) -ge $((4 * MIGRATIONS)) ]"
	# on migr's rdma_rxe, in place: the same QPs, their RECVs left posted
	[ -z "$MODULE" ] || check partner_qps_repointed_in_place sh -c "[ \$(grep -c 're-pointed in place' $VERBS_LOG_FILE) -ge $((4 * MIGRATIONS)) ]"
	check grants_came_with_each_move_here sh -c "[ \$(grep -c 'has 4 of 4 partner grants' $LOGDIR/$NAME-migrd-b.log) -ge $((MIGRATIONS / 2)) ]"
	await a.done 300 || fail a_done
	ns_del pt
fi
# CRIU's logs of every migration, for whoever looks into one
cp -r "$RUN/state/migrations" "$LOGDIR/$NAME-criu-logs-$role" 2>/dev/null
kill -TERM "$MIGRD" 2>/dev/null
wait "$MIGRD" 2>/dev/null
summary "$NAME $role"
