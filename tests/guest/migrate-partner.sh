#!/bin/bash
# In two guests with two NICs each (buildlib/testbed/run.sh --two --nics 2):
# a process on A whose partner is a process on B (migr-traffic, RC QPs
# through an SRQ, every op of both APIs, every WR and byte checked at both
# ends) is parked and resumed the way a migration parks and resumes it,
# by its control socket: B's partner holds its posts while A's holds no
# device at all, for longer than a switch's lease, then follows it to the
# device it resumes on (rxe1, then rxe0 again, new QP numbers each time).
# Each resume's report names the partner QPs and how long the partner held.
# usage: migrate-partner.sh a|b    (a: 10.9.0.1/.11, b: 10.9.0.2/.12)
. "$(dirname "$0")/lib.sh"
role=${1:?a or b}
A_IP=10.9.0.1
CONTROL=$MIGR_TOP/tests/switch/control.py
two_host_env migrate-partner
TRAFFIC="-d migr_rxe0 --qps 4 --srq --depth 8 --size 512 --api mixed --mode event -D 1200 --stall-timeout 90"
start_test_migrd migrate-partner "$LOGDIR/migrate-partner-migrd-$role.log"
[ -S "$MIGRD_SOCKET" ] && pass "migrd_starts_$role" ||
	fail "migrd_starts_$role" "$LOGDIR/migrate-partner-migrd-$role.log"
ensure_rxe1 && pass "rxe1_active_$role" || fail "rxe1_active_$role"

# park_resume NAME PID DEV HOLD_S: park PID (partners hold for 60 s at
# most), let HOLD_S pass with nothing on a device, resume it on DEV; the
# resume's report checked: 4 partner QPs followed, none lost, the partner
# held its posts at least HOLD_S
park_resume() {
	local name=$1 pid=$2 dev=$3 hold=$4
	check "${name}_parked" sh -c "python3 $CONTROL $pid park 5000 60000 >$LOGDIR/$name.park.json"
	check "${name}_holds_no_device" python3 - "$LOGDIR/$name.park.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["park"][0]
assert p["ok"] and p["partners"] == 4, p
assert p["device_fds_after_release"] == 0 and p["device_maps_after_release"] == 0, p
PY
	sleep "$hold"
	check "${name}_resumed_on_$dev" sh -c "python3 $CONTROL $pid resume $dev >$LOGDIR/$name.resume.json"
	check "${name}_partner_followed" python3 - "$LOGDIR/$name.resume.json" "$dev" "$hold" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["resume"][0]
assert r["ok"] and not r["rolled_back"] and r["to"] == sys.argv[2], r
assert r["partners"] == 4 and r["lost"] == 0, r
assert r["partner_held_ms"] >= 1000 * float(sys.argv[3]), r
print("    resumed on %s: rebuild %.1f ms, partners reconnected in %.1f ms, "
      "the partner held its posts %.0f ms" % (r["to"], r["phases_ms"]["rebuild"],
      r["phases_ms"]["partner_reconnect"], r["partner_held_ms"]))
PY
}

if [ "$role" = a ]; then
	rm -rf "${SYNC%/*}" && mkdir -p "$SYNC"
	migr-traffic $TRAFFIC --server >"$LOGDIR/migrate-partner-a.log" 2>&1 &
	TR=$!
	say a.up
	await b.up || fail b_up
	for _ in $(seq 100); do grep -q "@migr/$TR\$" /proc/net/unix && break; sleep 0.1; done
	sleep 3
	# longer than a switch's lease (10 s beyond the drain bound): the
	# park's own keeps the partner waiting
	park_resume park_hold "$TR" rxe1 18
	sleep 3
	park_resume park_back "$TR" rxe0 2
	sleep 3
	say a.moved
	await b.stopping || fail b_stopping
	kill -TERM "$TR" 2>/dev/null
	traffic_verdict traffic_a_verified "$TR" "$LOGDIR/migrate-partner-a.log"
	say a.done
else
	await a.up || fail a_up
	migr-traffic $TRAFFIC --client $A_IP --connect-timeout 60 >"$LOGDIR/migrate-partner-b.log" 2>&1 &
	TR=$!
	started "$TR"
	say b.up
	await a.moved 300 || fail a_moved
	sleep 3
	say b.stopping
	kill -TERM "$TR" 2>/dev/null
	traffic_verdict traffic_b_verified "$TR" "$LOGDIR/migrate-partner-b.log"
	await a.done 120 || fail a_done
	grep -q "QP 0x[0-9a-f]*: now 0x" "$VERBS_LOG_FILE" && pass partner_side_reconnected ||
		fail partner_side_reconnected "$VERBS_LOG_FILE"
fi
kill -TERM "$MIGRD" 2>/dev/null
summary "migrate-partner $role"
