#!/bin/bash
# Polling applications live-switched under traffic, round after round:
# migr-traffic --loopback in poll mode (legacy API; extended CQs with
# ibv_wr_*()), 10 switches per run, ROUNDS rounds (default 3); the verbs
# log has each switch's per-QP accounting (debug level).
#
# Not a step of tests/run.sh (switch.sh runs each mode once): a soak, best
# run beside another VM. It found two races between the application's
# polls and a switch's drain, both of which handed completions out of
# order (a batch seemed lost). 20 runs in two loaded VMs now pass. Run:
#   buildlib/testbed/run.sh --timeout 1800 -- tests/guest/switch-stress.sh [ROUNDS]
. "$(dirname "$0")/lib.sh"
export VERBS_LOG_LEVEL=4 VERBS_LOG_FILE=$LOGDIR/switch-stress.verbs.log
rm -f "$VERBS_LOG_FILE"

ensure_rxe1 && pass rxe1_active || fail rxe1_active
for ROUND in $(seq "${1:-3}"); do
	switch_traffic poll:legacy:legacy poll:ex:wr
done
summary switch-stress
