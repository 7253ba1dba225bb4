#!/bin/bash
# Prepare the QEMU (TCG) test bed that buildlib/testbed/run.sh boots: Debian 13's
# pinned kernel, a busybox initramfs that mounts a read-only 9p root under a
# tmpfs overlay, and a trixie rootfs with the RDMA userspace and our build's
# runtime libraries. Cached in $MIGR_CACHE/testbed; each part has a stamp and
# is rebuilt only when what it is made of changes.
#
# usage: buildlib/testbed/prepare.sh [--check | --refresh]
#   --check    exit 0 if everything is prepared and current (no network), 1 if not
#   --refresh  rebuild the rootfs and initramfs with trixie's newest packages
set -euo pipefail
. "$(dirname "$0")/../lib/common.sh"

# Pinned: image and modules (and any headers used to build modules) must be one upload.
KERNEL=6.12.107+deb13-amd64
KERNEL_VERSION=6.12.107-1
# The guest's userspace: RDMA tools from trixie (ibverbs-providers so that the
# archive's tools see rxe0 too), test tooling, and the runtime libraries of our
# IN_PLACE rdma-core build (libnl, libudev, libsystemd, OpenSSL, jansson;
# pyverbs links libpython3.13); podman with crun (which loads libcriu2 for
# checkpoints) and runc, for docs/containers.md.
ROOTFS_PACKAGES=(
	kmod iproute2 procps util-linux busybox strace iputils-ping
	ibverbs-utils ibverbs-providers rdmacm-utils perftest qperf criu
	podman crun libcriu2 runc
	python3 python3-pytest libpython3.13
	libnl-3-200 libnl-route-3-200 libudev1 libsystemd0 libssl3t64 libjansson4
)
# Initramfs modules: just what mounting the 9p root under an overlay takes.
INITRAMFS_MODULES=(virtio_pci 9pnet_virtio 9p overlay)

TB=$MIGR_CACHE/testbed
LOCK=$MIGR_CACHE/testbed.lock

mode=${1:-}
case $mode in '' | --check | --refresh) ;; *) sed -n '8,10s/^# \{0,1\}//p' "$0" >&2; exit 2 ;; esac
[ "$(id -u)" = 0 ] || die "must run as root (mmdebstrap, depmod of the guest kernel)"

# The initramfs /init. Its text is part of the initramfs stamp.
read -r -d '' INIT <<'EOF' || true
#!/bin/busybox sh
# initramfs: root = read-only 9p share "rootfs" under a tmpfs overlay; then
# run the per-run guest init from the 9p share "migr" (written by run.sh).
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
fail() { echo "MIGR-INITRAMFS-FAILED: $*"; dmesg | tail -n 30; poweroff -f; sleep 10; }
for m in $(cat /etc/modules); do modprobe "$m" || fail "modprobe $m"; done
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose rootfs /lower || fail "9p rootfs"
mount -t tmpfs -o size=75% tmpfs /upper && mkdir /upper/u /upper/w
mount -t overlay -o lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w overlay /newroot || fail "overlay"
mkdir -p /newroot/migr
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 migr /newroot/migr || fail "9p migr"
umount /proc /sys; mount --move /dev /newroot/dev
exec switch_root /newroot /bin/sh /migr/guest-init.sh
EOF

want_kernel() { echo "linux-image-$KERNEL=$KERNEL_VERSION"; }
want_initramfs() {
	want_kernel
	echo "modules: ${INITRAMFS_MODULES[*]}"
	echo "init: $(sha256sum <<<"$INIT" | cut -d' ' -f1)"
}
want_rootfs() { echo "trixie minbase: ${ROOTFS_PACKAGES[*]}"; }
want_modules() { want_kernel; want_rootfs; }

current() { # current PART: does PART's stamp match what we want now?
	[ -f "$TB/stamps/$1" ] && [ "$(cat "$TB/stamps/$1")" = "$(want_"$1")" ]
}
stamp() { mkdir -p "$TB/stamps" && want_"$1" >"$TB/stamps/$1"; }

all_current() { local p; for p in kernel initramfs rootfs modules; do current $p || return 1; done; }
[ "$mode" != --check ] || { all_current; exit; }

apt_install qemu-system-x86 mmdebstrap kmod cpio xz-utils gzip curl ca-certificates gpgv debian-archive-keyring
if [ "$mode" != --refresh ] && all_current; then
	log "test bed ready in $TB"
	exit 0
fi
mkdir -p "$TB"
exec 9>"$LOCK"
# run.sh holds this lock shared while its VMs run.
wait_lock 9 -x 3600 "running test-bed VMs"
if [ "$mode" = --refresh ]; then
	rm -f "$TB/stamps/rootfs" "$TB/stamps/initramfs"
	trixie_index --refresh >/dev/null
fi

# Kernel: the pinned image, unpacked, with modules.dep for the host's depmod/modprobe.
if ! current kernel; then
	log "kernel $KERNEL ($KERNEL_VERSION)"
	deb=$(fetch_trixie_deb "linux-image-$KERNEL=$KERNEL_VERSION" "$TB/dl")
	rm -rf "$TB/kernel" "$TB/kernel.tmp" && mkdir -p "$TB/kernel.tmp"
	dpkg-deb -x "$deb" "$TB/kernel.tmp"
	# trixie keeps modules in /usr/lib/modules; a Debian 12 host's depmod looks in <base>/lib.
	ln -s usr/lib "$TB/kernel.tmp/lib"
	depmod -b "$TB/kernel.tmp" "$KERNEL"
	[ -f "$TB/kernel.tmp/boot/vmlinuz-$KERNEL" ] || die "no vmlinuz-$KERNEL in $deb"
	mv "$TB/kernel.tmp" "$TB/kernel"
	stamp kernel
fi

# Initramfs: static busybox and the (decompressed: busybox can't read .ko.xz) modules.
if ! current initramfs; then
	log "initramfs"
	deb=$(fetch_trixie_deb busybox-static "$TB/dl")
	ir=$TB/initramfs.tmp
	rm -rf "$ir" && mkdir -p "$ir"/{bin,etc,proc,sys,dev,lower,upper,newroot,lib/modules/"$KERNEL"}
	dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/bin/busybox >"$ir/bin/busybox"
	chmod 755 "$ir/bin/busybox"
	md=$TB/kernel/usr/lib/modules/$KERNEL
	for m in "${INITRAMFS_MODULES[@]}"; do
		modprobe -d "$TB/kernel" -S "$KERNEL" --show-depends "$m" || die "module $m not in $KERNEL"
	done | awk '$1 == "insmod" { print $2 }' | sort -u | while read -r f; do
		rel=${f#"$md"/}
		mkdir -p "$ir/lib/modules/$KERNEL/$(dirname "$rel")"
		case $f in
		*.xz) xz -dc "$f" >"$ir/lib/modules/$KERNEL/${rel%.xz}" ;;
		*) cp "$f" "$ir/lib/modules/$KERNEL/$rel" ;;
		esac
	done
	cp "$md"/modules.{builtin,builtin.modinfo,order} "$ir/lib/modules/$KERNEL/"
	sed -i 's/\.ko\.xz$/.ko/' "$ir/lib/modules/$KERNEL/modules.order"
	depmod -b "$ir" "$KERNEL"
	printf '%s\n' "${INITRAMFS_MODULES[@]}" >"$ir/etc/modules"
	printf '%s\n' "$INIT" >"$ir/init" && chmod 755 "$ir/init"
	(cd "$ir" && find . | cpio -o -H newc --quiet | gzip -1) >"$TB/initrd.gz.tmp"
	mv "$TB/initrd.gz.tmp" "$TB/initrd.gz"
	rm -rf "$ir"
	stamp initramfs
fi

# Rootfs: trixie minbase, no docs or translations.
if ! current rootfs; then
	log "rootfs (trixie minbase + ${#ROOTFS_PACKAGES[@]} packages; a few minutes)"
	mapfile -t mirrors < <(trixie_apt_lines)
	rm -rf "$TB/rootfs.tmp" "$TB/stamps/modules"
	mmdebstrap --quiet --variant=minbase --mode=root \
		--include="$(IFS=,; echo "${ROOTFS_PACKAGES[*]}")" \
		--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		trixie "$TB/rootfs.tmp" "${mirrors[@]}" >"$TB/rootfs.log" 2>&1 ||
		{ tail -n 20 "$TB/rootfs.log" >&2; die "mmdebstrap of the guest rootfs failed (log: $TB/rootfs.log)"; }
	rm -rf "$TB/rootfs"
	mv "$TB/rootfs.tmp" "$TB/rootfs"
	stamp rootfs
fi

# The kernel's modules in the rootfs (trixie's kmod loads .ko.xz itself).
if ! current modules; then
	log "kernel modules into the rootfs"
	rm -rf "$TB/rootfs/usr/lib/modules" && mkdir -p "$TB/rootfs/usr/lib/modules"
	cp -a "$TB/kernel/usr/lib/modules/$KERNEL" "$TB/rootfs/usr/lib/modules/"
	stamp modules
fi

cat "$TB"/stamps/{kernel,initramfs,rootfs} >"$TB/STAMP"
log "test bed ready in $TB"
