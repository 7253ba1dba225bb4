# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""A migrd started under running migr processes finds them in every network
namespace of the host, and its start sweeps what a migrd that died in a
restore left: its CRIU, its migr-<id> network namespace (an interface with
the moved address in it) and the processes in it. Root only (namespaces).
usage: migrd_netns.py MIGRD"""
import json
import os
import secrets
import select
import socket
import subprocess
import sys
import time

from migrd_harness import Checks, setup, start_migrd

MIGRD = sys.argv[1] if len(sys.argv) > 1 else ""
check = Checks()

# A stand-in migr process: its control socket "@migr/<its own pid>" in its
# own network namespace, answering any request with its pid as it sees it
FAKE = r"""
import json, os, socket, sys, threading
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind("\0migr/%d" % os.getpid())
srv.listen(8)
def serve():
    while True:
        c, _ = srv.accept()
        c.makefile("rb").readline()
        r = {"ok": True, "contexts": [], "nspid": os.getpid()}
        c.sendall((json.dumps(r) + "\n").encode())
        c.close()
threading.Thread(target=serve, daemon=True).start()
print("ready", flush=True)
sys.stdin.read()
"""


def readline_within(f, seconds):
    """One line of f, or "" after seconds"""
    r, _, _ = select.select([f], [], [], seconds)
    return f.readline() if r else ""


class Fake:
    """FAKE under unshare ARGS (-n: a network namespace of its own; -n -p
    -f: its pid namespace's init too); pid: its pid on the host"""

    def __init__(self, *args):
        self.p = subprocess.Popen(
            ["unshare"] + list(args) + ["--", sys.executable, "-c", FAKE],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.ready = readline_within(self.p.stdout, 10).strip() == "ready"
        self.pid = self.p.pid
        if "-f" in args:  # the child unshare forked
            with open(f"/proc/{self.p.pid}/task/{self.p.pid}/children") as f:
                self.pid = int(f.read().split()[0])

    def stop(self):
        self.p.kill()
        self.p.wait()


def ask(sock, line):
    """One request; its reply, or None. Its socket exists from bind() on,
    before migrd listens: a refused connect is tried again, up to 5 s."""
    for _ in range(50):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(20)
        try:
            s.connect(sock)
            s.sendall(line.encode())
            return json.loads(s.makefile().readline())
        except ConnectionRefusedError:
            time.sleep(0.1)
        except (OSError, ValueError):
            return None
        finally:
            s.close()
    return None


def status_of(r, pid):
    for p in (r or {}).get("processes", []):
        if p.get("pid") == pid:
            return p.get("status") or {}
    return None


def discovery(tmp):
    plain = Fake("-n")  # own network namespace, migrd's pid namespace
    boxed = Fake("-n", "-p", "-f")  # a container's: @migr/1 there
    fakes = [plain, boxed]
    try:
        check("fakes start", plain.ready and boxed.ready)
        # a migrd that looks in its own namespace only: none of them
        m, sock = start_migrd(MIGRD, tmp, "own")
        r = ask(sock, f"migrd/1 status {plain.pid}\n")
        check("own netns only: not found", r is not None and
              not r.get("ok") and "no migr process" in r.get("error", ""),
              r)
        m.terminate()
        m.wait(10)
        # a fresh migrd (no registration): both found, and asked
        m, sock = start_migrd(MIGRD, tmp, "all", all_netns=True)
        for f, nspid, name in ((plain, plain.pid, "other netns"),
                               (boxed, 1, "other netns and pid ns")):
            r = ask(sock, f"migrd/1 status {f.pid}\n")
            st = status_of(r, f.pid)
            check(f"{name}: found and asked", st is not None and
                  st.get("ok") is True and st.get("nspid") == nspid, r)
        m.terminate()
        m.wait(10)
    finally:
        for f in fakes:
            f.stop()


def ip(*args):
    return subprocess.run(["ip"] + list(args), capture_output=True,
                          text=True, timeout=10).returncode == 0


def ticks_now():
    hz = os.sysconf("SC_CLK_TCK")
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * hz)


def left_restore(state, name, committed=False):
    """What a migrd that died in a restore of migration NAME leaves: its
    mark, a CRIU still at work in its images (a sleep there), the
    migr-NAME namespace with the moved address up, and a restored copy
    in it: (netns, [pids])"""
    d = os.path.join(state, "migrations", name)
    os.makedirs(os.path.join(d, "final"))
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    with open(os.path.join(d, "restoring"), "w") as f:
        f.write(f"{boot} {ticks_now()}\n")
    with open(os.path.join(d, "final", "pages-1.img"), "w") as f:
        f.write("x")
    if committed:
        open(os.path.join(d, "committed.log"), "w").close()
    ns = "migr-" + name
    ok = (ip("netns", "add", ns) and
          ip("-n", ns, "link", "add", "eth0", "type", "veth", "peer",
             "name", "eth1") and
          ip("-n", ns, "addr", "add", "10.99.0.50/24", "dev", "eth0") and
          ip("-n", ns, "link", "set", "eth0", "up"))
    check(f"{name}: namespace made", ok)
    criu = subprocess.Popen(["sleep", "300"], cwd=os.path.join(d, "final"))
    copy = subprocess.Popen(["nsenter", "--net=/run/netns/" + ns,
                             "sleep", "300"])
    return ns, [criu, copy]


def gone_within(p, seconds):
    try:
        p.wait(seconds)
        return True
    except subprocess.TimeoutExpired:
        return False


def sweep(tmp):
    state = os.path.join(tmp, "state")
    conf = os.path.join(tmp, "sweep.conf")
    with open(conf, "w") as f:
        f.write(f"state_dir = {state}\n")
    cut = secrets.token_hex(8)
    kept = secrets.token_hex(8)
    ns_cut, procs_cut = left_restore(state, cut)
    ns_kept, procs_kept = left_restore(state, kept, committed=True)
    try:
        m, _ = start_migrd(MIGRD, tmp, "sweep", "--config", conf)
        check("sweep: namespace gone",
              not os.path.exists("/run/netns/" + ns_cut))
        check("sweep: CRIU left running killed",
              gone_within(procs_cut[0], 5))
        check("sweep: process in the namespace killed",
              gone_within(procs_cut[1], 5))
        check("sweep: images gone", not os.path.exists(
            os.path.join(state, "migrations", cut, "final", "pages-1.img")))
        check("sweep: a committed one's namespace stays",
              os.path.exists("/run/netns/" + ns_kept) and
              procs_kept[1].poll() is None)
        m.terminate()
        m.wait(10)
        # again: nothing left to do, and it starts as well
        m, _ = start_migrd(MIGRD, tmp, "sweep2", "--config", conf)
        check("sweep twice: starts", m.poll() is None)
        m.terminate()
        m.wait(10)
    finally:
        for p in procs_cut + procs_kept:
            p.kill()
            p.wait()
        for ns in (ns_cut, ns_kept):
            if os.path.exists("/run/netns/" + ns):
                ip("netns", "del", ns)


def main():
    if os.geteuid() != 0:
        print("skipped: needs root (network namespaces)")
        return 77
    rc, tmp = setup(sys.argv[0], MIGRD, "migrd-netns-")
    if rc is not None:
        return rc
    discovery(tmp)
    sweep(tmp)
    print(f"{check.passed} passed, {check.failed} failed")
    return 1 if check.failed else 0


if __name__ == "__main__":
    sys.exit(main())
