# Shared helpers for the guest-side test scripts (sourced, not run).
# shellcheck shell=bash

MIGR_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
MIGR_BUILD_DIR=${MIGR_BUILD_DIR:-$MIGR_TOP/build/trixie}
RDMA_BUILD=$MIGR_BUILD_DIR/rdma-core
LOGDIR=${LOGDIR:-$MIGR_TOP/build/test-logs}
mkdir -p "$LOGDIR"

# Our fork: its tools first, its libibverbs (and so its providers) for
# Debian's perftest, its pyverbs for Python.
export PATH=$RDMA_BUILD/bin:$PATH
export LD_LIBRARY_PATH=$RDMA_BUILD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$RDMA_BUILD/python${PYTHONPATH:+:$PYTHONPATH}

# The build's libibverbs loads (RTLD_NOW) every provider its libibverbs.d
# lists, each over the 9p share: ibv_devices took 2.3 s in a busy guest,
# 0.7 s with only the providers of the test bed's devices (rxe, and migr
# for their twins). In a test-bed guest a bind mount lists only those;
# the host's build is untouched. Once per guest.
trim_providers() {
	local d=$RDMA_BUILD/etc/libibverbs.d t=/run/migr-libibverbs.d
	[ -n "${MIGR_GUEST:-}" ] && [ -d "$d" ] && ! mountpoint -q "$d" || return 0
	mkdir -p "$t" && cp "$d"/rxe.driver "$d"/migr.driver "$d"/stacking.conf "$t"/ &&
		mount --bind "$t" "$d"
}
trim_providers
# untrim_providers: the build's own list again, for a test that gives the
# build tree to a container: CRIU cannot checkpoint a container whose
# bind mount of the tree holds this guest's mount ("failed -52")
untrim_providers() {
	local d
	unmount_all "$RDMA_BUILD/etc/libibverbs.d" || return 1
	# and the test bed's cached share of the build over the repo's
	# (docs/testbed.md), a mount inside the tree as well: the repo's own
	# share has the same files
	[ ! -f /run/migr-cached-shares ] && return 0
	while read -r d; do
		unmount_all "$d" || return 1
	done </run/migr-cached-shares
}
# unmount_all DIR: every mount stacked on DIR
unmount_all() {
	while mountpoint -q "$1"; do umount "$1" || return 1; done
}

PASSED=0
FAILED=0
FAILED_NAMES=()

# each verdict says when it came (seconds since the script started): where
# a suite spends its time shows in its log
pass() { PASSED=$((PASSED + 1)); echo "PASS $1 [${SECONDS}s]"; }
fail() {
	FAILED=$((FAILED + 1)); FAILED_NAMES+=("$1"); echo "FAIL $1 [${SECONDS}s]"
	[ -n "${2:-}" ] && [ -f "$2" ] && sed 's/^/    | /' "$2" | tail -n 25
	return 0
}

# check NAME CMD...: run CMD (bounded: CHECK_TIMEOUT s, 120 unless set),
# pass if it exits 0.
check() {
	local name=$1 log; shift
	log=$LOGDIR/$name.log
	if timeout "${CHECK_TIMEOUT:-120}" "$@" >"$log" 2>&1; then pass "$name"; else fail "$name" "$log"; fi
}

# pair NAME 'SERVER CMD' 'CLIENT CMD': a server and a client on this host;
# pass if both exit 0. Each runs under its own timeout. PAIR_PORT: the
# server's TCP port to wait for. A perftest pair (PAIR_PORT) that fails
# runs once more, its first failure shown: on a loaded TCG guest perftest
# has failed alone now and then (a server exiting 1 without a word, after
# its header); a second failure counts. PAIR_RETRY=1: the same for a pair
# without a port.
pair() {
	local name=$1
	_pair_once "$@"
	if [ -n "${PAIR_PORT:-}${PAIR_RETRY:-}" ] && [ $PAIR_RC -ne 0 ]; then
		echo "    ($name failed, server rc=$PAIR_RS client rc=$PAIR_RCC; once more)"
		tail -n 3 "$LOGDIR/$name.server.log" "$LOGDIR/$name.client.log" | sed 's/^/    | /'
		_pair_once "$@"
	fi
	if [ $PAIR_RC -eq 0 ]; then
		pass "$name"
	else
		echo "    server rc=$PAIR_RS client rc=$PAIR_RCC"
		fail "$name" "$LOGDIR/$name.server.log"
		sed 's/^/    | /' "$LOGDIR/$name.client.log" | tail -n 10
	fi
}

# _pair_once NAME SERVER CLIENT: one run of pair(); PAIR_RC 0 if both exit 0
_pair_once() {
	local name=$1 srv=$2 cli=$3 spid rs rc
	bash -c "exec timeout 120 $srv" >"$LOGDIR/$name.server.log" 2>&1 &
	spid=$!
	# Start the client once the server listens (on a loaded host a fixed
	# delay is not enough); servers without a TCP port get a fixed delay.
	if [ -n "${PAIR_PORT:-}" ]; then
		local i=0
		until ss -ltn "( sport = :$PAIR_PORT )" | grep -q LISTEN; do
			i=$((i + 1)); [ $i -gt 300 ] && break; sleep 0.1
		done
	elif [ -n "${PAIR_CM:-}" ]; then
		# an rdma_cm server: once the kernel lists its listening cm_id
		local i=0
		until rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN"; do
			i=$((i + 1)); [ $i -gt 300 ] && break; sleep 0.1
		done
	else
		sleep "${PAIR_DELAY:-1.5}"
	fi
	timeout 110 bash -c "$cli" >"$LOGDIR/$name.client.log" 2>&1
	rc=$?
	wait $spid
	rs=$?
	PAIR_RS=$rs PAIR_RCC=$rc
	PAIR_RC=$((rc || rs))
}

# Two guests (run.sh --two) leave each other files in $SYNC, which each
# script keeps under the run's id (MIGR_RUN), so no run reads another's.
# say NAME / await NAME [SECONDS]: one guest tells the other it got there
say() { touch "$SYNC/$1"; }
await() {
	for _ in $(seq $((${2:-300} * 5))); do [ -e "$SYNC/$1" ] && return 0; sleep 0.2; done
	echo "    timed out waiting for $1" >&2
	return 1
}

# selfpair_rounds LOG: the last round count tests/switch/selfpair printed
selfpair_rounds() { grep -o 'rounds=[0-9]*' "$1" | tail -n 1 | cut -d= -f2; }
# selfpair_progressing LOG [SECONDS]: its rounds go up within SECONDS (20):
# it runs, on this guest
selfpair_progressing() {
	local r0 r
	r0=$(selfpair_rounds "$1")
	for _ in $(seq $((${2:-20} * 5))); do
		sleep 0.2
		r=$(selfpair_rounds "$1")
		[ "${r:-0}" -gt "${r0:-0}" ] && return 0
	done
	return 1
}

# two_host_env NAME: a two-guest test's run directory (RUN), the files
# one guest leaves for the other (SYNC), its migrd socket and its verbs log
# at level 3, named after NAME and this guest's role
two_host_env() {
	RUN=/run/migr-$1
	SYNC=$LOGDIR/$1-sync/${MIGR_RUN:-0}
	export MIGRD_SOCKET=$RUN/migrd.sock VERBS_LOG_LEVEL=3
	export VERBS_LOG_FILE=$LOGDIR/$1-$role.verbs.log
	mkdir -p "$RUN"
	rm -f "$VERBS_LOG_FILE"
}

# test_key FILE TEXT: a peer key both guests make alike from TEXT (a test
# key, not a secret): root's, 0600, 256 bits as hex (migrd refuses a
# phrase as too weak)
test_key() {
	install -m 0600 /dev/null "$1"
	printf '%s' "$2" | sha256sum | cut -d' ' -f1 >"$1"
}

# other_peer KEY: migrd's --peer for the other guest of a pair, sharing
# KEY: named after its role (a or b; a single guest is a), reached at both
# its addresses (eth0, and eth1 with run.sh --nics 2)
other_peer() {
	if [ "${role:-a}" = a ]; then
		echo "b 10.9.0.2,10.9.0.12 $1"
	else
		echo "a 10.9.0.1,10.9.0.11 $1"
	fi
}

# start_test_migrd NAME LOG: a migrd of this test's own on $MIGRD_SOCKET,
# named after this guest's role, its one peer the other guest (other_peer),
# their key in $RUN/key (the same NAME in both guests: the same key), peers
# on every address (not migrd's default), root allowed to arrive (the
# tests' programs run as root); sets MIGRD and returns once the socket is
# there. MIGRD_CONF: a migrd.conf of the test's (default none);
# MIGRD_ARGS: options of the test's (default none)
start_test_migrd() {
	test_key "$RUN/key" "migr $1 test key"
	# a migrd killed by SIGKILL leaves its socket: waiting for that one
	# would return before this migrd has started
	rm -f "$MIGRD_SOCKET"
	# shellcheck disable=SC2086 # MIGRD_ARGS: a test's own options, split
	migrd -f --debug --config "${MIGRD_CONF:-/dev/null}" --socket "$MIGRD_SOCKET" --listen 0.0.0.0 \
		--name "${role:-a}" --peer "$(other_peer "$RUN/key")" --arrive-uids all $MIGRD_ARGS >"$2" 2>&1 &
	MIGRD=$!
	for _ in $(seq 50); do [ -S "$MIGRD_SOCKET" ] && break; sleep 0.1; done
}

# switch_to NAME PID DEV PARTNERS: one migrctl switch, checked (moved,
# nothing lost, PARTNERS partner QPs followed)
switch_to() {
	migrctl switch --pid "$2" --device "$3" --json >"$LOGDIR/$1.json" 2>"$LOGDIR/$1.err"
	check "$1" python3 - "$LOGDIR/$1.json" "$4" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for c in r["reply"]["switch"]:
    assert c["ok"] and c["lost"] == 0 and c["partners"] == int(sys.argv[2]), c
    print("    %s -> %s: %.1f ms, %d partner QPs" % (c["from"], c["to"], c["total_ms"], c["partners"]))
PY
	grep -h " ms, " "$LOGDIR/$1.log"
}

# switch_later NAME PID DEV PARTNERS: one migrctl switch, its reply
# checked by the next checked_switches as switch_to checks it (a python3
# start costs seconds in a busy TCG guest: one for all of them); PARTNERS
# "N": exactly N partner QPs followed, "N+": N or more. SWITCH_WAIT_MS:
# the switch's wait-before-stop bound (migrctl's 5 s if unset)
LATER=()
switch_later() {
	migrctl switch --pid "$2" --device "$3" ${SWITCH_WAIT_MS:+--wait-ms "$SWITCH_WAIT_MS"} \
		--json >"$LOGDIR/$1.json" 2>"$LOGDIR/$1.err"
	LATER+=("$1:$4")
}
checked_switches() {
	local name
	[ ${#LATER[@]} -gt 0 ] || return 0
	for name in "${LATER[@]%:*}"; do rm -f "$LOGDIR/$name.ok"; done
	timeout 120 python3 - "$LOGDIR" "${LATER[@]}" <<'PY'
import json, sys
d = sys.argv[1]
for arg in sys.argv[2:]:
    name, partners = arg.rsplit(":", 1)
    with open("%s/%s.log" % (d, name), "w") as log:
        try:
            r = json.load(open("%s/%s.json" % (d, name)))
            assert "reply" in r, r.get("error", r)
            least = partners.endswith("+")
            want = int(partners.rstrip("+"))
            for c in r["reply"]["switch"]:
                assert c["ok"] and c["lost"] == 0, c
                assert c["partners"] >= want if least else c["partners"] == want, c
                print("    %s -> %s: %.1f ms, %d partner QPs" % (c["from"], c["to"], c["total_ms"], c["partners"]), file=log)
            open("%s/%s.ok" % (d, name), "w").close()
        except Exception as e:
            print("%s: %r" % (type(e).__name__, e), file=log)
PY
	for name in "${LATER[@]%:*}"; do
		if [ -e "$LOGDIR/$name.ok" ]; then pass "$name"; else fail "$name" "$LOGDIR/$name.log"; fi
		rm -f "$LOGDIR/$name.ok"
		grep -h " ms, " "$LOGDIR/$name.log" 2>/dev/null
	done
	LATER=()
}

# traffic_verdict NAME PID LOG: migr-traffic's, once it was sent SIGTERM
# (once: a second one ends it before its checks)
traffic_verdict() {
	local rc
	wait "$2"; rc=$?
	check "$1" sh -c "[ $rc -eq 0 ] && grep -q 'migr-traffic: PASS' $3"
	tail -n 1 "$3" | sed 's/^/    /'
}

# hold_recvs NAME PID LOG: migr-traffic PID (--hold-recvs) posts no RECV
# until the next SIGUSR1; NAME passes once it has none left, so its peer's
# SENDs wait on RNR (not after a fixed time: in a busy TCG guest a switch
# came before that, drained instead of replaying, seen in CI)
hold_recvs() {
	local before
	before=$(grep -c 'no receive left' "$3")
	kill -USR1 "$2"
	for _ in $(seq 600); do
		if [ "$(grep -c 'no receive left' "$3")" -gt "$before" ]; then
			sleep 0.5
			pass "$1"
			return 0
		fi
		sleep 0.1
	done
	echo "    $2 still had receives 60 s after it was told to hold them"
	fail "$1" "$3"
}

# started PID: its migr library opened a device (its control socket listens)
started() {
	for _ in $(seq 300); do grep -q "@migr/$1\$" /proc/net/unix && return 0; sleep 0.1; done
	return 1
}

# ensure_rxe1: a second soft-RoCE device in this guest (rxe1 on veth1,
# 10.0.0.2), for moving a process between devices. rxe0 and rxe1 never
# exchange traffic with each other (that hangs and crashes rxe on 6.12).
# Under run.sh --two --nics 2, rxe1 is already up, on eth1 (10.9.0.11 in A,
# 10.9.0.12 in B), and only waited for.
ensure_rxe1() {
	if [ ! -e /sys/class/infiniband/rxe1 ]; then
		ip addr add 10.0.0.2/24 dev veth1 &&
			rdma link add rxe1 type rxe netdev veth1 || return 1
	fi
	for _ in $(seq 50); do
		grep -q ACTIVE /sys/class/infiniband/rxe1/ports/1/state && return 0
		sleep 0.1
	done
	return 1
}

# load_migr_rxe [KO]: migr's rdma_rxe (buildlib/build-rxe-module.sh) in
# place of the stock module: the rxe links as they are, the module
# replaced, the links made again over the same netdevs
MIGR_RXE_KO=${MIGR_BUILD:-$MIGR_TOP/build}/kernel/rxe/rdma_rxe.ko
load_migr_rxe() {
	local links ko=${1:-$MIGR_RXE_KO}
	[ -f "$ko" ] || { echo "load_migr_rxe: no $ko (buildlib/build-rxe-module.sh)"; return 1; }
	links=$(rdma link show | awk '$2 ~ /^rxe/ { split($2, a, "/"); for (i = 1; i <= NF; i++) if ($i == "netdev") print a[1], $(i + 1) }')
	while read -r dev _; do [ -z "$dev" ] || rdma link delete "$dev"; done <<<"$links"
	rmmod rdma_rxe && insmod "$ko" || return 1
	while read -r dev nd; do [ -z "$dev" ] || rdma link add "$dev" type rxe netdev "$nd" || return 1; done <<<"$links"
	for _ in $(seq 100); do grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state && return 0; sleep 0.1; done
	return 1
}

# switch_traffic MODE:CQ:API[:srq|ud|mw]...: for each, migr-traffic
# --loopback (two contexts on migr_rxe0, every op checked end to end; with
# srq, the RC QPs of each receive through one SRQ; with ud, a UD QP pair
# adds numbered datagrams, of which the few in flight when a switch
# releases may be lost, as UD allows; with mw, remote ops go through type 1
# memory windows, bound again by each switch) switched between rxe0 and
# rxe1 under traffic, SWITCH_TRAFFIC_MOVES times (10 if not set; switch.sh
# sets fewer in CI); checks the switches, that both contexts (and their
# SRQs) moved, and the traffic verdict (logs named after ROUND, if set).
# Needs ensure_rxe1. In event mode
# a lost or endlessly repeated completion event shows as a stall.
switch_traffic() {
	local run mode cq api x1 x2 srq ud mw replay SP rc n=${SWITCH_TRAFFIC_MOVES:-10}
	for run in "$@"; do
		IFS=: read -r mode cq api x1 x2 <<<"$run"
		srq=; ud=; mw=; replay=
		case " $x1 $x2 " in *" srq "*) srq=1 ;; esac
		case " $x1 $x2 " in *" ud "*) ud=1 ;; esac
		case " $x1 $x2 " in *" mw "*) mw=1 ;; esac
		case " $x1 $x2 " in *" replay "*) replay=1 ;; esac
		run=$mode-$cq-$api${srq:+-srq}${ud:+-ud}${mw:+-mw}${replay:+-replay}${ROUND:+-round$ROUND}
		env ${replay:+MIGR_REPLAY=1} \
		migr-traffic -d migr_rxe0 --loopback -q 4 --mode $mode --cq $cq --api $api \
			${srq:+--srq} ${ud:+--ud --ud-max-loss 5} ${mw:+--mw} \
			-D 600 --stall-timeout 30 >"$LOGDIR/traffic-$run.log" 2>&1 &
		SP=$!
		# running once its control socket listens (both contexts are
		# open); a second of traffic before the first switch
		started $SP
		sleep 1
		check "switch_${n}_times_traffic_$run" sh -c "python3 $MIGR_TOP/tests/switch/control.py $SP alternate $n rxe1 rxe0 0.5 >$LOGDIR/traffic-$run.switches.jsonl"
		check "two_contexts_moved_$run" grep -q '"contexts":2' "$LOGDIR/traffic-$run.switches.jsonl"
		[ -z "$srq" ] || check "two_srqs_moved_$run" sh -c "! grep -v '\"srqs\":2' $LOGDIR/traffic-$run.switches.jsonl | grep -q ."
		[ -z "$mw" ] || check "eight_windows_moved_$run" sh -c "! grep -v '\"mws\":8' $LOGDIR/traffic-$run.switches.jsonl | grep -q ."
		kill -TERM $SP 2>/dev/null
		wait $SP; rc=$?
		check "traffic_verified_$run" sh -c "[ $rc -eq 0 ] && grep -q 'migr-traffic: PASS' $LOGDIR/traffic-$run.log"
		tail -n 3 "$LOGDIR/traffic-$run.log"
	done
}

# summary [NAME]: the counts and the script's time (what CI's budget is
# made of: tests/README.md)
summary() {
	echo "${1:-tests}: $PASSED passed, $FAILED failed, in ${SECONDS} s"
	[ $FAILED -eq 0 ] || { printf '  failed: %s\n' "${FAILED_NAMES[@]}"; return 1; }
}

# only_known SCRIPT KNOWN: every name in $ONLY (the programs asked for,
# space-padded) is one of KNOWN, or SCRIPT exits 2 (a name that is none of
# them would pass by running nothing); wanted NAME: asked for (all when
# none was)
only_known() {
	local n
	for n in $ONLY; do
		[[ " $2 " == *" $n "* ]] || { echo "$1: no program named $n (known: $2)" >&2; exit 2; }
	done
}
wanted() { [ "$ONLY" = "  " ] || [[ "$ONLY" == *" $1 "* ]]; }
