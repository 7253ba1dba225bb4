"""Area 5: error paths behave on the twin exactly as on the lower device.

Each scenario runs on the lower device, then on its twin, and the two
outcomes (errno, completion status, ...) must be equal; where a scenario
is an error by construction, the lower device must also really fail, so a
test cannot pass by comparing two successes.
"""
import os
import tempfile

import pytest

import pyverbs.enums as e
from pyverbs.cq import CQ, CQEX, CompChannel, CqInitAttrEx
from pyverbs.device import AllocDmAttr, Context, DM
from pyverbs.flow import Flow, FlowAttr
from pyverbs.mr import MR, MW, MWBind, MWBindInfo
from pyverbs.pd import PD, ParentDomain, ParentDomainInitAttr
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPCap, QPEx, QPInitAttr, QPInitAttrEx
from pyverbs.srq import SRQ, SrqAttr, SrqInitAttr
from pyverbs.wq import WQ, WQInitAttr
from pyverbs.xrcd import XRCD, XRCDInitAttr

from migrtest import raw
from migrtest.verbs import (QUIET_TIME, REMOTE_ACCESS, CompletionTimeout,
                            Endpoint, close_all, modify, outcome, poll_one,
                            post_atomic, post_recv, post_send, rc_pair)

LEN = 256
SUCCESS = e.IBV_WC_SUCCESS


def both(lower_name, twin_name, scenario):
    """Run scenario(device name) on both devices; return both outcomes."""
    return scenario(lower_name), scenario(twin_name)


def status_of(cq, timeout=None):
    """Status of the next completion, or 'none' if nothing comes."""
    try:
        return poll_one(cq, timeout).status
    except CompletionTimeout:
        return 'none'


def bad_key(key):
    """A key of the same shape that no live MR/MW of this test owns."""
    return (key + 0x10000) & 0xffffffff


def on_pair(name, body, **endpoint_args):
    a, b = rc_pair(name, **endpoint_args)
    try:
        return body(a, b)
    finally:
        close_all(a, b)


# ----------------------------------------------------------- bad keys

def send_with_bad_lkey(name):
    def body(a, b):
        post_recv(b, LEN, wr_id=1)
        post = outcome(post_send, a, 2, LEN, lkey=bad_key(a.mr.lkey))
        return post[0], status_of(a.send_cq), status_of(b.recv_cq,
                                                        QUIET_TIME)
    return on_pair(name, body)


def recv_with_bad_lkey(name):
    def body(a, b):
        post = outcome(post_recv, b, LEN, 1, lkey=bad_key(b.mr.lkey))
        post_send(a, 2, LEN)
        return post[0], status_of(a.send_cq), status_of(b.recv_cq)
    return on_pair(name, body)


def rdma_with_bad_rkey(opcode):
    def scenario(name):
        def body(a, b):
            addr, rkey = b.remote()
            post = outcome(post_send, a, 3, LEN, opcode=opcode,
                           remote=(addr, bad_key(rkey)))
            return post[0], status_of(a.send_cq)
        return on_pair(name, body)
    return scenario


def atomic_with_bad_rkey(name):
    def body(a, b):
        addr, rkey = b.remote()
        post = outcome(post_atomic, a, 7, e.IBV_WR_ATOMIC_FETCH_AND_ADD,
                       (addr, bad_key(rkey)), 1)
        return post[0], status_of(a.send_cq)
    return on_pair(name, body)


def rdma_outside_mr(name):
    def body(a, b):
        addr, rkey = b.remote(b.mr.length - LEN // 2)
        post_send(a, 4, LEN, opcode=e.IBV_WR_RDMA_WRITE, remote=(addr, rkey))
        return status_of(a.send_cq)
    return on_pair(name, body)


def write_to_mr_without_remote_access(name):
    def body(a, b):
        local_only = MR(b.pd, LEN, e.IBV_ACCESS_LOCAL_WRITE)
        post_send(a, 5, LEN, opcode=e.IBV_WR_RDMA_WRITE,
                  remote=(local_only.buf, local_only.rkey))
        return status_of(a.send_cq)
    return on_pair(name, body)


def through_type1_window(access, offset):
    """Scenario: b binds a type 1 MW over the first LEN bytes of its MR
    with `access`; a writes LEN bytes through it at MR start + offset."""
    def scenario(name):
        def body(a, b):
            if not b.ctx.query_device().device_cap_flags & \
                    e.IBV_DEVICE_MEM_WINDOW:
                return 'no memory windows'
            mw = MW(b.pd, e.IBV_MW_TYPE_1)
            info = MWBindInfo(b.mr, b.mr.buf, LEN, access)
            b.qp.bind_mw(mw, MWBind(info, e.IBV_SEND_SIGNALED))
            bind = status_of(b.send_cq)
            post_send(a, 6, LEN, opcode=e.IBV_WR_RDMA_WRITE,
                      remote=(b.mr.buf + offset, mw.rkey))
            return bind, status_of(a.send_cq)
        return on_pair(name, body,
                       mr_access=REMOTE_ACCESS | e.IBV_ACCESS_MW_BIND)
    return scenario


@pytest.mark.parametrize('scenario', [
    send_with_bad_lkey, recv_with_bad_lkey,
    rdma_with_bad_rkey(e.IBV_WR_RDMA_WRITE),
    rdma_with_bad_rkey(e.IBV_WR_RDMA_READ), atomic_with_bad_rkey,
    rdma_outside_mr,
    write_to_mr_without_remote_access,
    through_type1_window(e.IBV_ACCESS_REMOTE_READ, 0),
], ids=['send-bad-lkey', 'recv-bad-lkey', 'write-bad-rkey', 'read-bad-rkey',
        'atomic-bad-rkey', 'write-outside-mr', 'write-no-remote-access',
        'write-read-only-mw'])
def test_bad_access_fails_like_lower(lower_name, twin_name, scenario):
    lower, twin = both(lower_name, twin_name, scenario)
    if lower == 'no memory windows':
        pytest.skip(lower)
    flat = lower if isinstance(lower, tuple) else (lower,)
    assert any(s not in (SUCCESS, 'ok') for s in flat), \
        'the lower device accepted it: {}'.format(lower)
    assert twin == lower


def test_write_past_a_window_behaves_like_lower(lower_name, twin_name):
    """Writing past the bound range of a window (but inside its MR): rxe
    6.12 checks the MR's range only and lets it through; the twin must do
    whatever the lower device does."""
    scenario = through_type1_window(e.IBV_ACCESS_REMOTE_WRITE, LEN)
    lower, twin = both(lower_name, twin_name, scenario)
    if lower == 'no memory windows':
        pytest.skip(lower)
    assert twin == lower


# ------------------------------------------- destroying what is in use

def raw_destroy(func_name, obj, ptr):
    """Destroy behind pyverbs' back; if it (wrongly) succeeds, make pyverbs
    forget the pointer so it is not destroyed twice."""
    rc = raw.destroy_call(func_name, ptr)
    if rc == 0:
        raw.forget_pointer(obj, ptr)
    return rc


def dealloc_pd_with_live_mr(name):
    with Context(name=name) as ctx:
        pd = PD(ctx)
        mr = MR(pd, LEN, e.IBV_ACCESS_LOCAL_WRITE)
        rc = raw_destroy('ibv_dealloc_pd', pd, raw.pd_ptr(pd, ctx))
        if rc:
            return rc, outcome(lambda: MR(pd, LEN, 0).close())
        mr.close()
        return rc, 'pd gone'


def destroy_cq_used_by_qp(name):
    with Endpoint(name, mr_size=0) as ep:
        ep.make_qp()
        rc = raw_destroy('ibv_destroy_cq', ep.send_cq,
                         raw.cq_ptr(ep.send_cq, ep.ctx))
        return rc, outcome(lambda: ep.send_cq.poll()[0])


def destroy_channel_with_cq(name):
    with Endpoint(name, mr_size=0, channel=True) as ep:
        ptr = raw.peek(raw.IbvCq, raw.cq_ptr(ep.send_cq, ep.ctx)).channel
        return raw_destroy('ibv_destroy_comp_channel', ep.channel, ptr)


def destroy_srq_used_by_qp(name):
    with Endpoint(name, mr_size=0) as ep:
        ep.make_srq()
        ep.make_qp()
        return raw_destroy('ibv_destroy_srq', ep.srq,
                           raw.srq_ptr(ep.srq, ep.pd, ep.ctx))


@pytest.mark.parametrize('scenario', [
    dealloc_pd_with_live_mr, destroy_cq_used_by_qp, destroy_channel_with_cq,
    destroy_srq_used_by_qp,
], ids=['dealloc-pd-with-mr', 'destroy-cq-with-qp',
        'destroy-channel-with-cq', 'destroy-srq-with-qp'])
def test_destroy_in_use_fails_like_lower(lower_name, twin_name, scenario):
    lower, twin = both(lower_name, twin_name, scenario)
    rc = lower[0] if isinstance(lower, tuple) else lower
    assert rc != 0, 'the lower device allowed it'
    assert twin == lower


# --------------------------------------------- unsupported / invalid ops

def _xrcd(ctx, pd):
    with tempfile.TemporaryFile() as f:
        XRCD(ctx, XRCDInitAttr(e.IBV_XRCD_INIT_ATTR_FD |
                               e.IBV_XRCD_INIT_ATTR_OFLAGS, os.O_CREAT,
                               f.fileno()))


def _qp_init(cq, qp_type=e.IBV_QPT_RC, **cap):
    return QPInitAttr(qp_type=qp_type, scq=cq, rcq=cq,
                      cap=QPCap(**cap) if cap else QPCap(4, 4))


def _qp_init_ex(pd, cq, comp_mask, **kwargs):
    return QPInitAttrEx(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(4, 4),
                        pd=pd, comp_mask=comp_mask | e.IBV_QP_INIT_ATTR_PD,
                        **kwargs)


def _bad_transition(ctx, pd):
    cq = CQ(ctx, 4)
    qp = QP(pd, _qp_init(cq))
    modify(qp, 0, qp_state=e.IBV_QPS_RTS)


def _ud_qp(ctx, pd):
    cq = CQ(ctx, 4)
    return QP(pd, _qp_init(cq, e.IBV_QPT_UD))


def _too_many(ctx, attr):
    return getattr(ctx.query_device(), attr) + 1


UNSUPPORTED_OR_INVALID = {
    'rereg-mr': lambda ctx, pd: MR(pd, LEN, e.IBV_ACCESS_LOCAL_WRITE).rereg(
        e.IBV_REREG_MR_CHANGE_ACCESS, pd, 0, 0, REMOTE_ACCESS),
    'alloc-dm': lambda ctx, pd: DM(ctx, AllocDmAttr(LEN)),
    'open-xrcd': _xrcd,
    'create-wq': lambda ctx, pd: WQ(ctx, WQInitAttr(wq_pd=pd,
                                                    wq_cq=CQ(ctx, 4))),
    'parent-domain': lambda ctx, pd: ParentDomain(ctx,
                                                  ParentDomainInitAttr(pd)),
    'create-flow': lambda ctx, pd: Flow(_ud_qp(ctx, pd), FlowAttr()),
    'query-rt-values': lambda ctx, pd: ctx.query_rt_values_ex(),
    'query-ece': lambda ctx, pd: _ud_qp(ctx, pd).query_ece(),
    'cq-ex-timestamp': lambda ctx, pd: CQEX(ctx, CqInitAttrEx(
        4, wc_flags=e.IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)),
    'raw-packet-qp': lambda ctx, pd: QP(pd, _qp_init(
        CQ(ctx, 4), e.IBV_QPT_RAW_PACKET)),
    'qp-ex-tso-on-rc': lambda ctx, pd: QPEx(ctx, _qp_init_ex(
        pd, CQ(ctx, 4), e.IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
        send_ops_flags=e.IBV_QP_EX_WITH_TSO)),
    'qp-create-flags': lambda ctx, pd: QP(ctx, _qp_init_ex(
        pd, CQ(ctx, 4), e.IBV_QP_INIT_ATTR_CREATE_FLAGS,
        create_flags=e.IBV_QP_CREATE_SCATTER_FCS)),
    'cq-too-big': lambda ctx, pd: CQ(ctx, _too_many(ctx, 'max_cqe')),
    'qp-too-deep': lambda ctx, pd: QP(pd, _qp_init(
        CQ(ctx, 4), max_send_wr=_too_many(ctx, 'max_qp_wr'))),
    'srq-too-deep': lambda ctx, pd: SRQ(pd, SrqInitAttr(SrqAttr(
        max_wr=_too_many(ctx, 'max_srq_wr')))),
    'bad-qp-transition': _bad_transition,
    'mr-remote-write-without-local-write': lambda ctx, pd: MR(
        pd, LEN, e.IBV_ACCESS_REMOTE_WRITE),
    'query-port-0': lambda ctx, pd: ctx.query_port(0),
    'query-gid-out-of-table': lambda ctx, pd: ctx.query_gid_ex(
        1, ctx.query_port(1).gid_tbl_len),
    'comp-vector-out-of-range': lambda ctx, pd: CQ(
        ctx, 4, None, CompChannel(ctx), ctx.num_comp_vectors),
}


def attempt(name, op):
    """('ok',) or the error of op on a fresh context of device `name`."""
    with Context(name=name) as ctx:
        result = outcome(op, ctx, PD(ctx))
        return result[:1] if result[0] == 'ok' else result


@pytest.mark.parametrize('op', list(UNSUPPORTED_OR_INVALID.values()),
                         ids=list(UNSUPPORTED_OR_INVALID))
def test_unsupported_or_invalid_op_fails_like_lower(
        lower_name, twin_name, op):
    lower, twin = both(lower_name, twin_name, lambda n: attempt(n, op))
    assert twin == lower


# ------------------------------------------------------ device names

@pytest.mark.parametrize('pattern', ['nosuchdev9', 'migr_nosuchdev9',
                                     'migr_migr_{}', 'migr_', '{}x'])
def test_opening_a_nonexistent_device_fails(lower_name, pattern):
    name = pattern.format(lower_name)
    with pytest.raises(PyverbsRDMAError):
        Context(name=name).close()
