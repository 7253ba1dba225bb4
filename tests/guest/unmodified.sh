#!/bin/bash
# In two guests with two NICs each (buildlib/testbed/run.sh --two --nics 2):
# unmodified third-party programs (Debian's perftest and qperf, rdma-core's
# ibv_*_pingpong, librdmacm's rping, and rsockets: rstream and riostream,
# checking every byte) run between A and B on migr_rxe0, and each side's
# process is moved live between its rxe0 and rxe1 by migrctl while they
# run; the other side follows through the two migrd. Each program must
# end as it would without a switch: exit 0, with its report.
# perftest over UD (ud_send_bw) too: the other side learns the new address.
# usage: unmodified.sh a|b [NAME...]    (a: 10.9.0.1/.11, b: 10.9.0.2/.12;
#        NAMEs: only those programs)
. "$(dirname "$0")/lib.sh"
role=${1:?a or b}
shift
ONLY=" $* "
A_IP=10.9.0.1
two_host_env unmodified
# say (lib.sh), and the time of a move, without a process start: in a
# guest whose CPU the program keeps busy each start cost about 0.4 s,
# between one side's move and the other's turn
say() { : >"$SYNC/$1"; }
now_ns() { NOW_NS=${EPOCHREALTIME//[.,]/}000; }
MLOG=$LOGDIR/unmodified-migrd-$role.log
# rxe's reasons for the errors it answers with, in the kernel log: only
# the debug lines that say "error", and a CQ's "queue full" (a completion
# dropped: a drain marker's once, when perftest's one-entry CQs had no
# room for it). All of rxe's, a few per packet, would slow it to a crawl.
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug 2>/dev/null
{ echo 'module rdma_rxe format "error" +p' >/sys/kernel/debug/dynamic_debug/control &&
	echo 'module rdma_rxe format "queue full" +p' >/sys/kernel/debug/dynamic_debug/control; } 2>/dev/null ||
	echo "    (no rxe debug messages: dynamic debug is not available)"


# The programs, as NAME|server arguments|client arguments (the client
# adds A's address). Each runs long enough for two switches of each side
# in a TCG guest and some seconds of traffic after them; each side checks
# that its program ran on at least 2 s after its own last move
# (ran_on_after_moves): the moves came well inside the run, and traffic
# went on after them. perftest runs for a fixed time: bandwidth 34 s,
# latency 24 s, UD 75 s, ib_write_bw over rdma_cm 34 s, qperf 40 s; the
# others for a number of iterations. On a fast day bandwidth 24 s and latency 16 s left
# 4 to 18 s; on a slow one (2026-12-01 here: a switch with its partner
# following took 5 to 20 s) they, UD at 45 s, rdma_cm at 22 s, qperf at
# 28 s and ibv_srq_pingpong at 14,000 iterations left 0.1 to 1.9 s on
# nine programs; now a third more or so. UD went from 60 to 75 s on
# 2026-12-02: its B side ran 1.7 s after its last move.
# Each program's port is its own. rdma_cm programs take the twin listed first.
CM="env RDMAV_STACKED_DEVICES=first"
PROGRAMS=(
	"ib_write_bw|ib_write_bw -d migr_rxe0 -x 1 -F -D 34 -s 4096 -p 18711|ib_write_bw -d migr_rxe0 -x 1 -F -D 34 -s 4096 -p 18711"
	"ib_send_bw|ib_send_bw -d migr_rxe0 -x 1 -F -D 34 -s 4096 -p 18712|ib_send_bw -d migr_rxe0 -x 1 -F -D 34 -s 4096 -p 18712"
	"ib_read_bw|ib_read_bw -d migr_rxe0 -x 1 -F -D 34 -s 4096 -p 18713|ib_read_bw -d migr_rxe0 -x 1 -F -D 34 -s 4096 -p 18713"
	"ib_write_bw_old_post|ib_write_bw -d migr_rxe0 -x 1 -F -D 34 -s 4096 -p 18714 --use_old_post_send|ib_write_bw -d migr_rxe0 -x 1 -F -D 34 -s 4096 -p 18714 --use_old_post_send"
	"ib_atomic_bw|ib_atomic_bw -d migr_rxe0 -x 1 -F -D 34 -p 18715|ib_atomic_bw -d migr_rxe0 -x 1 -F -D 34 -p 18715"
	"ib_send_lat|ib_send_lat -d migr_rxe0 -x 1 -F -D 24 -s 64 -p 18716|ib_send_lat -d migr_rxe0 -x 1 -F -D 24 -s 64 -p 18716"
	"ib_atomic_lat|ib_atomic_lat -d migr_rxe0 -x 1 -F -D 24 -p 18722|ib_atomic_lat -d migr_rxe0 -x 1 -F -D 24 -p 18722"
	"ib_read_lat|ib_read_lat -d migr_rxe0 -x 1 -F -D 24 -s 64 -p 18723|ib_read_lat -d migr_rxe0 -x 1 -F -D 24 -s 64 -p 18723"
	"ibv_rc_pingpong|ibv_rc_pingpong -d migr_rxe0 -g 1 -c -n 3000 -s 1024 -p 18717|ibv_rc_pingpong -d migr_rxe0 -g 1 -c -n 3000 -s 1024 -p 18717"
	"ibv_srq_pingpong|ibv_srq_pingpong -d migr_rxe0 -g 1 -n 21000 -p 18721|ibv_srq_pingpong -d migr_rxe0 -g 1 -n 21000 -p 18721"
	"rping|$CM rping -s -a $A_IP -p 18718 -C 1400 -S 1024 -V|$CM rping -c -p 18718 -C 1400 -S 1024 -V -a"
	"rstream|$CM rstream -b $A_IP -p 18741 -S 4096 -C 1000 -I 20 -T v|$CM rstream -p 18741 -S 4096 -C 1000 -I 20 -T v -s"
	"riostream|$CM riostream -b $A_IP -p 18742 -S 4096 -C 1000 -I 20 -T v|$CM riostream -p 18742 -S 4096 -C 1000 -I 20 -T v -s"
	"ib_write_bw_cm|$CM ib_write_bw -d migr_rxe0 -x 1 -F -D 34 -s 4096 -R -p 18729|$CM ib_write_bw -d migr_rxe0 -x 1 -F -D 34 -s 4096 -R -p 18729"
)

QPERF_TESTS=(rc_bw rc_rdma_read_bw rc_compare_swap_mr)
KNOWN="ud_send_bw ${QPERF_TESTS[*]/#/qperf_}"
for prog in "${PROGRAMS[@]}"; do KNOWN+=" ${prog%%|*}"; done
only_known unmodified.sh "$KNOWN"

# connected PID: PID has QPs, each of them ready to send (RTS), within 30 s
connected() {
	local s
	for _ in $(seq 300); do
		s=$(migrctl status --pid "$1" --json 2>/dev/null |
			grep -o '"state":[0-9]*' | sort -u)
		[ "$s" = '"state":3' ] && return 0
		sleep 0.1
	done
	echo "    pid $1: QP states after 30 s:" $s
	return 1
}

lower_of() {
	migrctl status --pid "$1" | awk '$1 == "'"$1"'" { print $5; exit }'
}

# move NAME PID DEV [PARTNERS]: one switch of PID to DEV, its reply
# checked later by verify_moves, with at least PARTNERS partner QPs (1 if
# not given) following (the caller knows where it is: asking migrctl
# status first would cost the run seconds, and so would python3 now, in
# a guest whose one CPU perftest keeps busy: 10 s a check in CI, which ran
# a 45 s perftest out before its last switch)
# The moves wait up to 15 s for the send queues to drain (migrctl's
# default is 5): qperf's rc_rdma_read_bw, 16 KiB READs, once took longer
# in a busy guest right after its peer's move, and the switch rolled back
SWITCH_WAIT_MS=15000
LAST_MOVE=0
move() {
	switch_later "$1" "$2" "$3" "${4:-1}+"
	now_ns
	LAST_MOVE=$NOW_NS
}

# verify_moves: each switch made since the last call moved the process,
# its partners following, nothing lost (lib.sh: one python3 for all).
# Called once, when every program ran: a python3 start per program cost
# each side seconds between programs in a TCG guest.
verify_moves() { checked_switches; }

# ran_on NAME END_NS: the program ran on for RAN_ON s or more after this
# side's last move (END_NS: when it was seen gone)
RAN_ON=${MIGR_UNMODIFIED_RAN_ON:-2}
ran_on() {
	local ms=$((($2 - LAST_MOVE) / 1000000))
	echo "    $1: ran $((ms / 1000)).$((ms % 1000 / 100)) s after its last move"
	check "${1}_ran_on_after_moves" test "$LAST_MOVE" -gt 0 -a "$ms" -ge $((RAN_ON * 1000))
	LAST_MOVE=0
}

# listening PORT: a server here listens on PORT (TCP, or rdma_cm), so
# that the other side's client may connect at once (within 30 s)
listening() {
	for _ in $(seq 300); do
		ss -Hltn "( sport = :$1 )" | grep -q . && return 0
		rdma resource show cm_id 2>/dev/null | grep -Eq "state LISTEN .*:$1( |$)" && return 0
		sleep 0.1
	done
	return 1
}

# finished NAME PID LOG: the program exits 0 (within 200 s) with a report
finished() {
	local name=$1 pid=$2 log=$3 rc
	for _ in $(seq 1000); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
	now_ns
	ran_on "$name" "$NOW_NS"
	if kill -0 "$pid" 2>/dev/null; then
		# hung: what it waits in, and what migr knows of its QPs
		echo "    $name: still running after 200 s, in $(cat /proc/$pid/wchan 2>/dev/null)"
		migrctl status --pid "$pid" 2>&1 | sed 's/^/    | /'
		dmesg | grep -E 'rxe|qp#' | tail -n 10 | sed 's/^/    | /'
	fi
	kill -KILL "$pid" 2>/dev/null
	wait "$pid"; rc=$?
	check "${name}_exits_0" sh -c "[ $rc -eq 0 ]"
	[ $rc -eq 0 ] || tail -n 15 "$log" | sed 's/^/    | /'
	tail -n 3 "$log" | sed 's/^/    /'
}

start_test_migrd unmodified-programs "$MLOG"
ensure_rxe1 && pass "rxe1_active_$role" || fail "rxe1_active_$role"
# A starts the exchange afresh; B waits for A's word
if [ "$role" = a ]; then
	rm -rf "${SYNC%/*}" && mkdir -p "$SYNC" && say a.ready
else
	await a.ready || fail a_ready
fi

# perftest's UD bandwidth test: B sends datagrams to A's UD QP. Each side
# is moved to rxe1 and back while it runs. UD has no partner: the other
# side's migr learns the new address through the two migrd (its address
# handle then leads there), so datagrams go on arriving where the moved QP
# is now, which the device's receive counter shows.
UD_ARGS="-d migr_rxe0 -x 1 -F -c UD -D 75 -s 512 -p 18730"
pkts() { cat "/sys/class/infiniband/$2/ports/1/hw_counters/$1_pkts"; }
# ud_move NAME PID DEV: one switch, checked once the program ended
# (verify_moves): moved, nothing lost; UD has no partner QPs
ud_move() { move "$1" "$2" "$3" 0; }
# flows NAME rcvd|sent DEV: datagrams go through DEV (over 20 packets in 3 s)
flows() {
	local n0 n1
	n0=$(pkts "$2" "$3"); sleep 3; n1=$(pkts "$2" "$3")
	echo "    $3 $2 $((n1 - n0)) packets in 3 s"
	check "$1" test $((n1 - n0)) -gt 20
}
if wanted ud_send_bw; then
	log=$LOGDIR/unmodified-ud_send_bw-$role.log
	if [ "$role" = a ]; then
		ib_send_bw $UD_ARGS >"$log" 2>&1 &
		P=$!
		started "$P" || fail ud_send_bw_server_started
		listening 18730 || fail ud_send_bw_server_listens
		say ud.srv
		await ud.cli || fail ud_send_bw_client_up
		sleep 3
		ud_move ud_send_bw_a_moves "$P" rxe1
		flows ud_send_bw_datagrams_follow_a_to_rxe1 rcvd rxe1
		say ud.a1
		await ud.b1 || fail ud_send_bw_b1
		flows ud_send_bw_datagrams_come_from_b_on_rxe1 rcvd rxe1
		ud_move ud_send_bw_a_moves_back "$P" rxe0
		flows ud_send_bw_datagrams_follow_a_to_rxe0 rcvd rxe0
		say ud.a2
		finished ud_send_bw_a "$P" "$log"
	else
		await ud.srv || fail ud_send_bw_server_up
		ib_send_bw $UD_ARGS $A_IP >"$log" 2>&1 &
		P=$!
		started "$P" || fail ud_send_bw_client_started
		say ud.cli
		await ud.a1 || fail ud_send_bw_a1
		check ud_send_bw_b_told grep -q "UD peer at .* moved to" "$VERBS_LOG_FILE"
		ud_move ud_send_bw_b_moves "$P" rxe1
		flows ud_send_bw_b_sends_from_rxe1 sent rxe1
		say ud.b1
		await ud.a2 || fail ud_send_bw_a2
		ud_move ud_send_bw_b_moves_back "$P" rxe0
		finished ud_send_bw_b "$P" "$log"
	fi
fi

for prog in "${PROGRAMS[@]}"; do
	IFS='|' read -r name srv cli <<<"$prog"
	wanted "$name" || continue
	log=$LOGDIR/unmodified-$name-$role.log
	if [ "$role" = a ]; then
		$srv >"$log" 2>&1 &
		P=$!
		started "$P" || fail "${name}_server_started"
		listening "$(sed -n 's/.* -p \([0-9]*\) .*/\1/p' <<<"$srv ")" || fail "${name}_server_listens"
		say "$name.srv"
		await "$name.cli" || fail "${name}_client_up"
		sleep 1
		move "${name}_a_moves" "$P" rxe1
		say "$name.a1"
		await "$name.b1" || fail "${name}_b1"
		move "${name}_a_moves_back" "$P" rxe0
		say "$name.a2"
		finished "${name}_a" "$P" "$log"
	else
		# the server listens (A said so): the client connects at once
		await "$name.srv" || fail "${name}_server_up"
		$cli $A_IP >"$log" 2>&1 &
		P=$!
		started "$P" || fail "${name}_client_started"
		# ibv_srq_pingpong connects its 16 QPs one by one after the
		# exchange: a move before the last would find its partner
		# not yet connected (refused, rightly; seen in CI)
		connected "$P" || fail "${name}_client_connected"
		say "$name.cli"
		await "$name.a1" || fail "${name}_a1"
		move "${name}_b_moves" "$P" rxe1
		say "$name.b1"
		await "$name.a2" || fail "${name}_a2"
		move "${name}_b_moves_back" "$P" rxe0
		finished "${name}_b" "$P" "$log"
	fi
done
# qperf over rdma_cm (its own addressing has no GIDs, so RoCE needs
# -cm1): one server on A forks a process per test, which is moved. Its
# receivers ask for no send queue at all (the drain marker has room of
# its own) and its senders keep theirs full. 16 KB messages: a queue
# of 64 KB ones takes rxe in TCG about the whole 5 s bound to drain.
# Each test runs 40 s: its four moves take 2 to 5 s each on a fast day
# (28 s left 11 to 21 s after the last move then) and up to 10 on a slow
# one (28 s left 0.1 s), and a move that comes once qperf has ended its
# test finds its QP in error (refused, rightly; seen in CI with 25 s);
# ran_on_after_moves shows the room left.
qperf_holder() { # the qperf process that holds a QP (not the server)
	migrctl status | awk '$3 == "qperf" && $7 > 0 { print $1; exit }'
}
QS=
for t in "${QPERF_TESTS[@]}"; do
	name=qperf_$t
	wanted "$name" || continue
	log=$LOGDIR/unmodified-$name-$role.log
	if [ "$role" = a ]; then
		if [ -z "$QS" ]; then
			$CM qperf -lp 18740 >"$LOGDIR/unmodified-qperf-server.log" 2>&1 &
			QS=$!
			listening 18740 || fail qperf_server_listens
		fi
		say "$name.srv"
		await "$name.cli" || fail "${name}_client_up"
		P=
		for _ in $(seq 100); do P=$(qperf_holder); [ -n "$P" ] && break; sleep 0.1; done
		[ -n "$P" ] && pass "${name}_test_process" || fail "${name}_test_process"
		sleep 1
		move "${name}_a_moves" "$P" rxe1
		say "$name.a1"
		await "$name.b1" || fail "${name}_b1"
		move "${name}_a_moves_back" "$P" rxe0
		say "$name.a2"
		# its test ends with the client's (and the next test's process
		# must not be mistaken for this one)
		for _ in $(seq 1000); do kill -0 "$P" 2>/dev/null || break; sleep 0.2; done
		now_ns
		ran_on "${name}_a" "$NOW_NS"
		await "$name.done" || fail "${name}_done"
	else
		await "$name.srv" || fail "${name}_server_up"
		$CM qperf -lp 18740 -cm1 -m 16K -t 40 $A_IP "$t" >"$log" 2>&1 &
		P=$!
		started "$P" || fail "${name}_client_started"
		say "$name.cli"
		await "$name.a1" || fail "${name}_a1"
		move "${name}_b_moves" "$P" rxe1
		say "$name.b1"
		await "$name.a2" || fail "${name}_a2"
		move "${name}_b_moves_back" "$P" rxe0
		finished "${name}_b" "$P" "$log"
		check "${name}_reported" grep -Eq '(bw|msg_rate) += +[0-9.]+ ' "$log"
		say "$name.done"
	fi
done
verify_moves
if [ -n "$QS" ]; then
	kill -TERM "$QS" 2>/dev/null
	wait "$QS"
	check qperf_server_no_error sh -c "! grep -Eiq 'fail|error' $LOGDIR/unmodified-qperf-server.log"
fi

kill -TERM "$MIGRD" 2>/dev/null
# What rxe said: a QP that went to error on this side is logged by the
# kernel even when its program did not notice
dmesg | grep -E 'rxe|qp#' | tail -n 40 >"$LOGDIR/unmodified-dmesg-$role.log"
check "no_qp_error_in_kernel_log_$role" sh -c "! dmesg | grep -Eq 'non-flush error|rxe_mr_copy|queue full'"
summary "unmodified $role"
