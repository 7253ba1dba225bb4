"""Area 3: the extended verbs through migr: QP_EX (ibv_wr_start, ibv_wr_*,
ibv_wr_complete / ibv_wr_abort) and CQ_EX (ibv_start_poll, ibv_next_poll,
ibv_end_poll, ibv_wc_read_*), on an RC loopback pair.

Opcode sets are those the lower device accepts: a set the lower device
rejects skips the test (for both devices).
"""
import functools

import pytest

import pyverbs.enums as e
from pyverbs.base import inc_rkey
from pyverbs.mr import MW, MWBindInfo
from pyverbs.pyverbs_error import PyverbsRDMAError

from migrtest.verbs import (CQEX_FLAGS, QUIET_TIME, RC_EXT_OPS, REMOTE_ACCESS,
                            CompletionTimeout, close_all, from_u64, pattern,
                            poll_ex, post_recv, rc_pair, u64)

LEN = 256
ATOMIC_WRITE_OPS = RC_EXT_OPS | e.IBV_QP_EX_WITH_ATOMIC_WRITE
BIND_MW_OPS = RC_EXT_OPS | e.IBV_QP_EX_WITH_BIND_MW


@functools.lru_cache(maxsize=None)
def lower_rejects(lower_name, send_ops):
    """Why the lower device cannot build an extended pair, or None."""
    try:
        close_all(*rc_pair(lower_name, send_ops=send_ops,
                           cq_ex_flags=CQEX_FLAGS))
    except PyverbsRDMAError as err:
        return str(err)
    return None


def ext_pair(request, dev_name, lower_name, send_ops,
             mr_access=REMOTE_ACCESS):
    why = lower_rejects(lower_name, send_ops)
    if why:
        pytest.skip('{} rejects this QP_EX/CQ_EX setup: {}'.format(
            lower_name, why))
    a, b = rc_pair(dev_name, send_ops=send_ops, cq_ex_flags=CQEX_FLAGS,
                   mr_access=mr_access)
    request.addfinalizer(lambda: close_all(a, b))
    return a, b


@pytest.fixture
def pair(request, dev_name, lower_name):
    return ext_pair(request, dev_name, lower_name, RC_EXT_OPS)


@pytest.fixture
def atomic_write_pair(request, dev_name, lower_name):
    return ext_pair(request, dev_name, lower_name, ATOMIC_WRITE_OPS)


@pytest.fixture
def bind_mw_pair(request, dev_name, lower_name):
    return ext_pair(request, dev_name, lower_name, BIND_MW_OPS,
                    REMOTE_ACCESS | e.IBV_ACCESS_MW_BIND)


def post(ep, wr_id, build, length=LEN, offset=0, signaled=True):
    """One work request through ibv_wr_start/.../ibv_wr_complete; `build`
    calls the ibv_wr_<opcode> function."""
    qp = ep.qp
    qp.wr_start()
    qp.wr_id = wr_id
    qp.wr_flags = e.IBV_SEND_SIGNALED if signaled else 0
    build(qp)
    qp.wr_set_sge(ep.sge(length, offset))
    qp.wr_complete()


def one(cq):
    cqe, = poll_ex(cq)
    assert cqe.status == e.IBV_WC_SUCCESS, cqe
    return cqe


def check(cqe, opcode, wr_id, qp, byte_len=None, imm=None):
    assert (cqe.opcode, cqe.wr_id, cqe.qp_num) == (opcode, wr_id, qp.qp_num), \
        cqe
    if byte_len is not None:
        assert cqe.byte_len == byte_len, cqe
    if imm is not None:
        assert cqe.wc_flags & e.IBV_WC_WITH_IMM, cqe
        assert cqe.imm == imm, cqe


def test_wr_send(pair):
    a, b = pair
    a.write(pattern(LEN, 1))
    post_recv(b, LEN, wr_id=21)
    post(a, 11, lambda qp: qp.wr_send())
    check(one(a.send_cq), e.IBV_WC_SEND, 11, a.qp)
    check(one(b.recv_cq), e.IBV_WC_RECV, 21, b.qp, byte_len=LEN)
    assert b.read(LEN) == pattern(LEN, 1)


def test_wr_send_imm(pair):
    a, b = pair
    post_recv(b, LEN, wr_id=22)
    post(a, 12, lambda qp: qp.wr_send_imm(0x12345678))
    check(one(a.send_cq), e.IBV_WC_SEND, 12, a.qp)
    check(one(b.recv_cq), e.IBV_WC_RECV, 22, b.qp, byte_len=LEN,
          imm=0x12345678)


def test_wr_rdma_write(pair):
    a, b = pair
    a.write(pattern(LEN, 2))
    post(a, 13, lambda qp: qp.wr_rdma_write(b.mr.rkey, b.mr.buf))
    check(one(a.send_cq), e.IBV_WC_RDMA_WRITE, 13, a.qp)
    assert b.read(LEN) == pattern(LEN, 2)


def test_wr_rdma_write_imm(pair):
    a, b = pair
    a.write(pattern(LEN, 3))
    post_recv(b, 0, wr_id=23)
    post(a, 14, lambda qp: qp.wr_rdma_write_imm(b.mr.rkey, b.mr.buf + 64,
                                                0xcafe))
    check(one(a.send_cq), e.IBV_WC_RDMA_WRITE, 14, a.qp)
    check(one(b.recv_cq), e.IBV_WC_RECV_RDMA_WITH_IMM, 23, b.qp,
          byte_len=LEN, imm=0xcafe)
    assert b.read(LEN, 64) == pattern(LEN, 3)


def test_wr_rdma_read(pair):
    a, b = pair
    b.write(pattern(LEN, 4))
    post(a, 15, lambda qp: qp.wr_rdma_read(b.mr.rkey, b.mr.buf))
    check(one(a.send_cq), e.IBV_WC_RDMA_READ, 15, a.qp, byte_len=LEN)
    assert a.read(LEN) == pattern(LEN, 4)


def test_wr_atomic_cmp_swp(pair):
    a, b = pair
    b.write(u64(1000))
    post(a, 16, lambda qp: qp.wr_atomic_cmp_swp(
        b.mr.rkey, b.mr.buf, 1000, 2000), length=8)
    check(one(a.send_cq), e.IBV_WC_COMP_SWAP, 16, a.qp)
    assert from_u64(a.read(8)) == 1000
    assert from_u64(b.read(8)) == 2000


def test_wr_atomic_fetch_add(pair):
    a, b = pair
    b.write(u64(40))
    post(a, 17, lambda qp: qp.wr_atomic_fetch_add(b.mr.rkey, b.mr.buf, 2),
         length=8)
    check(one(a.send_cq), e.IBV_WC_FETCH_ADD, 17, a.qp)
    assert from_u64(a.read(8)) == 40
    assert from_u64(b.read(8)) == 42


def test_wr_atomic_write(atomic_write_pair):
    a, b = atomic_write_pair
    value = bytes(range(1, 9))
    qp = a.qp
    qp.wr_start()
    qp.wr_id = 18
    qp.wr_flags = e.IBV_SEND_SIGNALED
    qp.wr_atomic_write(b.mr.rkey, b.mr.buf + 8, value)
    qp.wr_complete()
    cqe = one(a.send_cq)
    assert (cqe.wr_id, cqe.opcode) == (18, e.IBV_WC_ATOMIC_WRITE), cqe
    assert b.read(8, 8) == value


def test_only_signaled_wrs_complete_in_a_batch(pair):
    a, b = pair
    for i in range(3):
        post_recv(b, LEN, wr_id=30 + i, offset=i * LEN)
        a.write(pattern(LEN, 10 + i), i * LEN)
    qp = a.qp
    qp.wr_start()
    for i in range(3):
        qp.wr_id = 40 + i
        qp.wr_flags = e.IBV_SEND_SIGNALED if i == 2 else 0
        qp.wr_send()
        qp.wr_set_sge(a.sge(LEN, i * LEN))
    qp.wr_complete()
    check(one(a.send_cq), e.IBV_WC_SEND, 42, a.qp)
    recvs = poll_ex(b.recv_cq, 3)
    assert [c.wr_id for c in recvs] == [30, 31, 32]
    for i in range(3):
        assert b.read(LEN, i * LEN) == pattern(LEN, 10 + i)
    with pytest.raises(CompletionTimeout):
        poll_ex(a.send_cq, timeout=QUIET_TIME)


def test_wr_abort_discards_the_batch(pair):
    a, b = pair
    post_recv(b, LEN, wr_id=50)
    a.write(pattern(LEN, 5))
    qp = a.qp
    qp.wr_start()
    qp.wr_id = 51
    qp.wr_flags = e.IBV_SEND_SIGNALED
    qp.wr_send()
    qp.wr_set_sge(a.sge(LEN))
    qp.wr_abort()
    with pytest.raises(CompletionTimeout):
        poll_ex(b.recv_cq, timeout=QUIET_TIME)
    post(a, 52, lambda q: q.wr_send())
    check(one(a.send_cq), e.IBV_WC_SEND, 52, a.qp)
    check(one(b.recv_cq), e.IBV_WC_RECV, 50, b.qp, byte_len=LEN)


def test_wr_bind_mw_type2_gives_remote_access(bind_mw_pair):
    a, b = bind_mw_pair
    caps = b.ctx.query_device().device_cap_flags
    if not caps & e.IBV_DEVICE_MEM_WINDOW_TYPE_2B:
        pytest.skip('no type 2B memory windows on ' + b.name)
    mr = b.mr
    mw = MW(b.pd, e.IBV_MW_TYPE_2)
    rkey = inc_rkey(mw.rkey)
    info = MWBindInfo(mr, mr.buf, LEN, e.IBV_ACCESS_REMOTE_WRITE)
    qp = b.qp
    qp.wr_start()
    qp.wr_id = 60
    qp.wr_flags = e.IBV_SEND_SIGNALED
    qp.wr_bind_mw(mw, rkey, info)
    qp.wr_complete()
    cqe = one(b.send_cq)
    assert (cqe.wr_id, cqe.opcode) == (60, e.IBV_WC_BIND_MW), cqe
    a.write(pattern(LEN, 6))
    post(a, 61, lambda q: q.wr_rdma_write(rkey, mr.buf))
    check(one(a.send_cq), e.IBV_WC_RDMA_WRITE, 61, a.qp)
    assert b.read(LEN) == pattern(LEN, 6)
