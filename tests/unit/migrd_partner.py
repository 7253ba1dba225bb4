#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""migrd's partner relay on this host, no RDMA device needed.

Runs migrd in the foreground on temporary sockets, with stand-in migr
processes (they listen on @migr/<pid> and answer "partner ..." lines as the
library will), and checks routing, replies, refusals and the log. As root
it also runs a second migrd on 127.0.0.2 and relays to it over the
authenticated peer link, and speaks that link itself to check what a peer
may ask. usage: migrd_partner.py MIGRD
"""
import hashlib
import hmac
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

MIGRD = sys.argv[1] if len(sys.argv) > 1 else "migrd"
GID = "20010db8000000000000000000000001"  # documentation prefix
NOBODY = 65534
ROOT = os.geteuid() == 0

failed = 0
passed = 0


def check(name, cond, detail=""):
    global failed, passed
    if cond:
        passed += 1
    else:
        failed += 1
        print(f"FAIL {name}: {detail}", file=sys.stderr)


# A stand-in migr process: its control socket answers "partner OP QPN ..."
# with "notmine" unless it owns QPN; "fail" makes it refuse, "big N" pads its
# reply with N bytes. Lines on its
# stdin are sent to migrd (its own requests), each reply printed.
FAKE = r"""
import json, os, socket, sys, threading
owned, uid, logf, sock = sys.argv[1].split(","), int(sys.argv[2]), sys.argv[3], sys.argv[4]
if uid >= 0 and os.geteuid() == 0:
    os.setgid(uid)
    os.setuid(uid)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind("\0migr/%d" % os.getpid())
srv.listen(16)
def serve():
    while True:
        c, _ = srv.accept()
        line = c.makefile("rb").readline().decode()
        with open(logf, "a") as f:
            f.write(line)
        w = line.split()
        if len(w) < 3 or w[0] != "partner":
            r = {"ok": False, "error": "bad request"}
        elif w[2] not in owned:
            r = {"ok": False, "notmine": True}
        elif w[1] == "fail":
            r = {"ok": False, "error": "cannot suspend QP " + w[2]}
        elif w[1] == "big":
            r = {"ok": True, "op": w[1], "pad": "y" * int(w[3])}
        else:
            r = {"ok": True, "op": w[1], "echo": line[len("partner "):-1]}
        c.sendall((json.dumps(r, separators=(",", ":")) + "\n").encode())
        c.close()
threading.Thread(target=serve, daemon=True).start()
print("ready", flush=True)
for cmd in sys.stdin:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock)
    s.sendall(cmd.encode())
    print(s.makefile().readline().strip(), flush=True)
"""


class Fake:
    def __init__(self, tmp, name, owned, uid, sock):
        self.log = os.path.join(tmp, name + ".log")
        open(self.log, "w").close()
        os.chmod(self.log, 0o666)
        self.p = subprocess.Popen(
            [sys.executable, "-c", FAKE, owned, str(uid), self.log, sock],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.p.stdout.readline().strip() == "ready"
        self.pid = self.p.pid

    def ask(self, line):
        self.p.stdin.write(line)
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def lines(self):
        with open(self.log) as f:
            return f.read()

    def stop(self):
        self.p.kill()
        self.p.wait()


def ask(sock, line):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sock)
    s.sendall(line.encode() if isinstance(line, str) else line)
    raw = s.makefile("rb").readline()
    s.close()
    check("one line", raw.endswith(b"\n") and raw.count(b"\n") == 1, raw)
    return json.loads(raw)


def ask_as(uid, sock, line):
    """The same from a process of another user, not a migr process"""
    code = ("import os, socket, sys; os.setgid(%d); os.setuid(%d); "
            "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
            "s.sendall(sys.argv[2].encode()); "
            "print(s.makefile().readline().strip())" % (uid, uid))
    out = subprocess.run([sys.executable, "-c", code, sock, line],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def start_migrd(tmp, name, *args):
    sock = os.path.join(tmp, name + ".sock")
    log = open(os.path.join(tmp, name + ".log"), "w")
    p = subprocess.Popen([MIGRD, "-f", "--debug", "--config", "/dev/null",
                          "--socket", sock] + list(args),
                         stdout=log, stderr=subprocess.STDOUT)
    for _ in range(100):
        if os.path.exists(sock):
            return p, sock
        if p.poll() is not None:
            break
        time.sleep(0.05)
    sys.exit(f"migrd {name} did not start: see {log.name}")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def peer_ask(port, key, line):
    """One request over migrd's peer link, as another migrd would"""
    def frame(k, typ, seq, body):
        hdr = (b"MGRD" + bytes([1, typ, 0, 0]) + seq.to_bytes(8, "big") +
               len(body).to_bytes(4, "big"))
        return hdr + body + hmac.new(k, hdr + body, hashlib.sha256).digest()

    def read(s, k):
        hdr = s.recv(20, socket.MSG_WAITALL)
        n = int.from_bytes(hdr[16:20], "big")
        rest = s.recv(n + 32, socket.MSG_WAITALL)
        body, mac = rest[:n], rest[n:]
        assert hmac.compare_digest(
            mac, hmac.new(k, hdr + body, hashlib.sha256).digest())
        return body

    def proof(label, a, b):
        return hmac.new(key, label + a + b, hashlib.sha256).digest()

    s = socket.create_connection(("127.0.0.2", port), timeout=40)
    nc = os.urandom(32)
    s.sendall(frame(key, 1, 0, nc))
    body = read(s, key)
    ns = body[:32]
    assert body[32:] == proof(b"migrd server", nc, ns)
    s.sendall(frame(key, 3, 1, proof(b"migrd client", ns, nc)))
    session = proof(b"migrd session", nc, ns)
    s.sendall(frame(session, 4, 1, line.encode()))
    reply = read(s, session)
    s.close()
    return json.loads(reply)


def other_migr_processes():
    with open("/proc/net/unix") as f:
        return [l for l in f if "@migr/" in l]


def main():
    if not os.access(MIGRD, os.X_OK):
        sys.exit(f"usage: {sys.argv[0]} MIGRD (not executable: {MIGRD})")
    if other_migr_processes():
        print("skipped: migr processes run on this host; they would be "
              "asked too")
        return 77
    tmp = tempfile.mkdtemp(prefix="migrd-partner-")
    os.chmod(tmp, 0o755)  # the stand-ins run as nobody
    key = os.urandom(32)
    keyf = os.path.join(tmp, "key")
    with open(keyf, "wb") as f:
        f.write(key)
    os.chmod(keyf, 0o600)
    port = free_port()
    procs, fakes = [], []
    try:
        # Only root's key file is accepted; without root, peers are off
        a, sa = start_migrd(tmp, "a", "--listen", "none", "--port",
                            str(port), "--key",
                            keyf if ROOT else keyf + ".none")
        procs.append(a)
        run(tmp, sa, port, key, keyf, procs, fakes)
    finally:
        for f in fakes:
            f.stop()
        for p in procs:
            p.terminate()
            p.wait()
    # The log names the op, never a long stretch of the line
    for name in ("a", "b"):
        path = os.path.join(tmp, name + ".log")
        if os.path.exists(path):
            with open(path) as f:
                log = f.read()
            check(f"{name}: log has no line over 80 bytes",
                  "x" * 81 not in log and "secret" not in log)
            check(f"{name}: relays logged", "partner suspend" in log or
                  "partner resume" in log, log[-2000:])
    print(f"migrd_partner: {passed} passed, {failed} failed (logs: {tmp})")
    if not failed:
        subprocess.run(["rm", "-rf", tmp])
    return 1 if failed else 0


def run(tmp, sa, port, key, keyf, procs, fakes):
    def nobody_owns(r, qpn):
        """No migr process claims it; the kernel lookup finds no owner"""
        return r.get("ok") is False and r.get("error") in (
            f"no RDMA device on this host has GID {GID}",
            f"no process on this host owns QP 0x{qpn:x}")

    # Requests from root or, without root, from a stand-in migr process
    # (the test itself is not one, so it is refused)
    f1 = Fake(tmp, "f1", "", NOBODY, sa)
    fakes.append(f1)
    if ROOT:
        asker = lambda line: ask(sa, line)
    else:
        asker = f1.ask
        r = ask(sa, f"migrd/1 partner - 0 17 {GID} suspend 17\n")
        check("non-migr refused", r["error"] ==
              "permission denied: partner requests come from migr processes",
              r)

    # Nobody owns the QP; the GID is on no device either
    r = asker(f"migrd/1 partner - 0 17 {GID} suspend 17\n")
    check("no owner", nobody_owns(r, 17), r)
    check("f1 asked, said notmine", f1.lines() == "partner suspend 17\n",
          f1.lines())

    # Malformed: one-line errors, the line never echoed
    for line, why in [
            (f"migrd/1 partner - 0 17 {GID} secret;x\n", "character"),
            (f"migrd/1 partner - 0 17 {GID.upper()} x\n", "invalid gid"),
            (f"migrd/1 partner host-b 0 17 {GID} x\n", "invalid host"),
            (f"migrd/1 partner - 0 17 {GID}\n", "without a line"),
            (f"migrd/1 partner - 0 17 {GID} " + "x" * 3801 + "\n",
             "longer than 3800"),
            (f"migrd/1 partner - 0 17 {GID} " + "x" * 4100 + "\n",
             "longer than 4096")]:
        r = asker(line)
        check("refused: " + why, not r["ok"] and why in r["error"] and
              "secret" not in r["error"], r)

    if ROOT:
        r = ask_as(NOBODY, sa, f"migrd/1 partner - 0 17 {GID} suspend 17\n")
        check("nobody refused", r["error"] ==
              "permission denied: partner requests come from migr processes",
              r)

    # An owner: PID 0 finds it, the line reaches it verbatim
    f2 = Fake(tmp, "f2", "17,18", NOBODY, sa)
    fakes.append(f2)
    r = asker(f"migrd/1 partner - 0 17 {GID} suspend 17 a:b,c  d.e_f-g\n")
    check("found", r.get("ok") is True and r.get("pid") == f2.pid and
          r["reply"] == {"ok": True, "op": "suspend",
                         "echo": "suspend 17 a:b,c  d.e_f-g"} and
          "error" not in r, r)
    check("verbatim", f2.lines().endswith(
        "partner suspend 17 a:b,c  d.e_f-g\n"), f2.lines())
    # By pid, as a previous reply named it; its refusal is the error
    r = asker(f"migrd/1 partner - {f2.pid} 18 {GID} fail 18\n")
    check("by pid, refused", r.get("ok") is False and
          r.get("error") == "cannot suspend QP 18" and
          r.get("pid") == f2.pid and
          r["reply"] == {"ok": False, "error": "cannot suspend QP 18"}, r)
    # A pid that is not a migr process
    r = asker(f"migrd/1 partner - {os.getpid()} 17 {GID} x\n")
    check("not migr", r["error"] ==
          f"no migr process with pid {os.getpid()} on this host", r)
    # Still nobody for another QP
    r = asker(f"migrd/1 partner - 0 19 {GID} suspend 19\n")
    check("other QP: no owner", nobody_owns(r, 19), r)
    # This host's own address is this host
    r = asker(f"migrd/1 partner 127.0.0.1 0 17 {GID} suspend 17\n")
    check("own address is local", r.get("ok") is True and
          r.get("pid") == f2.pid, r)
    # A migr process of another user may ask (f1 runs as nobody)
    r = f1.ask(f"migrd/1 partner - 0 17 {GID} suspend 17\n")
    check("migr process may ask", r.get("ok") is True and
          r.get("pid") == f2.pid, r)

    if not ROOT:
        print("not root: peer relaying not checked (the key must be root's)")
        return

    # Another host: a second migrd on 127.0.0.2 (not one of this host's
    # addresses) serves the same stand-ins
    b, sb = start_migrd(tmp, "b", "--listen", "127.0.0.2", "--port",
                        str(port), "--key", keyf)
    procs.append(b)
    time.sleep(0.2)
    r = asker(f"migrd/1 partner 127.0.0.2 0 17 {GID} resume 17\n")
    check("relayed", r.get("ok") is True and r.get("pid") == f2.pid and
          r["reply"]["echo"] == "resume 17", r)
    # The longest line there and back
    long_line = "resume 17 " + "x" * (3800 - 10)
    r = asker(f"migrd/1 partner 127.0.0.2 0 17 {GID} {long_line}\n")
    check("relayed long", r.get("ok") is True and
          r["reply"]["echo"] == long_line, str(r)[:300])
    # A reply over 4096 bytes fits a peer frame (8192); one over 8192 not
    r = asker(f"migrd/1 partner 127.0.0.2 0 17 {GID} big 17 6000\n")
    check("relayed big reply", r.get("ok") is True and
          len(r["reply"]["pad"]) == 6000, str(r)[:300])
    r = asker(f"migrd/1 partner 127.0.0.2 0 17 {GID} big 17 9000\n")
    check("relayed reply too big", r.get("error") ==
          "reply too large for one frame", str(r)[:300])
    r = asker(f"migrd/1 partner - 0 17 {GID} big 17 9000\n")
    check("local big reply", r.get("ok") is True and
          len(r["reply"]["pad"]) == 9000, str(r)[:300])
    r = asker(f"migrd/1 partner 127.0.0.2 0 19 {GID} resume 19\n")
    check("relayed no owner", nobody_owns(r, 19), r)
    r = asker(f"migrd/1 partner 127.0.0.3 0 17 {GID} resume 17\n")
    check("unreachable", r.get("error") ==
          f"migrd on 127.0.0.3 is unreachable: connection refused "
          f"(port {port})", r)

    # What a peer may ask
    r = peer_ask(port, key, f"migrd/1 partner - 0 17 {GID} resume 17\n")
    check("peer: partner -", r.get("ok") is True and r.get("pid") == f2.pid,
          r)
    r = peer_ask(port, key,
                 f"migrd/1 partner 127.0.0.1 0 17 {GID} resume 17\n")
    check("peer: partner HOST refused",
          r.get("error") == "request not allowed from a peer", r)
    r = peer_ask(port, key, "migrd/1 status\n")
    check("peer: status refused",
          r.get("error") == "request not allowed from a peer", r)


if __name__ == "__main__":
    sys.exit(main())
