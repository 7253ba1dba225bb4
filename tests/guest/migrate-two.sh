#!/bin/bash
# In two guests (buildlib/testbed/run.sh --two): migrctl migrate moves a
# running RDMA process between hosts, driven by the two migrd over their
# TLS link: refusals that touch nothing, a failed restore that puts it
# back to work on its own host, then A -> B with pre-copy and B -> A.
# Its QPs talk to each other (tests/switch/selfpair: every completion and
# byte checked); its output file is on the share, the same path in both.
# It starts at a PID far above what a fresh guest uses, free on both.
# The same cut restore for a workload in namespaces of its own (its own
# address, as a container's), and a restarted migrd that must find a migr
# process in its own network namespace.
# usage: migrate-two.sh a|b    (a: 10.9.0.1, b: 10.9.0.2)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ns.sh"
. "$(dirname "$0")/migrate-lib.sh"
role=${1:?a or b}
A_IP=10.9.0.1
B_IP=10.9.0.2
SELFPAIR=$MIGR_BUILD_DIR/tests/switch/selfpair
OUT=$LOGDIR/migrate-two-selfpair.log
# a selfpair in namespaces of its own on A (its restore is cut on B), and
# one on B (found by B's restarted migrd, then moved to A)
CUT_ADDR=10.9.0.51 CUT_MAC=02:00:0a:09:00:33 CUT_OUT=$LOGDIR/migrate-two-cut.log
BNS_ADDR=10.9.0.52 BNS_MAC=02:00:0a:09:00:34 BNS_OUT=$LOGDIR/migrate-two-bns.log
two_host_env migrate-two
# The destination's criu restore fails while $FAIL_FLAG exists
criu_wrapper
# migr's CRIU plugin from a directory of this host's (one fault takes it away)
mkdir -p "$RUN/plugins" && cp "$MIGR_BUILD_DIR/lib/criu/migr_plugin.so" "$RUN/plugins/"
cat >"$RUN/migrd.conf" <<EOF
criu = $RUN/criu
criu_plugins = $RUN/plugins
state_dir = $RUN/state
EOF
export MIGRD_CONF=$RUN/migrd.conf
start_test_migrd migrate-two "$LOGDIR/migrate-two-migrd-$role.log"
[ -S "$MIGRD_SOCKET" ] && pass "migrd_starts_$role" || fail "migrd_starts_$role" "$LOGDIR/migrate-two-migrd-$role.log"

progressing() { selfpair_progressing "$OUT"; }
# rolled_back NAME WHY: A's move to B fails once B took it, saying WHY,
# and the process is back to work here, on rxe0
rolled_back() {
	refused "$1" "$2" --pid "$SP" --to "$B_IP"
	logged "$1_runs_here_again" "pid $SP runs here again on rxe0" "$LOGDIR/$1.out"
	NAME=$1_then_runs_on ok progressing
	NAME=$1_then_on_rxe0 ok runs_here "$SP"
}
migr_netns() { ip netns list | awk '/^migr-/ { print $1 }'; }
# nothing of a restore B's migrd was cut in: no migr-* namespace, no
# macvlan, no CRIU (its wrapper) and no selfpair left on this host
# (within 10 s: a killed process is reaped by init, a namespace freed
# with its last process)
nothing_left_now() {
	[ -z "$(migr_netns)" ] &&
		! ip -o link show type macvlan | grep -q . &&
		! pgrep -f "$RUN/criu restore" >/dev/null &&
		! pgrep -x selfpair >/dev/null
}
nothing_left() {
	for _ in $(seq 100); do nothing_left_now && return 0; sleep 0.1; done
	ip netns list; ip -o link show type macvlan; pgrep -af "selfpair|criu"
	return 1
}

# A: a selfpair as the init of its own pid and network namespaces moves
# to B, whose migrd is killed while CRIU restores it (held in the
# wrapper); B's next migrd, started at once, sweeps what it made: then
# it runs here again (issue 32, item 3)
ns_cut_a() {
	local cp
	ns_del cutwl
	NAME=a_cut_netns_made ok ns_make cutwl "$CUT_ADDR/24" "$CUT_MAC"
	ns_run cutwl "$CUT_OUT" "$SELFPAIR" migr_rxe0 0 --idle-us 50
	cp=$NS_PID
	NAME=a_cut_started ok ns_started "$cp"
	say kill-migrd-on-ns-restore
	refused ns_restore_cut_runs_here_again "runs here again on rxe0" --pid "$cp" --to "$B_IP"
	await ns-swept 300 || fail a_saw_ns_swept
	NAME=after_ns_restore_cut_runs_on ok selfpair_progressing "$CUT_OUT"
	NAME=after_ns_restore_cut_on_rxe0 ok runs_here "$cp"
	kill -KILL "$cp"
	wait "$NS_HOLDER" 2>/dev/null
	ns_del cutwl
	ns_moved_here_a
}

# B: its migrd dies while the restore is held (the namespace and its
# macvlan with the address made by then); the next one starts while that
# CRIU still waits
ns_cut_b() {
	await kill-migrd-on-ns-restore 300 || fail b_saw_kill_migrd_on_ns_restore
	for _ in $(seq 1200); do [ -e "$HELD_FLAG" ] && break; sleep 0.1; done
	check b_ns_restore_began test -e "$HELD_FLAG"
	check b_ns_restore_made_netns sh -c "ip netns list | grep -q '^migr-'"
	kill -KILL "$MIGRD"; wait "$MIGRD" 2>/dev/null
	start_test_migrd migrate-two "$LOGDIR/migrate-two-migrd-b5.log"
	rm -f "$HOLD_FLAG"
	NAME=b_ns_cut_nothing_left ok nothing_left
	logged b_ns_cut_netns_swept "network namespace migr-.* is removed" "$LOGDIR/migrate-two-migrd-b5.log"
	logged b_ns_cut_criu_killed "the restore an earlier migrd left running is killed" "$LOGDIR/migrate-two-migrd-b5.log"
	# a second start sweeps nothing more, and starts
	kill -TERM "$MIGRD"; wait "$MIGRD" 2>/dev/null
	start_test_migrd migrate-two "$LOGDIR/migrate-two-migrd-b6.log"
	check b_second_sweep_starts test -S "$MIGRD_SOCKET"
	NAME=b_second_sweep_nothing_left ok nothing_left
	say ns-swept
}

# B: a migr process in its own network namespace here; a migrd restarted
# under it (its registration lost) lists it, and moves it to A
# (issue 32, item 2: a partner there was "no migr process with pid N")
ns_found_b() {
	local bp
	ns_del bwl
	NAME=b_ns_netns_made ok ns_make bwl "$BNS_ADDR/24" "$BNS_MAC"
	ns_run bwl "$BNS_OUT" "$SELFPAIR" migr_rxe0 0 --idle-us 50
	bp=$NS_PID
	NAME=b_ns_started ok ns_started "$bp"
	NAME=b_ns_progressing ok selfpair_progressing "$BNS_OUT"
	kill -KILL "$MIGRD"; wait "$MIGRD" 2>/dev/null
	start_test_migrd migrate-two "$LOGDIR/migrate-two-migrd-b7.log"
	check b_restarted_migrd_status_lists_ns_process sh -c "migrctl status --json | grep -q '\"pid\":${bp}[,}]'"
	NAME=b_restarted_migrd_ns_process_on_rxe0 ok runs_here "$bp"
	moved b_restarted_migrd_moves_ns_process --pid "$bp" --to "$A_IP"
	NAME=b_ns_process_gone ok gone_soon "$bp"
	kill -KILL "$bp" 2>/dev/null
	wait "$NS_HOLDER" 2>/dev/null
	ns_del bwl
	say ns-moved
}

# A: B's namespaced selfpair runs here, in the migr-* namespace A's migrd
# made for it; then it goes, with its namespace
ns_moved_here_a() {
	local ns
	await ns-moved 600 || fail a_saw_ns_moved
	ns=$(migr_netns | head -n 1)
	check a_got_ns_process sh -c "[ -n '$ns' ] && [ -n \"\$(ip netns pids '$ns')\" ]"
	NAME=a_ns_process_runs_on ok selfpair_progressing "$BNS_OUT"
	[ -n "$ns" ] && ip netns pids "$ns" | xargs -r kill -KILL
	sleep 1
	[ -n "$ns" ] && ns_del "$ns"
	say ns-checked
}

if [ "$role" = a ]; then
	rm -rf "${SYNC%/*}" "$OUT" && mkdir -p "$SYNC"
	say a-up
	await b-up 120 || fail a_saw_b
	echo 29999 >/proc/sys/kernel/ns_last_pid
	setsid "$SELFPAIR" migr_rxe0 0 --idle-us 50 </dev/null >>"$OUT" 2>&1 &
	SP=$!
	# the same here: for the way back (its threads are the ids after it)
	echo $((SP + 5000)) >/proc/sys/kernel/ns_last_pid
	echo "$SP" >"$SYNC/pid"
	NAME=a_started ok progressing

	# Refusals before anything is touched: the process runs on
	refused refused_not_a_peer "10.9.0.3 is not a peer of this host" --pid "$SP" --to 10.9.0.3
	refused refused_to_this_host "$A_IP is this host" --pid "$SP" --to "$A_IP"
	say take-pid
	await pid-taken 60 || fail a_saw_pid_taken
	refused refused_pid_taken_on_b "pid $SP is taken" --pid "$SP" --to "$B_IP"
	say free-pid
	await pid-freed 60 || fail a_saw_pid_freed
	# B without migr's CRIU plugin; B's migrd not running
	refused refused_no_plugin_on_b "migr's CRIU plugin" --pid "$SP" --to "$B_IP"
	say plugin-back
	await migrd-stopped 60 || fail a_saw_migrd_stopped
	refused refused_migrd_down_on_b "migrd on $B_IP is unreachable" --pid "$SP" --to "$B_IP"
	say start-migrd
	await migrd-started 60 || fail a_saw_migrd_started
	NAME=after_refusals_runs_on ok progressing
	NAME=after_refusals_not_parked ok runs_here "$SP"

	# B's migrd dies once it took the migration (the process was parked
	# and dumped here by then, or is about to be): back to work here
	say kill-migrd-on-check
	refused destination_died_runs_here_again "runs here again on rxe0" --pid "$SP" --to "$B_IP"
	await migrd-restarted 60 || fail a_saw_migrd_restarted
	NAME=after_destination_died_runs_on ok progressing
	NAME=after_destination_died_on_rxe0 ok runs_here "$SP"

	# B lets no root process arrive (arrive_uids' default): the copy CRIU
	# restored there is killed before it runs, the move fails saying so,
	# and the process is back to work here (issue 34, item 6)
	say no-root
	await no-root-b 60 || fail a_saw_no_root_b
	rolled_back root_may_not_arrive "would run as uid 0 here, which arrive_uids does not allow"
	say root-back
	await root-back-b 60 || fail a_saw_root_back_b

	# A restore that fails there: back to work here, on rxe0
	say fail-restore
	await restore-fails 60 || fail a_saw_restore_fails
	rolled_back failed_restore_says_why "criu restore failed"
	say restore-works
	await restore-works-b 60 || fail a_saw_restore_works

	# B's migrd dies while CRIU restores there: no answer, so the source
	# waits until B's copy is known dead. The copy CRIU leaves is stopped,
	# and B's next migrd kills it before it answers: then back to work here
	say kill-migrd-on-restore
	refused restore_cut_runs_here_again "runs here again on rxe0" --pid "$SP" --to "$B_IP"
	await migrd-swept 300 || fail a_saw_migrd_swept
	NAME=after_restore_cut_runs_on ok progressing
	NAME=after_restore_cut_on_rxe0 ok runs_here "$SP"
	ns_cut_a

	# A -> B, with pre-copy
	moved migrate_a_to_b --pid "$SP" --to "$B_IP" --pre-copy 2
	check report_names_phases grep -q "RestoreRDMA" "$LOGDIR/migrate_a_to_b.out"
	check report_precopy_rounds grep -q "pre-copy round 1" "$LOGDIR/migrate_a_to_b.out"
	# the stock module here: the report says why nothing was held
	check report_stock_rxe grep -q "rxe0 runs the stock rdma_rxe" "$LOGDIR/migrate_a_to_b.out"
	wait "$SP" 2>/dev/null # reap the killed source: its pid is free again
	NAME=source_copy_gone ok gone "$SP"
	say moved-ab
	await moved-ba 300 || fail a_saw_b_move_back
	NAME=back_on_a_traffic_goes_on ok progressing
	NAME=back_on_a_on_rxe0 ok runs_here "$SP"
	kill -TERM "$SP"
	for _ in $(seq 100); do gone "$SP" && break; sleep 0.1; done
	check traffic_intact_a_b_a grep -q 'selfpair: OK' "$OUT"
	tail -n 1 "$OUT"
	logged a_migrd_logged_commit "committed; pid $SP runs here" "$LOGDIR/migrate-two-migrd-a.log"
	say done
else
	await a-up 120 || fail b_saw_a
	say b-up
	await take-pid 300 || fail b_saw_take_pid
	SP=$(cat "$SYNC/pid")
	echo $((SP - 1)) >/proc/sys/kernel/ns_last_pid
	sleep 300 &
	TAKER=$!
	[ "$TAKER" = "$SP" ] && pass b_took_pid || fail b_took_pid
	say pid-taken
	await free-pid 300 || fail b_saw_free_pid
	kill "$TAKER"; wait "$TAKER" 2>/dev/null
	# this host's next processes (CRIU's own, among them) far from the
	# tree's thread ids: a restore needs them free. Those follow its pid,
	# and the threads it makes after A moved its counter follow SP + 5000
	# (35005, 35008, then one more after some rollbacks' resume). B's
	# processes from SP + 5000 too (its migrd's threads among them) could
	# hold one: the check then refuses the move ("pid SP is taken") where
	# the test means it to fail in CRIU, likely CI's failure on 2026-12-06
	echo $((SP + 100000)) >/proc/sys/kernel/ns_last_pid
	mv "$RUN/plugins/migr_plugin.so" "$RUN/migr_plugin.so.away"
	say pid-freed
	await plugin-back 60 || fail b_saw_plugin_back
	mv "$RUN/migr_plugin.so.away" "$RUN/plugins/migr_plugin.so"
	kill -TERM "$MIGRD"; wait "$MIGRD" 2>/dev/null
	say migrd-stopped
	await start-migrd 60 || fail b_saw_start_migrd
	start_test_migrd migrate-two "$LOGDIR/migrate-two-migrd-b2.log"
	say migrd-started
	# killed the moment it logs that the migration may come
	await kill-migrd-on-check 60 || fail b_saw_kill_migrd
	for _ in $(seq 1200); do grep -q "may come" "$LOGDIR/migrate-two-migrd-b2.log" && break; sleep 0.05; done
	kill -KILL "$MIGRD"; wait "$MIGRD" 2>/dev/null
	logged b_migrd_took_it_before_dying "may come" "$LOGDIR/migrate-two-migrd-b2.log"
	# what a migrd that died mid-transfer leaves: its images go at the
	# next start, its logs stay
	LEFT=$RUN/state/migrations/00000000deadbeef
	mkdir -p "$LEFT/final" && echo x >"$LEFT/final/pages-1.img" && echo x >"$LEFT/final/restore.log"
	start_test_migrd migrate-two "$LOGDIR/migrate-two-migrd-b3.log"
	check b_restarted_migrd_swept_images sh -c "[ ! -e $LEFT/final/pages-1.img ] && [ -e $LEFT/final/restore.log ]"
	say migrd-restarted

	# a destination that lets no root process arrive (the default)
	await no-root 300 || fail b_saw_no_root
	kill -TERM "$MIGRD"; wait "$MIGRD" 2>/dev/null
	MIGRD_ARGS="--arrive-uids 1-4294967294" start_test_migrd migrate-two "$LOGDIR/migrate-two-migrd-b-noroot.log"
	say no-root-b
	await root-back 300 || fail b_saw_root_back
	NAME=b_root_copy_killed ok gone_soon "$SP"
	logged b_root_refused_logged "would run as uid 0 here, which arrive_uids does not allow" "$LOGDIR/migrate-two-migrd-b-noroot.log"
	kill -TERM "$MIGRD"; wait "$MIGRD" 2>/dev/null
	start_test_migrd migrate-two "$LOGDIR/migrate-two-migrd-b3.log"
	say root-back-b

	await fail-restore 300 || fail b_saw_fail_restore
	touch "$FAIL_FLAG"
	say restore-fails
	await restore-works 300 || fail b_saw_restore_works
	rm -f "$FAIL_FLAG"
	# the next restore waits in the wrapper until this host's migrd is
	# killed: polling for CRIU's process missed a restore of 0.9 s once
	touch "$HOLD_FLAG"
	NAME=b_killed_failed_copy ok gone "$SP"
	logged b_logged_failed_restore "criu restore failed" "$LOGDIR/migrate-two-migrd-b3.log"
	say restore-works-b

	await kill-migrd-on-restore 300 || fail b_saw_kill_migrd_on_restore
	# killed once its restore began (held in the wrapper), then CRIU goes on
	for _ in $(seq 1200); do [ -e "$HELD_FLAG" ] && break; sleep 0.1; done
	check b_restore_began test -e "$HELD_FLAG"
	kill -KILL "$MIGRD"; wait "$MIGRD" 2>/dev/null
	rm -f "$HOLD_FLAG"
	logged b_migrd_killed_during_restore "restoring pid $SP" "$LOGDIR/migrate-two-migrd-b3.log"
	# CRIU, on its own now, ends its restore: the copy stays stopped
	for _ in $(seq 600); do pgrep -f "criu restore -D $RUN/state" >/dev/null || break; sleep 0.1; done
	check b_cut_copy_stopped sh -c "[ \"\$(awk '{ print \$3 }' /proc/$SP/stat)\" = T ]"
	start_test_migrd migrate-two "$LOGDIR/migrate-two-migrd-b4.log"
	NAME=b_restarted_migrd_killed_cut_copy ok gone_soon "$SP"
	logged b_restarted_migrd_said_why "pid $SP, restored here but never committed" "$LOGDIR/migrate-two-migrd-b4.log"
	rm -f "$HELD_FLAG" && touch "$HOLD_FLAG"
	say migrd-swept
	ns_cut_b
	ns_found_b
	await ns-checked 300 || fail b_saw_ns_checked

	await moved-ab 600 || fail b_saw_move
	NAME=on_b_traffic_goes_on ok progressing
	NAME=on_b_registered_on_rxe0 ok runs_here "$SP"
	check on_b_images_removed sh -c "! find $RUN/state/migrations -name '*.img' | grep -q ."
	moved migrate_b_to_a --pid "$SP" --to "$A_IP"
	NAME=b_copy_gone ok sh -c "for i in \$(seq 50); do ! kill -0 $SP 2>/dev/null && exit 0; sleep 0.1; done; exit 1"
	say moved-ba
	await done 300 || fail b_saw_a_done
fi
# CRIU's logs of every migration, for whoever looks into one
cp -r "$RUN/state/migrations" "$LOGDIR/migrate-two-criu-logs-$role" 2>/dev/null
# gone before the next script in this guest starts its own (tests/run.sh)
kill "$MIGRD" 2>/dev/null
wait "$MIGRD" 2>/dev/null
summary "migrate-two $role"
