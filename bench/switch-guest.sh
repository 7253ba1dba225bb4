#!/bin/bash
# The guest's side of bench/switch.sh: for each number of pairs, a
# tests/switch/selfpair of that many pairs of RC QPs is switched rxe0 ->
# rxe1 and back SWITCHES times under traffic; one line per size, each
# phase's median over the switches (migr's switch report, phases_ms).
# usage: switch-guest.sh PAIRS SWITCHES [busy]  (busy: the process polls
# in a loop, as perftest does, instead of resting 50 us after an empty poll)
. "$(dirname "$0")/../tests/guest/lib.sh"
pairs=${1:?} switches=${2:?} idle=(--idle-us 50)
[ "${3:-}" = busy ] && idle=()
SELFPAIR=$MIGR_BUILD_DIR/tests/switch/selfpair
CONTROL=$MIGR_TOP/tests/switch/control.py
OUT=$LOGDIR/bench-switch
ensure_rxe1 || { echo "bench/switch-guest.sh: rxe1 did not come up" >&2; exit 1; }
printf '%-10s %8s %8s %8s %8s %8s %8s %9s\n' pairs/QPs suspend drain release rebuild replay total "ms/QP"
for p in $pairs; do
	"$SELFPAIR" migr_rxe0 3600 --pairs "$p" "${idle[@]}" >"$OUT.$p.log" 2>&1 &
	sp=$!
	for _ in $(seq 600); do grep -q 'rounds=' "$OUT.$p.log" && break; sleep 0.2; done
	if ! python3 "$CONTROL" "$sp" alternate "$switches" rxe1 rxe0 >"$OUT.$p.jsonl"; then
		echo "bench/switch-guest.sh: the switches of $p pairs failed (see $OUT.$p.jsonl)" >&2
		kill -TERM "$sp"
		exit 1
	fi
	kill -TERM "$sp"
	wait "$sp" || { echo "bench/switch-guest.sh: selfpair of $p pairs: $(tail -n 1 "$OUT.$p.log")" >&2; exit 1; }
	python3 - "$p" "$OUT.$p.jsonl" <<'PY'
import json, statistics, sys
pairs = int(sys.argv[1])
rows = [json.loads(l)["switch"][0] for l in open(sys.argv[2])]
med = lambda k: statistics.median(r["phases_ms"][k] for r in rows)
total = statistics.median(r["total_ms"] for r in rows)
print("%-10s %8.0f %8.0f %8.0f %8.0f %8.0f %8.0f %9.2f" % (
    "%d/%d" % (pairs, 2 * pairs), med("suspend"), med("drain"), med("release"),
    med("rebuild"), med("replay"), total, total / (2 * pairs)))
PY
done
