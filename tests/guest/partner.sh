#!/bin/bash
# In two guests with two NICs each (buildlib/testbed/run.sh --two --nics 2):
# migr-traffic between a process on A and its partner on B (RC QPs, every
# op, legacy and ibv_wr_* posting, completion channels; every WR and byte
# checked). A's process is switched between A's rxe0 and rxe1 4 times
# (MIGR_PARTNER_SWITCHES; tests/soak.sh runs 100) under traffic and B's
# partner follows through the two migrd; then B's is
# switched; then both at once (each is the
# other's partner: one is put off as busy and retries); then the faults.
# Each side checks its own traffic verdict at the end.
# usage: [MIGR_PARTNER_BOTH=0] partner.sh a|b    (a: 10.9.0.1/.11, b: 10.9.0.2/.12)
. "$(dirname "$0")/lib.sh"
role=${1:?a or b}
A_IP=10.9.0.1
SWITCHES=${MIGR_PARTNER_SWITCHES:-4}
BOTH=${MIGR_PARTNER_BOTH:-1}
two_host_env partner
MLOG=$LOGDIR/partner-migrd-$role.log
# RC QPs receiving through an SRQ on each side, every op, both APIs,
# events; a shallow queue and a bounded rate leave the single-CPU TCG
# guests (and the host's two CPUs, which carry each packet through QEMU)
# time for the partner talk. The other processes (faults, UD) wait for
# their completions in events too, at a lower rate: polling, they would
# take all of a guest's CPU while they run.
SIDE="--mode event --rate 50"
TRAFFIC="-d migr_rxe0 --qps 4 --srq --depth 8 --size 512 --api mixed --mode event --rate 200 -D 1200 --stall-timeout 60"

start_migrd() {
	migrd -f --debug --config /dev/null --socket "$MIGRD_SOCKET" --listen 0.0.0.0 --name "$role" --peer "$(other_peer "$RUN/key")" >>"$MLOG" 2>&1 &
	MIGRD=$!
	for _ in $(seq 50); do [ -S "$MIGRD_SOCKET" ] && return 0; sleep 0.1; done
	return 1
}

# lower_of PID: the real device the process's first context is on now
# (the table's LOWER column: no Python start-up, slow in a busy TCG guest)
lower_of() {
	migrctl status --pid "$1" | awk '$1 == "'"$1"'" { print $5; exit }'
}

other_of() { [ "$(lower_of "$1")" = rxe1 ] && echo rxe0 || echo rxe1; }

# switches NAME PID N: N switches of PID, each to the other of rxe0 and
# rxe1 (asked once: a status query costs seconds in a busy TCG guest);
# one JSON line each in NAME.jsonl, migrctl's wall time in NAME.wall
switches() {
	local name=$1 pid=$2 n=$3 i=0
	local t1 t2 to
	: >"$LOGDIR/$name.jsonl"
	: >"$LOGDIR/$name.err"
	: >"$LOGDIR/$name.wall"
	to=$(other_of "$pid")
	while [ $i -lt "$n" ]; do
		t1=$(date +%s%N)
		migrctl switch --pid "$pid" --device "$to" --json \
			>>"$LOGDIR/$name.jsonl" 2>>"$LOGDIR/$name.err" || return 1
		t2=$(date +%s%N)
		echo "$(((t2 - t1) / 1000000))" >>"$LOGDIR/$name.wall"
		[ "$to" = rxe1 ] && to=rxe0 || to=rxe1
		i=$((i + 1))
	done
}

# run_switches CHECK NAME PID N: switches, as one check
run_switches() {
	local name=$1; shift
	switches "$@" && pass "$name" || fail "$name" "$LOGDIR/$1.err"
}

# check_switches NAME N: N successful switches, each moving 4 partners;
# their median phases shown (one python3: its start costs seconds in a
# busy TCG guest)
check_switches() {
	check "$1_all_ok" python3 - "$LOGDIR/$1.jsonl" "$2" <<'PY'
import json, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
try:
    rs = [r["reply"]["switch"][0] for r in lines]
    med = lambda k: statistics.median(r["phases_ms"][k] for r in rs)
    print("    %d switches, median ms: total %.1f, suspend %.1f, drain %.1f, release %.1f,"
          " rebuild %.1f, partner reconnect %.1f, replay %.1f; retries %d" % (
          len(rs), statistics.median(r["total_ms"] for r in rs), med("suspend"), med("drain"),
          med("release"), med("rebuild"), med("partner_reconnect"), med("replay"),
          sum(r.get("retries", 0) for r in rs)))
    w = [int(l) for l in open(sys.argv[1].replace(".jsonl", ".wall"))]
    print("    migrctl switch wall ms, median: %d" % statistics.median(w))
except (OSError, ValueError, KeyError, IndexError, statistics.StatisticsError):
    pass
for r in lines:
    assert r["ok"], r
    for c in r["reply"]["switch"]:
        assert c["ok"] and c["partners"] == 4 and c["lost"] == 0, c
        assert c["device_fds_after_release"] == 0, c
assert len(lines) == int(sys.argv[2]), len(lines)
PY
	grep -h '^    [0-9m]' "$LOGDIR/$1_all_ok.log"
}

# refused NAME PATTERN CMD...: CMD fails and says PATTERN in one line
refused() {
	local name=$1 pat=$2; shift 2
	"$@" >"$LOGDIR/$name.out" 2>&1
	local rc=$?
	check "$name" sh -c "[ $rc -ne 0 ] && grep -Eq '$pat' $LOGDIR/$name.out"
	sed -n '1p' "$LOGDIR/$name.out" | cut -c1-300 | sed 's/^/    /'
}

test_key "$RUN/key" "migr partner test key $(date +%Y)"
: >"$MLOG"
start_migrd && pass "migrd_starts_$role" || fail "migrd_starts_$role" "$MLOG"
ensure_rxe1 && pass "rxe1_active_$role" || fail "rxe1_active_$role"

if [ "$role" = a ]; then
	rm -rf "${SYNC%/*}" && mkdir -p "$SYNC"
	migr-traffic $TRAFFIC --server >"$LOGDIR/partner-traffic-a.log" 2>&1 &
	TR=$!
	# a plain-stack partner's server: its client on B runs on rxe0 itself
	migr-traffic -d migr_rxe0 --qps 1 $SIDE -D 900 --port 18601 --server >"$LOGDIR/partner-plain-a.log" 2>&1 &
	PL=$!
	# a partner that is killed while this one moves
	migr-traffic -d migr_rxe0 --qps 2 $SIDE -D 900 --port 18602 --stall-timeout 30 --server \
		>"$LOGDIR/partner-killed-a.log" 2>&1 &
	KL=$!
	# a UD peer on B: it learns through the two migrd where this one's UD
	# QP went (numbered datagrams both ways, checked at the end: source QP,
	# data, order; their loss is bounded in ud-peers.sh). Its RC QP runs
	# no atomics: a CAS here once completed with its result unwritten
	# (moves of 11-13 s in loaded guests), rxe's bug when it retransmits,
	# with or without migr (rxe-atomic-loss.sh, docs/testbed.md). Atomics
	# over moves are checked by the main traffic and ud-peers.sh.
	migr-traffic -d migr_rxe0 --qps 1 --ud --ud-max-loss 100 $SIDE -D 900 --port 18603 \
		--ops send,send_imm,write,write_imm,read --server \
		>"$LOGDIR/partner-ud-a.log" 2>&1 &
	UD=$!
	say a.up
	await b.up || fail b_up
	for _ in $(seq 100); do grep -q "@migr/$TR\$" /proc/net/unix && break; sleep 0.1; done
	sleep 3

	# 1. A moves $SWITCHES times (each way half of them); B's QPs follow
	run_switches "a_switched_${SWITCHES}_times" a-moves "$TR" "$SWITCHES"
	check_switches a-moves "$SWITCHES"
	say a.moved

	# 2. B moves (await), 3. both at once
	await b.moved || fail b_moved
	if [ "$BOTH" = 1 ]; then
		say both.go
		run_switches a_switched_while_b_switches a-both "$TR" 6
		check_switches a-both 6
		await b.both || fail b_both
	fi

	# 4. faults, each refused with its reason; the traffic goes on
	refused fault_target_missing 'no RDMA device named rxe9' \
		migrctl switch --pid "$TR" --device rxe9
	migrctl switch --pid "$TR" --device "$(other_of "$TR")" --wait-ms 1 --json >"$LOGDIR/fault_wait.json" 2>"$LOGDIR/fault_wait.err"
	check fault_wait_bound_rolls_back python3 - "$LOGDIR/fault_wait.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r = r["reply"]["switch"][0] if "reply" in r else r
# Either it drained within 1 ms (then it moved), or it rolled back saying so
assert r["ok"] or ("drain" in r["error"] and r.get("rolled_back", True)), r
print("    ", "moved" if r["ok"] else r["error"])
PY
	say b.stop_migrd
	await b.migrd_stopped || fail b_migrd_stopped
	refused fault_partner_migrd_down 'migrd on 10\.9\.0\.2 .*unreachable|10\.9\.0\.2.*(refused|unreachable)' \
		migrctl switch --pid "$TR" --device "$(other_of "$TR")"
	say b.start_migrd
	await b.migrd_started || fail b_migrd_started
	await b.plain_up || fail b_plain_up
	refused fault_partner_not_migr 'does not use migr' \
		migrctl switch --pid "$PL" --device rxe1
	# each fault's processes go once it is done: busy polling, they would
	# leave the rest of this single-CPU guest little time
	kill -TERM "$PL" 2>/dev/null
	say a.plain_done
	# its RC and UD QPs in RTS (the UD QP's AH to B follows at once)
	for _ in $(seq 120); do
		[ "$(migrctl status --pid "$UD" --json | grep -o '"state":3' | wc -l)" -ge 2 ] && break
		sleep 0.5
	done
	sleep 1
	switch_later ud_peer_elsewhere_follows "$UD" rxe1 1
	sleep 2
	switch_later ud_peer_elsewhere_follows_back "$UD" rxe0 1
	sleep 2
	say a.ud_done
	kill -TERM "$UD" 2>/dev/null
	traffic_verdict ud_peer_elsewhere_traffic_a "$UD" "$LOGDIR/partner-ud-a.log"
	checked_switches
	# B kills its process a moment after this switch starts: whatever the
	# phase it meets, the switch answers (moved, or refused with the
	# reason) and the mover is not harmed
	await b.kill_up || fail b_kill_up
	to=$(other_of "$KL")
	say b.kill_now
	timeout 120 migrctl switch --pid "$KL" --device "$to" >"$LOGDIR/fault_partner_killed.out" 2>&1
	krc=$?
	check fault_partner_killed_answered sh -c "[ $krc -ne 124 ] && [ \$(wc -l <$LOGDIR/fault_partner_killed.out) -ge 1 ]"
	sed -n '1p' "$LOGDIR/fault_partner_killed.out" | cut -c1-300 | sed 's/^/    /'
	kill -TERM "$KL" 2>/dev/null
	wait "$KL"; krc=$?
	# its traffic fails (its partner died), but by itself, not by a crash
	check fault_partner_killed_mover_exits_cleanly sh -c "[ $krc -lt 128 ] || [ $krc -eq 143 ]"
	# once more after the faults: everything still moves
	run_switches a_switches_after_faults a-after "$TR" 2
	check_switches a-after 2
	say a.faults_done

	# 5. the end: both stop posting, drain, and compare everything
	await b.stopping || fail b_stopping
	kill -TERM "$TR" 2>/dev/null
	wait "$TR"; rc=$?
	check traffic_a_verified sh -c "[ $rc -eq 0 ] && grep -q 'migr-traffic: PASS' $LOGDIR/partner-traffic-a.log"
	tail -n 2 "$LOGDIR/partner-traffic-a.log" | sed 's/^/    /'
	wait "$PL"
	say a.done
else
	await a.up || fail a_up
	migr-traffic $TRAFFIC --client $A_IP --connect-timeout 60 >"$LOGDIR/partner-traffic-b.log" 2>&1 &
	TR=$!
	started "$TR"
	say b.up
	await a.moved || fail a_moved
	run_switches b_switched_4_times b-moves "$TR" 4
	check_switches b-moves 4
	say b.moved
	if [ "$BOTH" = 1 ]; then
		await both.go || fail both_go
		run_switches b_switched_while_a_switches b-both "$TR" 6
		check_switches b-both 6
		say b.both
	fi

	await b.stop_migrd || fail b_stop_migrd
	kill -TERM "$MIGRD"; wait "$MIGRD"
	say b.migrd_stopped
	await b.start_migrd || fail b_start_migrd
	start_migrd && pass migrd_restarts_b || fail migrd_restarts_b "$MLOG"
	say b.migrd_started
	# the plain-stack partner: rxe0 itself, under no migr at all
	migr-traffic -d rxe0 --qps 1 $SIDE -D 900 --port 18601 --client $A_IP --connect-timeout 60 \
		>"$LOGDIR/partner-plain-b.log" 2>&1 &
	PL=$!
	migr-traffic -d migr_rxe0 --qps 1 --ud --ud-max-loss 100 $SIDE -D 900 --port 18603 \
		--ops send,send_imm,write,write_imm,read --client $A_IP \
		--connect-timeout 60 >"$LOGDIR/partner-ud-b.log" 2>&1 &
	UB=$!
	sleep 5
	say b.plain_up
	await a.plain_done && kill -TERM "$PL"
	await a.ud_done && kill -TERM "$UB"
	traffic_verdict ud_peer_elsewhere_traffic_b "$UB" "$LOGDIR/partner-ud-b.log"
	# the partner killed while A's process moves, started once the UD peers are
	# done (busy polling, the pair would leave their moves little CPU),
	# ready once its two QPs are (RTS)
	migr-traffic -d migr_rxe0 --qps 2 $SIDE -D 900 --port 18602 --stall-timeout 30 --client $A_IP \
		--connect-timeout 60 >"$LOGDIR/partner-killed-b.log" 2>&1 &
	KB=$!
	started "$KB" || fail killed_partner_started
	for _ in $(seq 120); do
		[ "$(migrctl status --pid "$KB" --json | grep -o '"state":3' | wc -l)" -ge 2 ] && break
		sleep 0.5
	done
	say b.kill_up
	await b.kill_now && sleep 1.5 && kill -KILL "$KB"
	await a.faults_done || fail a_faults_done
	say b.stopping
	kill -TERM "$TR" 2>/dev/null
	wait "$TR"; rc=$?
	check traffic_b_verified sh -c "[ $rc -eq 0 ] && grep -q 'migr-traffic: PASS' $LOGDIR/partner-traffic-b.log"
	tail -n 2 "$LOGDIR/partner-traffic-b.log" | sed 's/^/    /'
	wait "$PL" "$UB"
	await a.done 120 || fail a_done
fi
grep -q "QP 0x[0-9a-f]*: now 0x" "$VERBS_LOG_FILE" && pass "partner_side_reconnected_$role" ||
	fail "partner_side_reconnected_$role" "$VERBS_LOG_FILE"
kill -TERM "$MIGRD" 2>/dev/null
summary "partner $role"
