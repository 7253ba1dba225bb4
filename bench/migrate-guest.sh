#!/bin/bash
# The guests' side of bench/migrate.sh: A starts each process and moves
# it to B (no pre-copy), B moves it back (two pre-copy rounds); A prints
# one line per move from migrctl's JSON report, then plain CRIU's figures
# and plain TCP's between the two (what the images' link runs over).
# usage: migrate-guest.sh a|b PAIRS MEMS [HOLD]  (HOLD: migrd's
# hold_numbers, yes or no; the guests run on migr's rdma_rxe then)
. "$(dirname "$0")/../tests/guest/lib.sh"
. "$(dirname "$0")/../tests/guest/migrate-lib.sh"
role=${1:?a or b} pairs=${2:?} mems=${3:?} hold=${4:-default}
A_IP=10.9.0.1
B_IP=10.9.0.2
SELFPAIR=$MIGR_BUILD_DIR/tests/switch/selfpair
OUT=$LOGDIR/bench-migrate-selfpair.log
two_host_env bench-migrate
export VERBS_LOG_LEVEL=2
if [ "$hold" = default ]; then
	criu_migrd bench-migrate "$LOGDIR/bench-migrate-migrd-$role.log"
else
	load_migr_rxe || exit 1
	criu_migrd bench-migrate "$LOGDIR/bench-migrate-migrd-$role.log" "hold_numbers = $hold"
fi

# row LABEL JSON: one line of the table from a migrctl migrate report
row() {
	python3 - "$1" "$2" <<'PY'
import json, sys
r = json.load(open(sys.argv[2]))
p = r["phases_ms"]
n = r["numbers"]
rdma = p["park"] + p["rebuild"] + p["partner_reconnect"]
print("%-22s %6d %6d %6d %7d %6d %6d %8d %6d %6.1f%% %7d %6.1f %s" % (
    sys.argv[1], p["precopy"], p["park"], p["dump"], p["transfer"],
    p["restore"], p["rebuild"], r["blackout_ms"], r["total_ms"],
    100.0 * rdma / r["blackout_ms"], len(r["rounds"]),
    (r["precopy_bytes"] + r["final_bytes"]) / 1048576.0,
    "%d/%d/%d/%d" % (n["kept"], n["translated"], n["held"], n["claimed"])))
PY
}

if [ "$role" = a ]; then
	rm -rf "${SYNC%/*}" && mkdir -p "$SYNC"
	say a-up
	await b-up 120
	echo "migrctl migrate A -> B (no pre-copy), B -> A (--pre-copy 2); milliseconds"
	printf '%-22s %6s %6s %6s %7s %6s %6s %8s %6s %7s %7s %6s %s\n' \
		"pairs/QPs, MiB" precopy park dump transfer restore rebuild blackout total "RDMA%" rounds MiB \
		"kept/translated/held/claimed"
	n=0
	for m in $mems; do
		for p in $pairs; do
			# every pair count with no extra memory, every memory with one pair
			[ "$m" = 0 ] || [ "$p" = "${pairs%% *}" ] || continue
			n=$((n + 1))
			echo 29999 >/proc/sys/kernel/ns_last_pid
			setsid "$SELFPAIR" migr_rxe0 0 --pairs "$p" --mem "$m" </dev/null >"$OUT" 2>&1 &
			SP=$!
			selfpair_progressing "$OUT" 120 || { echo "selfpair $p/$m did not start"; cat "$OUT"; continue; }
			if migrctl migrate --pid "$SP" --to "$B_IP" --json >"$LOGDIR/bench-ab-$n.json" 2>"$LOGDIR/bench-ab-$n.err"; then
				row "$p/$((2 * p)), $m" "$LOGDIR/bench-ab-$n.json"
			else
				echo "$p/$m A -> B failed: $(cat "$LOGDIR/bench-ab-$n.err")"
			fi
			{ wait "$SP"; } 2>/dev/null # the source, killed once moved
			echo "$SP $n" >"$SYNC/go-$n"
			await back-$n 900
			[ -s "$LOGDIR/bench-ba-$n.json" ] && row "$p/$((2 * p)), $m, pre-copy" "$LOGDIR/bench-ba-$n.json" ||
				echo "$p/$m B -> A failed: $(cat "$LOGDIR/bench-ba-$n.err")"
			kill -TERM "$SP" 2>/dev/null
			for _ in $(seq 300); do kill -0 "$SP" 2>/dev/null || break; sleep 0.1; done
			grep -q "selfpair: OK" "$OUT" || echo "$p/$m: selfpair did not end OK: $(tail -n 1 "$OUT")"
		done
	done
	say done
	echo
	echo "plain CRIU, no RDMA: a process holding the same memory, dumped and restored here; milliseconds"
	printf '%-22s %6s %7s %6s\n' "MiB" dump restore MiB
	for m in $mems; do
		rm -rf "$RUN/plain" && mkdir -p "$RUN/plain"
		setsid python3 -c "import time; b = bytearray(b'\x5a') * ($m << 20); time.sleep(3600)" </dev/null >/dev/null 2>&1 &
		PP=$!
		sleep 2
		t0=$(date +%s%N)
		criu dump -t "$PP" -D "$RUN/plain" -o dump.log >/dev/null 2>&1 || echo "plain dump of $m MiB failed"
		t1=$(date +%s%N)
		{ wait "$PP"; } 2>/dev/null # criu dump ends it
		criu restore -D "$RUN/plain" -d -o restore.log >/dev/null 2>&1 || echo "plain restore of $m MiB failed"
		t2=$(date +%s%N)
		kill -KILL "$PP" 2>/dev/null
		printf '%-22s %6d %7d %6.1f\n' "$m" $(((t1 - t0) / 1000000)) $(((t2 - t1) / 1000000)) \
			"$(du -sm "$RUN/plain" | cut -f1)"
	done
	echo
	# 64 MiB from B over plain TCP: the link without TLS or CRIU
	python3 - >"$LOGDIR/bench-tcp.txt" 2>&1 <<'PY' &
import socket, time
s = socket.create_server(("0.0.0.0", 7600))
s.settimeout(300)
c, _ = s.accept()
n, t0 = 0, time.monotonic()
while True:
    b = c.recv(1 << 20)
    if not b:
        break
    n += len(b)
dt = time.monotonic() - t0
print("plain TCP, B -> A: %.1f MiB in %d ms (%.1f MiB/s)" % (n / 1048576, dt * 1000, n / 1048576 / dt))
PY
	RX=$!
	sleep 1
	say tcp-ready
	wait "$RX"
	cat "$LOGDIR/bench-tcp.txt"
else
	await a-up 120
	say b-up
	n=0
	while :; do
		n=$((n + 1))
		for _ in $(seq 9000); do [ -e "$SYNC/go-$n" ] || [ -e "$SYNC/done" ] && break; sleep 0.2; done
		[ -e "$SYNC/go-$n" ] || break
		read -r SP _ <"$SYNC/go-$n"
		migrctl migrate --pid "$SP" --to "$A_IP" --pre-copy 2 --json >"$LOGDIR/bench-ba-$n.json" 2>"$LOGDIR/bench-ba-$n.err" || true
		say back-$n
	done
	await tcp-ready 900 && python3 - "$A_IP" <<'PY'
import socket, sys
c = socket.create_connection((sys.argv[1], 7600), timeout=60)
buf = b"\x5a" * (1 << 20)
for _ in range(64):
    c.sendall(buf)
c.close()
PY
fi
kill "$MIGRD" 2>/dev/null
