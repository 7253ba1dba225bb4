#!/bin/bash
# Soaks: the long repetitions CI runs in smaller counts (tests/run.sh),
# each in its own VM(s), one after the other. Not a step of CI: it takes
# about 40 minutes here and is meant for before a release, or after a
# change to the switch, its partner protocol or the drain.
#
#   partner.sh with MIGR_PARTNER_SWITCHES=N (CI: 4; here 100 by default):
#     A's process moved N times under traffic, B's partner following
#   switch.sh with the counts CI ran before it was cut to 40 minutes:
#     20 switches of the polling selfpair (CI: 4), 10 of each of the
#     others (CI: 2), 10 per migr-traffic run (CI: 2), and 512 QPs
#     switched (CI: 64)
#   replay-partner.sh with 3 plain rebuilds before each replay, 2 after
#     (CI: 2 and 1)
#   switch-stress.sh ROUNDS (default 3): polling applications switched
#     10 times per run, round after round
#   migrate-partner.sh with MIGR_MIGRATIONS=20 (CI: 2): a workload and its
#     partner, moved between the two hosts by migrctl migrate
#   podman.sh with crun and runc (not in CI: more than 14 minutes on a
#     slow day)
#   migrate-partition.sh (not in CI: three minutes of waiting by design):
#     the destination cut off from the network while it restores
#   unmodified.sh with all 19 programs (CI: 11, one of each kind) and
#     migrate-apps.sh with all 5 (CI: 2; pingpong moves in CI in migrate-roundtrip.sh)
#   migrate-roundtrip.sh with both programs, on the stock rdma_rxe and on
#     migr's (CI: pingpong on the stock one, migr-traffic on migr's)
#
# usage: tests/soak.sh [PARTNER_SWITCHES [STRESS_ROUNDS]]
set -uo pipefail
. "$(dirname "$0")/../buildlib/lib/common.sh"
cd "$MIGR_TOP" || exit 1
n=${1:-100} rounds=${2:-3}
failed=0
# at about 3 s per move in a TCG guest, plus the rest of partner.sh
t=$((1500 + n * 10))
buildlib/testbed/run.sh --two --nics 2 --timeout "$t" -e MIGR_PARTNER_SWITCHES="$n" \
	--a "tests/guest/partner.sh a" --b "tests/guest/partner.sh b" || failed=$((failed + 1))
buildlib/testbed/run.sh --timeout 1800 -e MIGR_SWITCHES=20 -e MIGR_SWITCH_ROUNDS=10 \
	-e MIGR_TRAFFIC_SWITCHES=10 -e MIGR_SWITCH_PAIRS="32 256" -- tests/guest/switch.sh || failed=$((failed + 1))
buildlib/testbed/run.sh --timeout 900 -e MIGR_REPLAY_REBUILDS=3 -- tests/guest/replay-partner.sh ||
	failed=$((failed + 1))
buildlib/testbed/run.sh --timeout $((600 + rounds * 600)) -- tests/guest/switch-stress.sh "$rounds" ||
	failed=$((failed + 1))
# podman with both runtimes, one vCPU (docs/containers.md)
buildlib/testbed/run.sh --smp 1 --timeout 900 -- tests/guest/podman.sh || failed=$((failed + 1))
# at about 15 s per move in a TCG guest, with its checks
buildlib/testbed/run.sh --two --nics 2 --timeout 1500 -e MIGR_MIGRATIONS=20 \
	--a "tests/guest/migrate-partner.sh a" --b "tests/guest/migrate-partner.sh b" || failed=$((failed + 1))
buildlib/testbed/run.sh --two --timeout 900 \
	--a "tests/guest/migrate-partition.sh a" --b "tests/guest/migrate-partition.sh b" || failed=$((failed + 1))
buildlib/testbed/run.sh --two --nics 2 --timeout 2400 \
	--a "tests/guest/unmodified.sh a" --b "tests/guest/unmodified.sh b" || failed=$((failed + 1))
buildlib/testbed/run.sh --two --nics 2 --timeout 1500 \
	--a "tests/guest/migrate-apps.sh a" --b "tests/guest/migrate-apps.sh b" || failed=$((failed + 1))
for mod in "" --module; do
	buildlib/testbed/run.sh --two --nics 2 --timeout 1500 \
		--a "tests/guest/migrate-roundtrip.sh a $mod" --b "tests/guest/migrate-roundtrip.sh b $mod" ||
		failed=$((failed + 1))
done
echo "soak: $failed failed"
[ $failed -eq 0 ]
