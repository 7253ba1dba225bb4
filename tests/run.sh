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
		STEP_WHY+=("$(grep -E -m 12 'FAIL|\|     \||timed out|exit code [1-9]|^run\.sh: .*(died|did not boot|setup failed|stopped|once more)|BUG: |Oops|WARNING: ' "$log")")
	fi
	return "$rc"
}

step() { # NAME CMD...: run one step, record result, time and what failed
	local name=$1 t0 rc; shift
	echo
	echo "=== $name"
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
	echo "=== in the background, one after the other (each one's output follows when they end):"
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
	kill -0 "$BG_PID" 2>/dev/null && { echo; echo "=== waiting for the background lane to end"; }
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
	echo "=== beside the steps that follow${io:+, at the lowest priority} (its output follows when it is collected): $(cat "$d/name")"
	setsid nice -n "$n" "${io[@]}" bash -c 'd=$1; shift
		date +%s >"$d/t0"
		"$@" >"$d/log" 2>&1
		echo $? >"$d/rc.tmp"
		date +%s >"$d/t1"
		mv "$d/rc.tmp" "$d/rc"' _ "$d" "$@" &
	echo $! >"$d/pgid"
	HOST_PIDS+=" $!"
}
host_wait() { # ID (used by the background lane too: exported)
	local d=$BG_DIR/host-$1
	[ -d "$d" ] || return 0
	if [ ! -e "$d/rc" ]; then
		echo "(waiting for $(cat "$d/name") to end, its priority back to normal)"
		renice -n 0 -g "$(cat "$d/pgid")" >/dev/null 2>&1
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

# Builds and the test bed are prerequisites: stop at the first failure.
step "host build" buildlib/build-host.sh || exit 1
# The host's unit tests beside the guest build: their 50 s are bounded
# waits for the most part (6 s of CPU), and the build does not wait.
host_start units 0 "host unit tests" \
	ctest --test-dir "$MIGR_BUILD/host" --output-on-failure --parallel "$(nproc)"
step "guest build (Debian 13 build root)" buildlib/build-guest.sh || { host_collect units; exit 1; }
host_collect units
step "test bed" buildlib/testbed/prepare.sh || exit 1

vm() { buildlib/testbed/run.sh "$@"; }
# The Debian packages (a build and lintian, no VM) are made beside the
# two-VM steps at the lowest priority, in the CPU time their two
# single-CPU guests leave (18.5 min here, with other VMs on the host too:
# the two-VM steps take about 20); their install test needs a VM and runs
# last in the background lane below, which gives the build its priority
# back if it has to wait for it.
host_start debs 19 "packages: Debian build, lintian" \
	bash -c 'buildlib/build-debs.sh --if-changed && buildlib/testbed/prepare-stock.sh'

TB=buildlib/testbed/run.sh
# Short two-VM scripts share a pair of guests (a boot and set-up cost
# about 15 s), one after the other in each guest, each one's verdict
# counted: they use other ports, and each one's migrd is gone when it ends.
step "two guests: perftest, rping, traffic; migrd peers" vm --two --timeout 1200 \
	--a "tests/guest/two-host.sh server; r=\$?; tests/guest/migrd-two.sh a && exit \$r" \
	--b "tests/guest/two-host.sh client; r=\$?; tests/guest/migrd-two.sh b && exit \$r"
step "two guests, two NICs each: every rxe pairing" vm --two --nics 2 --timeout 600 \
	--a "tests/guest/two-nic.sh A" --b "tests/guest/two-nic.sh B"
# One pair of guests for the moves between hosts: CRIU by hand and by the
# plugin; migrctl migrate of a bare process with its faults, of a workload
# in its own namespaces with a TCP connection, of a process whose partner
# follows it (10 moves, as issue 17 asks; tests/soak.sh makes 20), of unmodified programs
# mid-run (each script's verdict counts)
MIGRATION="criu-two migrate-two migrate-ns migrate-partner migrate-apps"
step "two guests, two NICs: processes moved between hosts by CRIU and migrctl migrate" \
	vm --two --nics 2 --timeout 2400 \
	--a "r=0; for s in $MIGRATION; do tests/guest/\$s.sh a || r=1; done; exit \$r" \
	--b "r=0; for s in $MIGRATION; do tests/guest/\$s.sh b || r=1; done; exit \$r"
step "two guests, two NICs: partners follow a switch across hosts" vm --two --nics 2 --timeout 1500 \
	--a "tests/guest/partner.sh a" --b "tests/guest/partner.sh b"
step "two guests, two NICs: UD peers in other processes follow a switch" vm --two --nics 2 --timeout 600 \
	--a "tests/guest/ud-peers.sh a" --b "tests/guest/ud-peers.sh b"
# partner-many.sh first: its two clients' QPs share numbers only on fresh
# devices (after another script they did not). ud-peers.sh wants fresh
# devices too: after partner-many.sh, B's moves were refused (a datagram
# from A's moved QP "neither this process's nor a migr process's").
step "two guests, two NICs: a server's two clients share QP numbers; a late client" \
	vm --two --nics 2 --timeout 1500 \
	--a "tests/guest/partner-many.sh a; r=\$?; tests/guest/late-client.sh a && exit \$r" \
	--b "tests/guest/partner-many.sh b; r=\$?; tests/guest/late-client.sh b && exit \$r"
# Unmodified programs, in three runs of about three minutes each: a run
# whose guest kernel dies (docs/testbed.md) is run again, and a short one
# costs less to run again and is less likely to meet it; each run's boot
# and set-up cost about 15 s.
UNMODIFIED=(
	"UD, bandwidth, atomics|ud_send_bw ib_write_bw ib_send_bw ib_read_bw ib_write_bw_old_post ib_atomic_bw"
	"latency, rdma_cm, pingpong|ib_send_lat ib_atomic_lat ib_read_lat ib_write_bw_cm ibv_rc_pingpong ibv_srq_pingpong"
	"rping, rsockets, qperf|rping rstream riostream qperf_rc_bw qperf_rc_rdma_read_bw qperf_rc_compare_swap_mr"
)
for u in "${UNMODIFIED[@]}"; do
	step "two guests, two NICs: unmodified programs switched live: ${u%%|*}" vm --two --nics 2 --timeout 900 \
		--a "tests/guest/unmodified.sh a ${u#*|}" --b "tests/guest/unmodified.sh b ${u#*|}"
done

# Then the one-VM steps in two lanes, each VM in one of the host's two VM
# slots: these here, and the others in the background, one after the
# other beside them (about as long in all, by the step times measured
# here: switch.sh some 300 s with its CI counts, pyverbs and
# replay-partner 483, migrd.sh 125, stacking and traffic 163; there the
# upstream suite 510, criu.sh and podman.sh some 300), the package install
# test last (283 s, once the host lane made the packages).
bg_step "guest: upstream rdma-core suite, rxe0 vs migr_rxe0" tests/upstream-suite/run.sh --mem 3G --timeout 1800
# CRIU by hand, then podman (crun here; tests/soak.sh runs runc too), in
# one guest of one vCPU: with two, its kernel died of int3 oopses when
# both ran in one guest (docs/containers.md)
bg_step "guest: CRIU dumps and restores RDMA processes (migr plugin); podman containers" \
	$TB --smp 1 --timeout 1200 -e PODMAN_RUNTIMES=crun -- \
	"tests/guest/criu.sh; r=\$?; tests/guest/podman.sh && exit \$r"
bg_step "packages: install test (stock Debian 13 guest)" \
	bash -c 'host_wait debs || { echo "the Debian build failed (its output: the host lane, below)"; exit 1; }; exec tests/package-test.sh'
bg_start
step "guest: live switch rxe0 <-> rxe1 under traffic" vm --timeout 900 -- tests/guest/switch.sh
step "guest: pyverbs-tests; replay past the drain bound toward a partner" vm --timeout 1800 -- \
	"tests/guest/pyverbs-tests.sh; r=\$?; tests/guest/replay-partner.sh && exit \$r"
step "guest: migrd and migrctl" vm --timeout 600 -- tests/guest/migrd.sh
# one guest for two short ones (a boot saved), each one's verdict counted
step "guest: stacking, perftest, rdmacm; migr-traffic loopback" vm --timeout 1500 -- \
	"tests/guest/stacking.sh; r=\$?; tests/guest/traffic.sh && exit \$r"
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
	echo "([bg]: ran in the background lane, beside the one-VM steps here; [host]: beside the steps from the two-VM ones on, at the lowest priority; the total is the time from start to end)"
printf '%-52s %-14s %5ss (%d min %02d s)\n' "total" "" "$total" $((total / 60)) $((total % 60))
echo "steps: $((${#STEP_NAMES[@]} - failed)) passed, $failed failed"
[ $failed -eq 0 ]
