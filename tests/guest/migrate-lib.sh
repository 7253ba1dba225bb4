# What the tests of migrctl migrate share (sourced after lib.sh)
# shellcheck shell=bash

# NAME=N ok CMD...: a check named N that runs a shell function too
ok() { if "$@"; then pass "$NAME"; else fail "$NAME"; fi; }
# runs_here PID: a migr process of this host's migrd, on rxe0, not parked
runs_here() { migrctl status --pid "$1" --json | grep -q '"lower":"rxe0"'; }
gone() { ! kill -0 "$1" 2>/dev/null; }
# back_here PID LOG: PID was resumed here after a failed move: it runs on
# rxe0, or it already ended on its own, its log (LOG) saying it saw its
# dead peer's side channel close (a migr-traffic whose peer is gone ends
# when the peer's FIN reaches it: when, the test cannot choose)
back_here() {
	runs_here "$1" && return 0
	gone_soon "$1" && grep -Eq 'peer closed the side channel|side channel to the peer lost' "$2"
}
gone_soon() { for _ in $(seq 100); do gone "$1" && return 0; sleep 0.1; done; return 1; }

# port_of ARGS: the TCP port a program's -p or --port names in ARGS
port_of() {
	local p=${1##*-p }
	[ "$p" != "$1" ] || p=${1##*--port }
	echo "${p%% *}"
}
# fresh_ns NAME ADDR MAC: NAME made anew (ns_make, ADDR/24), and no
# migr-* namespace a move left here before
fresh_ns() {
	local n
	for n in $(ip netns list | awk '/^migr-/ { print $1 }') "$1"; do ns_del "$n"; done
	ns_make "$1" "$2/24" "$3"
}
# listening NETNS PORT: a server in NETNS listens on TCP PORT (30 s)
listening() {
	for _ in $(seq 300); do
		nsenter --net="/run/netns/$1" ss -Hltn "( sport = :$2 )" | grep -q . && return 0
		sleep 0.1
	done
	return 1
}
# connected PID: PID has QPs, all ready to receive (RTR: perftest's
# receiving side stays there) or send (RTS), within 60 s
connected() {
	local s
	for _ in $(seq 600); do
		s=$(migrctl status --pid "$1" --json 2>/dev/null | grep -o '"state":[0-9]*' | sort -u | tr -d '\n')
		[ -n "$s" ] && [ -z "${s//\"state\":[23]/}" ] && return 0
		sleep 0.1
	done
	return 1
}
# moved NAME ARGS... / refused NAME PATTERN ARGS...: migrctl migrate
# ARGS, its output in $LOGDIR/NAME.out (shown); pass if it succeeded /
# failed saying PATTERN; a failure shows it (CI's summary keeps those lines)
moved() {
	local name=$1
	shift
	if timeout 600 migrctl migrate "$@" >"$LOGDIR/$name.out" 2>&1; then
		pass "$name"
		sed 's/^/    /' "$LOGDIR/$name.out"
	else
		fail "$name" "$LOGDIR/$name.out"
	fi
}
refused() {
	local name=$1 pat=$2
	shift 2
	if ! timeout 600 migrctl migrate "$@" >"$LOGDIR/$name.out" 2>&1 &&
		grep -q -- "$pat" "$LOGDIR/$name.out"; then
		pass "$name"
		sed 's/^/    /' "$LOGDIR/$name.out"
	else
		fail "$name" "$LOGDIR/$name.out"
	fi
}
# logged NAME PATTERN LOG: pass if LOG (a migrd's log, or migrctl's output)
# has PATTERN; a failure shows LOG's end, which says what happened instead
logged() {
	if grep -q -- "$2" "$3"; then pass "$1"; else fail "$1" "$3"; fi
}

# criu_wrapper: $RUN/criu, the CRIU migrd runs (migrd.conf "criu"): the
# host's, except that its restore fails while $FAIL_FLAG ($RUN/fail-restore)
# exists, as a real one may (images it cannot take, a pid taken since the
# check), and waits while $HOLD_FLAG ($RUN/hold-restore) exists, having
# said so in $HELD_FLAG: a test kills migrd there, sure that the restore
# is under way and not yet over (at most 120 s, then it goes on); while
# $HOLD_AFTER_FLAG ($RUN/hold-restored) exists, it waits so once CRIU
# restored the process and before it tells migrd (the copy there, parked)
criu_wrapper() {
	FAIL_FLAG=$RUN/fail-restore
	HOLD_FLAG=$RUN/hold-restore
	HOLD_AFTER_FLAG=$RUN/hold-restored
	HELD_FLAG=$RUN/restore-held
	rm -f "$FAIL_FLAG" "$HOLD_FLAG" "$HOLD_AFTER_FLAG" "$HELD_FLAG"
	cat >"$RUN/criu" <<WRAP
#!/bin/sh
# hold FLAG: wait while FLAG exists, having said so (at most 120 s)
hold() {
	touch $HELD_FLAG
	i=0
	while [ -e "\$1" ] && [ \$i -lt 1200 ]; do sleep 0.1; i=\$((i + 1)); done
}
if [ "\$1" = restore ] && [ -e $FAIL_FLAG ]; then
	echo "$(basename "$0"): this restore fails on purpose" >&2
	exit 1
fi
[ "\$1" = restore ] && [ -e $HOLD_FLAG ] && hold $HOLD_FLAG
if [ "\$1" = restore ] && [ -e $HOLD_AFTER_FLAG ]; then
	/usr/sbin/criu "\$@"
	rc=\$?
	hold $HOLD_AFTER_FLAG
	exit \$rc
fi
exec /usr/sbin/criu "\$@"
WRAP
	chmod 0755 "$RUN/criu"
}

# criu_migrd NAME LOG [CONF_LINE...]: this test's migrd (start_test_migrd,
# lib.sh) with a migrd.conf of its own: migr's CRIU plugin from the build,
# images under $RUN/state, and CONF_LINEs
criu_migrd() {
	local name=$1 log=$2
	shift 2
	printf '%s\n' "criu_plugins = $MIGR_BUILD_DIR/lib/criu" "state_dir = $RUN/state" "$@" >"$RUN/migrd.conf"
	export MIGRD_CONF=$RUN/migrd.conf
	start_test_migrd "$name" "$log"
}
