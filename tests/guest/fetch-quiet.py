#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""Connecting a QP to a QP on another host asks that host, through migrd,
what the peer is now (migr(7), fetch). A host that made the connect wait
in vain is not asked again for a minute: a process making many
connections there must not wait each time.

usage: fetch-quiet.py SOCKET   (run with MIGRD_SOCKET=SOCKET)
SOCKET gets a stand-in migrd that accepts and never answers. The QP on
migr_rxe0 is taken to RTR twice towards a GID of a host no route leads to
(the lower modify then fails at once): the first try waits for the fetch
(3 s), the second must not (it takes what the lower's refusal takes).
Exit 0 if so."""
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '../../pyverbs-tests'))
from migrtest.verbs import Endpoint, modify, REMOTE_ACCESS  # noqa: E402
from pyverbs.addr import AHAttr, GID, GlobalRoute  # noqa: E402
from pyverbs.pyverbs_error import PyverbsError  # noqa: E402
import pyverbs.enums as e  # noqa: E402

WAIT_S = 3  # FETCH_TIMEOUT_S in partner_call.h
FAR_GID = '0000:0000:0000:0000:0000:ffff:0a4d:0001'  # ::ffff:10.77.0.1

path = sys.argv[1]
if os.environ.get('MIGRD_SOCKET') != path:
    sys.exit('run with MIGRD_SOCKET=' + path)
if os.path.exists(path):
    os.unlink(path)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(16)
held = []


def silent():
    while True:
        conn, _ = srv.accept()
        held.append(conn)  # read nothing, answer nothing


threading.Thread(target=silent, daemon=True).start()


def to_rtr(ep):
    """One try; the time it took (it fails: no route to FAR_GID)."""
    route = GlobalRoute(dgid=GID(FAR_GID), sgid_index=ep.path.gid_index,
                        hop_limit=64)
    t0 = time.monotonic()
    try:
        modify(ep.qp, e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN |
               e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC |
               e.IBV_QP_MIN_RNR_TIMER,
               qp_state=e.IBV_QPS_RTR, path_mtu=ep.path.mtu,
               dest_qp_num=0x11, rq_psn=0, max_dest_rd_atomic=1,
               min_rnr_timer=12,
               ah_attr=AHAttr(is_global=1, gr=route, port_num=ep.path.port))
    except PyverbsError:
        pass
    return time.monotonic() - t0


with Endpoint('migr_rxe0') as ep:
    ep.make_qp()
    modify(ep.qp, e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS,
           qp_state=e.IBV_QPS_INIT, pkey_index=0, port_num=ep.path.port,
           qp_access_flags=REMOTE_ACCESS)
    first = to_rtr(ep)
    second = to_rtr(ep)
print('first connect %.2f s (waited for the fetch), second %.2f s' %
      (first, second))
if first < WAIT_S - 0.5:
    sys.exit('the first connect did not ask (%.2f s)' % first)
# the lower's own refusal takes its time too (about 1 s under TCG)
if second > first - (WAIT_S - 1):
    sys.exit('the second connect asked again (%.2f s)' % second)
