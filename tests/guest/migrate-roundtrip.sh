#!/bin/bash
# In two guests (buildlib/testbed/run.sh --two): a program moved A -> B ->
# A -> B by migrctl migrate while it runs, its partner staying on B
# (issue 32: a round trip desynchronised the connection's PSNs, and
# pingpong deadlocked with no error anywhere). The mover runs as a
# container would (the init of its own pid namespace, in a network
# namespace with its own address, 10.9.0.55). After each move both ends
# are stopped (SIGSTOP) until the wire is quiet, and the PSNs the kernel
# holds for their QPs (`rdma resource show qp`) must meet: the mover's
# next send PSN is the one the partner expects, and the other way round.
# Programs: rdma-core's ibv_rc_pingpong, its partner in the host's own
# namespaces (every iteration counted at both ends), and migr-traffic,
# its partner in a network namespace of its own (every WR and byte
# checked at both ends).
# With --module, both guests on migr's rdma_rxe (migr_rxe(7)): the moved
# QPs keep their numbers, and the partner's QP is re-pointed in place.
# usage: migrate-roundtrip.sh a|b [--module] [NAME...]   (a: 10.9.0.1, b: 10.9.0.2)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ns.sh"
. "$(dirname "$0")/migrate-lib.sh"
role=${1:?a or b}
shift
MODULE=
[ "${1:-}" = --module ] && { MODULE=1; shift; }
ONLY=" $* "
A_IP=10.9.0.1 B_IP=10.9.0.2
WL_ADDR=10.9.0.55 WL_MAC=02:00:0a:09:00:37 # the mover's
PT_ADDR=10.9.0.65 PT_MAC=02:00:0a:09:00:41 # a partner's, in a netns on B
MOVES=${MIGR_ROUNDTRIP_MOVES:-3}
two_host_env migrate-roundtrip
if [ -n "$MODULE" ]; then
	load_migr_rxe && pass "migr_rxe_loaded_$role" || fail "migr_rxe_loaded_$role"
fi
criu_migrd migrate-roundtrip "$LOGDIR/migrate-roundtrip-migrd-$role.log"
[ -S "$MIGRD_SOCKET" ] && pass "migrd_starts_$role" ||
	fail "migrd_starts_$role" "$LOGDIR/migrate-roundtrip-migrd-$role.log"

# NAME|where the partner runs on B (host: the host's own namespaces, as
# in issue 32; netns: its own, for a program whose TCP channel is used to
# the end, which a macvlan does not carry to its own host)|mover's
# command|partner's command (the mover's address follows);
# pingpong iterates some 8 ms each in a TCG guest: long enough for three
# moves and the checks between them, each at most seconds of traffic
ITERS=8000
# migr-traffic's ops are those its peer's kernel serves while the peer is
# stopped: a SEND, SEND_IMM or WRITE_IMM waits there for a RECV the
# stopped peer does not post, in an RNR loop that keeps the PSN moving
TR_ARGS="-d migr_rxe0 --qps 2 --port 18832 --ops write,read,cas,faa --rate 10 -D 900 --stall-timeout 120"
PROGRAMS=(
	"ibv_rc_pingpong|host|ibv_rc_pingpong -d migr_rxe0 -g 1 -n $ITERS -s 1024 -p 18831|ibv_rc_pingpong -d migr_rxe0 -g 1 -n $ITERS -s 1024 -p 18831"
	"migr_traffic|netns|migr-traffic $TR_ARGS --server|migr-traffic $TR_ARGS --client"
)
KNOWN=
for prog in "${PROGRAMS[@]}"; do KNOWN+=" ${prog%%|*}"; done
only_known migrate-roundtrip.sh "$KNOWN"

# rc_qps PID: the lower RC QPs PID holds, connected, as migrctl status
# names them (asked before PID is stopped: the process answers it itself;
# the kernel may name another pid for them, the thread that made a QP a
# partner replaced); rc_psns QPN...: "QPN SQ_PSN RQ_PSN" of each, as the
# kernel lists them
rc_qps() {
	migrctl status --pid "$1" --json | python3 -c '
import json, sys
def walk(o):
    if isinstance(o, dict):
        if "phys" in o and o.get("state", 0) >= 2 and o.get("self") is not True:
            print(o["phys"])
        for v in o.values():
            walk(v)
    elif isinstance(o, list):
        for v in o:
            walk(v)
walk(json.load(sys.stdin))'
}
rc_psns() {
	rdma -j resource show qp | python3 -c '
import json, sys
want = {int(q) for q in sys.argv[1:]}
for q in json.load(sys.stdin):
    if q.get("type") == "RC" and q.get("lqpn") in want:
        print(q["lqpn"], q["sq-psn"], q["rq-psn"])' "$@"
}
# the mover's pid on this host, as the last move named it
mover_pid() { cat "$SYNC/$1.pid"; }
host_of() { [ $(($1 % 2)) -eq 0 ] && echo a || echo b; }

# psns_meet NAME K: after move K (0: before any), both ends are stopped
# (SIGSTOP: the partner on B first, then the mover, on A after an even
# number of moves) until the wire is quiet; each host lists its end's
# PSNs, and B pairs them: same count of RC QPs, each mover QP's next send
# PSN the one a partner QP expects, and the other way round
psns_meet() {
	local name=$1 k=$2 at mp mq pq
	at=$(host_of "$k")
	if [ "$role" = b ]; then
		pq=$(rc_qps "$PP")
		kill -STOP "$PP"
		say "$name.$k.pstopped"
	fi
	if [ "$role" = "$at" ]; then
		await "$name.$k.pstopped" 300 || fail "${name}_partner_stopped_$k"
		mp=$(mover_pid "$name.$k")
		mq=$(rc_qps "$mp")
		kill -STOP "$mp"
		sleep 2 # what was on the wire arrives, and is acknowledged
		# shellcheck disable=SC2086 # the numbers, split
		rc_psns $mq >"$SYNC/$name.$k.mover"
		say "$name.$k.read"
	fi
	if [ "$role" = b ]; then
		await "$name.$k.read" 300 || fail "${name}_mover_psns_read_$k"
		# shellcheck disable=SC2086
		rc_psns $pq >"$SYNC/$name.$k.partner"
		check "${name}_psns_meet_after_move_$k" python3 - "$SYNC/$name.$k.mover" "$SYNC/$name.$k.partner" <<'PY'
import sys
mover = [l.split() for l in open(sys.argv[1]) if l.strip()]
peer = [l.split() for l in open(sys.argv[2]) if l.strip()]
print("mover (qpn sq rq):", mover, " partner:", peer)
assert mover and len(mover) == len(peer), "QP counts differ"
# each mover QP (sq, rq) must have a partner QP whose (rq, sq) is the same
left = [(int(q[2]), int(q[1])) for q in peer]
for q in mover:
    sq, rq = int(q[1]), int(q[2])
    assert (sq, rq) in left, "mover QP 0x%x: sq-psn %d rq-psn %d, and no partner QP expects %d nor sends %d" % (
        int(q[0]), sq, rq, sq, rq)
    left.remove((sq, rq))
PY
		sed 's/^/    /' "$LOGDIR/${name}_psns_meet_after_move_$k.log"
		say "$name.$k.psns"
	fi
	if [ "$role" = "$at" ]; then
		await "$name.$k.psns" 300 || fail "${name}_psns_checked_$k"
		kill -CONT "$mp"
	fi
	[ "$role" = b ] && kill -CONT "$PP"
	return 0
}

# move NAME K FROM TO: migrctl migrate of the mover (on this host) to TO,
# move K; its pid there in $SYNC/NAME.K.pid
move() {
	local name=$1 k=$2 to=$3 pid
	pid=$(mover_pid "$name.$((k - 1))")
	if timeout 600 migrctl migrate --pid "$pid" --to "$to" --json >"$LOGDIR/$name.move$k.json" 2>"$LOGDIR/$name.move$k.err" &&
		grep -q '"ok":true' "$LOGDIR/$name.move$k.json"; then
		pass "${name}_move_${k}_to_$to"
		grep -o '"blackout_ms":[0-9.]*\|"partners":[0-9]*' "$LOGDIR/$name.move$k.json" | tr '\n' ' ' | sed 's/^/    /'
		echo
	else
		fail "${name}_move_${k}_to_$to" "$LOGDIR/$name.move$k.err"
	fi
	grep -o '"pid_there":[0-9]*' "$LOGDIR/$name.move$k.json" | cut -d: -f2 >"$SYNC/$name.$k.pid"
	say "$name.$k.moved"
	# the first move ends the unshare that held the mover here
	[ "$k" -gt 1 ] || wait "$NS_HOLDER" 2>/dev/null
}

if [ "$role" = a ]; then
	rm -rf "${SYNC%/*}" && mkdir -p "$SYNC"
	say a.up
else
	await a.up 120 || fail b_saw_a
fi

for prog in "${PROGRAMS[@]}"; do
	IFS='|' read -r name where mcmd pcmd <<<"$prog"
	wanted "$name" || continue
	port=$(port_of "$mcmd")
	mlog=$LOGDIR/migrate-roundtrip-$name-mover.log
	plog=$LOGDIR/migrate-roundtrip-$name-partner.log
	if [ "$role" = a ]; then
		NAME=${name}_netns_made ok fresh_ns rt "$WL_ADDR" "$WL_MAC"
		# shellcheck disable=SC2086 # the arguments, split
		ns_run rt "$mlog" $mcmd
		echo "$NS_PID" >"$SYNC/$name.0.pid"
		NAME=${name}_mover_listens ok listening rt "$port"
		say "$name.listens"
	else
		await "$name.listens" 120 || fail "${name}_mover_listens"
		in=()
		if [ "$where" = netns ]; then
			ns_del pt
			NAME=${name}_partner_netns_made ok ns_make pt "$PT_ADDR/24" "$PT_MAC"
			in=(nsenter --net=/run/netns/pt)
		fi
		# shellcheck disable=SC2086
		"${in[@]}" $pcmd "$WL_ADDR" >"$plog" 2>&1 &
		PP=$!
	fi
	# connected, and some traffic before the first look
	if [ "$role" = a ]; then
		NAME=${name}_mover_connected ok connected "$(mover_pid "$name.0")"
	else
		NAME=${name}_partner_connected ok connected "$PP"
	fi
	sleep 3
	psns_meet "$name" 0
	for k in $(seq "$MOVES"); do
		from=$(host_of $((k - 1)))
		if [ "$role" = "$from" ]; then
			[ "$from" = a ] && to=$B_IP || to=$A_IP
			move "$name" "$k" "$to"
		else
			await "$name.$k.moved" 600 || fail "${name}_saw_move_$k"
		fi
		sleep 3 # traffic after the move
		psns_meet "$name" "$k"
	done
	# the ends: pingpong's by themselves; migr-traffic's on SIGTERM, the
	# mover's first (each waits for the other's last word), each with its
	# verdict
	last=$(host_of "$MOVES")
	mp=$(mover_pid "$name.$MOVES")
	if [ "$role" = "$last" ]; then
		[ "$name" = migr_traffic ] && kill -TERM "$mp"
		say "$name.mover-termed"
	fi
	if [ "$role" = b ]; then
		await "$name.mover-termed" 600 || fail "${name}_mover_termed"
		[ "$name" = migr_traffic ] && kill -TERM "$PP"
		for _ in $(seq 1500); do kill -0 "$PP" 2>/dev/null || break; sleep 0.2; done
		kill -KILL "$PP" 2>/dev/null
		wait "$PP"
		rc=$?
		tail -n 3 "$plog" | sed 's/^/    /'
		case $name in
		ibv_rc_pingpong) check "${name}_partner_ran_all_iterations" sh -c "[ $rc -eq 0 ] && grep -q '^$ITERS iters in ' $plog" ;;
		*) check "${name}_partner_verified" sh -c "[ $rc -eq 0 ] && grep -q 'migr-traffic: PASS' $plog" ;;
		esac
	fi
	if [ "$role" = "$last" ]; then
		for _ in $(seq 600); do gone "$mp" && break; sleep 0.2; done
		kill -KILL "$mp" 2>/dev/null
		tail -n 3 "$mlog" | sed 's/^/    /'
		case $name in
		ibv_rc_pingpong) check "${name}_mover_ran_all_iterations" grep -q "^$ITERS iters in " "$mlog" ;;
		*) check "${name}_mover_verified" grep -q 'migr-traffic: PASS' "$mlog" ;;
		esac
		say "$name.done"
	else
		await "$name.done" 600 || fail "${name}_done"
	fi
	echo "    $name: ended; namespaces: $(ip netns list | tr '\n' ' ')"
	for n in $(ip netns list | awk '/^migr-/ { print $1 }') rt pt; do timeout 10 ip netns del "$n" 2>/dev/null; done
done

echo "    migrate-roundtrip $role: the migrations' logs, then migrd's end"
timeout 60 cp -r "$RUN/state/migrations" "$LOGDIR/migrate-roundtrip-criu-logs-$role" 2>/dev/null
kill -TERM "$MIGRD" 2>/dev/null
for _ in $(seq 100); do gone "$MIGRD" && break; sleep 0.1; done
gone "$MIGRD" || { echo "    migrd did not end on SIGTERM in 10 s"; kill -KILL "$MIGRD"; }
wait "$MIGRD" 2>/dev/null
summary "migrate-roundtrip $role"
