#!/bin/bash
# Run every migr test on a fresh Debian 12 machine: builds what it needs,
# prepares the VM test bed (both cached under ~/.cache/migr, never
# required), then runs the host unit tests and the guest suites.
# usage: tests/run.sh            (the README's test command; CI runs it)
set -uo pipefail
. "$(dirname "$0")/../buildlib/lib/common.sh"
cd "$MIGR_TOP" || exit 1

declare -a STEP_NAMES STEP_RESULTS STEP_TIMES STEP_WHY
failed=0
T0=$(date +%s)
STEP_LOG=$(mktemp)
# at() says how long the run has taken so far: each step's heading shows
# it, so that a run stopped from outside still says where its time went
at() { local t=$(($(date +%s) - T0)); printf '[%d:%02d]' $((t / 60)) $((t % 60)); }

# record NAME RC T0 T1 LOG: a step's result, time and, if it failed, its
# first failed checks and their reasons (from LOG), for the summary
record() {
	local name=$1 rc=$2 t0=$3 t1=$4 log=$5
	STEP_NAMES+=("$name")
	STEP_TIMES+=($((t1 - t0)))
	if [ "$rc" -eq 0 ]; then
		STEP_RESULTS+=(ok) STEP_WHY+=("")
	else
		STEP_RESULTS+=("FAILED rc=$rc")
		failed=$((failed + 1))
		# the end of a long log is what a reader sees first
		# (a VM's own verdict too: why it died, and whether it was retried)
		STEP_WHY+=("$(grep -E -m 30 'FAIL|\|     \||timed out|exit code [1-9]|^run\.sh: .*(died|did not boot|setup failed|stopped|once more)|BUG: |Oops|WARNING: ' "$log")")
	fi
	return "$rc"
}

step() { # NAME CMD...: run one step, record result, time and what failed
	local name=$1 t0 rc; shift
	echo
	echo "=== $(at) $name"
	t0=$(date +%s)
	"$@" 2>&1 | tee "$STEP_LOG"
	rc=${PIPESTATUS[0]}
	record "$name" "$rc" "$t0" "$(date +%s)" "$STEP_LOG"
}

# The background lane: bg_step NAME CMD... queues a step in it; bg_start
# starts them, one after the other, beside the steps that follow (their
# output goes to files, not between theirs); bg_collect waits for them,
# prints each one's output and records it like step(). A step's time in
# the table is its own, from its start to its end. The lane runs in its
# own process group, which goes when this script does.
BG_DIR=$(mktemp -d) BG_PID= BG_N=0 HOST_PIDS=
trap '[ -z "$BG_PID" ] || kill -TERM -- -"$BG_PID" 2>/dev/null
	for p in $HOST_PIDS; do kill -TERM -- -"$p" 2>/dev/null; done
	rm -rf "$STEP_LOG" "$BG_DIR"' EXIT
trap 'exit 130' INT TERM
bg_step() { # NAME CMD...
	local d=$BG_DIR/$BG_N
	mkdir -p "$d"
	printf '%s\n' "$1" >"$d/name"
	shift
	printf '%q ' "$@" >"$d/cmd"
	BG_N=$((BG_N + 1))
}
bg_start() {
	local i
	echo
	echo "=== $(at) in the background, one after the other (each one's output follows when they end):"
	for ((i = 0; i < BG_N; i++)); do echo "    $(cat "$BG_DIR/$i/name")"; done
	setsid bash -c 'cd "$2" || exit 1
		for ((i = 0; i < $3; i++)); do
			d=$1/$i
			date +%s >"$d/t0"
			eval "$(cat "$d/cmd")" >"$d/log" 2>&1
			echo $? >"$d/rc"
			date +%s >"$d/t1"
		done' _ "$BG_DIR" "$PWD" "$BG_N" &
	BG_PID=$!
}
bg_collect() {
	local i d
	[ -n "$BG_PID" ] || return 0
	kill -0 "$BG_PID" 2>/dev/null && { echo; echo "=== $(at) waiting for the background lane to end"; }
	wait "$BG_PID"
	BG_PID=
	for ((i = 0; i < BG_N; i++)); do
		d=$BG_DIR/$i
		echo
		echo "=== $(cat "$d/name") (ran in the background)"
		cat "$d/log" 2>/dev/null
		record "$(cat "$d/name") [bg]" "$(cat "$d/rc" 2>/dev/null || echo 255)" \
			"$(cat "$d/t0" 2>/dev/null || date +%s)" "$(cat "$d/t1" 2>/dev/null || date +%s)" "$d/log"
	done
}

# Host jobs (no VM): host_start ID NICE NAME CMD... runs CMD beside the
# steps that follow, at niceness NICE (19, with the idle I/O class: it
# takes the CPU time the guests leave, without slowing them); host_wait
# ID waits for it (given back its priority: nothing else is left to wait
# for) and returns its rc; host_collect ID prints its output and records
# it like step().
host_start() { # ID NICE NAME CMD...
	local d=$BG_DIR/host-$1 n=$2 io=()
	mkdir -p "$d"
	printf '%s\n' "$3" >"$d/name"
	shift 3
	[ "$n" -lt 19 ] || io=(ionice -c 3)
	echo
	echo "=== $(at) beside the steps that follow${io:+, at the lowest priority} (its output follows when it is collected): $(cat "$d/name")"
	# With autogroups (Debian's default) a new session is a scheduling
	# group of its own, which gets as much CPU as all the rest: NICE
	# alone would not hold it back (the packages' build took half of
	# the host beside the two-VM steps). The group's niceness does, set
	# from inside the new session (from here, it could be set before the
	# setsid, on this script's group: the guests' own).
	setsid nice -n "$n" "${io[@]}" bash -c 'd=$1; { echo "$2" >/proc/self/autogroup; } 2>/dev/null
		shift 2
		date +%s >"$d/t0"
		"$@" >"$d/log" 2>&1
		echo $? >"$d/rc.tmp"
		date +%s >"$d/t1"
		mv "$d/rc.tmp" "$d/rc"' _ "$d" "$n" "$@" &
	echo $! >"$d/pgid"
	HOST_PIDS+=" $!"
}
host_wait() { # ID (used by the background lane too: exported)
	local d=$BG_DIR/host-$1
	[ -d "$d" ] || return 0
	if [ ! -e "$d/rc" ]; then
		echo "(waiting for $(cat "$d/name") to end, its priority back to normal)"
		renice -n 0 -g "$(cat "$d/pgid")" >/dev/null 2>&1
		{ echo 0 >"/proc/$(cat "$d/pgid")/autogroup"; } 2>/dev/null
		ionice -c 2 -n 4 -P "$(cat "$d/pgid")" >/dev/null 2>&1
		while [ ! -e "$d/rc" ]; do sleep 1; done
	fi
	return "$(cat "$d/rc")"
}
host_collect() { # ID
	local d=$BG_DIR/host-$1
	[ -d "$d" ] && [ ! -e "$d/collected" ] || return 0
	host_wait "$1"
	wait "$(cat "$d/pgid")"
	touch "$d/collected"
	echo
	echo "=== $(cat "$d/name") (ran beside other steps)"
	cat "$d/log"
	record "$(cat "$d/name") [host]" "$(cat "$d/rc")" "$(cat "$d/t0")" "$(cat "$d/t1")" "$d/log"
}
export BG_DIR
export -f host_wait

# Builds and the test bed come first: stop at the first failure. What
# waits on the network and the disk more than on the CPU starts at once,
# beside the builds: the test bed (Debian 13's kernel, a rootfs) and
# migr's rdma_rxe (issue 18), whose build creates the Debian 13 build root
# on a fresh machine (the guest build waits for it, then both build in it).
host_start testbed 0 "test bed" buildlib/testbed/prepare.sh
host_start module 0 "rdma_rxe with migr's methods (DKMS, Debian 13 build root)" \
	buildlib/build-rxe-module.sh
# The Debian packages (a build and lintian, no VM) are made beside
# everything else at the lowest priority, in the CPU time the builds and
# then the guests leave: from the start, since on a fresh machine they
# need that time (49 min, its packaging root made first, when they
# started with the two-VM steps); their install test needs a VM and runs
# last in the background lane below, which gives the build its priority
# back if it has to wait for it.
host_start debs 19 "packages: Debian build, lintian" \
	bash -c 'buildlib/build-debs.sh --if-changed && buildlib/testbed/prepare-stock.sh'
# The host's unit tests beside the guest build, with what they need of
# the host's build (the guest build compiles everything, for Debian 13;
# the host's build of it all took 5 of the first 12 minutes of a run from
# a fresh machine, the guest build waiting): their 50 s are bounded waits
# for the most part (6 s of CPU).
host_start units 0 "host build (what the unit tests run) and unit tests" \
	bash -c 'buildlib/build-host.sh --tests && exec ctest --test-dir "$1/host" \
		--output-on-failure --parallel "$(nproc)"' _ "$MIGR_BUILD"
step "guest build (Debian 13 build root)" buildlib/build-guest.sh || { host_collect units; exit 1; }
host_collect units
host_collect module
host_collect testbed || exit 1

vm() { buildlib/testbed/run.sh "$@"; }

TB=buildlib/testbed/run.sh
# in_turn a|b 'SCRIPT ARGS'...: a guest's command for a pair that runs
# several two-VM scripts, one after the other, each one's verdict counted
# (they use other ports, and each one's migrd is gone when it ends); the
# two guests meet before each (tests/guest/meet.sh), so that no client
# retries long before its server is up. A pair boots and sets up in
# about 30 s: fewer pairs, less time.
in_turn() {
	local role=$1 s i=0 cmd="r=0"
	shift
	for s in "$@"; do
		cmd+="; tests/guest/meet.sh $i $role; tests/guest/$s || r=1"
		i=$((i + 1))
	done
	echo "$cmd; exit \$r"
}
# ud-peers.sh and partner-many.sh first in their pairs: each needs fresh
# devices (QP numbers as a new guest gives them; after partner-many.sh,
# B's moves in ud-peers.sh were refused: a datagram from A's moved QP
# "neither this process's nor a migr process's"; after another script
# partner-many.sh's two clients' QPs did not share numbers).
step "two guests, two NICs: UD peers; perftest, rping, traffic; every rxe pairing; migrd peers" \
	vm --two --nics 2 --timeout 1800 \
	--a "$(in_turn a 'ud-peers.sh a' 'two-host.sh server' 'two-nic.sh A' 'migrd-two.sh a')" \
	--b "$(in_turn b 'ud-peers.sh b' 'two-host.sh client' 'two-nic.sh B' 'migrd-two.sh b')"
# One pair of guests for the moves between hosts: CRIU by hand and by the
# plugin; migrctl migrate of a bare process with its faults, of a workload
# in its own namespaces with a TCP connection, of a process whose partner
# follows it (2 moves in CI, A -> B -> A, as the round trips below make 3
# more with a partner on B; tests/soak.sh makes 20), of
# unmodified programs mid-run: in CI a client that moves (ib_write_bw),
# a server that moves (ib_send_bw) and a peer that dies (pingpong moves
# in the round trips below); tests/soak.sh adds ib_read_bw, ib_send_lat
# and pingpong. Last, both guests on migr's rdma_rxe: migr-traffic moved
# A -> B -> A -> B, the PSNs of each pair of QPs compared with the
# kernel's after each move (the partner's QPs re-pointed in place), and
# two moves whose objects and partners keep their numbers
# Then B's migrd killed and restarted at each step of its side (before
# CRIU, in CRIU, before the copy's resume, before the commit), the
# mover's partner alive on B (migrate-cut.sh).
MIGRATION=(criu-two migrate-two migrate-cut migrate-ns migrate-partner)
APPS="ib_write_bw ib_send_bw dead_partner"
step "two guests, two NICs: processes moved between hosts by CRIU and migrctl migrate" \
	vm --two --nics 2 --timeout 2400 -e MIGR_MIGRATIONS=2 \
	--a "$(in_turn a "${MIGRATION[@]/%/.sh a}" "migrate-apps.sh a $APPS" \
		"migrate-roundtrip.sh a --module migr_traffic" "migrate-partner.sh a --module")" \
	--b "$(in_turn b "${MIGRATION[@]/%/.sh b}" "migrate-apps.sh b $APPS" \
		"migrate-roundtrip.sh b --module migr_traffic" "migrate-partner.sh b --module")"
# ... and, on the stock rdma_rxe (the partner's QP replaced at each move),
# ibv_rc_pingpong moved A -> B -> A -> B, its partner in B's own
# namespaces, the PSNs compared after each move (issue 32)
step "two guests, two NICs: a server's two clients share QP numbers; a late client; partners follow a switch; pingpong's round trip" \
	vm --two --nics 2 --timeout 2400 \
	--a "$(in_turn a 'partner-many.sh a' 'late-client.sh a' 'partner.sh a' 'migrate-roundtrip.sh a ibv_rc_pingpong')" \
	--b "$(in_turn b 'partner-many.sh b' 'late-client.sh b' 'partner.sh b' 'migrate-roundtrip.sh b ibv_rc_pingpong')"
# Unmodified programs, in one pair of guests (about eight minutes; two
# runs of four cost a boot more, and the guest kernel deaths that made a
# short run worth it are gone: docs/testbed.md). CI runs one of each kind
# (UD, WRITE, READ, atomics, SEND latency, rdma_cm, pingpong with and
# without an SRQ, rping, rsockets, qperf); tests/soak.sh runs all 19, the
# second of each kind too (ib_send_bw, ib_write_bw --use_old_post_send,
# which posts as ib_write_bw does on rxe, the latency tests of READ and
# atomics, riostream, qperf's READ and CAS).
UNMODIFIED="ud_send_bw ib_write_bw ib_read_bw ib_atomic_bw ib_send_lat"
UNMODIFIED+=" ib_write_bw_cm ibv_rc_pingpong ibv_srq_pingpong rping rstream qperf_rc_bw"
step "two guests, two NICs: unmodified programs switched live: perftest, rdma_cm, pingpong, rping, rsockets, qperf" \
	vm --two --nics 2 --timeout 2400 \
	--a "tests/guest/unmodified.sh a $UNMODIFIED" --b "tests/guest/unmodified.sh b $UNMODIFIED"

# Then the one-VM steps in two lanes, each VM in one of the host's two VM
# slots: these here, and the others in the background, one after the
# other beside them, the package install test last (once the host lane
# made the packages). Rehearsal 6 (2026-12-06, one vCPU each) ran
# switch.sh 389 s, pyverbs 174, migrd.sh + traffic.sh + kernel-methods.sh
# 314 here, the upstream suite 222, criu.sh 149, stacking.sh 116,
# replay-partner.sh 144 and the install test 100 there: this lane ended
# 2 min 26 s after the other, so pyverbs and stacking.sh swapped lanes
# (rehearsal 7: the lanes ended within a minute). podman.sh runs in
# tests/soak.sh only: it took more than 14 minutes that day.
# Each of these guests has one vCPU: two guests of two on the host's two
# cores ran these steps 1.1 to 2.9 times slower (docs/testbed.md), and
# containers want one anyway.
export MIGR_TESTBED_SMP=1
bg_step "guest: upstream rdma-core suite, rxe0 vs migr_rxe0" tests/upstream-suite/run.sh --mem 3G --timeout 1800
# CRIU by hand, in one guest of one vCPU (docs/containers.md)
bg_step "guest: CRIU dumps and restores RDMA processes (migr plugin)" \
	$TB --timeout 900 -- tests/guest/criu.sh
bg_step "guest: pyverbs-tests" $TB --timeout 1200 -- tests/guest/pyverbs-tests.sh
# before the install test, which waits for the packages (built by then
# in rehearsals 6 and 7)
bg_step "guest: replay past the drain bound toward a partner" $TB --timeout 900 -- tests/guest/replay-partner.sh
bg_step "packages: install test (stock Debian 13 guest)" \
	bash -c 'host_wait debs || { echo "the Debian build failed (its output: the host lane, below)"; exit 1; }; exec tests/package-test.sh'
bg_start
step "guest: live switch rxe0 <-> rxe1 under traffic" vm --timeout 900 -- tests/guest/switch.sh
step "guest: stacking, perftest, rdmacm on the twins" vm --timeout 900 -- tests/guest/stacking.sh
# one guest for three short ones (boots saved), each one's verdict
# counted; kernel-methods.sh last: it replaces the guest's rdma_rxe
step "guest: migrd and migrctl; migr-traffic loopback; rdma_rxe's methods" vm --timeout 1800 -- \
	"r=0; for s in migrd traffic kernel-methods; do tests/guest/\$s.sh || r=1; done; exit \$r"
bg_collect
host_collect debs

echo
echo "=== summary"
for i in "${!STEP_NAMES[@]}"; do
	printf '%-52s %-14s %5ss\n' "${STEP_NAMES[$i]}" "${STEP_RESULTS[$i]}" "${STEP_TIMES[$i]}"
done
for i in "${!STEP_NAMES[@]}"; do
	[ "${STEP_RESULTS[$i]}" = ok ] && continue
	echo "--- ${STEP_NAMES[$i]}: first failures"
	printf '%s\n' "${STEP_WHY[$i]}" | cut -c1-300
done
total=$(($(date +%s) - T0))
printf '%s\n' "${STEP_NAMES[@]}" | grep -q ' \[bg\]$' &&
	echo "([bg]: ran in the background lane, beside the one-VM steps here; [host]: beside the other steps (the packages at the lowest priority); the total is the time from start to end)"
printf '%-52s %-14s %5ss (%d min %02d s)\n' "total" "" "$total" $((total / 60)) $((total % 60))
echo "steps: $((${#STEP_NAMES[@]} - failed)) passed, $failed failed"
[ $failed -eq 0 ]
