#!/bin/bash
# In two guests (buildlib/testbed/run.sh --two): unmodified third-party
# programs (Debian's perftest, rdma-core's ibv_rc_pingpong) are moved from
# A to B by migrctl migrate while they run. One side (the mover) runs on A
# as a container would (docs/namespaces.md): the init of a pid namespace
# of its own, in a network namespace with its own address (10.9.0.50), so
# its TCP connection to the other side (perftest's and pingpong's
# exchange, and perftest's closing handshake) moves with it. The other
# side (the peer) runs on B, in a network namespace of its own
# (10.9.0.60): after the move both are on B, and its QPs follow the
# mover's through the two migrd. Each program must end as it would
# without the move: the peer exits 0 with its report, the mover prints its
# report, and the peer ran on for some seconds after the move. Last, a
# peer that dies during the move: the move fails, the mover runs on at A.
# usage: migrate-apps.sh a|b [NAME...]    (a: 10.9.0.1, b: 10.9.0.2;
#        NAMEs: only those programs)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ns.sh"
. "$(dirname "$0")/migrate-lib.sh"
role=${1:?a or b}
shift
ONLY=" $* "
B_IP=10.9.0.2
WL_ADDR=10.9.0.50 WL_MAC=02:00:0a:09:00:32 # the mover's
PT_ADDR=10.9.0.60 PT_MAC=02:00:0a:09:00:3c # the peer's, on B
two_host_env migrate-apps
printf '%s\n' "criu_plugins = $MIGR_BUILD_DIR/lib/criu" "state_dir = $RUN/state" >"$RUN/migrd.conf"
export MIGRD_CONF=$RUN/migrd.conf
start_test_migrd migrate-apps "$LOGDIR/migrate-apps-migrd-$role.log"
[ -S "$MIGRD_SOCKET" ] && pass "migrd_starts_$role" ||
	fail "migrd_starts_$role" "$LOGDIR/migrate-apps-migrd-$role.log"

# The programs, as NAME|which side moves (server or client)|arguments
# (a client adds the server's address). perftest runs for a fixed time,
# pingpong for a number of iterations (8 ms each in a TCG guest), both
# long enough for the move (7 s or so in a TCG guest, 4 to 5 s of it
# stopped; 17 s, 9 of them stopped, on a slow day: with -D 18 one ended
# before its new host checked it ran there) and some seconds of traffic
# after it. (perftest posts with ibv_post_send here: it takes
# ibv_wr_* only on mlx5, EFA and hns devices.) A server that moves is the
# passive side of ib_send_bw (its RECVs posted, the peer's SENDs held
# while it is away) and pingpong's.
PROGRAMS=(
	"ib_write_bw|client|ib_write_bw -d migr_rxe0 -x 1 -F -D 30 -s 4096 -p 18811"
	"ib_read_bw|client|ib_read_bw -d migr_rxe0 -x 1 -F -D 30 -s 4096 -p 18812"
	"ib_send_bw|server|ib_send_bw -d migr_rxe0 -x 1 -F -D 30 -s 4096 -p 18813"
	"ib_send_lat|client|ib_send_lat -d migr_rxe0 -x 1 -F -D 30 -s 64 -p 18814"
	"ibv_rc_pingpong|server|ibv_rc_pingpong -d migr_rxe0 -g 1 -c -n 4000 -s 1024 -p 18815"
)
KNOWN="dead_partner"
for prog in "${PROGRAMS[@]}"; do KNOWN+=" ${prog%%|*}"; done
only_known migrate-apps.sh "$KNOWN"

# reported LOG: a perftest's or pingpong's closing report, and no error
reported() {
	grep -Eq '^ *[0-9]+ +[0-9]+ +[0-9.]+|iters in [0-9.]+ seconds' "$1" &&
		! grep -Eqi "couldn't|failed|error" "$1"
}

# migrated NAME PID: migrctl migrate PID to B, checked: moved, at least one
# partner QP followed (pingpong has one QP, perftest one per test)
migrated() {
	timeout 600 migrctl migrate --pid "$2" --to "$B_IP" --json >"$LOGDIR/$1.json" 2>"$LOGDIR/$1.err"
	check "$1" python3 - "$LOGDIR/$1.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] and r["partners"] >= 1 and r["partner_blackout_ms"] > 0, r
ph = r["phases_ms"]
print("    pid %d -> %s (pid %d there): blackout %.0f ms, seen from the peer %.0f ms; checks %.0f,"
      " park %.0f, dump %.0f, transfer %.0f, restore %.0f, rebuild %.0f, peer reconnects %.0f ms" % (
      r["pid"], r["to"], r["pid_there"], r["blackout_ms"], r["partner_blackout_ms"], ph["check"], ph["park"],
      ph["dump"], ph["transfer"], ph["restore"], ph["rebuild"], ph["partner_reconnect"]))
PY
	sed 's/^/    /' "$LOGDIR/$1.log"
	[ -s "$LOGDIR/$1.err" ] && sed 's/^/    /' "$LOGDIR/$1.err"
	grep -o '"pid_there":[0-9]*' "$LOGDIR/$1.json" | cut -d: -f2 >"$SYNC/$1.pid"
}

if [ "$role" = a ]; then
	rm -rf "${SYNC%/*}" && mkdir -p "$SYNC"
	say a.up
else
	await a.up 120 || fail b_saw_a
	ns_del pt
	NAME=b_netns_made ok ns_make pt "$PT_ADDR/24" "$PT_MAC"
fi

for prog in "${PROGRAMS[@]}"; do
	IFS='|' read -r name mover args <<<"$prog"
	wanted "$name" || continue
	port=$(port_of "$args")
	mlog=$LOGDIR/migrate-apps-$name-mover.log
	plog=$LOGDIR/migrate-apps-$name-peer.log
	if [ "$role" = a ]; then
		# the mover: the init of its own pid namespace, in its own netns
		NAME=${name}_netns_made ok fresh_ns wl "$WL_ADDR" "$WL_MAC"
		if [ "$mover" = client ]; then
			await "$name.peer-listens" 120 || fail "${name}_peer_listens"
			# shellcheck disable=SC2086 # the arguments, split
			ns_run wl "$mlog" $args "$PT_ADDR"
		else
			# shellcheck disable=SC2086
			ns_run wl "$mlog" $args
			NAME=${name}_mover_listens ok listening wl "$port"
			say "$name.mover-listens"
		fi
		WP=$NS_PID
		NAME=${name}_mover_connected ok connected "$WP"
		sleep 2
		migrated "${name}_moved_to_b" "$WP"
		say "$name.moved"
		wait "$NS_HOLDER" 2>/dev/null
		NAME=${name}_gone_from_a ok gone "$WP"
		await "$name.done" 300 || fail "${name}_b_done"
		NAME=${name}_mover_reported ok reported "$mlog"
		tail -n 3 "$mlog" | sed 's/^/    /'
		# a program run for N iterations (pingpong's -n) ran them all
		iters=$(sed -nE 's/.* -n ([0-9]+).*/\1/p' <<<"$args")
		[ -z "$iters" ] || check "${name}_mover_ran_all_${iters}_iterations" grep -q "^$iters iters in " "$mlog"
	else
		if [ "$mover" = client ]; then
			# shellcheck disable=SC2086
			nsenter --net=/run/netns/pt $args >"$plog" 2>&1 &
			PP=$!
			NAME=${name}_peer_listens ok listening pt "$port"
			say "$name.peer-listens"
		else
			await "$name.mover-listens" 120 || fail "${name}_mover_listens"
			# shellcheck disable=SC2086
			nsenter --net=/run/netns/pt $args "$WL_ADDR" >"$plog" 2>&1 &
			PP=$!
		fi
		await "$name.moved" 600 || fail "${name}_saw_move"
		# the peer ran on after the move, then ended as it would have
		NAME=${name}_peer_ran_on_after_move ok kill -0 "$PP"
		BP=$(cat "$SYNC/${name}_moved_to_b.pid" 2>/dev/null)
		[ -n "$BP" ] && { NAME=${name}_mover_runs_here ok runs_here "$BP"; }
		for _ in $(seq 1000); do kill -0 "$PP" 2>/dev/null || break; sleep 0.2; done
		kill -KILL "$PP" 2>/dev/null
		wait "$PP"
		rc=$?
		check "${name}_peer_exits_0" sh -c "[ $rc -eq 0 ] && grep -Eq '^ *[0-9]+ +[0-9]+ +[0-9.]+|iters in' $plog"
		iters=$(sed -nE 's/.* -n ([0-9]+).*/\1/p' <<<"$args")
		[ -z "$iters" ] || check "${name}_peer_ran_all_${iters}_iterations" grep -q "^$iters iters in " "$plog"
		tail -n 3 "$plog" | sed 's/^/    /'
		# the mover's end, here now (its log is on the share)
		[ -n "$BP" ] && for _ in $(seq 300); do gone "$BP" && break; sleep 0.2; done
		[ -n "$BP" ] && kill -KILL "$BP" 2>/dev/null
		for n in $(ip netns list | awk '/^migr-/ { print $1 }'); do ns_del "$n"; done
		say "$name.done"
	fi
done

# A partner that dies during the move (once the mover's images reached B,
# before its restore there) cannot follow it: the move fails, and the
# mover is back to work on A, on its device, the failure naming the
# partner it could not take back (issue 32: not "runs here again" as if
# all were well). (migr-traffic's own verdict then is the application's
# business: its peer is gone.)
if wanted dead_partner; then
	dlog=$LOGDIR/migrate-apps-dead-partner
	if [ "$role" = a ]; then
		NAME=dead_partner_netns_made ok fresh_ns wl "$WL_ADDR" "$WL_MAC"
		ns_run wl "$dlog-mover.log" migr-traffic -d migr_rxe0 --qps 2 --port 18820 --server \
			-D 600 --stall-timeout 0 -r 2
		WP=$NS_PID
		NAME=dead_partner_mover_listens ok listening wl 18820
		say dead.mover-listens
		await dead.peer-up 120 || fail dead_partner_peer_up
		NAME=dead_partner_mover_connected ok connected "$WP"
		# the failure names the partner that could not follow: where the
		# copy's resume met it, or where the mover's own resume here did
		# (the mover itself may end first: its peer's FIN, back_here)
		refused dead_partner_move_fails "partner of QP 0x[0-9a-f]* (QP 0x[0-9a-f]* at $B_IP, pid [0-9]*)" \
			--pid "$WP" --to "$B_IP"
		NAME=dead_partner_mover_back_here ok back_here "$WP" "$dlog-mover.log"
		say dead.checked
		kill -KILL "$WP" 2>/dev/null
		wait "$NS_HOLDER" 2>/dev/null
	else
		await dead.mover-listens 120 || fail dead_partner_mover_listens
		n0=$(grep -c "final received" "$LOGDIR/migrate-apps-migrd-b.log")
		nsenter --net=/run/netns/pt migr-traffic -d migr_rxe0 --qps 2 --port 18820 --client "$WL_ADDR" \
			-D 600 --stall-timeout 0 >"$dlog-peer.log" 2>&1 &
		PP=$!
		NAME=dead_partner_peer_started ok ns_started "$PP"
		say dead.peer-up
		for _ in $(seq 3000); do
			[ "$(grep -c "final received" "$LOGDIR/migrate-apps-migrd-b.log")" -gt "$n0" ] && break
			sleep 0.1
		done
		kill -KILL "$PP"
		wait "$PP" 2>/dev/null
		await dead.checked 600 || fail dead_partner_a_checked
		# the copy's resume failed (its partner is gone), or the copy ended
		# first (migr-traffic ends when its side channel closes)
		logged dead_partner_b_dropped_the_copy "the restored copy, if any, is killed" "$LOGDIR/migrate-apps-migrd-b.log"
		check dead_partner_b_left_no_copy sh -c "! ip netns list | grep -q '^migr-'"
	fi
fi

[ "$role" = b ] && ns_del pt
[ "$role" = a ] && for n in $(ip netns list | awk '/^migr-/ { print $1 }') wl; do ns_del "$n"; done
cp -r "$RUN/state/migrations" "$LOGDIR/migrate-apps-criu-logs-$role" 2>/dev/null
kill -TERM "$MIGRD" 2>/dev/null
wait "$MIGRD" 2>/dev/null
summary "migrate-apps $role"
