#!/usr/bin/env python3
"""A TCP connection that must survive a migration, checked byte by byte.

  ns_tcp.py server PORT LOG
      echo one connection back until it ends (LOG: what happened)
  ns_tcp.py hold HOST PORT LOG -- CMD...
      connect, then fork: the child sends a running 8-byte counter every
      0.1 s and checks its echo ("n=N" lines in LOG; "tcp: BROKEN ..." and
      exit 1 on any error or wrong byte; "tcp: OK n=N" on SIGTERM); the
      parent becomes CMD (exec), so CMD is the tree's root and the
      connection lives in its child
"""
import os
import signal
import socket
import struct
import sys
import time


def log_to(path):
    f = open(path, "a", buffering=1)
    return lambda s: f.write("%s %s\n" % (time.strftime("%H:%M:%S"), s))


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        c = s.recv(n - len(b))
        if not c:
            raise ConnectionError("closed by the peer")
        b += c
    return b


def server(port, path):
    log = log_to(path)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("0.0.0.0", port))
    ls.listen(1)
    log("listening on %d" % port)
    s, peer = ls.accept()
    log("accepted %s:%d" % peer)
    total = 0
    try:
        while True:
            b = s.recv(4096)
            if not b:
                break
            s.sendall(b)
            total += len(b)
    except OSError as e:
        log("error: %s" % e)
    log("closed after %d bytes" % total)


def hold(host, port, path, cmd):
    log = log_to(path)
    s = socket.create_connection((host, port), timeout=30)
    s.settimeout(None)
    log("connected %s:%d from %s:%d" % ((host, port) + s.getsockname()))
    if os.fork():
        s.close()
        os.execvp(cmd[0], cmd)
    n = 0

    def done(sig, frame):
        log("tcp: OK n=%d" % n)
        os._exit(0)

    signal.signal(signal.SIGTERM, done)
    try:
        while True:
            s.sendall(struct.pack("!Q", n))
            got = struct.unpack("!Q", recv_exact(s, 8))[0]
            if got != n:
                log("tcp: BROKEN sent %d, echoed %d" % (n, got))
                os._exit(1)
            n += 1
            if n % 10 == 0:
                log("n=%d" % n)
            time.sleep(0.1)
    except OSError as e:
        log("tcp: BROKEN at n=%d: %s" % (n, e))
        os._exit(1)


if __name__ == "__main__":
    a = sys.argv[1:]
    if a[:1] == ["server"] and len(a) == 3:
        server(int(a[1]), a[2])
    elif a[:1] == ["hold"] and len(a) > 5 and a[4] == "--":
        hold(a[1], int(a[2]), a[3], a[5:])
    else:
        sys.exit(__doc__)
