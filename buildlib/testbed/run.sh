#!/bin/bash
# Run commands in QEMU (TCG) guests of the test bed (buildlib/testbed/prepare.sh)
# and return their output and exit code.
#
# usage: buildlib/testbed/run.sh [OPTIONS] -- CMD [ARG...]
#        buildlib/testbed/run.sh --two [--nics 2] [OPTIONS] --a 'CMD_A' --b 'CMD_B'
#   --nics 2       with --two: a second NIC per VM, eth1 with rxe1 (see below)
#   --mem SIZE     guest memory (default 2G)
#   --smp N        guest CPUs (default 2 for one VM, or $MIGR_TESTBED_SMP;
#                  1 each for --two)
#   --timeout S    limit for the command(s), in seconds (default 600)
#   -e VAR=VALUE   set VAR for the command(s) (repeatable)
#   --debug        also stream the guest console (kernel messages) to stderr
#   --rootfs DIR   boot DIR as the guests' root (default: the test bed's rootfs)
#
# One VM: rdma_rxe, veth0 (10.0.0.1/24) + veth1, rxe0 on veth0. Two VMs: A and
# B joined by a QEMU UDP socket link, 10.9.0.1 and 10.9.0.2 on eth0, rxe0 on
# eth0 in each. --nics 2: A (eth0 10.9.0.1, eth1 10.9.0.11) and B (eth0
# 10.9.0.2, eth1 10.9.0.12) on one shared segment (a QEMU hub in each VM,
# joined by the UDP link), rxe0 on eth0 and rxe1 on eth1, RoCEv2 IPv4 GID at
# index 1 of each; each address answers ARP only on its own NIC. The repo
# (and $MIGR_BUILD) is shared read-write at the same absolute path; commands
# run with the host's cwd, MIGR_GUEST=1, by bash. A single CMD word is a shell
# string (bash -c); several words are an argv.
# A run whose VM did not boot (a guest kernel panic) is retried once.
# MIGR_TESTBED_RXE_KO=PATH (a .ko under the repo or $MIGR_BUILD, e.g. what
# buildlib/build-rxe-module.sh prints): the guests load that rdma_rxe
# (migr's, migr_rxe(7)) instead of the stock one, for a whole suite on it.
# Exit code: the command's; 124 if it timed out; 125 if a VM failed (no boot,
# QEMU error). Logs: $MIGR_BUILD/testbed-logs/<run>/ (console-*.log = kernel).
set -euo pipefail
. "$(dirname "$0")/../lib/common.sh"

TB=$MIGR_CACHE/testbed
K=$(sed -n 's/^linux-image-\(.*\)=.*/\1/p' "$TB/stamps/kernel" 2>/dev/null || true)
[ -z "${MIGR_TESTBED_RXE_KO:-}" ] || [ -f "$MIGR_TESTBED_RXE_KO" ] ||
	die "MIGR_TESTBED_RXE_KO: no module $MIGR_TESTBED_RXE_KO (buildlib/build-rxe-module.sh)"
BOOT_TIMEOUT=${MIGR_BOOT_TIMEOUT:-240} # boot to rxe0 takes ~5 s; generous for a loaded host
KEEP_LOGS=40
# The emulated CPU: Westmere (SSE4.2, POPCNT, PCLMULQDQ for rxe's CRC; no
# AVX, no XSAVE) without CMPXCHG16B. Guest kernels died now and then right
# after SLUB's per-CPU CMPXCHG16B, with EFLAGS holding a pointer (TF set,
# reserved bits set), then a double fault: QEMU 7.2's TCG; without the
# instruction SLUB takes its other path. See docs/testbed.md.
QEMU_CPU=${MIGR_QEMU_CPU:-Westmere,-cx16}

usage() { sed -n '5,13s/^# \{0,1\}//p' "$0" >&2; exit 2; }

orig_args=("$@") # for the one retry of a run whose VM did not boot
two=0 nics=1 mem=2G smp="" timeout=600 debug=0 cmd_a="" cmd_b="" extra_env=() rootfs=""
while [ $# -gt 0 ]; do
	case $1 in
	--two) two=1; shift ;;
	--nics) nics=${2:?}; shift 2 ;;
	--mem) mem=${2:?}; shift 2 ;;
	--smp) smp=${2:?}; shift 2 ;;
	--timeout) timeout=${2:?}; shift 2 ;;
	-e) [[ ${2:-} == [A-Za-z_]*=* ]] || die "-e wants VAR=VALUE"; extra_env+=("$2"); shift 2 ;;
	--a) cmd_a=${2:?}; shift 2 ;;
	--b) cmd_b=${2:?}; shift 2 ;;
	--debug) debug=1; shift ;;
	--rootfs) rootfs=${2:?}; shift 2 ;;
	--) shift; break ;;
	-h | --help) usage ;;
	-*) die "unknown option '$1' (the command goes after --)" ;;
	*) break ;;
	esac
done
[[ $timeout =~ ^[0-9]+$ ]] && [ "$timeout" -gt 0 ] || die "--timeout wants a number of seconds"
[[ $nics == [12] ]] || die "--nics wants 1 or 2"
[ "$nics" = 1 ] || [ $two = 1 ] || die "--nics 2 needs --two"
if [ $two = 1 ]; then
	[ -n "$cmd_a" ] && [ -n "$cmd_b" ] && [ $# -eq 0 ] || die "--two wants --a 'CMD_A' and --b 'CMD_B' (and nothing after --)"
	smp=${smp:-1}
else
	[ $# -gt 0 ] || die "no command (usage: run.sh [OPTIONS] -- CMD...)"
	[ -z "$cmd_a$cmd_b" ] || die "--a/--b need --two"
	smp=${smp:-${MIGR_TESTBED_SMP:-2}}
fi
[ "$(id -u)" = 0 ] || die "must run as root"

# Prepare (or update) the test bed if needed; then hold it shared so that a
# concurrent prepare.sh does not change it under our VMs.
"$MIGR_TOP/buildlib/testbed/prepare.sh" --check || "$MIGR_TOP/buildlib/testbed/prepare.sh"
K=$(sed -n 's/^linux-image-\(.*\)=.*/\1/p' "$TB/stamps/kernel")
rootfs=${rootfs:-$TB/rootfs}
[ -x "$rootfs/usr/bin/bash" ] && [ -d "$rootfs/usr/lib/modules/$K" ] ||
	die "--rootfs $rootfs: not a guest root with kernel $K's modules"
exec 8>"$MIGR_CACHE/testbed.lock"
wait_lock 8 -s 3600 "the test bed's preparation"

# At most two VMs on this host at once (2 cores): one lock file per VM slot,
# host-wide (not in $MIGR_CACHE, which another checkout may set differently).
slotdir=/run/lock
[ -d "$slotdir" ] && [ -w "$slotdir" ] || slotdir=/tmp
slots=() slot_fds=()
# All N slots or none: two runs of two VMs that took one slot each would
# wait for each other for ever.
take_slots() { # take_slots N
	local fd i said=0
	while [ ${#slots[@]} -lt "$1" ]; do
		for i in 0 1; do
			[ ${#slots[@]} -lt "$1" ] || break
			exec {fd}>"$slotdir/migr-vm-slot$i.lock"
			if flock -n "$fd"; then slots+=("$i") slot_fds+=("$fd"); else exec {fd}>&-; fi
		done
		if [ ${#slots[@]} -lt "$1" ]; then
			for fd in "${slot_fds[@]}"; do exec {fd}>&-; done
			slots=() slot_fds=()
			[ $said = 1 ] || log "waiting for a free VM slot (at most 2 VMs run at once)"
			said=1
			sleep "1.$((RANDOM % 10))"
		fi
	done
}

# The per-run directory: shared with the guests as /migr, kept as the log.
logs=$MIGR_BUILD/testbed-logs
run=$logs/$(date +%Y%m%d-%H%M%S)-$$
mkdir -p "$run"
ln -sfn "${run##*/}" "$logs/last"
ls -1d "$logs"/20*-* 2>/dev/null | head -n -$KEEP_LOGS | xargs -r rm -rf
cp "$MIGR_TOP/buildlib/testbed/guest-init.sh" "$run/"

# Shares at the same path in the guest: the repo, and the build dir if outside it.
shares=("$MIGR_TOP")
case $MIGR_BUILD/ in "$MIGR_TOP"/*) ;; *) shares+=("$MIGR_BUILD") ;; esac
# The guest build once more, over its place in those, cached in the guest
# (9p's cache=loose): nothing changes it while a guest runs, and each of
# the tests' hundreds of programs started from it took twice as long
# uncached (ibv_devinfo 0.5 s against 0.23 s in a guest under TCG).
cached=()
[ ! -d "$MIGR_BUILD/trixie" ] || cached=("$MIGR_BUILD/trixie")
cwd=$PWD
case $cwd/ in
"$MIGR_TOP"/* | "$MIGR_BUILD"/*) ;;
*) log "warning: cwd $cwd is not shared with the guest; the command runs in $MIGR_TOP"; cwd=$MIGR_TOP ;;
esac

write_job() { # write_job ROLE IP[,IP1] CMD...: IP on eth0, IP1 on eth1 (--nics 2)
	local role=$1 ip=${2%%,*} ip1=""
	[ "$ip" = "$2" ] || ip1=${2#*,}
	shift 2
	printf 'MIGR_SHARES=%q\nMIGR_CACHED_SHARES=%q\nMIGR_IP=%q\nMIGR_IP1=%q\nMIGR_TIMEOUT=%q\nMIGR_RXE_KO=%q\n' \
		"${shares[*]}" "${cached[*]}" "$ip" "$ip1" "$timeout" "${MIGR_TESTBED_RXE_KO:-}" >"$run/env-$role"
	{
		echo "# job $role of run.sh"
		printf 'cd -- %q || exit 125\n' "$cwd"
		printf 'exec env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM=dumb MIGR_GUEST=1 MIGR_ROLE=%q MIGR_RUN=%q' "$role" "${run##*/}"
		[ ${#extra_env[@]} -eq 0 ] || printf ' %q' "${extra_env[@]}"
		if [ $# -eq 1 ]; then printf ' bash -c %q\n' "$1"; else printf ' %q' "$@"; echo; fi
	} >"$run/job-$role.sh"
	: >"$run/console-$role.log"
	: >"$run/output-$role.log"
}

declare -A qpid=()
tails=()
start_vm() { # start_vm ROLE [QEMU NET ARGS...]
	local role=$1 i=0 d
	shift
	local args=(
		-accel tcg,thread=multi -cpu "$QEMU_CPU" -m "$mem" -smp "$smp" -nodefaults -display none -no-reboot
		-kernel "$TB/kernel/boot/vmlinuz-$K" -initrd "$TB/initrd.gz"
		-append "console=ttyS0 quiet panic=-1 mitigations=off migr.role=$role ${MIGR_KERNEL_ARGS:-}"
		-fsdev "local,id=rootfs,path=$rootfs,security_model=passthrough,readonly=on"
		-device virtio-9p-pci,fsdev=rootfs,mount_tag=rootfs
		-fsdev "local,id=migr,path=$run,security_model=none"
		-device virtio-9p-pci,fsdev=migr,mount_tag=migr
		-serial "file:$run/console-$role.log"
		-device virtio-serial-pci -chardev "file,id=out,path=$run/output-$role.log"
		-device virtserialport,chardev=out,name=migr.out
	)
	for d in "${shares[@]}" "${cached[@]}"; do
		args+=(-fsdev "local,id=share$i,path=$d,security_model=none,multidevs=remap"
			-device "virtio-9p-pci,fsdev=share$i,mount_tag=share$i")
		i=$((i + 1))
	done
	echo "qemu-system-x86_64 ${args[*]} $*" >"$run/qemu-$role.cmd"
	# --pdeathsig: QEMU dies with this script even if it is SIGKILLed.
	setpriv --pdeathsig KILL qemu-system-x86_64 "${args[@]}" "$@" </dev/null >"$run/qemu-$role.err" 2>&1 &
	qpid[$role]=$!
}
stream() { # stream ROLE PREFIX FILE [>&2]: follow FILE until ROLE's QEMU is gone
	tail -n +1 -s 0.2 -F --pid="${qpid[$1]}" "$3" 2>/dev/null | if [ -n "$2" ]; then sed -u "s/^/$2/"; else cat; fi &
	tails+=($!)
}

alive() { local p; for p in "${qpid[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done; return 1; }
kill_vms() {
	local p
	for p in "${qpid[@]}"; do kill "$p" 2>/dev/null || true; done
	for _ in 1 2 3 4 5 6 7 8 9 10; do alive || return 0; sleep 0.2; done
	for p in "${qpid[@]}"; do kill -9 "$p" 2>/dev/null || true; done
}
cleanup() {
	kill_vms
	local p
	for p in "${tails[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'log "interrupted; stopping the VMs (logs: $run)"; exit 130' INT TERM HUP

if [ $two = 1 ]; then
	roles=(A B)
	if [ "$nics" = 2 ]; then
		write_job A 10.9.0.1,10.9.0.11 "$cmd_a"
		write_job B 10.9.0.2,10.9.0.12 "$cmd_b"
	else
		write_job A 10.9.0.1 "$cmd_a"
		write_job B 10.9.0.2 "$cmd_b"
	fi
	take_slots 2
	# Two free UDP ports for the link, checked against the host's open sockets.
	while :; do
		port=$((20000 + RANDOM % 20000 * 2))
		ss -Huan "( sport = :$port or sport = :$((port + 1)) )" 2>/dev/null | grep -q . || break
	done
	echo "udp link 127.0.0.1:$port <-> 127.0.0.1:$((port + 1))" >"$run/net"
	if [ "$nics" = 2 ]; then
		# One Ethernet segment for all four NICs: in each QEMU, a hub joins
		# eth0, eth1 and the UDP link to the other QEMU's hub. rxe hands a
		# packet to the rxe device of the NIC it arrived on, which drops it
		# unless the destination IP is one of its own GIDs; so A's rxe1 can
		# reach B's rxe0 only if eth1's frames can reach B's eth0.
		echo "nics 2: hub per VM (eth0 + eth1 + link); A 10.9.0.1 eth0, 10.9.0.11 eth1; B 10.9.0.2 eth0, 10.9.0.12 eth1" >>"$run/net"
		hub_net() { # hub_net LOCALPORT PEERPORT N: set net=(QEMU args of VM N's hub)
			net=(-netdev "socket,id=link,udp=127.0.0.1:$2,localaddr=127.0.0.1:$1"
				-netdev hubport,id=hub_link,hubid=0,netdev=link
				-netdev hubport,id=n0,hubid=0 -device "virtio-net-pci,netdev=n0,mac=52:54:00:4d:00:0$3"
				-netdev hubport,id=n1,hubid=0 -device "virtio-net-pci,netdev=n1,mac=52:54:00:4d:01:0$3")
		}
		hub_net "$port" $((port + 1)) 1
		start_vm A "${net[@]}"
		hub_net $((port + 1)) "$port" 2
		start_vm B "${net[@]}"
	else
		start_vm A -netdev "socket,id=n0,udp=127.0.0.1:$((port + 1)),localaddr=127.0.0.1:$port" \
			-device virtio-net-pci,netdev=n0,mac=52:54:00:4d:00:01
		start_vm B -netdev "socket,id=n0,udp=127.0.0.1:$port,localaddr=127.0.0.1:$((port + 1))" \
			-device virtio-net-pci,netdev=n0,mac=52:54:00:4d:00:02
	fi
	stream A "A| " "$run/output-A.log"
	stream B "B| " "$run/output-B.log"
else
	roles=(vm)
	write_job vm "" "$@"
	take_slots 1
	start_vm vm
	stream vm "" "$run/output-vm.log"
fi
if [ $debug = 1 ]; then
	for r in "${roles[@]}"; do stream "$r" "[console $r] " "$run/console-$r.log" >&2; done
fi

# Watch: boot deadline until each guest reports up, then the command's limit
# (the guest enforces it; this is the backstop for a hung guest).
failure="" t0=$SECONDS
declare -A up_at=()
while alive; do
	sleep 0.5
	el=$((SECONDS - t0))
	for r in "${roles[@]}"; do
		if [ -z "${up_at[$r]:-}" ]; then
			if [ -f "$run/up-$r" ]; then up_at[$r]=$el
			elif [ $el -gt "$BOOT_TIMEOUT" ]; then failure="boot:$r"
			fi
		elif [ $el -gt $((up_at[$r] + timeout + 30)) ] && [ ! -f "$run/rc-$r" ]; then
			failure="hang:$r"
		fi
		# A guest whose kernel died leaves the other waiting for it until
		# its own limits: stop both now (the verdict below says why).
		if [ $two = 1 ] && [ ! -f "$run/rc-$r" ] && [ -z "$failure" ] &&
			{ ! kill -0 "${qpid[$r]}" 2>/dev/null ||
				grep -qE "Oops: double fault|Kernel panic" "$run/console-$r.log" 2>/dev/null; }; then
			failure="died:$r"
		fi
	done
	[ -z "$failure" ] || break
done
[ -z "$failure" ] || kill_vms
for p in "${tails[@]}"; do wait "$p" 2>/dev/null || true; done
tails=()

# Verdict per guest, then overall: the first failure's code.
final=0
for r in "${roles[@]}"; do
	rc=125 why=""
	if [ -f "$run/rc-$r" ]; then
		rc=$(cat "$run/rc-$r")
		if [ -f "$run/setup-failed-$r" ]; then why="guest setup failed: $(sed 's/^MIGR-GUEST-SETUP-FAILED: //' "$run/setup-failed-$r")"
		elif [ -f "$run/timeout-$r" ]; then rc=124 why="the command timed out after ${timeout}s"
		fi
	elif [ "$failure" = "boot:$r" ]; then why="the VM did not boot within ${BOOT_TIMEOUT}s"
	elif [ "$failure" = "hang:$r" ]; then rc=124 why="the guest stopped responding (command limit ${timeout}s)"
	elif [[ $failure == died:* ]] && [ "$failure" != "died:$r" ]; then why="stopped: VM ${failure#died:} died"
	elif [ ! -f "$run/up-$r" ]; then why="the VM failed to boot (QEMU: $(tail -n 1 "$run/qemu-$r.err" 2>/dev/null))"
	else why="the guest died before reporting a result"
	fi
	label=$([ $two = 1 ] && echo "VM $r" || echo "VM")
	if [ "$rc" != 0 ]; then
		[ -z "$why" ] || log "$label: $why"
		log "$label: exit code $rc (logs: $run)"
		if [ -s "$run/dmesg-$r.txt" ] && [ -f "$run/up-$r" ] && [ ! -f "$run/setup-failed-$r" ]; then
			# Only what the kernel said while the command ran: boot chatter is noise.
			echo "---- $label: kernel messages while the command ran (dmesg tail) ----" >&2
			awk -F'[][]' -v t="$(cat "$run/up-$r")" '$2 + 0 >= t + 0' "$run/dmesg-$r.txt" | tail -n 40 |
				grep . >&2 || echo "(none)" >&2
		elif [ -s "$run/dmesg-$r.txt" ]; then
			echo "---- $label: dmesg (tail) ----" >&2
			tail -n 40 "$run/dmesg-$r.txt" >&2
		else
			echo "---- $label: console (tail) ----" >&2
			tail -n 40 "$run/console-$r.log" | tr -d '\r' >&2
			tail -n 5 "$run/qemu-$r.err" >&2
		fi
		[ "$final" != 0 ] || final=$rc
	elif [ $two = 1 ]; then
		log "$label: exit code 0"
	fi
done

# A guest kernel that dies while booting (TCG now and then panics before
# the command starts) says nothing about the command: run it once more.
# So does one that panics later: TCG now and then leaks a single-step
# debug exception into the guest kernel (a double fault in the kernel's
# allocator, or a WARNING in exc_debug_kernel when it survives), and the
# network stack's softirq has died with a NULL pointer in net_rx_action,
# whatever ran. The first run's logs stay, and the retry says why it
# happened (the kernel's first BUG line). At most twice.
tries=${MIGR_TESTBED_RETRY:-0}
if [ "$final" != 0 ] && [ "$tries" -lt 2 ]; then
	for r in "${roles[@]}"; do
		if [ ! -f "$run/up-$r" ]; then
			log "a VM did not boot; running the command once more"
		elif [ ! -f "$run/rc-$r" ] && grep -qE "Oops: double fault|Kernel panic" "$run/console-$r.log" 2>/dev/null; then
			what=$(grep -m1 -aoE 'BUG: [^
]*|Oops: double fault|Kernel panic - [^
]*' "$run/console-$r.log")
			rip=$(grep -m1 -aoE 'RIP: 0010:[^ 
]+' "$run/console-$r.log")
			log "VM $r: the guest kernel died (${what:-panic}${rip:+ at ${rip#RIP: 0010:}}; logs: $run); running the command once more"
		else
			continue
		fi
		cleanup
		trap - EXIT
		for fd in "${slot_fds[@]}"; do eval "exec $fd>&-"; done
		exec env MIGR_TESTBED_RETRY=$((tries + 1)) "$0" "${orig_args[@]}"
	done
fi
exit "$final"
