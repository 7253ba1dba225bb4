#!/bin/bash
# In one guest: podman checkpoints and restores a container that runs an
# RDMA program over migr_rxe0, Debian's unmodified CRIU loading migr's
# plugin when the runtime runs it (docs/containers.md). The image is built
# here from the guest's own files (podman import, no registry): the
# programs' libraries; the build tree is bind-mounted read-only,
# /dev/infiniband/* passed with --device. For each runtime of
# PODMAN_RUNTIMES (default "crun runc"; crun runs CRIU through libcriu,
# runc itself, both as criu swrk):
# 1. without the plugin the checkpoint fails, CRIU's log names the uverbs
#    device, and the container runs on, its traffic intact;
# 2. with it, an RDMA program on rxe0 (not migr's) is refused by name and
#    runs on;
# 3. selfpair on migr_rxe0 (the plugin in CRIU's default directory): the
#    checkpoint parks it (PAUSE_DEVICES), the restore queues its resume,
#    and its traffic (every completion and byte checked) goes on;
# 4. the same through a tarball (checkpoint --export, the container
#    removed, restore --import: what a move to another host does), the
#    plugin named by libdir in /etc/criu/default.conf.
# Then with crun:
# 5. migr-traffic in a container on a network namespace of the test's,
#    its partner a migr-traffic client outside that follows it through
#    migrd, their TCP channel kept (--tcp-established): checkpointed and
#    restored here, then through a tarball; the resume's report (4
#    partner QPs followed, nothing lost) and both verdicts checked.
# Run it in a guest of one vCPU (run.sh --smp 1): with two, the guest
# kernel died of int3 oopses while containers came and went
# (docs/containers.md).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ns.sh"
SELFPAIR=$MIGR_BUILD_DIR/tests/switch/selfpair
PLUGIN=$MIGR_BUILD_DIR/lib/criu/migr_plugin.so
CONTROL=$MIGR_TOP/tests/switch/control.py
# CRIU's default plugin directory: what the migr-criu-plugin package fills,
# and where CRIU looks when podman runs it (no libdir in its request)
CRIU_LIBDIR=/usr/lib/criu
WORK=/run/migr-podman
IMAGE=localhost/migr-rdma:test
RUNTIMES=${PODMAN_RUNTIMES-crun runc}

rm -rf "$WORK" && mkdir -p "$WORK"
# the containers get the build tree as it is on the host (lib.sh)
untrim_providers && pass providers_untrimmed || fail providers_untrimmed
check plugin_built test -f "$PLUGIN"
check podman_present podman --version
podman --version
criu --version | head -n 1

# podman without systemd (the guest's init is a shell script): cgroupfs,
# events in a file; its storage on a tmpfs of its own (the guest's root
# is an overlay, which overlayfs refuses as an upper layer)
mkdir -p /var/lib/containers/storage /etc/containers
mount -t tmpfs -o size=1G tmpfs /var/lib/containers/storage
cat >/etc/containers/containers.conf <<EOF
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
podman info --format '{{.Host.OCIRuntime.Name}} {{.Store.GraphDriverName}} cgroups {{.Host.CgroupsVersion}}' 2>"$LOGDIR/podman-info.log"

# fn_check NAME FUNCTION ARGS...: check for a function of this script
# (check runs commands under timeout, which knows no functions)
fn_check() {
	local name=$1 log=$LOGDIR/$1.log
	shift
	if "$@" >"$log" 2>&1; then pass "$name"; else fail "$name" "$log"; fi
}

# timed NAME CMD...: check NAME CMD, printing how long it took
timed() {
	local t=$SECONDS
	check "$@"
	echo "    $1: $((SECONDS - t)) s"
}

# The image: the programs' shared libraries (not the build tree's own,
# which come bind-mounted), dash as /bin/sh, a passwd
rootfs=$WORK/rootfs
make_image() {
	local f d
	mkdir -p "$rootfs"/{usr/bin,usr/lib,usr/lib64,etc,dev,proc,sys,tmp,run}
	ln -s usr/bin "$rootfs/bin"
	ln -s usr/lib "$rootfs/lib"
	ln -s usr/lib64 "$rootfs/lib64"
	cp /usr/bin/dash "$rootfs/usr/bin/dash" && ln -s dash "$rootfs/usr/bin/sh"
	echo 'root:x:0:0:root:/root:/bin/sh' >"$rootfs/etc/passwd"
	echo 'root:x:0:' >"$rootfs/etc/group"
	for f in $(ldd "$SELFPAIR" "$RDMA_BUILD"/bin/migr-traffic /usr/bin/dash \
		"$RDMA_BUILD"/lib/*.so* | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\/.*ld-linux/ { print $1 }' | sort -u); do
		case $f in "$MIGR_TOP"/* | "$MIGR_BUILD_DIR"/*) continue ;; esac
		d=$(readlink -f "$(dirname "$f")")
		mkdir -p "$rootfs$d" && cp -L "$f" "$rootfs$d/"
	done
	tar -C "$rootfs" -czf "$WORK/rootfs.tar.gz" . &&
		podman import "$WORK/rootfs.tar.gz" "$IMAGE"
}
t0=$SECONDS
fn_check image_built make_image
echo "    image: $(du -sh "$WORK/rootfs.tar.gz" | cut -f1) in $((SECONDS - t0)) s"

# plugin_on: migr's plugin in CRIU's default directory (as the package
# installs it); plugin_conf: in the build tree, named by a libdir line in
# /etc/criu/default.conf, which CRIU reads when a runtime starts it too;
# plugin_off: neither
plugin_off() {
	rm -f "$CRIU_LIBDIR/migr_plugin.so"
	sed -i '/^libdir /d' /etc/criu/default.conf 2>/dev/null
	return 0
}
plugin_on() { plugin_off && mkdir -p "$CRIU_LIBDIR" && cp "$PLUGIN" "$CRIU_LIBDIR/"; }
plugin_conf() {
	plugin_off && mkdir -p /etc/criu && echo "libdir $(dirname "$PLUGIN")" >>/etc/criu/default.conf
}

# podman_run NAME RUNTIME [PODMAN OPTION...] -- CMD: CMD in container NAME
# with the RDMA devices, the build tree (read-only) and the logs (CMD's
# output appended to $LOGDIR/podman-NAME.log: a bind mount, so the same
# file after a restore, here or from a tarball); no network unless an
# option says one
podman_run() {
	local name=$1 runtime=$2 opts=() devs=() d
	local mounts=(-v "$MIGR_TOP:$MIGR_TOP:ro")
	shift 2
	while [ "$1" != -- ]; do opts+=("$1"); shift; done
	shift
	for d in /dev/infiniband/*; do devs+=(--device "$d"); done
	# a build tree outside the repo ($MIGR_BUILD elsewhere) too
	case $MIGR_BUILD_DIR in "$MIGR_TOP"/*) ;; *) mounts+=(-v "$MIGR_BUILD_DIR:$MIGR_BUILD_DIR:ro") ;; esac
	rm -f "$LOGDIR/podman-$name.log" "$LOGDIR/podman-$name.verbs.log"
	podman --runtime "$runtime" run -d --name "$name" "${devs[@]}" \
		"${mounts[@]}" -v "$LOGDIR:$LOGDIR" \
		-e LD_LIBRARY_PATH="$RDMA_BUILD/lib" -e VERBS_LOG_LEVEL=3 \
		-e VERBS_LOG_FILE="$LOGDIR/podman-$name.verbs.log" "${opts[@]}" \
		"$IMAGE" /bin/sh -c "exec $* >>$LOGDIR/podman-$name.log 2>&1"
}

# run_ctr NAME RUNTIME [DEVICE]: selfpair on DEVICE (migr_rxe0) in
# container NAME, no network; waits for its first rounds
run_ctr() {
	local name=$1
	podman_run "$name" "$2" --network none -- "$SELFPAIR" "${3:-migr_rxe0}" 0 || return 1
	for _ in $(seq 300); do grep -q 'rounds=' "$LOGDIR/podman-$name.log" && return 0; sleep 0.1; done
	podman ps -a
	podman logs "$name"
	cat "$LOGDIR/podman-$name.log"
	return 1
}

# progressing NAME: its selfpair's rounds go up within 20 s
progressing() { selfpair_progressing "$LOGDIR/podman-$1.log" 20; }

# userdata NAME: the container's directory, where podman leaves CRIU's logs
userdata() { podman container inspect -f '{{.StaticDir}}' "$1"; }

# finish NAME: SIGTERM to selfpair (the container's init), its verdict
finish() {
	podman kill --signal TERM "$1" >/dev/null 2>&1
	timeout 60 podman wait "$1" >/dev/null 2>&1
	check "traffic_intact_$1" grep -q 'selfpair: OK' "$LOGDIR/podman-$1.log"
	grep 'selfpair:' "$LOGDIR/podman-$1.log" | tail -n 1
	podman rm -f "$1" >/dev/null 2>&1
}

for rt in $RUNTIMES; do
	# 1. The plugin absent: the checkpoint fails, the container runs on
	plugin_off
	n=noplugin-$rt
	fn_check "started_$n" run_ctr "$n" "$rt"
	timed "checkpoint_refused_$n" sh -c "podman container inspect -f '{{.State.Running}}' $n | grep -q true && ! podman container checkpoint --keep $n"
	cp "$LOGDIR/checkpoint_refused_$n.log" "$LOGDIR/podman-$n.checkpoint.log"
	ud=$(userdata "$n")
	cp "$ud/dump.log" "$LOGDIR/podman-$n.dump.log"
	# CRIU's own refusal: the device's mapping, which it cannot handle
	check "criu_refuses_uverbs_mapping_$n" sh -c "grep -q 'smaps entry: .*/dev/infiniband/uverbs' $ud/dump.log && grep -q \"Error .*Can't handle non-regular mapping\" $ud/dump.log"
	grep -m 1 "Can't handle non-regular mapping" "$ud/dump.log" | sed 's/^/    | /'
	check "still_running_$n" sh -c "podman container inspect -f '{{.State.Running}}' $n | grep -q true"
	if progressing "$n"; then pass "traffic_goes_on_$n"; else fail "traffic_goes_on_$n" "$LOGDIR/podman-$n.log"; fi
	finish "$n"

	# 2. With the plugin, an RDMA program that is not migr's: refused,
	#    naming the pid and the file; the container runs on
	plugin_on
	n=raw-$rt
	fn_check "started_$n" run_ctr "$n" "$rt" rxe0
	timed "checkpoint_refused_$n" sh -c "podman container inspect -f '{{.State.Running}}' $n | grep -q true && ! podman container checkpoint --keep $n"
	cp "$LOGDIR/checkpoint_refused_$n.log" "$LOGDIR/podman-$n.checkpoint.log"
	ud=$(userdata "$n")
	check "refusal_names_pid_and_file_$n" grep -E 'migr: pid [0-9]+ holds fd [0-9]+ /dev/infiniband/uverbs[0-9]+: it is not parked \(not a migr process' "$ud/dump.log"
	grep -m 1 -o 'migr: pid .*' "$ud/dump.log" | sed 's/^/    | /'
	check "still_running_$n" sh -c "podman container inspect -f '{{.State.Running}}' $n | grep -q true"
	if progressing "$n"; then pass "traffic_goes_on_$n"; else fail "traffic_goes_on_$n" "$LOGDIR/podman-$n.log"; fi
	finish "$n"

	# 3. With the plugin: checkpoint (the program parked), restore here
	plugin_on
	n=local-$rt
	fn_check "started_$n" run_ctr "$n" "$rt"
	timed "checkpoint_$n" podman container checkpoint --keep "$n"
	ud=$(userdata "$n")
	cp "$ud/dump.log" "$LOGDIR/podman-$n.dump.log"
	check "plugin_parked_it_$n" grep -q 'migr: pid [0-9]* holds .*: asking it to park' "$ud/dump.log"
	check "stopped_$n" sh -c "podman container inspect -f '{{.State.Status}}' $n | grep -q exited"
	timed "restore_$n" podman container restore --keep "$n"
	cp "$ud/restore.log" "$LOGDIR/podman-$n.restore.log"
	check "resume_queued_$n" grep -q 'migr: pid [0-9]*: resume queued' "$ud/restore.log"
	if progressing "$n"; then pass "traffic_goes_on_$n"; else fail "traffic_goes_on_$n" "$LOGDIR/podman-$n.log"; fi
	finish "$n"

	# 4. Through a tarball, the container removed in between (a move to
	#    another host: its image and bind-mounted paths must be there); the
	#    plugin named by /etc/criu/default.conf this time
	plugin_conf
	n=export-$rt
	fn_check "started_$n" run_ctr "$n" "$rt"
	timed "checkpoint_export_$n" podman container checkpoint --keep --compress gzip --export "$WORK/$n.tar.gz" "$n"
	echo "    tarball: $(stat -c %s "$WORK/$n.tar.gz") bytes"
	ud=$(userdata "$n")
	cp "$ud/dump.log" "$LOGDIR/podman-$n.dump.log"
	check "plugin_parked_it_$n" grep -q 'migr: pid [0-9]* holds .*: asking it to park' "$ud/dump.log"
	# a restoring CRIU without the plugin refuses these images
	check "tarball_inventory_names_plugin_$n" sh -c "tar -xzOf $WORK/$n.tar.gz checkpoint/inventory.img | grep -aq migr"
	check "removed_$n" podman rm -f "$n"
	timed "restore_import_$n" podman container restore --keep --import "$WORK/$n.tar.gz"
	ud=$(userdata "$n")
	cp "$ud/restore.log" "$LOGDIR/podman-$n.restore.log" 2>/dev/null
	check "resume_queued_$n" grep -q 'migr: pid [0-9]*: resume queued' "$ud/restore.log"
	if progressing "$n"; then pass "traffic_goes_on_$n"; else fail "traffic_goes_on_$n" "$LOGDIR/podman-$n.log"; fi
	finish "$n"
done

# 5. migr-traffic in a container, its partner outside: a migr-traffic
#    client here (RC QPs through an SRQ, every op of both APIs, every WR
#    and byte checked at both ends) whose QPs follow the container's
#    through migrd, and whose TCP channel to it (a veth into the
#    container's network namespace, given to podman) is kept by
#    --tcp-established. Checkpointed and restored here, then through a
#    tarball; the client holds its posts meanwhile.
RUN=/run/migr-podman-migrd
export MIGRD_SOCKET=$RUN/migrd.sock
mkdir -p "$RUN"
start_test_migrd podman "$LOGDIR/podman-migrd.log"
check migrd_starts test -S "$MIGRD_SOCKET"
ip netns add podnet &&
	ip link add vp-host type veth peer name vp-ctr &&
	ip link set vp-ctr netns podnet &&
	ip addr add 10.77.0.1/24 dev vp-host && ip link set vp-host up &&
	ip -n podnet addr add 10.77.0.2/24 dev vp-ctr &&
	ip -n podnet link set vp-ctr up && ip -n podnet link set lo up
TRAFFIC="-d migr_rxe0 --qps 4 --srq --depth 8 --size 512 --api mixed --mode event -D 1500 --stall-timeout 120 -r 1 --port 18740"

# ops_progressing LOG: migr-traffic's ops (its progress lines) go up
# within 30 s (ns.sh's grows); ops_last LOG: the last count
ops_last() { last_num "$1" 'ops=([0-9]+)'; }
ops_progressing() { grows "$1" 'ops=([0-9]+)' 30; }

# resume_report NAME: the restored server's resume, as its control socket
# reports it (a second resume answers with the first's report): nothing
# lost, the 4 partner QPs followed, the partner held its posts meanwhile
resume_report() {
	local pid
	pid=$(podman container inspect -f '{{.State.Pid}}' "$n")
	nsenter --net=/proc/"$pid"/ns/net python3 "$CONTROL" 1 resume >"$LOGDIR/podman-$1.resume.json"
	check "$1" python3 - "$LOGDIR/podman-$1.resume.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["resume"][0]
assert r["ok"] and not r["rolled_back"] and r["lost"] == 0 and r["partners"] == 4, r
print("    resumed on %s: rebuild %.1f ms, the partner held its posts %.0f ms"
      % (r["to"], r["phases_ms"]["rebuild"], r["partner_held_ms"]))
PY
	cat "$LOGDIR/$1.log"
}

plugin_on
rt=crun
n=traffic-$rt
TLOG=$LOGDIR/podman-$n.log
CLOG=$LOGDIR/podman-$n-client.log
fn_check "started_$n" podman_run "$n" "$rt" --network ns:/run/netns/podnet \
	-v "$RUN:$RUN" -e MIGRD_SOCKET="$MIGRD_SOCKET" -- "$RDMA_BUILD/bin/migr-traffic" $TRAFFIC --server
# its control socket: @migr/1 in the container's network namespace
fn_check "serves_control_socket_$n" ns_started "$(podman container inspect -f '{{.State.Pid}}' "$n")"
migr-traffic $TRAFFIC --client 10.77.0.2 --connect-timeout 60 >"$CLOG" 2>&1 &
C=$!
if started $C && ops_progressing "$CLOG"; then pass "partner_connected_$n"; else fail "partner_connected_$n" "$TLOG"; fi

timed "checkpoint_$n" podman container checkpoint --keep --tcp-established "$n"
ud=$(userdata "$n")
cp "$ud/dump.log" "$LOGDIR/podman-$n.dump.log"
check "plugin_parked_it_$n" grep -q 'migr: pid [0-9]* holds .*: asking it to park' "$ud/dump.log"
# held: the client runs on, its ops still (its posts held, not failed)
held() {
	local o
	o=$(ops_last "$CLOG")
	sleep 3
	[ "$o" = "$(ops_last "$CLOG")" ] && kill -0 $C
}
fn_check "partner_holds_while_dumped_$n" held
sleep 5
timed "restore_$n" podman container restore --keep --tcp-established "$n"
cp "$ud/restore.log" "$LOGDIR/podman-$n.restore.log"
check "resume_queued_$n" grep -q 'migr: pid [0-9]*: resume queued' "$ud/restore.log"
if ops_progressing "$CLOG"; then pass "partner_goes_on_$n"; else fail "partner_goes_on_$n" "$CLOG"; fi
resume_report "partner_followed_$n"

timed "checkpoint_export_$n" podman container checkpoint --keep --tcp-established --compress gzip --export "$WORK/$n.tar.gz" "$n"
check "removed_$n" podman rm -f "$n"
timed "restore_import_$n" podman container restore --keep --tcp-established --import "$WORK/$n.tar.gz"
ud=$(userdata "$n")
cp "$ud/restore.log" "$LOGDIR/podman-$n.import.restore.log" 2>/dev/null
check "resume_queued_import_$n" grep -q 'migr: pid [0-9]*: resume queued' "$ud/restore.log"
if ops_progressing "$CLOG"; then pass "partner_goes_on_import_$n"; else fail "partner_goes_on_import_$n" "$CLOG"; fi
resume_report "partner_followed_import_$n"
sleep 2

# The verdicts, once both were told to stop (SIGTERM: each drains, then
# they exchange their counts): the client's, then the container's
kill -TERM $C
podman kill --signal TERM "$n" >/dev/null 2>&1
traffic_verdict "partner_traffic_verified_$n" $C "$CLOG"
timeout 120 podman wait "$n" >/dev/null 2>&1
check "container_traffic_verified_$n" grep -q 'migr-traffic: PASS' "$TLOG"
tail -n 1 "$TLOG" | sed 's/^/    /'
podman rm -f "$n" >/dev/null 2>&1
kill -TERM "$MIGRD" 2>/dev/null
wait "$MIGRD" 2>/dev/null
ip netns del podnet 2>/dev/null

plugin_off
summary podman
