#!/bin/bash
# In two guests (buildlib/testbed/run.sh --two): the destination vanishes
# from the network while it restores, as a host that died or was cut off
# does: no answer and no reset, only silence. B drops every packet of the
# two migrd's link (all TCP with A, both ways) once B restores;
# the copy it restores is resumed and waits for a commit that cannot come.
# The source must not run again while that copy may run: it waits until
# the copy's fence has killed it (migrd(8): MIG_FENCE_MS after the restore
# began, the margin on top), then runs on where it was, its traffic
# (tests/switch/selfpair: every completion and byte checked) intact.
# Then the commit's answer is lost: B takes no new connection from A once
# it restores (the restore's answer still goes out on its own). The source
# cannot learn whether the commit arrived, so its tree stays stopped while
# its migrd asks on (migrate.h); once B answers again (its copy fenced),
# the tree runs here again by itself.
# Six minutes of waiting by design: tests/soak.sh runs it, not CI.
# usage: migrate-partition.sh a|b    (a: 10.9.0.1, b: 10.9.0.2)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/migrate-lib.sh"
role=${1:?a or b}
A_IP=10.9.0.1
B_IP=10.9.0.2
SELFPAIR=$MIGR_BUILD_DIR/tests/switch/selfpair
OUT=$LOGDIR/migrate-partition-selfpair.log
MLOG=$LOGDIR/migrate-partition-migrd-$role.log
two_host_env migrate-partition
criu_migrd migrate-partition "$MLOG"
[ -S "$MIGRD_SOCKET" ] && pass "migrd_starts_$role" || fail "migrd_starts_$role" "$MLOG"

progressing() { selfpair_progressing "$OUT"; }
# the migrd link, both ways, as B's firewall sees it
# (all TCP between the two: a peer link may have been opened from either
# side, and only the migrd talk TCP here)
LINK_RULES=("in -p tcp -s $A_IP -j DROP" "out -p tcp -d $A_IP -j DROP")

if [ "$role" = a ]; then
	rm -rf "${SYNC%/*}" "$OUT" && mkdir -p "$SYNC"
	say a-up
	await b-up 120 || fail a_saw_b
	echo 29999 >/proc/sys/kernel/ns_last_pid
	setsid "$SELFPAIR" migr_rxe0 0 --idle-us 50 </dev/null >>"$OUT" 2>&1 &
	SP=$!
	echo "$SP" >"$SYNC/pid"
	NAME=a_started ok progressing

	say cut-on-restore
	t0=$SECONDS
	refused cut_off_runs_here_again "runs here again on rxe0" --pid "$SP" --to "$B_IP"
	echo "    back to work here after $((SECONDS - t0)) s"
	# B saw its copy fenced before this side ran again: never two copies
	check b_copy_dead_before_a_resumed test -e "$SYNC/copy-fenced"
	check said_it_waits grep -q "waiting until its copy is known dead" "$LOGDIR/cut_off_runs_here_again.out"
	NAME=after_cut_runs_on ok progressing
	NAME=after_cut_on_rxe0 ok runs_here "$SP"
	say resumed
	await b-done 300 || fail a_saw_b_done

	say cut-on-commit
	refused commit_lost_left_stopped "migrd asks again every" --pid "$SP" --to "$B_IP"
	NAME=commit_lost_stopped_here ok grep -q '^State:.*stopped' "/proc/$SP/status"
	say left-stopped
	await b-uncut 300 || fail a_saw_b_uncut
	t0=$SECONDS
	for _ in $(seq 600); do grep -q "says its copy of pid $SP is gone" "$MLOG" && break; sleep 0.1; done
	check settled_copy_gone grep -q "says its copy of pid $SP is gone" "$MLOG"
	for _ in $(seq 300); do runs_here "$SP" && break; sleep 0.2; done
	echo "    back to work here $((SECONDS - t0)) s after B answered again"
	NAME=settled_runs_here_again ok runs_here "$SP"
	NAME=after_settle_runs_on ok progressing
	say settled
	kill -TERM "$SP"
	for _ in $(seq 100); do gone "$SP" && break; sleep 0.1; done
	check traffic_intact grep -q 'selfpair: OK' "$OUT"
	tail -n 1 "$OUT"
else
	await a-up 120 || fail b_saw_a
	say b-up
	# The rules go into a chain made now: its first use loads netfilter's
	# modules, seconds in a TCG guest, longer than the restore takes
	iptables -N migr-cut && iptables -I INPUT -j migr-cut && iptables -I OUTPUT -j migr-cut ||
		fail b_cut_chain
	await cut-on-restore 300 || fail b_saw_cut_on_restore
	SP=$(cat "$SYNC/pid")
	for _ in $(seq 6000); do grep -q "restoring pid $SP" "$MLOG" && break; sleep 0.05; done
	for r in "${LINK_RULES[@]}"; do
		# shellcheck disable=SC2086 # a rule's words
		iptables -A migr-cut ${r#* } || fail "b_cut_rule_${r%% *}"
	done
	check b_restore_began grep -q "restoring pid $SP" "$MLOG"
	# the copy restored and resumed here, then killed by its fence
	for _ in $(seq 1500); do grep -q "no commit from .* in time" "$MLOG" && break; sleep 0.2; done
	NAME=b_copy_fenced ok gone_soon "$SP"
	say copy-fenced
	check b_fence_said_why grep -q "no commit from .* in time: its restored copy (pid $SP) is killed" "$MLOG"
	check b_images_removed sh -c "! find $RUN/state/migrations -name '*.img' 2>/dev/null | grep -q ."
	await resumed 600 || fail b_saw_a_resume
	iptables -F migr-cut || fail b_uncut
	say b-done

	# New connections from A refused from the restore on: its answer goes
	# out on the restore's own connection, the commit never comes in
	await cut-on-commit 300 || fail b_saw_cut_on_commit
	n=$(grep -c "restoring pid $SP" "$MLOG")
	for _ in $(seq 6000); do [ "$(grep -c "restoring pid $SP" "$MLOG")" -gt "$n" ] && break; sleep 0.05; done
	iptables -A migr-cut -p tcp -s $A_IP --syn -j DROP || fail b_cut_new
	for _ in $(seq 1500); do [ "$(grep -c "no commit from .* in time" "$MLOG")" -ge 2 ] && break; sleep 0.2; done
	NAME=b_uncommitted_copy_fenced ok gone_soon "$SP"
	await left-stopped 300 || fail b_saw_left_stopped
	iptables -F migr-cut || fail b_uncut_2
	say b-uncut
	await settled 300 || fail b_saw_settled
	iptables -D INPUT -j migr-cut && iptables -D OUTPUT -j migr-cut &&
		iptables -X migr-cut || fail b_cut_chain_gone
fi
kill "$MIGRD" 2>/dev/null
wait "$MIGRD" 2>/dev/null
summary "migrate-partition $role"
