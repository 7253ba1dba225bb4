# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""What migrd's host tests (migrd_partner.py, migrd_bounds.py) share:
checks and their count, migrd in the foreground on temporary sockets,
requests as another user, and a network namespace of their own."""
import fcntl
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.geteuid() == 0
NOBODY = 65534


class Checks:
    """Named checks, counted; a failure is printed with its detail"""

    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, name, cond, detail=""):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL {name}: {str(detail)[:600]}", file=sys.stderr)


def start_migrd(migrd, tmp, name, *args, all_netns=False):
    """migrd -f on TMP/NAME.sock, logging to TMP/NAME.log: (proc, socket).
    It looks for migr processes in its own network namespace only (tests
    running side by side do not see each other's stand-ins) unless
    all_netns."""
    sock = os.path.join(tmp, name + ".sock")
    log = open(os.path.join(tmp, name + ".log"), "w")
    own = [] if all_netns else ["--test-own-netns"]
    p = subprocess.Popen([migrd, "-f", "--debug", "--config", "/dev/null",
                          "--socket", sock] + own + list(args),
                         stdout=log, stderr=subprocess.STDOUT)
    for _ in range(100):
        if os.path.exists(sock):
            return p, sock
        if p.poll() is not None:
            break
        time.sleep(0.05)
    sys.exit(f"migrd {name} did not start: see {log.name}")


def free_port(addr):
    s = socket.socket()
    s.bind((addr, 0))
    port = s.getsockname()[1]
    s.close()
    return port


def ask_as(uid, sock, line):
    """One request from a process of another user (not a migr process):
    its reply, or None"""
    code = ("import os, socket, sys; os.setgid(%d); os.setuid(%d); "
            "s = socket.socket(socket.AF_UNIX); s.settimeout(30); "
            "s.connect(sys.argv[1]); s.sendall(sys.argv[2].encode()); "
            "print(s.makefile().readline().strip())" % (uid, uid))
    out = subprocess.run([sys.executable, "-c", code, sock, line],
                         capture_output=True, text=True).stdout
    try:
        return json.loads(out)
    except ValueError:
        return None


def lo_up():
    """A new network namespace's loopback starts down"""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    fmt = "16sH14x"
    ifr = fcntl.ioctl(s, 0x8913, struct.pack(fmt, b"lo", 0))  # SIOCGIFFLAGS
    flags = struct.unpack(fmt, ifr)[1] | 1  # IFF_UP
    fcntl.ioctl(s, 0x8914, struct.pack(fmt, b"lo", flags))  # SIOCSIFFLAGS
    s.close()


def own_netns(script, args):
    """As root, run script again in a network namespace of its own, so
    other migr processes of this host (their @migr/<pid> sockets) are
    neither seen nor asked: its exit code, or None where this is that run
    (or it cannot be made)"""
    flag = "MIGRD_TEST_NETNS"
    if os.environ.get(flag) == "1":
        lo_up()
        return None
    if not ROOT or not shutil.which("unshare"):
        return None
    env = dict(os.environ, **{flag: "1"})
    return subprocess.run(["unshare", "-n", "--", sys.executable,
                           os.path.abspath(script)] + list(args),
                          env=env).returncode


def other_migr_processes():
    with open("/proc/net/unix") as f:
        return [line for line in f if "@migr/" in line]


def setup(script, migrd, prefix):
    """A test's start: migrd must be executable; as root, the test runs
    again in a network namespace of its own; with other migr processes in
    sight it is skipped (77). (exit code, None) to return at once, or
    (None, a temporary directory the stand-ins, running as nobody, read)"""
    if not os.access(migrd, os.X_OK):
        sys.exit(f"usage: {script} MIGRD (not executable: {migrd})")
    rc = own_netns(script, [migrd] + sys.argv[2:])
    if rc is not None:
        return rc, None
    if other_migr_processes():
        print("skipped: migr processes run on this host; they would be "
              "asked too")
        return 77, None
    tmp = tempfile.mkdtemp(prefix=prefix)
    os.chmod(tmp, 0o755)
    return None, tmp
