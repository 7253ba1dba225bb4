"""Small pyverbs building blocks shared by the test modules: endpoints
(context + PD + MR + CQs + QP) on one device, RC/UD loopback connection,
work requests, and completion polling that never waits forever.
"""
import os
import socket
import sys
import time
import errno as _errno

import pyverbs.enums as e
from pyverbs.addr import AH, AHAttr, GlobalRoute
from pyverbs.cq import CQ, CQEX, CompChannel, CqInitAttrEx, PollCqAttr
from pyverbs.cq import cqe_status_to_str
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsError, PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPEx, QPInitAttr, QPInitAttrEx
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

PORT = 1
DEPTH = 8                      # small queues: rxe under TCG is slow
MR_SIZE = 4096
GRH_SIZE = 40                  # UD receive buffers start with the GRH
QKEY = 0x11111111
POLL_TIMEOUT = float(os.environ.get('MIGR_POLL_TIMEOUT', '10'))
QUIET_TIME = 0.3               # "nothing happens" is checked this long

REMOTE_ACCESS = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE |
                 e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_ATOMIC)

RC_EXT_OPS = (e.IBV_QP_EX_WITH_SEND | e.IBV_QP_EX_WITH_SEND_WITH_IMM |
              e.IBV_QP_EX_WITH_RDMA_WRITE |
              e.IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
              e.IBV_QP_EX_WITH_RDMA_READ |
              e.IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
              e.IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)

CQEX_FLAGS = (e.IBV_WC_EX_WITH_BYTE_LEN | e.IBV_WC_EX_WITH_IMM |
              e.IBV_WC_EX_WITH_QP_NUM | e.IBV_WC_EX_WITH_SRC_QP)


class CompletionTimeout(AssertionError):
    pass


def outcome(func, *args, **kwargs):
    """Run func; return ('ok', result) or ('error', class name, errno) so
    that two devices' behaviour can be compared with ==."""
    try:
        return ('ok', func(*args, **kwargs))
    except PyverbsRDMAError as err:
        return ('error', type(err).__name__, err.error_code)
    except PyverbsError as err:
        return ('error', type(err).__name__, str(err))


def u64(value):
    return value.to_bytes(8, sys.byteorder)


def from_u64(data):
    return int.from_bytes(data, sys.byteorder)


def pattern(length, seed):
    """Recognisable payload bytes."""
    return bytes((seed + i * 7) & 0xff for i in range(length))


# ---------------------------------------------------------------- addressing

class Path:
    """How to reach this device's own port (loopback)."""

    def __init__(self, ctx, port=PORT):
        attr = ctx.query_port(port)
        self.port = port
        self.mtu = attr.active_mtu
        self.lid = attr.lid
        self.is_global = attr.link_layer != e.IBV_LINK_LAYER_INFINIBAND
        self.gid_index = pick_gid_index(ctx, port) if self.is_global else 0
        self.gid = ctx.query_gid(port, self.gid_index)

    def ah_attr(self):
        if not self.is_global:
            return AHAttr(dlid=self.lid, port_num=self.port)
        route = GlobalRoute(dgid=self.gid,
                            sgid_index=self.gid_index, hop_limit=64)
        return AHAttr(is_global=1, gr=route, port_num=self.port)


def pick_gid_index(ctx, port=PORT):
    """A usable GID: RoCE v2 with an IPv4-mapped address if there is one,
    else any RoCE v2, else the first valid entry."""
    entries = [g for g in ctx.query_gid_table(
        ctx.query_port(port).gid_tbl_len) if g.port_num == port]
    if not entries:
        raise AssertionError('{} port {} has an empty GID table'.format(
            ctx.name, port))

    def rank(entry):
        v2 = entry.gid_type == e.IBV_GID_TYPE_ROCE_V2
        v4 = entry.gid_str().startswith('0000:0000:0000:0000:0000:ffff')
        return (not v2, not v4, entry.gid_index)
    return min(entries, key=rank).gid_index


# -------------------------------------------------------------- endpoints

class Endpoint:
    """One end of a loopback connection, with its own context (as if it
    were its own process) on device `name`."""

    def __init__(self, name, mr_size=MR_SIZE, mr_access=REMOTE_ACCESS,
                 channel=False, cq_ex_flags=None, depth=DEPTH, cqe=None,
                 max_inline=0):
        self.ctx = Context(name=name)
        try:
            self.name = name
            self.depth = depth
            self.cqe = cqe or 2 * depth
            self.max_inline = max_inline
            self.pd = PD(self.ctx)
            self.mr = MR(self.pd, mr_size, mr_access) if mr_size else None
            self.channel = CompChannel(self.ctx) if channel else None
            self.send_cq = self._make_cq(cq_ex_flags)
            self.recv_cq = self._make_cq(cq_ex_flags)
            self.path = Path(self.ctx)
            self.qp = None
            self.srq = None
        except BaseException:
            self.ctx.close()
            raise

    def _make_cq(self, cq_ex_flags):
        if cq_ex_flags is None:
            return CQ(self.ctx, self.cqe, None, self.channel, 0)
        attr = CqInitAttrEx(cqe=self.cqe, channel=self.channel,
                            wc_flags=cq_ex_flags)
        return CQEX(self.ctx, attr)

    def close(self):
        self.ctx.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- queue pairs
    def qp_cap(self):
        return QPCap(max_send_wr=self.depth, max_recv_wr=self.depth,
                     max_send_sge=1, max_recv_sge=1,
                     max_inline_data=self.max_inline)

    def make_srq(self, max_wr=None):
        self.srq = SRQ(self.pd, SrqInitAttr(SrqAttr(
            max_wr=max_wr or 2 * self.depth, max_sge=1)))
        return self.srq

    def make_qp(self, qp_type=e.IBV_QPT_RC):
        attr = QPInitAttr(qp_type=qp_type, scq=self.send_cq,
                          rcq=self.recv_cq, srq=self.srq, cap=self.qp_cap(),
                          sq_sig_all=0)
        self.qp = QP(self.pd, attr)
        return self.qp

    def make_qp_ex(self, send_ops, qp_type=e.IBV_QPT_RC):
        attr = QPInitAttrEx(
            qp_type=qp_type, scq=self.send_cq, rcq=self.recv_cq,
            srq=self.srq, cap=self.qp_cap(), sq_sig_all=0, pd=self.pd,
            comp_mask=(e.IBV_QP_INIT_ATTR_PD |
                       e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS),
            send_ops_flags=send_ops)
        self.qp = QPEx(self.ctx, attr)
        return self.qp

    # -- buffers
    def sge(self, length, offset=0, mr=None):
        mr = mr or self.mr
        return SGE(mr.buf + offset, length, mr.lkey)

    def write(self, data, offset=0):
        self.mr.write(data, len(data), offset)

    def read(self, length, offset=0):
        return self.mr.read(length, offset)

    def remote(self, offset=0, mr=None):
        """(addr, rkey) a peer uses to reach this endpoint's MR."""
        mr = mr or self.mr
        return mr.buf + offset, mr.rkey


# --------------------------------------------------------- QP transitions

def modify(qp, mask, **fields):
    attr = QPAttr()
    for key, value in fields.items():
        setattr(attr, key, value)
    qp.modify(attr, mask | e.IBV_QP_STATE)


def rc_to_rts(qp, path, remote_qpn, access=REMOTE_ACCESS, rd_atomic=4):
    """RESET -> INIT -> RTR -> RTS towards remote_qpn on our own port."""
    modify(qp, e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_ACCESS_FLAGS,
           qp_state=e.IBV_QPS_INIT, pkey_index=0, port_num=path.port,
           qp_access_flags=access)
    modify(qp, e.IBV_QP_AV | e.IBV_QP_PATH_MTU | e.IBV_QP_DEST_QPN |
           e.IBV_QP_RQ_PSN | e.IBV_QP_MAX_DEST_RD_ATOMIC |
           e.IBV_QP_MIN_RNR_TIMER,
           qp_state=e.IBV_QPS_RTR, path_mtu=path.mtu, dest_qp_num=remote_qpn,
           rq_psn=0, max_dest_rd_atomic=rd_atomic, min_rnr_timer=12,
           ah_attr=path.ah_attr())
    modify(qp, e.IBV_QP_TIMEOUT | e.IBV_QP_RETRY_CNT | e.IBV_QP_RNR_RETRY |
           e.IBV_QP_SQ_PSN | e.IBV_QP_MAX_QP_RD_ATOMIC,
           qp_state=e.IBV_QPS_RTS, timeout=14, retry_cnt=7, rnr_retry=7,
           sq_psn=0, max_rd_atomic=rd_atomic)


def ud_to_rts(ep):
    modify(ep.qp, e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT | e.IBV_QP_QKEY,
           qp_state=e.IBV_QPS_INIT, pkey_index=0, port_num=ep.path.port,
           qkey=QKEY)
    modify(ep.qp, 0, qp_state=e.IBV_QPS_RTR)
    modify(ep.qp, e.IBV_QP_SQ_PSN, qp_state=e.IBV_QPS_RTS, sq_psn=0)


def connect_rc(a, b, access=REMOTE_ACCESS):
    """Connect the QPs of endpoints a and b to each other."""
    connect_qps(a.qp, b.qp, a.path, access)


def connect_qps(qp_a, qp_b, path, access=REMOTE_ACCESS):
    rc_to_rts(qp_a, path, qp_b.qp_num, access)
    rc_to_rts(qp_b, path, qp_a.qp_num, access)


def make_ah(ep):
    return AH(ep.pd, attr=ep.path.ah_attr())


# ---------------------------------------------------------- work requests

def post_recv(ep, length, wr_id, offset=0, lkey=None):
    sge = ep.sge(length, offset)
    if lkey is not None:
        sge.lkey = lkey
    wr = RecvWR(wr_id=wr_id, num_sge=1, sg=[sge])
    (ep.qp if ep.srq is None else ep.srq).post_recv(wr)


def send_wr(ep, wr_id, length=0, offset=0, opcode=e.IBV_WR_SEND, imm=0,
            flags=e.IBV_SEND_SIGNALED, lkey=None):
    sge = ep.sge(length, offset)
    if lkey is not None:
        sge.lkey = lkey
    return SendWR(wr_id=wr_id, opcode=opcode, num_sge=1, sg=[sge],
                  imm_data=imm, send_flags=flags)


def post_send(ep, wr_id, length, offset=0, opcode=e.IBV_WR_SEND, imm=0,
              flags=e.IBV_SEND_SIGNALED, lkey=None, remote=None):
    """Post one SEND / RDMA WRITE(_WITH_IMM) / READ on ep's QP; remote is
    the (addr, rkey) of the peer buffer for RDMA opcodes."""
    wr = send_wr(ep, wr_id, length, offset, opcode, imm, flags, lkey)
    if remote is not None:
        wr.set_wr_rdma(remote[1], remote[0])
    ep.qp.post_send(wr)
    return wr


def post_atomic(ep, wr_id, opcode, remote, compare_add, swap=0, offset=0):
    """CMP_AND_SWP or FETCH_AND_ADD on the 8 bytes at remote (addr, rkey);
    the old value lands at ep's MR + offset."""
    wr = send_wr(ep, wr_id, 8, offset, opcode)
    wr.set_wr_atomic(remote[1], remote[0], compare_add, swap)
    ep.qp.post_send(wr)


def post_ud_send(ep, wr_id, length, ah, remote_qpn, offset=0, imm=None):
    opcode = e.IBV_WR_SEND if imm is None else e.IBV_WR_SEND_WITH_IMM
    wr = send_wr(ep, wr_id, length, offset, opcode, imm or 0)
    wr.set_wr_ud(ah, remote_qpn, QKEY)
    ep.qp.post_send(wr)


# ------------------------------------------------------------- completion

def poll(cq, count=1, timeout=None):
    """Exactly `count` work completions from a CQ, or CompletionTimeout."""
    deadline = time.monotonic() + (POLL_TIMEOUT if timeout is None
                                   else timeout)
    wcs = []
    while len(wcs) < count:
        _, got = cq.poll(count - len(wcs))
        wcs.extend(got)
        if len(wcs) < count:
            if time.monotonic() > deadline:
                raise CompletionTimeout(
                    'got {} of {} completions within {}s'.format(
                        len(wcs), count, timeout or POLL_TIMEOUT))
            time.sleep(0.0001)
    return wcs


def poll_one(cq, timeout=None):
    return poll(cq, 1, timeout)[0]


def nothing_to_poll(cq, quiet_time=QUIET_TIME):
    """True if no completion shows up within quiet_time."""
    try:
        wc = poll_one(cq, quiet_time)
    except CompletionTimeout:
        return True
    raise AssertionError('unexpected completion: ' + describe(wc))


def describe(wc):
    return 'wr_id={} status={} ({}) opcode={} byte_len={} qp_num={}'.format(
        wc.wr_id, wc.status, cqe_status_to_str(wc.status), wc.opcode,
        wc.byte_len, wc.qp_num)


def check_wc(wc, opcode, wr_id=None, qp=None, byte_len=None):
    """Assert a successful completion with the given properties."""
    assert wc.status == e.IBV_WC_SUCCESS, 'failed: ' + describe(wc)
    assert wc.opcode == opcode, 'opcode: ' + describe(wc)
    if wr_id is not None:
        assert wc.wr_id == wr_id, 'wr_id: ' + describe(wc)
    if qp is not None:
        assert wc.qp_num == qp.qp_num, 'qp_num: ' + describe(wc)
    if byte_len is not None:
        assert wc.byte_len == byte_len, 'byte_len: ' + describe(wc)


class CqeEx:
    """What ibv_wc_read_*() returned for one extended completion."""

    def __init__(self, cq, wc_flags):
        self.wr_id = cq.wr_id
        self.status = cq.status
        self.opcode = self.byte_len = self.qp_num = self.imm = None
        self.src_qp = self.wc_flags = None
        if self.status != e.IBV_WC_SUCCESS:
            return
        self.opcode = cq.read_opcode()
        self.wc_flags = cq.read_wc_flags()
        if wc_flags & e.IBV_WC_EX_WITH_BYTE_LEN:
            self.byte_len = cq.read_byte_len()
        if wc_flags & e.IBV_WC_EX_WITH_QP_NUM:
            self.qp_num = cq.read_qp_num()
        if wc_flags & e.IBV_WC_EX_WITH_SRC_QP:
            self.src_qp = cq.read_src_qp()
        if (wc_flags & e.IBV_WC_EX_WITH_IMM and
                self.wc_flags & e.IBV_WC_WITH_IMM):
            self.imm = socket.ntohl(cq.read_imm_data())

    def __repr__(self):
        return 'CqeEx({})'.format(', '.join(
            '{}={}'.format(k, v) for k, v in vars(self).items()))


def poll_ex(cq, count=1, wc_flags=CQEX_FLAGS, timeout=None):
    """`count` completions through ibv_start_poll/next_poll/end_poll."""
    deadline = time.monotonic() + (POLL_TIMEOUT if timeout is None
                                   else timeout)
    cqes = []
    while len(cqes) < count:
        rc = cq.start_poll(PollCqAttr())
        if rc == _errno.ENOENT:
            if time.monotonic() > deadline:
                raise CompletionTimeout(
                    'got {} of {} extended completions'.format(
                        len(cqes), count))
            time.sleep(0.0001)
            continue
        assert rc == 0, 'ibv_start_poll returned {}'.format(rc)
        try:
            while True:
                cqes.append(CqeEx(cq, wc_flags))
                if len(cqes) == count:
                    break
                rc = cq.poll_next()
                if rc == _errno.ENOENT:
                    break
                assert rc == 0, 'ibv_next_poll returned {}'.format(rc)
        finally:
            cq.end_poll()
    return cqes


# ---------------------------------------------------------------- pairs

def rc_pair(name, srq=False, send_ops=None, peer=None, **endpoint_args):
    """Two connected RC endpoints on device `name` (a sends to b; b on
    device `peer` if given); with send_ops, their QPs are extended QPs
    (ibv_wr_*) for those opcodes."""
    a = Endpoint(name, **endpoint_args)
    try:
        b = Endpoint(peer or name, **endpoint_args)
    except BaseException:
        a.close()
        raise
    try:
        if srq:
            b.make_srq()
        for ep in (a, b):
            if send_ops is None:
                ep.make_qp()
            else:
                ep.make_qp_ex(send_ops)
        connect_rc(a, b)
    except BaseException:
        a.close()
        b.close()
        raise
    return a, b


def ud_pair(name, **endpoint_args):
    """Two UD endpoints in RTS on device `name`, and an address handle on a
    that reaches b's port."""
    a = Endpoint(name, **endpoint_args)
    try:
        b = Endpoint(name, **endpoint_args)
    except BaseException:
        a.close()
        raise
    try:
        for ep in (a, b):
            ep.make_qp(e.IBV_QPT_UD)
            ud_to_rts(ep)
        ah = make_ah(a)
    except BaseException:
        a.close()
        b.close()
        raise
    return a, b, ah


def close_all(*endpoints):
    for ep in reversed(endpoints):
        ep.close()
