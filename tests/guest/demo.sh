#!/bin/bash
# In the guest: the stacking demonstration. The same unmodified programs on
# the real device and on its migr twin, side by side.
. "$(dirname "$0")/lib.sh"
LOWER=${MIGR_LOWER_DEV:-rxe0}
DEV=migr_$LOWER
GIDX=${MIGR_GID_INDEX:-1}

echo "== ibv_devices"
ibv_devices
echo
echo "== ibv_devinfo -d $DEV"
ibv_devinfo -d "$DEV"

# perftest servers listen on TCP 18515 for the connection exchange
wait_listen() {
	local i=0
	until ss -ltn '( sport = :18515 )' | grep -q LISTEN; do
		i=$((i + 1)); [ $i -gt 300 ] && return; sleep 0.1
	done
}

# bw DEV TOOL ARGS: average bandwidth (MiB/s) of a loopback run
bw() {
	local dev=$1 tool=$2; shift 2
	timeout 60 "$tool" -d "$dev" -x "$GIDX" "$@" >/dev/null 2>&1 &
	wait_listen
	timeout 60 "$tool" -d "$dev" -x "$GIDX" "$@" 127.0.0.1 2>/dev/null |
		awk '$1 ~ /^[0-9]+$/ && NF >= 4 { v = $4 } END { print v ? v : "failed" }'
	wait
}
lat() {
	local dev=$1; shift
	timeout 60 ib_send_lat -d "$dev" -x "$GIDX" "$@" >/dev/null 2>&1 &
	wait_listen
	timeout 60 ib_send_lat -d "$dev" -x "$GIDX" "$@" 127.0.0.1 2>/dev/null |
		awk '$1 ~ /^[0-9]+$/ && NF >= 6 { v = $6 } END { print v ? v : "failed" }'
	wait
}

echo
echo "== perftest, loopback on one soft-RoCE device (TCG guest: slow, compare columns)"
printf '%-34s %14s %14s\n' "test" "$LOWER" "$DEV"
for t in "ib_write_bw -s 65536 -n 500" "ib_read_bw -s 65536 -n 500" "ib_send_bw -s 65536 -n 500" \
	 "ib_write_bw -s 65536 -n 500 --use_old_post_send"; do
	printf '%-34s %14s %14s\n' "$t (MiB/s)" "$(bw $LOWER $t)" "$(bw $DEV $t)"
done
printf '%-34s %14s %14s\n' "ib_send_lat -n 500 (avg usec)" "$(lat $LOWER -n 500)" "$(lat $DEV -n 500)"

echo
echo "== pyverbs over $DEV"
python3 - "$DEV" <<'PY'
import sys
from pyverbs.device import Context
from pyverbs.pd import PD
from pyverbs.mr import MR
import pyverbs.enums as e
with Context(name=sys.argv[1]) as ctx:
    attr = ctx.query_device()
    with PD(ctx) as pd, MR(pd, 4096, e.IBV_ACCESS_LOCAL_WRITE) as mr:
        print(f"opened {sys.argv[1]}: fw {attr.fw_version}, max_qp {attr.max_qp}, "
              f"registered 4 KiB: lkey {mr.lkey:#x} rkey {mr.rkey:#x}")
PY

echo
echo "== live switch: a running verbs program moved rxe0 <-> rxe1 under traffic"
ensure_rxe1 || { echo "rxe1 could not be set up"; exit 1; }
# This host's migrd (guest-local socket; no peer link in this demo); the
# program registers with it when it opens migr_rxe0, migrctl asks it.
RUN=/run/migr-demo
mkdir -p "$RUN"
printf 'socket = %s\nlisten = none\n' "$RUN/migrd.sock" >"$RUN/migrd.conf"
export MIGRD_SOCKET=$RUN/migrd.sock
migrd -f --config "$RUN/migrd.conf" >"$LOGDIR/demo-migrd.log" 2>&1 &
MIGRD=$!
for _ in $(seq 50); do [ -S "$MIGRD_SOCKET" ] && break; sleep 0.1; done
SELFPAIR=$MIGR_BUILD_DIR/tests/switch/selfpair
"$SELFPAIR" "$DEV" 0 --pairs 4 >"$LOGDIR/demo-selfpair.log" 2>&1 &
SP=$!
for _ in $(seq 100); do grep -q rounds= "$LOGDIR/demo-selfpair.log" && break; sleep 0.1; done
echo "selfpair (pid $SP): 4 pairs of RC QPs talking to each other inside one process,"
echo "every completion and byte checked."
echo "\$ migrctl status"
migrctl status | sed 's/^/  /'
echo "\$ migrctl switch --pid $SP --device rxe1"
migrctl switch --pid "$SP" --device rxe1 | sed 's/^/  /'
echo "then 6 more switches under traffic (migrctl switch --json), one line each:"
: >"$LOGDIR/demo-switches.jsonl"
for dev in rxe0 rxe1 rxe0 rxe1 rxe0 rxe1; do
	migrctl switch --pid "$SP" --device $dev --json >>"$LOGDIR/demo-switches.jsonl"
	sleep 0.5
done
python3 - "$LOGDIR/demo-switches.jsonl" <<'PY'
import json, sys
keys = ["suspend", "drain", "release", "rebuild", "replay"]
print("  %-13s %-5s " % ("move", "ok") + " ".join("%8s" % k for k in keys) +
      " %8s %5s %5s %6s" % ("total", "held", "repost", "fds"))
for line in open(sys.argv[1]):
    r = json.loads(line)
    if not r.get("ok") and "reply" not in r:
        print("  error:", r.get("error"))
        continue
    for c in r["reply"]["switch"]:
        print("  %-13s %-5s " % (c["from"] + "->" + c["to"], c["ok"]) +
              " ".join("%8.2f" % c["phases_ms"][k] for k in keys) +
              " %8.2f %5d %5d %6d" % (c["total_ms"], c["held_wrs"],
                                     c["reposted_recvs"],
                                     c["device_fds_after_release"]))
        if c["error"]:
            print("    error:", c["error"])
print("  (ms; held = WRs posted while suspended, replayed; repost = RECVs posted")
print("   again on the new QPs; fds = device fds held between release and rebuild)")
PY
kill -TERM "$SP"
wait "$SP"
kill -TERM "$MIGRD" 2>/dev/null
wait "$MIGRD" 2>/dev/null
echo "traffic checker: $(tail -n 1 "$LOGDIR/demo-selfpair.log")"
