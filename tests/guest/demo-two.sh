#!/bin/bash
# The demonstration's second part, in two guests with two NICs each
# (run.sh --two --nics 2): migr-traffic between a server on A and a client
# on B, every WR and byte checked; A's server is moved live from rxe0 to
# rxe1 and back by migrctl while its partner on B follows through the two
# migrd. Then the same pair, the server in a pid and network namespace of
# its own as a container runs (docs/namespaces.md), its client in a
# network namespace on B: the server is migrated to B by migrctl migrate
# (CRIU), then back to A, while its client follows. A and B print the
# phase tables; both print the traffic verdicts.
# usage: demo-two.sh a|b
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ns.sh"
role=${1:?a or b}
A_IP=10.9.0.1
B_IP=10.9.0.2
WL_ADDR=10.9.0.50 WL_MAC=02:00:0a:09:00:32 # the migrated server's
PT_ADDR=10.9.0.60 PT_MAC=02:00:0a:09:00:3c # its client's, on B
RUN=/run/migr-demo
SYNC=$LOGDIR/demo-sync/${MIGR_RUN:-0}
export MIGRD_SOCKET=$RUN/migrd.sock
TRAFFIC="-d migr_rxe0 --qps 4 --depth 8 --size 512 --api mixed --mode event -D 600 --stall-timeout 60"
WL_LOG=$LOGDIR/demo-two-migrated.log # on the share: the same path in both
mkdir -p "$RUN"
# The demonstration's program runs as root: root may arrive (migrd(8) TRUST)
printf '%s\n' "criu_plugins = $MIGR_BUILD_DIR/lib/criu" "state_dir = $RUN/state" "arrive_uids = all" >"$RUN/migrd.conf"

# Each host named (a, b), the other its one peer; the pair's key on both
# (a demonstration key, root's, 0600)
test_key "$RUN/key" "migr demonstration key"
migrd -f --config "$RUN/migrd.conf" --socket "$MIGRD_SOCKET" --listen 0.0.0.0 \
	--name "$role" --peer "$(other_peer "$RUN/key")" >"$LOGDIR/demo-two-migrd-$role.log" 2>&1 &
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

	echo
	echo "== a live migration between hosts, its partner on the other host following"
	ns_del demo
	rm -f "$WL_LOG"
	ns_make demo "$WL_ADDR/24" "$WL_MAC" || exit 1
	ns_run demo "$WL_LOG" migr-traffic $TRAFFIC --port 18730 --server || exit 1
	WP=$NS_PID
	# its holder here ends with it when it moves: no job message for it
	disown "$NS_HOLDER" 2>/dev/null
	ns_started "$WP" || exit 1
	echo "migr-traffic server on A (pid $WP, $WL_ADDR: its own pid and network namespaces)"
	echo "<-> client on B (in a network namespace, $PT_ADDR): 4 RC QPs, every op checked."
	say a.mig_up
	await b.mig_up || exit 1
	sleep 3
	echo "\$ migrctl migrate --pid $WP --to $B_IP"
	migrctl migrate --pid "$WP" --to "$B_IP" | tee "$LOGDIR/demo-two-migrate-ab.out" | sed 's/^/  /'
	sed -n 's/.* as pid \([0-9]*\) (device.*/\1/p' "$LOGDIR/demo-two-migrate-ab.out" | tail -n 1 >"$SYNC/pid-b"
	say a.migrated
	await b.migrated_back 600 || exit 1
	echo "(B moved it back: B's output follows)"
	await b.stop_server 600 || exit 1
	kill -TERM "$(cat "$SYNC/pid-a")"
	await b.mig_done 600 || exit 1
	for n in $(ip netns list | awk '/^migr-/ { print $1 }') demo; do ns_del "$n"; done
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

	await a.mig_up || exit 1
	ns_del demopt
	ns_make demopt "$PT_ADDR/24" "$PT_MAC" || exit 1
	nsenter --net=/run/netns/demopt migr-traffic $TRAFFIC --port 18730 --client "$WL_ADDR" \
		--connect-timeout 60 >"$LOGDIR/demo-two-client.log" 2>&1 &
	TR=$!
	ns_started "$TR" || exit 1
	say b.mig_up
	await a.migrated 600 || exit 1
	BP=$(cat "$SYNC/pid-b")
	sleep 3
	echo "== on B: the server runs here now (pid $BP); back to A"
	echo "\$ migrctl migrate --pid $BP --to $A_IP"
	migrctl migrate --pid "$BP" --to "$A_IP" | tee "$LOGDIR/demo-two-migrate-ba.out" | sed 's/^/  /'
	AP=$(sed -n 's/.* as pid \([0-9]*\) (device.*/\1/p' "$LOGDIR/demo-two-migrate-ba.out" | tail -n 1)
	say b.migrated_back
	sleep 3
	kill -TERM "$TR"
	echo "$AP" >"$SYNC/pid-a"
	say b.stop_server
	wait "$TR"
	echo "traffic checker of the client on B: $(tail -n 1 "$LOGDIR/demo-two-client.log")"
	for _ in $(seq 600); do grep -q 'migr-traffic: \(PASS\|FAIL\)' "$WL_LOG" && break; sleep 0.1; done
	echo "traffic checker of the migrated server (now on A): $(tail -n 1 "$WL_LOG")"
	say b.mig_done
	ns_del demopt
fi
kill -TERM "$MIGRD" 2>/dev/null
wait "$MIGRD" 2>/dev/null
exit 0
