#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""One request over migrd's peer link, as another migrd sends it: TLS 1.3
with the PSK migrd derives from the key file a pair of hosts shares and
both their names (HKDF-SHA256, tls.c), the client's name as its identity,
ALPN "migrd/1"; the request and the reply are frames of a 4-byte
big-endian length. Needs Python 3.13's ssl (TLS-PSK), as the guest has.
usage: peer-tls.py KEYFILE NAME PEER HOST PORT [ALPN [LINE]]
(NAME: the client's host name; PEER: the server's)
Prints the reply, or "error: ..." (exit 1).
"""
import hashlib
import hmac
import socket
import ssl
import sys


def psk(keyfile, client, server):
    """tls_psk_derive(): HKDF-SHA256 of the file's bytes (at most 256,
    trailing newlines dropped), salt fixed, the label with both names, 32
    bytes"""
    with open(keyfile, "rb") as f:
        ikm = f.read(257).rstrip(b"\r\n")
    prk = hmac.new(b"migrd peer link", ikm, hashlib.sha256).digest()
    info = f"migrd/1 tls13 external psk {client}>{server}".encode()
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()


def read_full(s, n):
    buf = b""
    while len(buf) < n:
        more = s.recv(n - len(buf))
        if not more:
            raise ConnectionError("connection closed")
        buf += more
    return buf


def main():
    keyfile, name, peer = sys.argv[1:4]
    host, port = sys.argv[4], int(sys.argv[5])
    alpn = sys.argv[6] if len(sys.argv) > 6 else "migrd/1"
    line = sys.argv[7] if len(sys.argv) > 7 else "migrd/1 hello\n"
    key = psk(keyfile, name, peer)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # no certificates: the PSK is the proof
    ctx.minimum_version = ctx.maximum_version = ssl.TLSVersion.TLSv1_3
    ctx.set_alpn_protocols([alpn])
    ctx.set_psk_client_callback(lambda hint: (name, key))
    try:
        with socket.create_connection((host, port), timeout=10) as raw:
            with ctx.wrap_socket(raw) as s:
                if s.selected_alpn_protocol() != alpn:
                    raise ssl.SSLError("server selected no migrd/1")
                body = line.encode()
                s.sendall(len(body).to_bytes(4, "big") + body)
                n = int.from_bytes(read_full(s, 4), "big")
                print(read_full(s, n).decode())
    except (OSError, ssl.SSLError) as e:
        print(f"error: {e}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
