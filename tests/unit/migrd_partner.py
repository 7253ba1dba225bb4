#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""migrd's partner relay on this host, no RDMA device needed.

Runs migrd in the foreground on temporary sockets, with stand-in migr
processes (they listen on @migr/<pid> and answer "partner ..." lines as the
library will), and checks routing, replies, refusals and the log. As root
it also runs a second migrd on 127.0.0.2 and relays to it over the
authenticated peer link (TLS 1.3), and speaks that link itself (by
PEER_CLIENT) to check what a peer may ask, and who is refused.
usage: migrd_partner.py MIGRD PEER_CLIENT
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from migrd_harness import (NOBODY, ROOT, Checks, ask_as, free_port,  # noqa: E402
                           setup, start_migrd)

MIGRD = sys.argv[1] if len(sys.argv) > 1 else "migrd"
# tests/unit/peer_client: a client of the peer link
PEER_CLIENT = sys.argv[2] if len(sys.argv) > 2 else "peer_client"
GID = "20010db8000000000000000000000001"  # documentation prefix
PEER_GID = "20010db8000000000000000000000099"  # the asker's, as faced
MOVED_GID = "20010db8000000000000000000000023"  # where f2's QP 23 went

check = Checks()


# A stand-in migr process: its control socket answers "partner OP GID QPN
# ARGS [. QPN ARGS]..." as the library does, a result per QP: "notmine"
# unless it owns QPN, else its lower QP ("phys": 5000 + QPN; a forger
# that owns "forge" claims every QP as 6000 + QPN). Lines on its stdin are
# sent to migrd (its own requests), each reply printed.
FAKE = r"""
import json, os, socket, sys, threading
owned, uid, logf, sock = sys.argv[1].split(","), int(sys.argv[2]), sys.argv[3], sys.argv[4]
forge = "forge" in owned
# "N:P": QP N is lower QP P (not 5000 + N)
phys_of = dict(o.split(":") for o in owned if ":" in o)
owned = [o.split(":")[0] for o in owned]
# its device (a GID: the kernel stand-in's devices are GIDs), where a
# switch ("switch DEV") takes it; its status lists its QPs there
HOME = "20010db8000000000000000000000001"
lower = HOME
if uid >= 0 and os.geteuid() == 0:
    os.setgid(uid)
    os.setuid(uid)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind("\0migr/%d" % os.getpid())
srv.listen(16)
# QP N faces QP 1000 + N with GID PEER_GID (prepare's PEER_PHYS) and is
# lower QP 5000 + N (prepare's PARTNER_PHYS); QP 20 answers "faces" as a
# library that does not know it does, QP 21 as one switching itself;
# an entry "N fail" is refused, "N big K" pads its result with K bytes,
# "N dup" answers with "ok" twice
def real(op, rest):
    if op == "keys":
        rest = rest.split(" . ", 1)[1]
    res = []
    # QP 22's process is switching itself as a whole: no result per QP
    if op == "faces" and rest.split()[0] == "22" and "22" in owned:
        return {"ok": False, "busy": True, "error": "switching itself"}
    for e in rest.split(" . "):
        w = e.split()
        q = w[0]
        phys = int(phys_of.get(q, (6000 if forge else 5000) + int(q)))
        if not forge and q not in owned:
            res.append({"ok": False, "notmine": True})
        elif (not forge and op in ("prepare", "faces", "give") and
              len(w) >= 9 and
              w[8] != str(phys)):
            res.append({"ok": False, "notmine": True,
                        "error": "faces another"})
        elif op == "faces" and q == "21":
            res.append({"ok": False, "busy": True,
                        "error": "switching itself", "phys": phys})
        elif op == "faces" and q == "20":
            res.append({"ok": False, "error": "unknown partner request"})
        elif op == "faces":
            res.append({"phys": phys, "ok": True, "peer_phys": 1000 + int(q),
                        "peer_gid": "20010db8000000000000000000000099"})
        elif len(w) > 1 and w[1] == "fail":
            res.append({"phys": phys, "ok": False,
                        "error": "cannot %s QP %s" % (op, q)})
        elif len(w) > 1 and w[1] == "dup":
            # written with "ok" twice (serve()): which one would count?
            res.append({"phys": phys, "ok": False, "dup": True})
        elif len(w) > 2 and w[1] == "big":
            res.append({"phys": phys, "ok": True, "op": op,
                        "pad": "y" * int(w[2])})
        elif op == "fetch" and q == "18":
            # not connected yet: its lower number, its keys withheld
            res.append({"phys": phys, "ok": True, "op": op, "keys": "",
                        "withheld": True})
        elif op == "fetch" and q in ("17", "24"):
            # connected to QP 1000 + N with PEER_GID: its keys, and what
            # it faces, for migrd to check against the kernel
            res.append({"phys": phys, "ok": True, "op": op,
                        "keys": "1a:2b", "peer_phys": 1000 + int(q),
                        "peer_gid": "20010db8000000000000000000000099"})
        elif q == "23":
            # moved to another device: its GID now is MOVED_GID
            res.append({"phys": phys, "ok": True, "op": op,
                        "gid": "20010db8000000000000000000000023"})
        elif lower != HOME:
            # switched: its QP is on the device it went to
            res.append({"phys": phys, "ok": True, "op": op, "echo": e,
                        "gid": lower})
        else:
            res.append({"phys": phys, "ok": True, "op": op, "echo": e})
    r = {"ok": all(x["ok"] for x in res)}
    if all(x.get("notmine") for x in res):
        r["notmine"] = True
    if any(x.get("busy") for x in res):
        r["busy"] = True
    errs = [x["error"] for x in res if not x["ok"] and "error" in x]
    if errs:
        r["error"] = errs[0]
    r["results"] = res
    return r
# "ud probe": the owned QPNs as its UD QPs; "ud moved ...": taken, or
# refused by a process that owns "udfail"
def ud(rest):
    if rest == "probe":
        return {"ok": True, "ud": [int(q) for q in owned if q.isdigit()]}
    if "udfail" in owned:
        return {"ok": False, "error": "cannot redirect"}
    return {"ok": True, "redirected": 1, "echo": rest}
def switch(dev):
    global lower
    left, lower = lower, dev
    return {"pid": os.getpid(), "ok": True, "switch": [
        {"device": "migr_" + HOME, "from": left, "to": dev, "ok": True}]}
def status():
    qps = [{"qpn": int(q), "phys": int(phys_of.get(q, 5000 + int(q)))}
           for q in owned if q.isdigit()]
    return {"pid": os.getpid(), "contexts": [
        {"device": "migr_" + HOME, "lower": lower, "qps": qps}]}
def serve():
    while True:
        c, _ = srv.accept()
        line = c.makefile("rb").readline().decode()
        with open(logf, "a") as f:
            f.write(line)
        w = line.split()
        if w and w[0] == "ud" and "udsilent" in owned:
            c.close()  # it never answers
            continue
        if w and w[0] == "switch":
            r = switch(w[1])
        elif w == ["status"]:
            r = status()
        elif w and w[0] == "ud":
            r = ud(line[3:-1])
        elif len(w) >= 4 and w[0] == "partner" and len(w[2]) == 32:
            r = real(w[1], line[len("partner ") + len(w[1]) + 34:-1])
        else:
            r = {"ok": False, "error": "bad request"}
        out = json.dumps(r, separators=(",", ":"))
        c.sendall((out.replace('"dup":true', '"ok":true') + "\n").encode())
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


def peer_ask(port, keyf, line, alpn="migrd/1", name="a"):
    """One request over migrd's peer link (TLS 1.3, PSK from keyf) to b,
    as the migrd of host NAME would send it, by PEER_CLIENT (Python's ssl
    has no TLS 1.3 PSK here): its JSON reply, or {"client": the client's
    error}"""
    p = subprocess.run([PEER_CLIENT, keyf, name, "b", alpn, "127.0.0.2",
                        str(port), line], capture_output=True, text=True,
                       timeout=60)
    if p.returncode:
        return {"client": p.stderr.strip()}
    return json.loads(p.stdout)


# The stand-in for the kernel's RDMA resource tracking: "GID QPN PID" lines,
# "GID QPN PID fail ERRNO" (its query answers ERRNO), "GID QPN PID intr N"
# (no port yet; the first N dumps of each lookup interrupted).
# BASE: the lower QPs the stand-ins that own QPs hold (5000 + QPN).
BASE = []


def table(tmp, *extra):
    """BASE and extra (an extra entry replaces BASE's for its QP)"""
    named = {e[:2] for e in extra}
    with open(os.path.join(tmp, "qp-owners"), "w") as f:
        for e in [e for e in BASE if e[:2] not in named] + list(extra):
            f.write(" ".join(map(str, e)) + "\n")


def pent(q, partner=None):
    """A prepare's entry for QP q: it faces QP 77 (lower 1000 + q) of
    context aa, and the asker's QP is connected to lower QP partner"""
    return f"{q} 77 10000 7 4 0 {1000 + q} aa {5000 + q if partner is None else partner}"


def main():
    rc, tmp = setup(__file__, MIGRD, "migrd-partner-")
    if rc is not None:
        return rc
    key = os.urandom(32)
    keyf = os.path.join(tmp, "key")
    with open(keyf, "wb") as f:
        f.write(key)
    os.chmod(keyf, 0o600)
    port = free_port("127.0.0.2")
    procs, fakes = [], []
    try:
        # Only root's key file is accepted; without root, peers are off
        owners = os.path.join(tmp, "qp-owners")
        open(owners, "w").close()
        # a's peers: b (127.0.0.2), d (127.0.0.3, no migrd there)
        peers = ["--name", "a", "--peer", f"b 127.0.0.2 {keyf}",
                 "--peer", f"d 127.0.0.3 {keyf}"] if ROOT else []
        a, sa = start_migrd(MIGRD, tmp, "a", "--listen", "none", "--port",
                            str(port), "--test-qp-owners", owners, *peers)
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
    print(f"migrd_partner: {check.passed} passed, {check.failed} failed (logs: {tmp})")
    if not check.failed:
        subprocess.run(["rm", "-rf", tmp])
    return 1 if check.failed else 0


def gent(q):
    """A give's entry for QP q: QP 77 (lower 1000 + q, context aa) gives
    its keys of generation 3, all of them, to QP q (lower 5000 + q)"""
    return f"{q} 77 0 0 0 0 {1000 + q} aa {5000 + q} 3 1 1a:2b,3c:4d"


def owned_by(tmp, sa, f1, f2, fakes, host):
    """A migr process that is not root (f1) asks for f2's QPs 17, 18, 20:
    QP N of f2 faces QP 1000 + N with PEER_GID; the owners file says whose
    that is, standing in for the kernel's RDMA resource tracking."""
    owners = os.path.join(tmp, "qp-owners")
    where = "this host" if host == "-" else host
    tag = f"{where}: "

    def own(*pairs):
        table(tmp, *[(PEER_GID, qpn, pid) for qpn, pid in pairs])

    def step(line, pid=None, who=f1):
        return who.ask(f"migrd/1 partner {host} "
                       f"{f2.pid if pid is None else pid} 17 {GID} {line}\n")

    def denied(r, text):
        return r.get("ok") is False and r.get("error") == text and \
            "reply" not in r

    def relayed_to_f2(r, op):
        res = r.get("reply", {}).get("results", [{}])
        return r.get("ok") is True and r.get("pid") == f2.pid and \
            len(res) == 1 and res[0].get("ok") is True and \
            res[0].get("op") == op and res[0].get("phys") == 5017

    f3 = Fake(tmp, "f3" + host, "", NOBODY, sa)
    fakes.append(f3)
    own()
    start = len(f2.lines())
    # No step without a prepare
    r = step(f"suspend {GID} 17 5000")
    check(tag + "suspend without a session", denied(
        r, f"permission denied: pid {f1.pid} has no partner session with "
        f"pid {f2.pid} on {where} for QP 0x11 (a prepare opens one for the "
        f"QPs that face its own)"), r)
    # fetch (a connect asks its peer's QP) needs no grant, and goes to the
    # process that claims the QP; nothing else is asked of it. f2's QP 17
    # is connected to QP 1017 with PEER_GID: its answer (its keys) goes
    # only to the process the kernel says holds that QP, whatever the
    # asker says it is (issue 34: two fetches gave anyone the keys)
    fetch17 = f"fetch {GID} 17 77 1077 00000000000000aa 0 -"
    refused = (f"permission denied: the QP asked for on {where} is not "
               f"connected to a QP of the asker's")
    r = step(fetch17, 0)
    check(tag + "fetch of a QP facing nobody's QP: refused", denied(
        r, refused), r)
    check(tag + "fetch refusal names no number",
          "0x" not in r.get("error", "") and "1017" not in r.get("error", "")
          and "keys" not in json.dumps(r), r)
    own((1017, f3.pid))
    r = step(fetch17, 0)
    check(tag + "fetch of a QP facing another process's QP: refused",
          denied(r, refused), r)
    own((1017, f1.pid))
    before = f2.lines()
    r = step(fetch17, 0)
    check(tag + "fetch without a session", relayed_to_f2(r, "fetch"), r)
    check(tag + "fetch relayed as it is", f2.lines()[len(before):] ==
          f"partner fetch {GID} 17 77 1077 00000000000000aa 0 -\n",
          f2.lines()[len(before):])
    own()
    # A QP not connected yet answers anyone its lower number, no keys:
    # the asker needs it to connect
    r = step(f"fetch {GID} 18 77 1078 00000000000000aa 0 -", 0)
    res = r.get("reply", {}).get("results", [{}])[0]
    check(tag + "fetch of an unconnected QP: its number, no keys",
          r.get("ok") is True and res.get("withheld") is True and
          res.get("keys") == "", r)
    # The line must say what migrd reads
    r = step(f"suspend {PEER_GID} 17 5000")
    check(tag + "other GID in the line", denied(
        r, "partner line names another GID than the request"), r)
    r = step(f"faces {GID} {pent(17)}")
    check(tag + "faces is migrd's", denied(
        r, "permission denied: faces is migrd's own step"), r)
    # f2's QP 17 faces QP 1017, which f1 does not own: prepare never relayed
    before = f2.lines()
    r = step(f"prepare {GID} {pent(17)}", 0)
    check(tag + "prepare for a QP not facing the asker's", denied(
        r, f"permission denied: QP 0x11 on {where} faces QP 0x3f9 with GID "
        f"{PEER_GID}, which pid {f1.pid} does not own (no such QP)"), r)
    # A give (rkeys to the QP that faces the giver's) is checked as a
    # prepare is
    r = step(f"give {GID} {gent(17)}", 0)
    check(tag + "give for a QP not facing the asker's", denied(
        r, f"permission denied: QP 0x11 on {where} faces QP 0x3f9 with GID "
        f"{PEER_GID}, which pid {f1.pid} does not own (no such QP)"), r)
    before = f2.lines()
    r = step(f"prepare {GID} {pent(17)}", 0)
    # faces carries the prepare's arguments (the partner answers notmine
    # for a QP that faces another QP than the one they name)
    check(tag + "only faces asked", f2.lines()[len(before):] ==
          f"partner faces {GID} {pent(17)}\n", f2.lines()[len(before):])
    # Owned by another process (f3): still not f1's
    own((1017, f3.pid))
    r = step(f"prepare {GID} {pent(17)}", 0)
    check(tag + "QP of another process", r.get("error", "").endswith(
        f"which pid {f1.pid} does not own (held by pid {f3.pid})"), r)
    # A partner library that does not answer faces
    r = step(f"prepare {GID} {pent(20)}", 0)
    check(tag + "faces unanswered", denied(
        r, f"partner pid {f2.pid} on {where} did not say which QP its QP "
        f"0x14 faces (does its migr library know the faces step?)"), r)
    # A partner switching itself: its busy reply, so the mover backs off
    r = step(f"prepare {GID} {pent(21)}", 0)
    check(tag + "faces busy", r.get("ok") is False and
          r.get("pid") == f2.pid and r["reply"].get("busy") is True, r)
    # ... also when the whole process is busy, with no result per QP
    r = step(f"prepare {GID} {pent(22)}", 0)
    check(tag + "faces busy, whole process", r.get("ok") is False and
          r.get("pid") == f2.pid and r["reply"].get("busy") is True, r)
    # Nobody has the QP
    r = step(f"prepare {GID} {pent(19)}", 0)
    check(tag + "faces: no owner", r.get("ok") is False and
          r.get("error", "").startswith("no process on ") and
          r["error"].endswith(" owns QP 0x139b"), r)
    # Every QP of the line counts: 18 faces 1018, not f1's
    own((1017, f1.pid))
    r = step(f"prepare {GID} {pent(17)} . {pent(18)}", 0)
    check(tag + "every QP checked", denied(
        r, f"permission denied: QP 0x12 on {where} faces QP 0x3fa with GID "
        f"{PEER_GID}, which pid {f1.pid} does not own (no such QP)"), r)
    check(tag + "no prepare relayed", "prepare" not in f2.lines()[start:],
          f2.lines()[start:])
    # f1 owns QP 1017: its give goes to f2, which opens no session
    before = f2.lines()
    r = step(f"give {GID} {gent(17)}", 0)
    check(tag + "give facing the asker's", relayed_to_f2(r, "give"), r)
    check(tag + "faces, then give", f2.lines()[len(before):] ==
          f"partner faces {GID} {gent(17)}\n"
          f"partner give {GID} {gent(17)}\n",
          f2.lines()[len(before):])
    r = step(f"suspend {GID} 17 5000")
    check(tag + "a give opens no session",
          "no partner session" in r.get("error", ""), r)
    # f1 owns QP 1017: prepare goes to f2, then the session's steps
    before = f2.lines()
    r = step(f"prepare {GID} {pent(17)}", 0)
    check(tag + "prepare facing the asker's", relayed_to_f2(r, "prepare"),
          r)
    check(tag + "faces, then prepare", f2.lines()[len(before):] ==
          f"partner faces {GID} {pent(17)}\n"
          f"partner prepare {GID} {pent(17)}\n",
          f2.lines()[len(before):])
    r = step(f"suspend {GID} 17 5000", who=f3)
    check(tag + "another process's step", denied(
        r, f"permission denied: pid {f3.pid} has no partner session with "
        f"pid {f2.pid} on {where} for QP 0x11 (a prepare opens one for the "
        f"QPs that face its own)"), r)
    r = step(f"suspend {GID} 17 5000", 0)
    check(tag + "step to any process", "permission denied" in
          r.get("error", ""), r)
    r = step(f"suspend {GID} 17 5000 . 18 5000")
    check(tag + "step for another QP", "for QP 0x12" in
          r.get("error", ""), r)
    # It may reconnect the partner only to a QP of its own
    own((1017, f1.pid), (33, f1.pid), (34, f3.pid))
    r = step(f"reconnect {GID} 17 34 {PEER_GID} 0")
    check(tag + "reconnect to another's QP", denied(
        r, f"permission denied: QP 0x11 on {where} would reconnect to QP "
        f"0x22 with GID {PEER_GID}, which pid {f1.pid} does not own (held by "
        f"pid {f3.pid})"), r)
    r = step(f"reconnect {GID} 17 33 {PEER_GID.upper()} 0")
    check(tag + "reconnect line invalid", denied(
        r, "partner reconnect line is invalid"), r)
    for line in (f"suspend {GID} 17 5000", f"keys {GID} 1a:2b . 17",
                 f"reconnect {GID} 17 33 {PEER_GID} 0", f"resume {GID} 17"):
        r = step(line)
        check(tag + "session: " + line.split()[0], r.get("ok") is True and
              r.get("pid") == f2.pid, r)
    # resume ended it
    r = step(f"abort {GID} 17")
    check(tag + "resume ends the session", "no partner session" in
          r.get("error", ""), r)
    if ROOT:
        # root is relayed as before
        r = ask(sa, f"migrd/1 partner {host} {f2.pid} 17 {GID} suspend "
                f"{GID} 17 5000\n")
        check(tag + "root relayed", r.get("ok") is True, r)
    own()


def claims(tmp, asker, f2, fakes, sa):
    """Registration is no authorization: a process (f6, another user) that
    claims every QP is believed only where the kernel backs its claim"""
    f6 = Fake(tmp, "f6", "forge", NOBODY, sa)
    fakes.append(f6)
    # A search: f2's claim is backed, f6's (lower QP 6017) is not
    r = asker(f"migrd/1 partner - 0 17 {GID} suspend {GID} 17 5000\n")
    check("forger ignored in a search", r.get("ok") is True and
          r.get("pid") == f2.pid, r)
    # Named by pid: its claim is refused, not relayed back
    r = asker(f"migrd/1 partner - {f6.pid} 17 {GID} suspend {GID} 17 5000\n")
    check("forger by pid refused", r.get("error") ==
          f"pid {f6.pid} claimed QP 0x11 on this host as its QP 0x1781, "
          f"which the kernel says it does not hold (no such QP)" and
          "reply" not in r, r)
    # A prepare goes to the holder of the QP the asker's QP faces, only
    before = f6.lines()
    r = asker(f"migrd/1 partner - 0 17 {GID} prepare {GID} {pent(17)}\n")
    check("prepare to the kernel's holder", r.get("ok") is True and
          r.get("pid") == f2.pid, r)
    check("forger never asked for a prepare", f6.lines() == before,
          f6.lines()[len(before):])
    # ... and its answer must name that QP
    r = asker(f"migrd/1 partner - {f6.pid} 17 {GID} prepare {GID} {pent(17)}\n")
    check("forged prepare by pid refused", r.get("error") ==
          f"pid {f6.pid} claimed QP 0x11 on this host as its QP 0x1781, "
          f"but the asker's QP is connected to QP 0x1399", r)
    r = asker(f"migrd/1 partner - 0 17 {GID} prepare {GID} {pent(17, 9999)}\n")
    check("prepare: nobody holds it", r.get("error") ==
          "no process on this host owns QP 0x270f", r)
    plain = subprocess.Popen(["sleep", "60"])
    table(tmp, (GID, 7777, plain.pid), (GID, 23, plain.pid),
          (GID, 19, plain.pid))
    # A fetch names a virtual number, which the device may have given a
    # plain process since the QP moved: no migr process is asked for it
    # (issue 34: whoever claimed it took the connection meant for the
    # plain process's QP, and then the server's keys)
    before = f2.lines()
    r = asker(f"migrd/1 partner - 0 23 {GID} fetch {GID} 23 77 1077 "
              f"00000000000000aa 0 -\n")
    check("fetch: number held by a plain process refused, nobody asked",
          r.get("error", "").startswith(f"QP 0x17 on this host is owned by "
                                        f"pid {plain.pid} (sleep") and
          f2.lines() == before, r)
    r = asker(f"migrd/1 partner - 0 19 {GID} fetch {GID} 19 77 1077 "
              f"00000000000000aa 0 -\n")
    check("fetch: held by a plain process, claimed by none",
          r.get("error", "").startswith(f"QP 0x13 on this host is owned by "
                                        f"pid {plain.pid} (sleep"), r)
    r = asker(f"migrd/1 partner - 0 17 {GID} prepare {GID} {pent(17, 7777)}\n")
    plain.kill()
    plain.wait()
    check("prepare: held by a plain process", r.get("error", "").startswith(
        f"QP 0x1e61 on this host is owned by pid {plain.pid} (sleep") and
        r["error"].endswith("which does not use migr; its partner cannot "
                            "follow a switch"), r)
    # Two backed claims to one number: refused, never a guess
    table(tmp, (GID, 6017, f6.pid))
    r = asker(f"migrd/1 partner - 0 17 {GID} suspend {GID} 17 5000\n")
    check("two claims refused", r.get("ok") is False and
          "both claim QP 0x11 on this host" in r.get("error", ""), r)
    table(tmp)
    f6.stop()
    fakes.remove(f6)


def kernel_word(tmp, asker, f2):
    """A claim is checked by the kernel's word, read reliably: a query that
    fails refuses it naming the failure, never as "does not hold"; a dump
    interrupted by QPs created or destroyed meanwhile is issued again"""
    suspend = f"migrd/1 partner - {f2.pid} 17 {GID} suspend {GID} 17 5000\n"
    claim = (f"pid {f2.pid} claimed QP 0x11 on this host as its QP 0x1399, "
             f"which the kernel ")
    query = f"the kernel's QP query for QP 0x1399 on {GID} failed: "
    # The query fails (EIO): the refusal names the failure
    table(tmp, (GID, 5017, f2.pid, "fail", 5))
    r = asker(suspend)
    check("kernel: failed query named", r.get("error") == claim +
          "could not confirm: " + query + "Input/output error" and
          "reply" not in r, r)
    # ... also in a search, which found no backed claim because of it
    r = asker(f"migrd/1 partner - 0 17 {GID} suspend {GID} 17 5000\n")
    check("kernel: failed query named in a search", r.get("error") ==
          claim + "could not confirm: " + query + "Input/output error", r)
    # Interrupted twice, whole the third time: the claim is backed
    table(tmp, (GID, 5017, f2.pid, "intr", 2))
    r = asker(suspend)
    check("kernel: interrupted dump issued again", r.get("ok") is True and
          r.get("pid") == f2.pid, r)
    with open(os.path.join(tmp, "a.log")) as f:
        log = f.read()
    check("kernel: dump issued again, logged", log.count(
        f"QP dump of {GID} interrupted (QPs created or destroyed while it "
        f"ran): issued again") >= 2, log[-2000:])
    # Interrupted every time: a failure, said as such
    table(tmp, (GID, 5017, f2.pid, "intr", 99))
    r = asker(suspend)
    check("kernel: dump always interrupted", r.get("error") == claim +
          "could not confirm: " + query + "the dump was interrupted 4 "
          "times in a row (QPs created or destroyed while it ran)", r)
    # Genuinely not held: refused, saying by whom, if anyone
    BASE.remove((GID, 5017, f2.pid))
    table(tmp)
    r = asker(suspend)
    check("kernel: no such QP", r.get("error") == claim +
          "says it does not hold (no such QP)", r)
    plain = subprocess.Popen(["sleep", "60"])
    table(tmp, (GID, 5017, plain.pid))
    r = asker(suspend)
    plain.kill()
    plain.wait()
    check("kernel: held by another", r.get("error") == claim +
          f"says it does not hold (held by pid {plain.pid})", r)
    BASE.append((GID, 5017, f2.pid))
    table(tmp)
    r = asker(suspend)
    check("kernel: held again", r.get("ok") is True, r)


def stopped(pid):
    """Has every thread of pid taken its SIGSTOP?"""
    tasks = f"/proc/{pid}/task"
    for t in os.listdir(tasks):
        with open(f"{tasks}/{t}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] != "T":
                return False
    return True


def bindings(tmp, asker, fakes, sa):
    """Issue 34: a virtual number migrd saw move is answered for by its
    owner only. fS's QP 41 (lower 5041) switches from GID's device to
    MOVED_GID's; fA then takes number 41 on GID's device (SET_NEXT, or
    churning creates) and claims it with a QP the kernel says it holds"""
    fS = Fake(tmp, "fS", "41", NOBODY, sa)
    fA = Fake(tmp, "fA", "41:41", NOBODY, sa)
    fakes += [fS, fA]
    fetch = (f"migrd/1 partner - 0 41 {GID} fetch {GID} 41 77 1077 "
             f"00000000000000aa 0 -\n")
    # No move recorded: the kernel's holder answers (the number is its)
    table(tmp, (GID, 41, fA.pid))
    r = asker(fetch)
    check("bind: unbound number, the kernel's holder answers",
          r.get("ok") is True and r.get("pid") == fA.pid, r)
    # fS switches, relayed by migrd: its numbers are bound to it
    table(tmp, (GID, 5041, fS.pid))
    r = ask(sa, f"migrd/1 switch {fS.pid} {MOVED_GID} 1000\n")
    check("bind: switch relayed", r.get("ok") is True and
          r.get("pid") == fS.pid, r)
    table(tmp, (GID, 41, fA.pid), (MOVED_GID, 5041, fS.pid))
    before = fA.lines()
    r = asker(fetch)
    check("bind: the bound owner answers, not the number's holder",
          r.get("ok") is True and r.get("pid") == fS.pid and
          r["reply"]["results"][0].get("gid") == MOVED_GID, r)
    check("bind: the number's holder never asked", fA.lines() == before,
          fA.lines()[len(before):])
    # The bound owner's claim is still the kernel's to back
    table(tmp, (GID, 41, fA.pid))
    r = asker(fetch)
    check("bind: the bound owner's claim checked", r.get("error") ==
          f"pid {fS.pid} claimed QP 0x29 on this host as its QP 0x13b1, "
          f"which the kernel says it does not hold (no such QP) (with GID "
          f"{MOVED_GID})" and fA.lines() == before, r)
    # Its owner does not answer: refused, the holder still not asked
    os.kill(fS.pid, signal.SIGSTOP)
    stopped_by = time.time() + 5
    while time.time() < stopped_by and not stopped(fS.pid):
        time.sleep(0.01)  # a stop is taken when its threads next run
    r = asker(fetch)
    os.kill(fS.pid, signal.SIGCONT)
    check("bind: a silent owner, refused", r.get("error", "").startswith(
        f"QP 0x29 on this host is pid {fS.pid}'s, which did not answer: ")
        and fA.lines() == before, r)
    # Its owner ended: the number is the device's again
    fS.stop()
    fakes.remove(fS)
    r = asker(fetch)
    check("bind: owner gone, unbound", r.get("ok") is True and
          r.get("pid") == fA.pid, r)
    fA.stop()
    fakes.remove(fA)
    table(tmp)


def udpeers(tmp, sa, f1, fakes, host):
    """The UD relay: a line to every migr process of a host (but the asker,
    on its own host); f1, not root, may only announce moves to QPs it
    owns"""
    owners = os.path.join(tmp, "qp-owners")
    where = "this host" if host == "-" else host
    tag = f"udpeers {where}: "
    f4 = Fake(tmp, "f4" + host, "31,32", NOBODY, sa)
    fakes.append(f4)

    def replies(r):
        return {p["pid"]: p.get("reply") for p in r.get("procs", [])}

    r = f1.ask(f"migrd/1 udpeers {host} probe\n")
    check(tag + "probe", r.get("ok") is True and
          replies(r).get(f4.pid) == {"ok": True, "ud": [31, 32]} and
          (f1.pid not in replies(r) or host != "-"), r)
    check(tag + "probe line", f4.lines().endswith("ud probe\n"), f4.lines())
    moved = f"moved {GID} {PEER_GID} 11:2a:11,12:2b:12"
    # f1 held 0x11 and 0x12 when it probed; it owns 0x2a on PEER_GID
    table(tmp, (GID, 0x11, f1.pid), (GID, 0x12, f1.pid),
          (PEER_GID, 42, f1.pid))
    r = f1.ask(f"migrd/1 udpeers {host} probe\n")
    check(tag + "probe recorded", r.get("ok") is True, r)
    before = f4.lines()
    r = f1.ask(f"migrd/1 udpeers {host} {moved}\n")
    check(tag + "moved to a QP not the asker's", r.get("error") ==
          f"permission denied: QP 0x2b with GID {PEER_GID}, which UD peers "
          f"would be sent to, is not pid {f1.pid}'s (no such QP)" and
          "procs" not in r, r)
    check(tag + "moved not relayed", f4.lines() == before, f4.lines())
    # Another's QP (f4's 0x13, not f1's at the probe), or the wrong number
    # its peers know: refused, so f1 cannot take over others' datagrams
    table(tmp, (GID, 0x11, f1.pid), (GID, 0x12, f1.pid),
          (PEER_GID, 42, f1.pid), (PEER_GID, 43, f1.pid),
          (GID, 0x13, f4.pid))
    for line, qp, known in ((f"moved {GID} {PEER_GID} 13:2a:13", 0x13, 0x13),
                            (f"moved {GID} {PEER_GID} 11:2a:13", 0x11, 0x13)):
        r = f1.ask(f"migrd/1 udpeers {host} {line}\n")
        check(tag + f"moved from 0x{qp:x} known as 0x{known:x} refused",
              r.get("error") == f"permission denied: QP 0x{qp:x} with GID "
              f"{GID}, known as 0x{known:x}, was not pid {f1.pid}'s when it "
              f"probed its UD peers" and "procs" not in r, r)
    check(tag + "refused moves not relayed", f4.lines() == before,
          f4.lines())
    r = f1.ask(f"migrd/1 udpeers {host} {moved}\n")
    check(tag + "moved", r.get("ok") is True and
          replies(r).get(f4.pid) == {"ok": True, "redirected": 1,
                                     "echo": moved}, r)
    check(tag + "moved verbatim", f4.lines().endswith(f"ud {moved}\n"),
          f4.lines())
    # The device gave 0x11 out again, to f4, since f1's probe: a move from
    # it would take over datagrams meant for f4's QP (issue 34). Refused,
    # and f1's record of it dropped: refused still once f4 let it go
    table(tmp, (GID, 0x11, f4.pid), (PEER_GID, 42, f1.pid))
    r = f1.ask(f"migrd/1 udpeers {host} moved {GID} {PEER_GID} 11:2a:11\n")
    check(tag + "moved from a number another process holds now refused",
          r.get("error") == f"permission denied: QP 0x11 with GID {GID}, "
          f"which pid {f1.pid} held when it probed, is another process's now"
          and "procs" not in r, r)
    table(tmp, (PEER_GID, 42, f1.pid))
    r = f1.ask(f"migrd/1 udpeers {host} moved {GID} {PEER_GID} 11:2a:11\n")
    check(tag + "its record dropped", "was not pid" in r.get("error", ""), r)
    table(tmp, (GID, 0x11, f1.pid), (GID, 0x12, f1.pid),
          (PEER_GID, 42, f1.pid), (PEER_GID, 43, f1.pid))
    # From where it moved to, under the number its peers know (a rollback)
    r = f1.ask(f"migrd/1 udpeers {host} moved {PEER_GID} {GID} 2a:11:11\n")
    check(tag + "moved back from where it went", r.get("ok") is True, r)
    r = f1.ask(f"migrd/1 udpeers {host} moved {PEER_GID} {GID} 2a:11:12\n")
    check(tag + "moved back under another number refused",
          "known as 0x12, was not" in r.get("error", ""), r)
    # One process that refuses: the whole relay fails, naming it
    f5 = Fake(tmp, "f5" + host, "udfail", NOBODY, sa)
    fakes.append(f5)
    r = f1.ask(f"migrd/1 udpeers {host} {moved}\n")
    check(tag + "a refusal fails it", r.get("ok") is False and
          r.get("error", "").startswith(f"pid {f5.pid} (") and
          r["error"].endswith("): cannot redirect") and
          replies(r).get(f4.pid, {}).get("ok") is True, r)
    f5.stop()
    fakes.remove(f5)
    # One that never answers fails it only if the kernel says it holds a
    # UD QP (or a QP of a type it does not say): one that holds none
    # cannot be a peer, and is skipped
    f7 = Fake(tmp, "f7" + host, "udsilent", NOBODY, sa)
    fakes.append(f7)
    mine = [(GID, 0x11, f1.pid), (GID, 0x12, f1.pid),
            (PEER_GID, 42, f1.pid), (PEER_GID, 43, f1.pid)]
    for qps, fails in (([], False), ([(GID, 0x71, f7.pid, "type", 2)], False),
                       ([(GID, 0x71, f7.pid, "type", 4)], True),
                       ([(GID, 0x71, f7.pid)], True)):
        table(tmp, *mine, *qps)
        r = f1.ask(f"migrd/1 udpeers {host} {moved}\n")
        what = f"silent, holding {qps[0][3:] if qps else 'no QP'}"
        if fails:
            check(tag + what + ": fails it", r.get("ok") is False and
                  r.get("error", "").startswith(f"pid {f7.pid} ("), r)
        else:
            check(tag + what + ": skipped", r.get("ok") is True and
                  {"pid": f7.pid, "skipped": "did not answer; holds no UD "
                   "QP"} in r.get("procs", []) and
                  replies(r).get(f4.pid, {}).get("ok") is True, r)
    f7.stop()
    fakes.remove(f7)
    table(tmp)


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

    if ROOT:
        # Nobody owns the QP; the GID is on no device either
        r = asker(f"migrd/1 partner - 0 17 {GID} suspend {GID} 17 5000\n")
        check("no owner", nobody_owns(r, 17), r)
        check("f1 asked, said notmine", f1.lines() ==
              f"partner suspend {GID} 17 5000\n", f1.lines())

        # An owner: PID 0 finds it, the line reaches it verbatim
        f2 = Fake(tmp, "f2", "17,18,20,21,22,23", NOBODY, sa)
        fakes.append(f2)
        BASE.extend((GID, 5000 + q, f2.pid) for q in (17, 18, 20, 21, 22))
        # its QP 23 moved to another device: it holds 5023 with MOVED_GID
        BASE.append((MOVED_GID, 5023, f2.pid))
        table(tmp)
        r = asker(f"migrd/1 partner - 0 23 {GID} fetch {GID} 23 77 1077 "
                  f"00000000000000aa 0 -\n")
        check("claim checked at the GID it is on now", r.get("ok") is True
              and r.get("pid") == f2.pid, r)
        r = asker(f"migrd/1 partner - 0 17 {GID} suspend {GID} 17 a:b,c  d.e_f-g\n")
        check("found", r.get("ok") is True and r.get("pid") == f2.pid and
              r["reply"]["results"] == [{"phys": 5017, "ok": True,
                                         "op": "suspend",
                                         "echo": "17 a:b,c  d.e_f-g"}] and
              "error" not in r, r)
        check("verbatim", f2.lines().endswith(
            f"partner suspend {GID} 17 a:b,c  d.e_f-g\n"), f2.lines())
        # By pid, as a previous reply named it; its refusal is the error
        r = asker(f"migrd/1 partner - {f2.pid} 18 {GID} suspend {GID} 18 fail\n")
        check("by pid, refused", r.get("ok") is False and
              r.get("error") == "cannot suspend QP 18" and
              r.get("pid") == f2.pid, r)
        # A reply naming a key twice is no JSON: neither "ok" is taken
        r = asker(f"migrd/1 partner - {f2.pid} 18 {GID} suspend {GID} 18 dup\n")
        check("key twice refused", r.get("ok") is False and
              r.get("error") == f"pid {f2.pid}: its reply is not valid JSON"
              and "reply" not in r, r)
        # A pid that is not a migr process
        r = asker(f"migrd/1 partner - {os.getpid()} 17 {GID} resume {GID} 17\n")
        check("not migr", r["error"] ==
              f"no migr process with pid {os.getpid()} on this host", r)
        # Still nobody for another QP
        r = asker(f"migrd/1 partner - 0 19 {GID} suspend {GID} 19 5000\n")
        check("other QP: no owner", nobody_owns(r, 19), r)
        # This host's own address is this host
        r = asker(f"migrd/1 partner 127.0.0.1 0 17 {GID} suspend {GID} 17 5000\n")
        check("own address is local", r.get("ok") is True and
              r.get("pid") == f2.pid, r)
        # Lines migrd does not read as the library does: refused from root too
        r = asker(f"migrd/1 partner - 0 17 {GID} suspend 17\n")
        check("root: line checked", r.get("error") ==
              "partner line names another GID than the request", r)
        claims(tmp, asker, f2, fakes, sa)
        kernel_word(tmp, asker, f2)
        bindings(tmp, asker, fakes, sa)
    else:
        print("not root: root's relaying of any line not checked")
        f2 = Fake(tmp, "f2", "17,18,20,21,22", NOBODY, sa)
        fakes.append(f2)
        BASE.extend((GID, 5000 + q, f2.pid) for q in (17, 18, 20, 21, 22))
        table(tmp)
    # A migr process that is not root: only for QPs facing its own
    owned_by(tmp, sa, f1, f2, fakes, "-")
    udpeers(tmp, sa, f1, fakes, "-")
    r = ask_as(NOBODY, sa, "migrd/1 udpeers - probe\n") if ROOT else \
        ask(sa, "migrd/1 udpeers - probe\n")
    check("udpeers: non-migr refused", r.get("error") ==
          "permission denied: udpeers requests come from migr processes", r)
    if not ROOT:
        print("not root: peer relaying not checked (the key must be root's)")
        return

    # Another host: a second migrd on 127.0.0.2 (not one of this host's
    # addresses) serves the same stand-ins
    b, sb = start_migrd(MIGRD, tmp, "b", "--listen", "127.0.0.2", "--port",
                        str(port), "--name", "b", "--peer",
                        f"a 127.0.0.1 {keyf}", "--test-qp-owners",
                        os.path.join(tmp, "qp-owners"))
    procs.append(b)
    time.sleep(0.2)
    r = asker(f"migrd/1 partner 127.0.0.2 0 17 {GID} resume {GID} 17\n")
    check("relayed", r.get("ok") is True and r.get("pid") == f2.pid and
          r["reply"]["results"][0]["echo"] == "17", r)
    # The longest line there and back
    long_line = f"resume {GID} 17 " + "x" * (3800 - 43)
    r = asker(f"migrd/1 partner 127.0.0.2 0 17 {GID} {long_line}\n")
    check("relayed long", r.get("ok") is True and
          r["reply"]["results"][0]["echo"] == long_line[40:], str(r)[:300])
    # A reply over 4096 bytes fits a peer frame (8192); one over 8192 not
    r = asker(f"migrd/1 partner 127.0.0.2 0 17 {GID} resume {GID} 17 big 6000\n")
    check("relayed big reply", r.get("ok") is True and
          len(r["reply"]["results"][0]["pad"]) == 6000, str(r)[:300])
    r = asker(f"migrd/1 partner 127.0.0.2 0 17 {GID} resume {GID} 17 big 9000\n")
    check("relayed reply too big", r.get("error") ==
          "reply too large for one frame", str(r)[:300])
    r = asker(f"migrd/1 partner - 0 17 {GID} resume {GID} 17 big 9000\n")
    check("local big reply", r.get("ok") is True and
          len(r["reply"]["results"][0]["pad"]) == 9000, str(r)[:300])
    r = asker(f"migrd/1 partner 127.0.0.2 0 19 {GID} resume {GID} 19\n")
    check("relayed no owner", nobody_owns(r, 19), r)
    r = asker(f"migrd/1 partner 127.0.0.3 0 17 {GID} resume {GID} 17\n")
    check("unreachable", r.get("error") ==
          f"migrd on 127.0.0.3 is unreachable: connection refused "
          f"(port {port})", r)
    # A host no peer line names: never contacted, whoever asks
    r = asker(f"migrd/1 partner 127.0.0.4 0 17 {GID} resume {GID} 17\n")
    check("not a peer: not contacted", r.get("error") ==
          "127.0.0.4 is not a peer of this host: migrd asks only the peers "
          "its configuration names (peer = NAME ADDRESS KEY_FILE, migrd(8) "
          "PEERS)", r)
    r = ask(sa, "migrd/1 peer-ping 127.0.0.4\n")
    check("not a peer: no ping", "is not a peer of this host" in
          r.get("error", ""), r)
    r = ask(sa, "migrd/1 peer-ping b\n")
    check("a peer by its name", r.get("ok") is True, r)

    # The same through the peer: grants are per partner host
    owned_by(tmp, sa, f1, f2, fakes, "127.0.0.2")
    udpeers(tmp, sa, f1, fakes, "127.0.0.2")
    r = asker("migrd/1 udpeers 127.0.0.3 probe\n")
    check("udpeers: unreachable", r.get("error") ==
          f"migrd on 127.0.0.3 is unreachable: connection refused "
          f"(port {port})", r)

    # What a peer may ask
    r = peer_ask(port, keyf,
                 f"migrd/1 partner - 0 17 {GID} resume {GID} 17\n")
    check("peer: partner -", r.get("ok") is True and r.get("pid") == f2.pid,
          r)
    r = peer_ask(port, keyf,
                 f"migrd/1 partner 127.0.0.1 0 17 {GID} resume {GID} 17\n")
    check("peer: partner HOST refused",
          r.get("error") == "request not allowed from a peer", r)
    r = peer_ask(port, keyf, "migrd/1 udpeers - probe\n")
    check("peer: udpeers -", r.get("ok") is True and any(
        p.get("pid") == f2.pid for p in r.get("procs", [])), r)
    r = peer_ask(port, keyf, "migrd/1 udpeers 127.0.0.1 probe\n")
    check("peer: udpeers HOST refused",
          r.get("error") == "request not allowed from a peer", r)
    r = peer_ask(port, keyf, "migrd/1 status\n")
    check("peer: status refused",
          r.get("error") == "request not allowed from a peer", r)
    peer_refusals(tmp, port, keyf, procs)


def peer_refusals(tmp, port, keyf, procs):
    """Who the peer link refuses: another key, another version. A replay
    needs no check here: TLS 1.3 keys each connection anew (both randoms,
    an ECDHE share), so recorded bytes do not decrypt on another one, and
    its record sequence numbers refuse a record repeated on the same one
    (test_tls replays a whole session)."""
    blog = os.path.join(tmp, "b.log")

    def logged(text):
        time.sleep(0.2)
        with open(blog) as f:
            return text in f.read()

    other = os.path.join(tmp, "key2")
    with open(other, "wb") as f:
        f.write(os.urandom(32))
    os.chmod(other, 0o600)
    # a's name, another key (a host that says it is a)
    r = peer_ask(port, other, "migrd/1 hello\n")
    check("peer: wrong key refused", r.get("client", "").startswith(
        "refused the TLS handshake: wrong key, or this host is not its "
        "peer? ("), r)
    check("peer: wrong key logged",
          logged("peer at 127.0.0.1 refused: wrong key (binder does not "
                 "verify)"))
    # the a-b key, but another name: b knows no such peer
    r = peer_ask(port, keyf, "migrd/1 hello\n", name="mallory")
    check("peer: unknown name refused", r.get("client", "").startswith(
        "refused the TLS handshake: is mallory among its peers? ("), r)
    check("peer: unknown name logged",
          logged("refused: mallory is not a peer of this host (no peer "
                 "line names it)"))
    check("peer: known by name", logged("peer a (127.0.0.1) authenticated"))
    r = peer_ask(port, keyf, "migrd/1 hello\n", "migrd/2")
    check("peer: other version refused", r.get("client", "").startswith(
        "refused the TLS handshake: it does not speak migrd/2 ("), r)
    check("peer: other version logged", logged(
        "refused: peer speaks protocol migrd/2, this migrd speaks migrd/1"))
    r = peer_ask(port, keyf, "migrd/1 hello\n", "-")
    check("peer: no version refused", "client" in r, r)
    check("peer: no version logged", logged(
        "refused: peer named no protocol version (ALPN), this migrd speaks "
        "migrd/1"))
    r = peer_ask(port, keyf, "migrd/1 hello\n")
    check("peer: right key and version", r.get("ok") is True, r)
    # A migrd that says it is a, with another key: its error says so
    c, sc = start_migrd(MIGRD, tmp, "c", "--listen", "none", "--port",
                        str(port), "--name", "a", "--peer",
                        f"b 127.0.0.2 {other}")
    procs.append(c)
    r = ask(sc, "migrd/1 peer-ping 127.0.0.2\n")
    check("peer: migrd with another key refused", r.get("ok") is False and
          r.get("error", "").startswith(
              "peer 127.0.0.2 refused the TLS handshake: wrong key, or "
              "this host is not its peer? ("), r)
    # Host e holding the a-b key: it is not a, so b does not know it
    e, se = start_migrd(MIGRD, tmp, "e", "--listen", "none", "--port",
                        str(port), "--name", "e", "--peer",
                        f"b 127.0.0.2 {keyf}")
    procs.append(e)
    r = ask(se, "migrd/1 peer-ping b\n")
    check("peer: another host with the key refused", r.get("ok") is False
          and r.get("error", "").startswith(
              "peer b refused the TLS handshake: is e among its peers? ("),
          r)
    # Plain bytes, not TLS: refused at once, logged
    s = socket.create_connection(("127.0.0.2", port), timeout=5)
    s.sendall(b"MGRD\1\1\0\0" + b"\0" * 40)
    try:
        check("peer: plain bytes unanswered", s.recv(100)[:1] in
              (b"", b"\x15"))  # nothing, or a TLS alert
    except ConnectionResetError:
        pass
    s.close()
    check("peer: plain bytes logged",
          logged("refused: not TLS 1.3, an older migrd? (wrong version "
                 "number)"))

if __name__ == "__main__":
    sys.exit(main())
