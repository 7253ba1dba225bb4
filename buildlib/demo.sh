#!/bin/bash
# Set everything up on a fresh Debian 12 machine and run migr's main job in
# the VM test bed, printing a report: the same unmodified programs on
# soft-RoCE rxe0 and on its migr twin, then a running verbs program moved
# live between two devices under traffic, with the time of each phase; then
# two guests: traffic between them, one side moved live while its partner
# on the other host follows; then migrated to the other guest by migrctl
# migrate (CRIU) and back, its partner following: the phase tables and
# the traffic verdicts.
# usage: buildlib/demo.sh
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"
cd "$MIGR_TOP"

t0=$(date +%s)
log "building the fork for Debian 13 (cached after the first run)"
buildlib/build-guest.sh >"$MIGR_BUILD/demo-build.log" 2>&1 ||
	{ tail -30 "$MIGR_BUILD/demo-build.log" >&2; die "build failed (log: $MIGR_BUILD/demo-build.log)"; }
log "preparing the VM test bed"
buildlib/testbed/prepare.sh >"$MIGR_BUILD/demo-testbed.log" 2>&1 ||
	{ tail -30 "$MIGR_BUILD/demo-testbed.log" >&2; die "test bed preparation failed (log: $MIGR_BUILD/demo-testbed.log)"; }
t1=$(date +%s)
log "running the demonstration in the guest"
buildlib/testbed/run.sh --timeout 900 -- tests/guest/demo.sh
log "two guests, two NICs each: a live switch, then a live migration, the partner on the other host"
buildlib/testbed/run.sh --two --nics 2 --timeout 900 \
	--a "tests/guest/demo-two.sh a" --b "tests/guest/demo-two.sh b"
t2=$(date +%s)
echo
echo "setup $((t1 - t0)) s, demonstration $((t2 - t1)) s"
