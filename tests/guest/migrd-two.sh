#!/bin/bash
# In two guests (buildlib/testbed/run.sh --two): the migrd of each host
# authenticate each other over TLS 1.3 (a PSK from the key the pair a-b
# shares, bound to both names); B asks A's migrd which process owns a QP
# on A; plain bytes (not TLS), a daemon that says it is b with another key,
# and one with the pair's key under another host's name (c) are refused,
# A logs why, and B's migrd contacts no host that is not its peer.
# usage: migrd-two.sh a|b    (a: 10.9.0.1, b: 10.9.0.2)
. "$(dirname "$0")/lib.sh"
role=${1:?a or b}
A_IP=10.9.0.1
SELFPAIR=$MIGR_BUILD_DIR/tests/switch/selfpair
RUN=/run/migrd-two
SOCK=$RUN/migrd.sock
INFO=$LOGDIR/migrd-two.info # A's selfpair: "pid qpn", read by B
DONE=$LOGDIR/migrd-two.done # B is finished
MLOG=$LOGDIR/migrd-two-$role.log
export MIGRD_SOCKET=$SOCK VERBS_LOG_LEVEL=3
mkdir -p "$RUN"

# The pair's key on both hosts (a test key, not a secret); root's, 0600
test_key "$RUN/key" "migr two-guest test key $(date +%Y)"
: >"$MLOG"
migrd -f --debug --config /dev/null --socket "$SOCK" --listen 0.0.0.0 --name "$role" --peer "$(other_peer "$RUN/key")" >>"$MLOG" 2>&1 &
MIGRD=$!
for _ in $(seq 50); do [ -S "$SOCK" ] && break; sleep 0.1; done
[ -S "$SOCK" ] && pass "migrd_starts_$role" || fail "migrd_starts_$role" "$MLOG"

if [ "$role" = a ]; then
	rm -f "$INFO" "$DONE"
	"$SELFPAIR" migr_rxe0 0 --idle-us 50 >"$LOGDIR/migrd-two-selfpair.log" 2>&1 &
	SP=$!
	for _ in $(seq 100); do grep -q rounds= "$LOGDIR/migrd-two-selfpair.log" && break; sleep 0.1; done
	qpn=$(migrctl status --pid "$SP" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["processes"][0]["status"]["contexts"][0]["qps"][0]["phys"])')
	echo "$SP $qpn" >"$INFO.tmp" && mv "$INFO.tmp" "$INFO"
	check a_waits_for_b sh -c "for i in \$(seq 110); do [ -f $DONE ] && exit 0; sleep 1; done; exit 1"
	check a_authenticated_b grep -q "peer b (10.9.0.2) authenticated" "$MLOG"
	check a_refused_plain_bytes grep -Eq "peer at 10.9.0.2 refused: (not TLS 1.3|TLS handshake failed)" "$MLOG"
	check a_refused_wrong_key grep -q "peer at 10.9.0.2 refused: wrong key (binder does not verify)" "$MLOG"
	check a_refused_other_name grep -q "peer at 10.9.0.2 refused: c is not a peer of this host (no peer line names it)" "$MLOG"
	kill -TERM "$SP"; wait "$SP"
	check a_selfpair_ok grep -q 'selfpair: OK' "$LOGDIR/migrd-two-selfpair.log"
else
	check b_peer_ping sh -c "for i in \$(seq 60); do migrctl peer-ping $A_IP >$LOGDIR/migrd-two-ping.txt 2>&1 && exit 0; sleep 1; done; exit 1"
	sed 's/^/    /' "$LOGDIR/migrd-two-ping.txt"
	check b_got_info sh -c "for i in \$(seq 60); do [ -s $INFO ] && exit 0; sleep 1; done; exit 1"
	read -r sp qpn <"$INFO"
	check b_qpn_owner_on_a sh -c "migrctl qpn-owner --host $A_IP rxe0 $qpn | tee $LOGDIR/migrd-two-qpn.txt | grep -q 'pid $sp (migr, selfpair)'"
	sed 's/^/    /' "$LOGDIR/migrd-two-qpn.txt"
	check b_plain_bytes_refused python3 - "$A_IP" <<'PY'
import socket, struct, sys
s = socket.create_connection((sys.argv[1], 7475), timeout=5)
s.sendall(b"MGRD" + struct.pack(">BBHQI", 1, 1, 0, 0, 32) + b"\0" * 32 + b"\x42" * 32)
try:
    # nothing, or a TLS alert record (type 21)
    assert s.recv(100)[:1] in (b"", b"\x15"), "A answered plain bytes"
except ConnectionResetError:
    pass
PY
	# A host no peer line names: B's migrd does not contact it
	check b_not_a_peer_not_contacted sh -c "! migrctl peer-ping 10.9.0.77 2>$LOGDIR/migrd-two-notpeer.txt && grep -q '10.9.0.77 is not a peer of this host: migrd asks only the peers' $LOGDIR/migrd-two-notpeer.txt"
	# A second migrd here that says it is b, with another key: A refuses it
	test_key "$RUN/key2" "another key, not A's $(date +%s)"
	other_migrd() { # other_migrd NAME KEY
		migrd -f --config /dev/null --socket "$RUN/other.sock" --listen none --name "$1" --peer "a $A_IP $2" >>"$MLOG" 2>&1 &
		OTHER=$!
		for _ in $(seq 50); do [ -S "$RUN/other.sock" ] && break; sleep 0.1; done
	}
	other_migrd b "$RUN/key2"
	check b_wrong_key_refused sh -c "! MIGRD_SOCKET=$RUN/other.sock migrctl peer-ping $A_IP 2>$LOGDIR/migrd-two-wrongkey.txt && grep -q 'peer $A_IP refused the TLS handshake: wrong key, or this host is not its peer?' $LOGDIR/migrd-two-wrongkey.txt"
	sed 's/^/    /' "$LOGDIR/migrd-two-wrongkey.txt"
	kill -TERM "$OTHER"; wait "$OTHER"
	# ... and one with the pair's key that is another host (c)
	other_migrd c "$RUN/key"
	check b_other_host_refused sh -c "! MIGRD_SOCKET=$RUN/other.sock migrctl peer-ping a 2>$LOGDIR/migrd-two-othername.txt && grep -q 'peer a refused the TLS handshake: is c among its peers?' $LOGDIR/migrd-two-othername.txt"
	sed 's/^/    /' "$LOGDIR/migrd-two-othername.txt"
	kill -TERM "$OTHER"; wait "$OTHER"
	touch "$DONE"
fi
kill -TERM "$MIGRD"; wait "$MIGRD"
summary "migrd-two $role"
