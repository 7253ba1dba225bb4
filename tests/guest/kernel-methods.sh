#!/bin/bash
# In one guest: migr's rdma_rxe (buildlib/build-rxe-module.sh) in place of
# the stock module, then its methods (tests/kernel/rxe_methods): numbers
# asked for are given exactly or refused, a drained RC QP re-pointed to
# another peer (on a second address of veth0, 10.0.0.3, for the checks'
# time) or refused, numbers reserved for a context (given back by its
# close), a migration's hold and no more, a fuzz run of random calls; an
# ordinary user's holds bounded (rxe_methods --unprivileged, as nobody);
# a process moved between devices
# keeps its numbers (migrctl status); then the devices and the module go,
# and the kernel log stays clean (no warning, oops or leak report).
# usage: kernel-methods.sh [FUZZ_CALLS]     (default 20000)
. "$(dirname "$0")/lib.sh"
KO=$MIGR_RXE_KO
TOOL=$MIGR_BUILD_DIR/tests/kernel/rxe_methods
FUZZ=${1:-20000}

[ -f "$KO" ] || { echo "kernel-methods: no $KO (buildlib/build-rxe-module.sh)"; exit 2; }
mark=$(dmesg | wc -l)

if load_migr_rxe "$KO"; then pass migr_module_loaded; else fail migr_module_loaded; fi

# a second address of rxe0: a QP re-pointed to a peer there no longer
# hears its old peer (rxe checks a packet's source address)
ip addr add 10.0.0.3/24 dev veth0
"$TOOL" rxe0 --fuzz "$FUZZ" >"$LOGDIR/kernel-methods.log" 2>&1
rc=$?
ip addr del 10.0.0.3/24 dev veth0
sed 's/^/    /' "$LOGDIR/kernel-methods.log"
[ $rc = 0 ] && pass methods_and_fuzz || fail methods_and_fuzz
# An ordinary user holds 64 numbers a context, and 1024 on the device
# with every context of unprivileged holders (migr_rxe(7)): beyond,
# RESERVE is refused (EDQUOT, ENOSPC) holding none of its values, and
# other creates succeed meanwhile
setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$TOOL" rxe0 --unprivileged >"$LOGDIR/kernel-methods-unpriv.log" 2>&1
rc=$?
sed 's/^/    /' "$LOGDIR/kernel-methods-unpriv.log"
[ $rc = 0 ] && pass unprivileged_holds_bounded || fail unprivileged_holds_bounded
# ordinary traffic over the module, every WR and byte checked
check traffic_over_migr_module migr-traffic -d rxe0 --loopback -D 5

# numbers NAME PID [QPN]: migrctl status --pid shows every QP, MR and
# memory window of PID on the number the application knows (the module gave each its own),
# the tables empty; with QPN (hex), that QP alone on another number
# (taken on the device: translated), traffic going on regardless
numbers() {
	migrctl status --pid "$2" --json >"$LOGDIR/$1.json" 2>&1
	check "$1" python3 - "$LOGDIR/$1.json" "${3:-}" <<'PY'
import json, sys
want = int(sys.argv[2], 16) if sys.argv[2] else None
p = json.load(open(sys.argv[1]))["processes"][0]
ctxs = p["status"]["contexts"]
moved = []
for c in ctxs:
    assert c["numbers"]["can_ask"], c["numbers"]
    for q in c["qps"]:
        if q["qpn"] != q["phys"]:
            moved.append(q["qpn"])
    for m in c["mrs"]:
        assert m["lkey"] == m["phys"], ("MR key translated", m)
    for w in c["mws"]:
        assert w["rkey"] == w["phys"], ("window's rkey translated", w)
    print("    %s on %s: %d QPs, %d MRs, %d windows, numbers %s, translating %s" % (
        c["device"], c["lower"], len(c["qps"]), len(c["mrs"]), len(c["mws"]),
        c["numbers"], c["translating"]))
if want is None:
    assert not moved, ["0x%x" % n for n in moved]
    assert not any(c["translating"] for c in ctxs)
else:
    assert moved == [want], ["0x%x" % n for n in moved]
    assert any(c["translating"] for c in ctxs)
PY
	cat "$LOGDIR/$1.log"
}

# A process moved between rxe0 and rxe1 (both on this module) keeps its
# numbers; one taken on the target is translated alone; back where it is
# free, it is the device's again
RUN=/run/migr-kernel-methods MIGRD_SOCKET=/run/migr-kernel-methods/migrd.sock
export MIGRD_SOCKET
mkdir -p "$RUN"
# CRIU's plugin and a place for images: a destination's check (the hold
# cap, below) asks for both
printf '%s\n' "criu_plugins = $MIGR_BUILD_DIR/lib/criu" "state_dir = $RUN/state" >"$RUN/migrd.conf"
MIGRD_CONF=$RUN/migrd.conf start_test_migrd kernel-methods "$LOGDIR/kernel-methods-migrd.log"
if ensure_rxe1; then pass rxe1_on_migr_module; else fail rxe1_on_migr_module; fi
TLOG=$LOGDIR/kernel-numbers-traffic.log
migr-traffic -d migr_rxe0 --loopback -q 4 --mw -D 600 --stall-timeout 30 >"$TLOG" 2>&1 &
TP=$!
started $TP
sleep 1
switch_to numbers_switch_to_rxe1 $TP rxe1 0
numbers numbers_own_on_rxe1 $TP
switch_to numbers_switch_to_rxe0 $TP rxe0 0
numbers numbers_own_on_rxe0 $TP
# one QP's number taken on rxe1 by another process
qpn=$(python3 -c 'import json,sys; print("%x" % json.load(open(sys.argv[1]))["processes"][0]["status"]["contexts"][0]["qps"][0]["qpn"])' "$LOGDIR/numbers_own_on_rxe0.json")
"$TOOL" rxe1 --hold "$qpn" >"$LOGDIR/kernel-numbers-hold.log" 2>&1 &
HP=$!
for _ in $(seq 100); do grep -q holding "$LOGDIR/kernel-numbers-hold.log" && break; sleep 0.1; done
check numbers_held_elsewhere grep -q "holding QP 0x$qpn" "$LOGDIR/kernel-numbers-hold.log"
switch_to numbers_switch_to_taken $TP rxe1 0
numbers numbers_taken_one_translated $TP "$qpn"
switch_to numbers_switch_back_free $TP rxe0 0
numbers numbers_own_again $TP
kill $HP 2>/dev/null
kill -TERM $TP
traffic_verdict numbers_traffic_verified $TP "$TLOG"

# A destination holds at most 16,384 numbers for one migration
# (DEST_HOLD_MAX, migrd/daemon/migrate_dest.c): asked over the peer link
# as a source's migrd asks, 40 mig-hold of 400 QP numbers are held on
# rxe0, the 41st is refused and says why; the migration's end gives them
# back (the module's unload below finds none left)
check hold_cap_16384 python3 - "$MIGR_BUILD_DIR/tests/unit/peer_client" "$RUN/key" \
	"$(criu --version | sed -n 's/^Version: //p')" <<'PY'
import json, subprocess, sys
client, key, criu = sys.argv[1:4]
mid = "feedface00c0ffee"
def ask(line):
    # as host b, the peer of this guest's migrd (a: start_test_migrd)
    p = subprocess.run([client, key, "b", "a", "migrd/1", "127.0.0.1", "7475", line + "\n"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)
# the highest pid (pid_max - 1), which no process of this guest reaches
r = ask(f"migrd/1 mig-check {mid} 4194303 rxe0 {criu} 4194303 host,-,-,-")
assert r.get("ok"), r
held = 0
for i in range(41):
    nums = ",".join("%x" % (0x10000 + 400 * i + k) for k in range(400))
    r = ask(f"migrd/1 mig-hold {mid} qpn {nums}")
    assert r.get("ok"), r
    if i < 40:
        assert r["held"] == 400 and "why" not in r, (i, r)
        held += r["held"]
    else:
        assert r["held"] == 0 and "more than 16384 numbers asked" in r.get("why", ""), r
print("    %d QP numbers held, the 41st request: %s" % (held, r["why"]))
r = ask(f"migrd/1 mig-end {mid} abort")
assert r.get("ok"), r
PY
kill $MIGRD 2>/dev/null
wait $TP $HP $MIGRD 2>/dev/null

# Last, the devices go and the module with them: a pool that still holds
# an entry (a reservation or an object never given back) warns as its
# device is freed, and the module's unload frees whatever else it kept
for dev in rxe1 rxe0; do rdma link delete "$dev" 2>/dev/null; done
check module_unloaded rmmod rdma_rxe

dmesg | tail -n +"$((mark + 1))" >"$LOGDIR/kernel-methods.dmesg"
check kernel_log_clean sh -c "! grep -E 'WARNING|BUG|Oops|general protection|leak|refcount' $LOGDIR/kernel-methods.dmesg"
summary kernel-methods
