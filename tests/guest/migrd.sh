#!/bin/bash
# In one guest: migrd and migrctl. migrd starts; a running selfpair
# registers and shows in `migrctl status`; `migrctl switch` moves it rxe0 ->
# rxe1 and back (phase table, --json); `migrctl drain` moves every process
# off rxe0 but one that cannot move, and back; bad requests, unknown pids and
# devices and another user's process are refused with one-line errors;
# processes that never registered are found, dead ones pruned; peer
# authentication over TLS (to itself), qpn-owner via RDMA netlink, plain
# bytes, another key and another version refused; and migr processes run on
# as before without migrd.
. "$(dirname "$0")/lib.sh"
SELFPAIR=$MIGR_BUILD_DIR/tests/switch/selfpair
RUN=/run/migrd-test # guest-local: no UNIX socket on the shared 9p mount
SOCK=$RUN/migrd.sock
PORT=7475
export VERBS_LOG_LEVEL=3 MIGRD_SOCKET=$SOCK
mkdir -p "$RUN"
rm -f "$RUN"/*

ensure_rxe1 && pass rxe1_active || fail rxe1_active

# The key and config (under $RUN, not /run/migr: the test leaves a real
# migrd's place alone); the key must be root's and 0600. This host is
# "self", and its own one peer, at 127.0.0.1.
install -m 0600 /dev/null "$RUN/key"
head -c 32 /dev/urandom | base64 >"$RUN/key"
printf 'socket = %s\nlisten = 127.0.0.1\nport = %s\nname = self\npeer = self 127.0.0.1 %s\n' \
	"$SOCK" "$PORT" "$RUN/key" >"$RUN/migrd.conf"
printf 'state_dir = %s\ncriu_plugins = %s\n' "$RUN/state" \
	"$MIGR_BUILD_DIR/lib/criu" >>"$RUN/migrd.conf"

start_migrd() {
	migrd -f --debug --config "$RUN/migrd.conf" >>"$LOGDIR/migrd.log" 2>&1 &
	MIGRD=$!
	for _ in $(seq 50); do [ -S "$SOCK" ] && return 0; sleep 0.1; done
	return 1
}
stop_migrd() { kill -TERM "$MIGRD" 2>/dev/null; wait "$MIGRD" 2>/dev/null; }

start_selfpair() { # NAME ARGS...: selfpair on migr_rxe0, until SIGTERM
	local name=$1; shift
	export VERBS_LOG_FILE=$LOGDIR/migrd-$name.verbs.log
	rm -f "$VERBS_LOG_FILE"
	"$SELFPAIR" migr_rxe0 0 "$@" >"$LOGDIR/migrd-$name.log" 2>&1 &
	SP=$!
	for _ in $(seq 100); do grep -q rounds= "$LOGDIR/migrd-$name.log" && break; sleep 0.1; done
}
stop_selfpair() { # NAME PID
	kill -TERM "$2" 2>/dev/null
	wait "$2"; rc=$?
	check "traffic_intact_$1" sh -c "[ $rc -eq 0 ] && grep -q 'selfpair: OK' $LOGDIR/migrd-$1.log"
}

# one_line_error NAME EXPECTED CMD...: CMD fails with exactly one line,
# "migrctl: error: ..." containing EXPECTED, on stderr.
one_line_error() {
	local name=$1 want=$2 log=$LOGDIR/migrd-$1.err; shift 2
	if "$@" >"$log.out" 2>"$log"; then
		fail "$name" "$log.out"
	elif [ "$(wc -l <"$log")" -eq 1 ] && grep -q "^migrctl: error: .*$want" "$log"; then
		pass "$name"; sed 's/^/    /' "$log"
	else
		fail "$name" "$log"
	fi
}

# $RAW SOCK LINE: send one raw request line (\n escapes) to migrd, print
# its reply; without a newline the write side is closed after it.
RAW=$RUN/raw.py
cat >"$RAW" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
line = sys.argv[2].encode().decode("unicode_escape").encode("latin-1")
s.sendall(line)
if not line.endswith(b"\n"):
    s.shutdown(socket.SHUT_WR)
print(s.makefile().readline().strip())
PY
LONG=$(printf '%04200d' 0)

: >"$LOGDIR/migrd.log"
if start_migrd; then pass migrd_starts; else fail migrd_starts "$LOGDIR/migrd.log"; fi
check migrd_status_empty sh -c "migrctl status | tee $LOGDIR/migrd-empty.txt | grep -q 'no migr processes'"

# Registration: selfpair opens migr_rxe0 and tells migrd
start_selfpair main
MAIN=$SP
check selfpair_registers sh -c "for i in \$(seq 50); do grep -q 'pid $SP (selfpair) registered migr_rxe0' $LOGDIR/migrd.log && exit 0; sleep 0.1; done; exit 1"
check status_lists_selfpair sh -c "migrctl status | tee $LOGDIR/migrd-status.txt | grep -E '^$SP +[0-9]+ +selfpair +migr_rxe0 +rxe0 .*RTS'"
sed 's/^/    /' "$LOGDIR/migrd-status.txt"
check status_json_registered sh -c "migrctl status --pid $SP --json | python3 -c 'import json,sys; p=json.load(sys.stdin)[\"processes\"]; assert len(p)==1 and p[0][\"registered\"] and p[0][\"status\"][\"contexts\"][0][\"lower\"]==\"rxe0\", p'"

# Switch rxe0 -> rxe1 (table) and back (--json)
check switch_to_rxe1_table sh -c "migrctl switch --pid $SP --device rxe1 --wait-ms 3000 | tee $LOGDIR/migrd-switch1.txt | grep -q 'migr_rxe0: rxe0 -> rxe1: ok' && grep -q 'quiesce/drain' $LOGDIR/migrd-switch1.txt && grep -q 'rebuild' $LOGDIR/migrd-switch1.txt && grep -q '^  total ' $LOGDIR/migrd-switch1.txt"
sed 's/^/    /' "$LOGDIR/migrd-switch1.txt"
check status_shows_rxe1 sh -c "migrctl status | grep -E '^$SP .* migr_rxe0 +rxe1 +1 '"
check switch_back_json sh -c "migrctl switch --pid $SP --device rxe0 --json | tee $LOGDIR/migrd-switch2.json | python3 -c 'import json,sys; r=json.load(sys.stdin); c=r[\"reply\"][\"switch\"][0]; assert r[\"ok\"] and c[\"ok\"] and c[\"from\"]==\"rxe1\" and c[\"to\"]==\"rxe0\" and c[\"total_ms\"]>0 and set(c[\"phases_ms\"])>={\"suspend\",\"drain\",\"release\",\"rebuild\",\"replay\"}, r'"

# drain: every process over rxe0 moves to rxe1, one after the other; one
# that cannot (UC QPs) stays where it runs, named with its reason, and
# migrctl ends with a one-line error; then all back with --json
start_selfpair drain-uc --uc --pairs 2
UC=$SP
start_selfpair drain-two --pairs 2
TWO=$SP
check drain_leaves_the_unmovable sh -c "! migrctl drain --from rxe0 --device rxe1 >$LOGDIR/migrd-drain.out 2>$LOGDIR/migrd-drain.err &&
	[ \$(wc -l <$LOGDIR/migrd-drain.err) -eq 1 ] &&
	grep -q '^migrctl: error: 1 of 3 processes stayed on rxe0' $LOGDIR/migrd-drain.err &&
	grep -q 'pid $UC: stayed on rxe0: .*other than RC or UD' $LOGDIR/migrd-drain.out &&
	grep -q '^rxe0: 2 of 3 processes moved to rxe1' $LOGDIR/migrd-drain.out"
grep -E '^(pid|rxe0:|migr_rxe0:)' "$LOGDIR/migrd-drain.out" | sed 's/^/    /'
sed 's/^/    /' "$LOGDIR/migrd-drain.err"
check drain_moved_the_others sh -c "migrctl status >$LOGDIR/migrd-drain.status &&
	grep -Eq '^$MAIN .* rxe1 ' $LOGDIR/migrd-drain.status &&
	grep -Eq '^$TWO .* rxe1 ' $LOGDIR/migrd-drain.status &&
	grep -Eq '^$UC .* rxe0 ' $LOGDIR/migrd-drain.status"
check drain_back_json sh -c "migrctl drain --from rxe1 --device rxe0 --json >$LOGDIR/migrd-drain2.jsonl && python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert sorted(r[\"pid\"] for r in lines) == sorted([$MAIN, $TWO]), lines
for r in lines:
    for c in r[\"reply\"][\"switch\"]:
        assert r[\"ok\"] and c[\"ok\"] and (c[\"from\"], c[\"to\"]) == (\"rxe1\", \"rxe0\"), r
' $LOGDIR/migrd-drain2.jsonl"
check drain_nothing_to_move sh -c "migrctl drain --from rxe1 --device rxe0 | grep -q '^no migr process runs over rxe1'"
one_line_error drain_same_device "both name rxe0" migrctl drain --from rxe0 --device rxe0
one_line_error drain_unknown_device "no RDMA device named nosuchdev" migrctl drain --from nosuchdev --device rxe1
one_line_error drain_needs_both "drain needs --from LOWER and --device DEV" migrctl drain --device rxe1
stop_selfpair drain-uc "$UC"
stop_selfpair drain-two "$TWO"
# A process that does not answer (stopped) is listed with the reason
# (the status reply stays JSON), and might run over the device: a drain
# names it, does not move it, and fails saying so
start_selfpair drain-stopped
STOPPED=$SP
kill -STOP "$STOPPED"
check status_names_the_silent sh -c "migrctl status >$LOGDIR/migrd-silent.status && grep -Eq '^$STOPPED .*selfpair' $LOGDIR/migrd-silent.status && grep -Eq '^$MAIN .*RTS' $LOGDIR/migrd-silent.status"
grep -E "^$STOPPED " "$LOGDIR/migrd-silent.status" | sed 's/^/    /'
check drain_names_the_silent sh -c "! migrctl drain --from rxe1 --device rxe0 >$LOGDIR/migrd-drain3.out 2>$LOGDIR/migrd-drain3.err &&
	grep -q 'pid $STOPPED: not moved, where it runs is not known' $LOGDIR/migrd-drain3.out &&
	[ \$(wc -l <$LOGDIR/migrd-drain3.err) -eq 1 ] &&
	grep -q '^migrctl: error: 1 process did not say where it runs: it may run over rxe1' $LOGDIR/migrd-drain3.err"
sed 's/^/    /' "$LOGDIR/migrd-drain3.out" "$LOGDIR/migrd-drain3.err"
kill -CONT "$STOPPED"
kill -TERM "$STOPPED"
wait "$STOPPED" 2>/dev/null
SP=$MAIN

# Refusals, each one line
one_line_error unknown_pid_refused "no migr process with pid 4000000" migrctl switch --pid 4000000 --device rxe1
one_line_error unknown_device_refused "no RDMA device named nosuchdev" migrctl switch --pid "$SP" --device nosuchdev
one_line_error invalid_device_refused "invalid device name" migrctl switch --pid "$SP" --device 'rx/e1'
one_line_error other_user_switch_refused "permission denied: pid $SP belongs to another user" \
	setpriv --reuid=65534 --regid=65534 --clear-groups migrctl switch --pid "$SP" --device rxe1
one_line_error other_user_status_refused "permission denied" \
	setpriv --reuid=65534 --regid=65534 --clear-groups migrctl status --pid "$SP"
check other_user_lists_nothing sh -c "setpriv --reuid=65534 --regid=65534 --clear-groups migrctl status | grep -q 'no migr processes'"
one_line_error bad_wait_refused "invalid wait" migrctl switch --pid "$SP" --device rxe1 --wait-ms 0
one_line_error no_migrd_refused "cannot reach migrd" env MIGRD_SOCKET=$RUN/none.sock migrctl status
check wrong_version_refused sh -c "python3 $RAW $SOCK 'migrd/2 hello\n' | grep -q 'unsupported protocol version .2. (this migrd speaks 1)'"
check oversize_refused sh -c "python3 $RAW $SOCK 'migrd/1 status $LONG\n' | grep -q 'longer than 4096 bytes'"
check truncated_refused sh -c "python3 $RAW $SOCK 'migrd/1 status' | grep -q 'incomplete request'"
check unknown_request_refused sh -c "python3 $RAW $SOCK 'migrd/1 frobnicate 1\n' | grep -q 'unknown request .frobnicate.'"
check control_byte_refused sh -c "python3 $RAW $SOCK 'migrd/1 status\x01\n' | grep -q 'control or non-ASCII'"
check still_running_after_refusals sh -c "kill -0 $SP"

# qpn-owner: the device QP number selfpair holds on rxe0 belongs to it
qpn=$(migrctl status --pid "$SP" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["processes"][0]["status"]["contexts"][0]["qps"][0]["phys"])')
check qpn_owner_local sh -c "migrctl qpn-owner rxe0 $qpn | tee $LOGDIR/migrd-qpn.txt | grep -q 'pid $SP (migr, selfpair)'"
one_line_error qpn_owner_unknown "no QP 16777215 on rxe0" migrctl qpn-owner rxe0 16777215

# Peers: authenticated to itself over TLS 1.3 (PSK from the key file and
# the names); plain bytes, another key, a name it does not know and
# another version are refused and logged
PEERTLS=$MIGR_TOP/tests/guest/peer-tls.py
check peer_ping_self sh -c "migrctl peer-ping 127.0.0.1 | tee $LOGDIR/migrd-ping.txt | grep -q 'authenticated'"
check qpn_owner_via_peer sh -c "migrctl qpn-owner --host 127.0.0.1 rxe0 $qpn | grep -q 'pid $SP'"
check peer_tls_python sh -c "python3 $PEERTLS $RUN/key self self 127.0.0.1 $PORT | grep -q '\"ok\":true'"
check plain_bytes_refused python3 - "$PORT" <<'PY'
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"MGRD" + struct.pack(">BBHQI", 1, 1, 0, 0, 32) + b"\0" * 64)
try:
    # nothing, or a TLS alert record (type 21)
    assert s.recv(100)[:1] in (b"", b"\x15"), "migrd answered plain bytes"
except ConnectionResetError:
    pass
PY
check plain_bytes_logged grep -Eq 'peer at 127.0.0.1 refused: (not TLS 1.3|TLS handshake failed)' "$LOGDIR/migrd.log"
install -m 0600 /dev/null "$RUN/key2"
head -c 32 /dev/urandom | base64 >"$RUN/key2"
check wrong_key_refused sh -c "! python3 $PEERTLS $RUN/key2 self self 127.0.0.1 $PORT >$LOGDIR/migrd-wrongkey.txt && grep -q '^error: .*alert' $LOGDIR/migrd-wrongkey.txt"
check wrong_key_logged grep -q 'peer at 127.0.0.1 refused: wrong key (binder does not verify)' "$LOGDIR/migrd.log"
check unknown_name_refused sh -c "! python3 $PEERTLS $RUN/key mallory self 127.0.0.1 $PORT >$LOGDIR/migrd-unknown-name.txt && grep -q '^error: .*alert' $LOGDIR/migrd-unknown-name.txt"
check unknown_name_logged grep -q 'peer at 127.0.0.1 refused: mallory is not a peer of this host' "$LOGDIR/migrd.log"
check wrong_peer_version_refused sh -c "! python3 $PEERTLS $RUN/key self self 127.0.0.1 $PORT migrd/2 >$LOGDIR/migrd-version.txt && grep -qi '^error: .*no.application.protocol' $LOGDIR/migrd-version.txt"
check wrong_peer_version_logged grep -q 'peer speaks protocol migrd/2, this migrd speaks migrd/1' "$LOGDIR/migrd.log"
install -m 0644 "$RUN/key" "$RUN/key644"
check loose_key_refused sh -c "! migrd -f --config $RUN/migrd.conf --socket $RUN/x.sock --port 7476 --peer 'loose 127.0.0.9 $RUN/key644' 2>$LOGDIR/migrd-key.err && grep -q 'must be owned by root with mode 0600' $LOGDIR/migrd-key.err"

# Migrations (migrd(8), MIGRATION): what a peer holding the key may send
# is checked; locally only root may migrate, and only peers speak mig-*
python3 "$MIGR_TOP/tests/guest/peer-images.py" "$RUN/key" "$PORT" "$RUN/state" rxe0 >"$LOGDIR/migrd-peer-images.txt" 2>&1
while read -r verdict name rest; do
	case $verdict in
	PASS) pass "$name" ;;
	FAIL) fail "$name"; echo "    $rest" ;;
	esac
done <"$LOGDIR/migrd-peer-images.txt"
check peer_images_ran grep -q "PASS abort_removed_images" "$LOGDIR/migrd-peer-images.txt"
one_line_error migrate_needs_root "only root may migrate" \
	setpriv --reuid=65534 --regid=65534 --clear-groups migrctl migrate --pid "$SP" --to 127.0.0.1
one_line_error migrate_unknown_pid "no migr process with pid 4000000" migrctl migrate --pid 4000000 --to 127.0.0.1
# A tree whose root is not its migr process (a shell that started it,
# which it does not exec) passes the tree's checks (its migr process moves
# with it): this one is then refused for its destination, this host
sh -c "\"$SELFPAIR\" migr_rxe0 0 >$LOGDIR/migrd-tree.log 2>&1; :" &
SH=$!
for _ in $(seq 100); do grep -q rounds= "$LOGDIR/migrd-tree.log" && break; sleep 0.1; done
one_line_error migrate_tree_root_not_migr "127.0.0.1 is this host" \
	migrctl migrate --pid "$SH" --to 127.0.0.1
# Two migr processes of one tree that are each other's RDMA partners
# (not supported yet): refused before anything is touched, both run on
# to their end (30 s)
# shellcheck disable=SC2016 # the shell's own $0
sh -c 'migr-traffic -d migr_rxe0 --server --port 18650 -D 30 -r 1 >"$0.server" 2>&1 &
	migr-traffic -d migr_rxe0 --client 127.0.0.1 --port 18650 --connect-timeout 30 -D 30 -r 1 >"$0.client" 2>&1
	wait' "$LOGDIR/migrd-pair" &
PAIR=$!
for _ in $(seq 300); do grep -q ' ops=' "$LOGDIR/migrd-pair.client" 2>/dev/null && break; sleep 0.1; done
one_line_error migrate_tree_partners_refused "pids [0-9]* and [0-9]* of the tree are each other's RDMA partners" \
	migrctl migrate --pid "$PAIR" --to 10.0.0.99
# they end by themselves, each checking every WR and byte
timeout 120 tail --pid="$PAIR" -f /dev/null
check tree_partners_ran_on sh -c "grep -q 'migr-traffic: PASS' $LOGDIR/migrd-pair.server && grep -q 'migr-traffic: PASS' $LOGDIR/migrd-pair.client"
# A process of librdmacm's (its connections are kernel state): refused
# before anything is touched, naming its rdma_cm file
RDMAV_STACKED_DEVICES=first rping -s -a 10.0.0.1 -p 18660 >"$LOGDIR/migrd-rping.log" 2>&1 &
RP=$!
for _ in $(seq 100); do migrctl status | grep -q "^$RP " && break; sleep 0.1; done
one_line_error migrate_rdma_cm_refused "pid $RP uses the RDMA connection manager (fd [0-9]* /dev/infiniband/rdma_cm)" \
	migrctl migrate --pid "$RP" --to 10.0.0.99
check rdma_cm_process_runs_on kill -0 "$RP"
kill "$RP"
wait "$RP" 2>/dev/null
# A tree without a migr process is not migrctl's to move
sleep 600 &
SL=$!
one_line_error migrate_tree_without_migr "no migr process with pid $SL, nor in its tree" \
	migrctl migrate --pid "$SL" --to 127.0.0.1
kill "$SL"
pkill -TERM -P "$SH"
wait "$SH" 2>/dev/null
check tree_child_ran_on grep -q "selfpair: OK" "$LOGDIR/migrd-tree.log"
check mig_check_local_refused sh -c "python3 $RAW $SOCK 'migrd/1 mig-end 0123456789abcdef state\n' | grep -q 'only for a peer migrd'"

# Found without registering (it was given a socket where no migrd is)
MIGRD_SOCKET=$RUN/none.sock start_selfpair unregistered
SP2=$SP
check unregistered_found sh -c "migrctl status --pid $SP2 --json | grep -q '\"registered\":false'"
stop_selfpair unregistered "$SP2"
# A registered process that dies is pruned
start_selfpair shortlived
SP4=$SP
check shortlived_listed sh -c "migrctl status | grep -q '^$SP4 '"
kill -KILL "$SP4"; wait "$SP4" 2>/dev/null
check dead_not_listed sh -c "! migrctl status | grep -q '^$SP4 '"
check dead_pruned grep -q "pid $SP4 (selfpair) is gone, pruned" "$LOGDIR/migrd.log"

# A connect asks the peer's host what its QP is now (fetch): a host that
# made it wait in vain is not asked again for a while
check fetch_waits_once sh -c "MIGRD_SOCKET=$RUN/silent.sock VERBS_LOG_LEVEL=4 \
	VERBS_LOG_FILE=$LOGDIR/migrd-fetch-quiet.verbs.log python3 tests/guest/fetch-quiet.py $RUN/silent.sock &&
	grep -q 'did not answer a fetch within 3 s lately; not asked' $LOGDIR/migrd-fetch-quiet.verbs.log"

# Without migrd: the running process goes on, a new one starts and works,
# and no migrd message reaches its log above debug level.
stop_migrd
check migrd_stopped sh -c "[ ! -S $SOCK ]"
start_selfpair nomigrd
SP3=$SP
sleep 2
check runs_without_migrd sh -c "kill -0 $SP3"
check no_migrd_noise sh -c "! grep -E 'migrd at|with migrd' $LOGDIR/migrd-nomigrd.verbs.log $LOGDIR/migrd-nomigrd.log"
stop_selfpair nomigrd "$SP3"
# At debug level the library says why it did not register
VERBS_LOG_LEVEL=4 start_selfpair nomigrd-debug
check debug_says_no_migrd grep -q "no migrd at $SOCK" "$LOGDIR/migrd-nomigrd-debug.verbs.log"
stop_selfpair nomigrd-debug "$SP"
stop_selfpair main "$MAIN"

summary migrd
