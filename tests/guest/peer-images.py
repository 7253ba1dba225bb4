#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""A peer holding the key sends a migration's image streams migrd must not
take (migrd(8), MIGRATION): paths out of the migration, files longer than
announced, a size no file can have, links out of it, a count that does
not add up, a directory
twice, an unknown migration. One good stream lands with mode 0600, and an
abort removes it (CRIU's logs stay). Prints "PASS name" / "FAIL name" lines; exit 1 on any
failure.
usage: peer-images.py KEYFILE PORT STATE_DIR DEVICE
"""
import importlib.util
import json
import os
import socket
import ssl
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("peer_tls",
                                              f"{HERE}/peer-tls.py")
peer_tls = importlib.util.module_from_spec(spec)
spec.loader.exec_module(peer_tls)

KEYFILE, PORT, STATE, DEV = sys.argv[1], int(sys.argv[2]), sys.argv[3], \
    sys.argv[4]
MID = os.urandom(8).hex()
failed = 0


def check(name, cond, detail=""):
    global failed
    print(("PASS " if cond else "FAIL ") + name +
          ("" if cond else f": {detail}"))
    failed += not cond


def session(frames):
    """frames (bytes) on one connection; the reply frame, as JSON"""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_3
    ctx.set_alpn_protocols(["migrd/1"])
    # as host "self", the peer of the guest's migrd that is itself
    key = peer_tls.psk(KEYFILE, "self", "self")
    ctx.set_psk_client_callback(lambda hint: ("self", key))
    with socket.create_connection(("127.0.0.1", PORT), timeout=40) as raw:
        with ctx.wrap_socket(raw) as s:
            for f in frames:
                try:
                    s.sendall(len(f).to_bytes(4, "big") + f)
                except OSError:
                    break  # refused early: its reply says why
            n = int.from_bytes(peer_tls.read_full(s, 4), "big")
            return json.loads(peer_tls.read_full(s, n))


def put(sub, *frames):
    return session([f"migrd/1 mig-put {MID} {sub}\n".encode()] +
                   [f if isinstance(f, bytes) else f.encode()
                    for f in frames])


def refused(name, reply, why):
    check(name, not reply["ok"] and why in reply.get("error", ""), reply)


ver = subprocess.run(["criu", "--version"], capture_output=True,
                     text=True).stdout.split()[1]
# A pid no process has: the check passes without a tree to restore
# (a bare tree: in migrd's pid and network namespaces)
BARE = "host,-,-,-"
r = session([f"migrd/1 mig-check {MID} 4000000 {DEV} {ver} 4000000 {BARE}\n"
             .encode()])
check("peer_mig_check_accepted", r["ok"], r)
r = session([f"migrd/1 mig-check {os.urandom(8).hex()} 4000000 {DEV} 0.1 "
             f"4000000 {BARE}\n".encode()])
refused("peer_other_criu_refused", r, "on the source")
r = session([f"migrd/1 mig-check {os.urandom(8).hex()} 1 {DEV} {ver} 1 {BARE}\n"
             .encode()])
refused("peer_pid_taken_refused", r, "pid 1 is taken")

refused("stream_path_out_refused", put("pre-1", "file ../evil 3", "abc"),
        "invalid image stream")
refused("stream_longer_refused", put("pre-2", "file a 3", "abcdef"),
        "longer than announced")
refused("stream_link_out_refused", put("pre-3", "link parent /etc"),
        "invalid image stream")
refused("stream_count_refused", put("pre-4", "file a 3", "abc",
                                    "end 2 3"), "ended with 1 files")
refused("stream_dot_name_refused", put("pre-5", "file .hidden 1", "x"),
        "invalid image stream")
# 2^64 - 1 bytes: the disk-space guard once let it through (size + spare
# wrapped past zero)
refused("stream_huge_size_refused",
        put("pre-7", "file a 18446744073709551615", "x"), "invalid size")
r = put("pre-6", "file pages-1.img 3", "xyz", "link parent ../pre-4",
        "end 2 3")
check("stream_good_taken", r["ok"] and r.get("bytes") == 3, r)
img = f"{STATE}/migrations/{MID}/pre-6/pages-1.img"
st = os.lstat(img) if os.path.exists(img) else None
check("stream_file_0600", st is not None and st.st_mode & 0o7777 == 0o600,
      st)
check("stream_link_kept", os.readlink(
    f"{STATE}/migrations/{MID}/pre-6/parent") == "../pre-4")
refused("stream_twice_refused", put("pre-6", "end 0 0"), "cannot create")
r = session([f"migrd/1 mig-put {os.urandom(8).hex()} pre-1\n".encode()])
refused("stream_unknown_migration_refused", r, "no such migration")
r = session([f"migrd/1 mig-restore {os.urandom(8).hex()} {DEV}\n".encode()])
refused("restore_unknown_migration_refused", r, "no such migration")
r = session([f"migrd/1 mig-end {MID} abort\n".encode()])
check("abort_taken", r["ok"], r)
left = [f for _, _, fs in os.walk(f"{STATE}/migrations/{MID}") for f in fs
        if not f.endswith(".log") and f != "criu.out"]
check("abort_removed_images", not left, left)
sys.exit(1 if failed else 0)
