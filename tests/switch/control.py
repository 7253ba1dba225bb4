#!/usr/bin/env python3
"""Send one request to a migr process's control socket and print the reply.

usage: control.py PID REQUEST...     e.g. control.py 1234 switch rxe1
       control.py PID alternate N DEV_A DEV_B [PAUSE_S]
The second form switches N times, to DEV_A first, one JSON line each.
Exit status: 0 if every reply says "ok": true and no switch lost a
completion, 1 otherwise, 2 on no reply.
(The test's stand-in until migrctl talks to processes itself.)
The one writer of control lines in the Python tests: the words are
joined as common/ctl_line.h's grammar has them (single spaces, one line).
"""
import json
import socket
import sys
import time


def request(pid, req):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(120)
    try:
        s.connect("\0migr/%s" % pid)
        s.sendall((req + "\n").encode())
        line = s.makefile().readline()
    except OSError as e:
        print("control.py: pid %s: %s" % (pid, e), file=sys.stderr)
        return 2
    print(line.strip(), flush=True)
    try:
        reply = json.loads(line)
    except ValueError:
        return 2
    # A switch that says it left completions behind failed its promise
    lost = sum(s.get("lost", 0) for s in reply.get("switch", []))
    if lost:
        print("control.py: pid %s: %d completions lost" % (pid, lost),
              file=sys.stderr)
        return 1
    return 0 if reply.get("ok") else 1


def main():
    pid, args = sys.argv[1], sys.argv[2:]
    if args[0] != "alternate":
        return request(pid, " ".join(args))
    n, devs = int(args[1]), args[2:4]
    pause = float(args[4]) if len(args) > 4 else 0.2
    worst = 0
    for i in range(n):
        worst = max(worst, request(pid, "switch " + devs[i % 2]))
        time.sleep(pause)
    return worst


sys.exit(main())
