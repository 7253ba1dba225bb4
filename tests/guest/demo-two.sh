#!/bin/bash
# The demonstration's second part, in two guests with two NICs each
# (run.sh --two --nics 2): migr-traffic between a server on A and a client
# on B, every WR and byte checked; A's server is moved live from rxe0 to
# rxe1 and back by migrctl while its partner on B follows through the two
# migrd. A prints the phase tables; both print the traffic verdict.
# usage: demo-two.sh a|b
. "$(dirname "$0")/lib.sh"
role=${1:?a or b}
A_IP=10.9.0.1
RUN=/run/migr-demo
SYNC=$LOGDIR/demo-sync/${MIGR_RUN:-0}
export MIGRD_SOCKET=$RUN/migrd.sock
TRAFFIC="-d migr_rxe0 --qps 4 --depth 8 --size 512 --api mixed --mode event -D 600 --stall-timeout 60"
mkdir -p "$RUN"

# The same key on both hosts (a demonstration key, root's, 0600)
install -m 0600 /dev/null "$RUN/key"
echo "migr demonstration key" >"$RUN/key"
migrd -f --config /dev/null --socket "$MIGRD_SOCKET" --listen 0.0.0.0 --key "$RUN/key" >"$LOGDIR/demo-two-migrd-$role.log" 2>&1 &
MIGRD=$!
for _ in $(seq 50); do [ -S "$MIGRD_SOCKET" ] && break; sleep 0.1; done
ensure_rxe1 || { echo "rxe1 is not up"; exit 1; }

if [ "$role" = a ]; then
	rm -rf "${SYNC%/*}" && mkdir -p "$SYNC"
	migr-traffic $TRAFFIC --server >"$LOGDIR/demo-two-a.log" 2>&1 &
	TR=$!
	say a.up
	await b.up || exit 1
	sleep 3
	echo "== a live switch with its partner on another host"
	echo "migr-traffic server on A (pid $TR, 4 RC QPs) <-> client on B: every op"
	echo "(SEND, SEND_IMM, WRITE, WRITE_IMM, READ, CAS, FAA), events, ibv_wr_*."
	echo "\$ migrctl status --pid $TR"
	migrctl status --pid "$TR" | sed 's/^/  /'
	for dev in rxe1 rxe0; do
		echo "\$ migrctl switch --pid $TR --device $dev"
		migrctl switch --pid "$TR" --device $dev | sed 's/^/  /'
	done
	sleep 2
	say a.stopping
	kill -TERM "$TR"
	wait "$TR"
	echo "traffic checker on A: $(tail -n 1 "$LOGDIR/demo-two-a.log")"
	await b.done || exit 1
	echo "traffic checker on B: $(tail -n 1 "$LOGDIR/demo-two-b.log")"
	grep -h "now 0x" "$LOGDIR/demo-two-b.verbs.log" 2>/dev/null | head -4 | sed 's/^/  B: /'
else
	await a.up || exit 1
	export VERBS_LOG_LEVEL=3 VERBS_LOG_FILE=$LOGDIR/demo-two-b.verbs.log
	rm -f "$VERBS_LOG_FILE"
	migr-traffic $TRAFFIC --client $A_IP --connect-timeout 60 >"$LOGDIR/demo-two-b.log" 2>&1 &
	TR=$!
	started "$TR"
	say b.up
	await a.stopping
	kill -TERM "$TR"
	wait "$TR"
	say b.done
fi
kill -TERM "$MIGRD" 2>/dev/null
wait "$MIGRD" 2>/dev/null
exit 0
