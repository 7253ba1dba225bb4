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
trap 'rm -f "$STEP_LOG"' EXIT

step() { # NAME CMD...: run one step, record result, time and what failed
	local name=$1 t0 rc; shift
	echo
	echo "=== $name"
	t0=$(date +%s)
	"$@" 2>&1 | tee "$STEP_LOG"
	rc=${PIPESTATUS[0]}
	STEP_NAMES+=("$name")
	STEP_TIMES+=($(($(date +%s) - t0)))
	if [ $rc -eq 0 ]; then
		STEP_RESULTS+=(ok) STEP_WHY+=("")
	else
		STEP_RESULTS+=("FAILED rc=$rc")
		failed=$((failed + 1))
		# its first failed checks and their reasons, for the summary:
		# the end of a long log is what a reader sees first
		# (a VM's own verdict too: why it died, and whether it was retried)
		STEP_WHY+=("$(grep -E -m 12 'FAIL|\|     \||timed out|exit code [1-9]|^run\.sh: .*(died|did not boot|setup failed|stopped|once more)|BUG: |Oops|WARNING: ' "$STEP_LOG")")
	fi
	return $rc
}

# Builds and the test bed are prerequisites: stop at the first failure.
step "host build" buildlib/build-host.sh || exit 1
step "host unit tests" ctest --test-dir "$MIGR_BUILD/host" --output-on-failure
step "guest build (Debian 13 build root)" buildlib/build-guest.sh || exit 1
step "test bed" buildlib/testbed/prepare.sh || exit 1

vm() { buildlib/testbed/run.sh "$@"; }
step "guest: stacking, perftest, rdmacm" vm --timeout 1200 -- tests/guest/stacking.sh
step "guest: migr-traffic loopback, rxe0 and migr_rxe0" vm --timeout 600 -- tests/guest/traffic.sh
step "two guests: perftest, rping, traffic over migr" vm --two --timeout 900 \
	--a "tests/guest/two-host.sh server" --b "tests/guest/two-host.sh client"
step "two guests, two NICs each: every rxe pairing" vm --two --nics 2 --timeout 600 \
	--a "tests/guest/two-nic.sh A" --b "tests/guest/two-nic.sh B"
step "guest: live switch rxe0 <-> rxe1 under traffic" vm --timeout 900 -- tests/guest/switch.sh
step "guest: migrd and migrctl" vm --timeout 600 -- tests/guest/migrd.sh
step "guest: replay past the drain bound toward a partner process" vm --timeout 600 -- tests/guest/replay-partner.sh
step "two guests: migrd peers, qpn-owner across hosts" vm --two --timeout 600 \
	--a "tests/guest/migrd-two.sh a" --b "tests/guest/migrd-two.sh b"
step "two guests, two NICs: partners follow a switch across hosts" vm --two --nics 2 --timeout 1500 \
	--a "tests/guest/partner.sh a" --b "tests/guest/partner.sh b"
step "two guests, two NICs: UD peers in other processes follow a switch" vm --two --nics 2 --timeout 600 \
	--a "tests/guest/ud-peers.sh a" --b "tests/guest/ud-peers.sh b"
step "two guests, two NICs: a server's two client processes share QP numbers" vm --two --nics 2 --timeout 900 \
	--a "tests/guest/partner-many.sh a" --b "tests/guest/partner-many.sh b"
step "two guests, two NICs: a client connects to a server that moved" vm --two --nics 2 --timeout 600 \
	--a "tests/guest/late-client.sh a" --b "tests/guest/late-client.sh b"
# Unmodified programs, in four runs of a few minutes each: a run whose
# guest kernel dies (docs/testbed.md) is run again, and a short one costs
# less to run again and is less likely to meet it.
UNMODIFIED=(
	"UD and bandwidth|ud_send_bw ib_write_bw ib_send_bw ib_read_bw ib_write_bw_old_post"
	"atomics, latency, rdma_cm|ib_atomic_bw ib_send_lat ib_atomic_lat ib_read_lat ib_write_bw_cm"
	"pingpong, rping, rsockets|ibv_rc_pingpong ibv_srq_pingpong rping rstream riostream"
	"qperf|qperf_rc_bw qperf_rc_rdma_read_bw qperf_rc_compare_swap_mr"
)
for u in "${UNMODIFIED[@]}"; do
	step "two guests, two NICs: unmodified programs switched live: ${u%%|*}" vm --two --nics 2 --timeout 900 \
		--a "tests/guest/unmodified.sh a ${u#*|}" --b "tests/guest/unmodified.sh b ${u#*|}"
done
step "guest: pyverbs-tests" vm --timeout 1200 -- tests/guest/pyverbs-tests.sh
step "guest: upstream rdma-core suite, rxe0 vs migr_rxe0" vm --mem 3G --timeout 1800 -- tests/guest/upstream-suite.sh
step "packages: Debian build, lintian, install test" tests/package-test.sh

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
printf '%-52s %-14s %5ss (%d min %02d s)\n' "total" "" "$total" $((total / 60)) $((total % 60))
echo "steps: $((${#STEP_NAMES[@]} - failed)) passed, $failed failed"
[ $failed -eq 0 ]
