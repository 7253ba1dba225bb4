#!/bin/bash
# In two guests (buildlib/testbed/run.sh --two): the destination's migrd
# killed at a step of its side of a migration, and restarted at once (as
# systemd's Restart=on-failure would), while the mover's partner runs on B
# in a network namespace of its own (issue 32: a rollback answered
# success over a dead connection, the restarted migrd not finding the
# partner). The mover (migr-traffic, every WR and byte checked at both
# ends) runs on A as a container would. Steps, each held there: before
# CRIU runs (the criu wrapper's hold); in CRIU, once it restored the copy
# and before it exits (the wrapper's); after the restore, before the copy
# resumes and reconnects its partner here (migrd --test-hold's "resume");
# the copy resumed and its partner reconnected to it, before the commit
# is taken (migrd's "commit"). After each of the first three the
# migration has failed and says so: the mover runs on at A with its
# traffic moving, counted at both ends, unless migrctl names the partner
# it could not take back; nothing of the restore is left on B. At the
# last the copy had resumed, its partner's traffic its own since: B's
# new migrd takes it back, the source's commit finds it, and the move
# succeeds, the mover's traffic moving on at B.
# usage: migrate-cut.sh a|b   (a: 10.9.0.1, b: 10.9.0.2)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ns.sh"
. "$(dirname "$0")/migrate-lib.sh"
role=${1:?a or b}
B_IP=10.9.0.2
WL_ADDR=10.9.0.54 WL_MAC=02:00:0a:09:00:36 # the mover's, on A
PT_ADDR=10.9.0.64 PT_MAC=02:00:0a:09:00:40 # its partner's, on B
TR="-d migr_rxe0 --qps 2 --port 18841 --rate 20 -r 2 -D 900 --stall-timeout 120"
MLOG=$LOGDIR/migrate-cut-mover.log PLOG=$LOGDIR/migrate-cut-partner.log
two_host_env migrate-cut
criu_wrapper
HOLDS=$RUN/holds
rm -rf "$HOLDS" && mkdir -p "$HOLDS"
export MIGRD_ARGS="--test-hold $HOLDS"
criu_migrd migrate-cut "$LOGDIR/migrate-cut-migrd-$role.log" "criu = $RUN/criu"
[ -S "$MIGRD_SOCKET" ] && pass "migrd_starts_$role" ||
	fail "migrd_starts_$role" "$LOGDIR/migrate-cut-migrd-$role.log"

ops_grow() { grows "$1" 'ops=([0-9]+)' 30; }
# nothing of a cut restore on B within 30 s: no migr-* namespace, no CRIU
# (its wrapper), one migr-traffic (the partner)
nothing_left() {
	local t0=$SECONDS
	while [ $((SECONDS - t0)) -lt 60 ]; do
		! ip netns list | grep -q '^migr-' && ! timeout 5 pgrep -f "$RUN/criu[ ]restore" >/dev/null &&
			[ "$(timeout 5 pgrep -cx migr-traffic)" = 1 ] &&
			echo "    nothing left after $((SECONDS - t0)) s" && return 0
		sleep 0.2
	done
	ip netns list
	echo "    processes (D: in the kernel, its stack below):"
	timeout 10 ps --ppid 2 -p 2 --deselect -o pid,stat,etimes,wchan:32,args
	for p in $(timeout 10 ps -eo pid=,stat= | awk '$2 ~ /D/ { print $1 }'); do
		echo "    pid $p $(cat /proc/"$p"/comm):"; sed 's/^/      /' /proc/"$p"/stack
	done
	return 1
}

if [ "$role" = a ]; then
	rm -rf "${SYNC%/*}" && mkdir -p "$SYNC"
	NAME=mover_netns_made ok fresh_ns cwl "$WL_ADDR" "$WL_MAC"
	# shellcheck disable=SC2086 # the arguments, split
	ns_run cwl "$MLOG" migr-traffic $TR --server
	WP=$NS_PID
	NAME=mover_listens ok listening cwl 18841
	say listens
	NAME=mover_connected ok connected "$WP"
else
	await listens 120 || fail b_saw_mover_listen
	ns_del cpt
	NAME=partner_netns_made ok ns_make cpt "$PT_ADDR/24" "$PT_MAC"
	# shellcheck disable=SC2086
	nsenter --net=/run/netns/cpt migr-traffic $TR --client "$WL_ADDR" >"$PLOG" 2>&1 &
	PP=$!
	NAME=partner_connected ok connected "$PP"
fi

# a step before the copy resumed: the move fails, the mover runs on here
cut_back() {
	check "${step}_cut_move_fails_here_again" sh -c "[ $rc -ne 0 ] && grep -q 'runs here again on rxe0' $out"
	check "${step}_no_partner_left_behind" sh -c "! grep -q 'partner was not reconnected' $out"
	if runs_here "$WP"; then pass "${step}_mover_runs_here"; else
		fail "${step}_mover_runs_here" "$MLOG"
		tail -n 30 "$LOGDIR/migrate-cut-migrd-$role.log"
	fi
}
# once it resumed there (its partner's traffic its own since): B's new
# migrd takes it back and the commit, the move succeeds
cut_there() {
	check "${step}_cut_move_commits_there" sh -c "[ $rc -eq 0 ] && grep -q 'runs on $B_IP as pid' $out"
	sed -n "s/.*runs on $B_IP as pid \([0-9]*\).*/\1/p" "$out" >"$SYNC/mover-there"
	NAME=${step}_mover_gone_here ok gone_soon "$WP"
}

# STEP:FLAG:HELD:WHERE: STEP held while the file FLAG exists (HELD made
# once it is), B's migrd killed there; the mover then runs on at WHERE
# (MIGR_CUT_STEPS: the names of those to run, default all)
for step in before_criu:$HOLD_FLAG:$HELD_FLAG:back in_criu:$HOLD_AFTER_FLAG:$HELD_FLAG:back \
	before_resume:$HOLDS/resume:$HOLDS/resume.held:back \
	before_commit:$HOLDS/commit:$HOLDS/commit.held:there; do
	IFS=: read -r step flag held where <<<"$step"
	[ -z "${MIGR_CUT_STEPS:-}" ] || [[ " $MIGR_CUT_STEPS " == *" $step "* ]] || continue
	if [ "$role" = a ]; then
		await "$step.armed" 300 || fail "b_armed_$step"
		NAME=${step}_traffic_before ok ops_grow "$MLOG"
		out=$LOGDIR/migrate-cut-$step.out
		timeout 600 migrctl migrate --pid "$WP" --to "$B_IP" >"$out" 2>&1
		rc=$?
		sed 's/^/    /' "$out"
		"cut_$where"
		NAME=${step}_mover_traffic_after ok ops_grow "$MLOG"
		say "$step.checked"
		await "$step.done" 300 || fail "b_done_$step"
		[ "$where" = back ] || break
	else
		touch "$flag"
		say "$step.armed"
		for _ in $(seq 1200); do [ -e "$held" ] && break; sleep 0.1; done
		check "b_${step}_held" test -e "$held"
		kill -KILL "$MIGRD"
		t0=$SECONDS
		wait "$MIGRD" 2>/dev/null
		rm -f "$flag" "$held"
		mlog=$LOGDIR/migrate-cut-migrd-b-$step.log
		start_test_migrd migrate-cut "$mlog"
		echo "    migrd killed, and another started, in $((SECONDS - t0)) s"
		if [ "$where" = back ]; then
			NAME=b_${step}_nothing_left ok nothing_left
		else
			logged "b_${step}_migrd_takes_copy_back" 'resumed here before migrd stopped' "$mlog"
		fi
		await "$step.checked" 600 || fail "a_checked_$step"
		if [ "$where" = there ]; then
			tp=$(cat "$SYNC/mover-there")
			NAME=b_${step}_mover_runs_here ok runs_here "$tp"
			logged "b_${step}_committed" "committed; pid $tp runs here" "$mlog"
		fi
		NAME=${step}_partner_traffic_after ok ops_grow "$PLOG"
		say "$step.done"
		[ "$where" = back ] || break
	fi
done

# the ends: the mover's first (each waits for the other's last word),
# wherever it runs
if [ "$role" = a ]; then
	if [ -s "$SYNC/mover-there" ]; then
		say termed # B ends it, and says its verdict
		wait "$NS_HOLDER" 2>/dev/null
	else
		kill -TERM "$WP"
		say termed
		traffic_verdict mover_verified "$NS_HOLDER" "$MLOG"
	fi
	say "done"
else
	await termed 300 || fail b_saw_termed
	if [ -s "$SYNC/mover-there" ]; then
		tp=$(cat "$SYNC/mover-there")
		kill -TERM "$tp"
	fi
	kill -TERM "$PP"
	traffic_verdict partner_verified "$PP" "$PLOG"
	if [ -s "$SYNC/mover-there" ]; then
		for _ in $(seq 600); do gone "$tp" && break; sleep 0.2; done
		check mover_verified_here grep -q 'migr-traffic: PASS' "$MLOG"
		tail -n 1 "$MLOG" | sed 's/^/    /'
		for n in $(ip netns list | awk '/^migr-/ { print $1 }'); do ns_del "$n"; done
	fi
	await "done" 300 || fail b_saw_done
	ns_del cpt
fi
[ "$role" = a ] && ns_del cwl
kill -TERM "$MIGRD" 2>/dev/null
wait "$MIGRD" 2>/dev/null
summary "migrate-cut $role"
