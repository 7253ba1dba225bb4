"""Area 4: the classic data path on loopback, payloads checked: RC
SEND/RECV (with and without immediate), RDMA WRITE (with immediate), READ,
atomics, SRQ receives, UD with an address handle (GRH), memory windows of
type 1 (ibv_bind_mw) and type 2 (bind work request).

Every completion is checked for status, opcode, wr_id and the qp_num of
the QP it belongs to, as the application sees them.
"""
import pytest

import pyverbs.enums as e
from pyverbs.mr import MW, MWBind, MWBindInfo
from pyverbs.wr import SendWR

from migrtest.verbs import (GRH_SIZE, REMOTE_ACCESS, Endpoint, check_wc,
                            close_all, connect_qps, from_u64,
                            nothing_to_poll, pattern, poll, poll_one,
                            post_atomic, post_recv, post_send,
                            post_ud_send, rc_pair, u64, ud_pair)

LEN = 512
BIG_WR_ID = 0xfedcba9876543210


@pytest.fixture
def pair(dev_name):
    a, b = rc_pair(dev_name)
    yield a, b
    close_all(a, b)


# -------------------------------------------------------------------- RC

def test_send_recv(pair):
    a, b = pair
    a.write(pattern(LEN, 1))
    post_recv(b, LEN, wr_id=BIG_WR_ID)
    post_send(a, BIG_WR_ID - 1, LEN)
    check_wc(poll_one(a.send_cq), e.IBV_WC_SEND, BIG_WR_ID - 1, a.qp)
    wc = poll_one(b.recv_cq)
    check_wc(wc, e.IBV_WC_RECV, BIG_WR_ID, b.qp, byte_len=LEN)
    assert not wc.wc_flags & e.IBV_WC_WITH_IMM
    assert b.read(LEN) == pattern(LEN, 1)


def test_send_with_immediate(pair):
    a, b = pair
    a.write(pattern(LEN, 2))
    post_recv(b, LEN, wr_id=2)
    post_send(a, 3, LEN, opcode=e.IBV_WR_SEND_WITH_IMM, imm=0x0badcafe)
    check_wc(poll_one(a.send_cq), e.IBV_WC_SEND, 3, a.qp)
    wc = poll_one(b.recv_cq)
    check_wc(wc, e.IBV_WC_RECV, 2, b.qp, byte_len=LEN)
    assert wc.wc_flags & e.IBV_WC_WITH_IMM
    assert wc.imm_data == 0x0badcafe
    assert b.read(LEN) == pattern(LEN, 2)


def test_several_sends_complete_in_order(pair):
    a, b = pair
    count = 4
    for i in range(count):
        a.write(pattern(64, 10 + i), 64 * i)
        post_recv(b, 64, wr_id=100 + i, offset=64 * i)
    for i in range(count):
        post_send(a, 200 + i, 64, offset=64 * i)
    assert [wc.wr_id for wc in poll(a.send_cq, count)] == \
        [200 + i for i in range(count)]
    assert [wc.wr_id for wc in poll(b.recv_cq, count)] == \
        [100 + i for i in range(count)]
    for i in range(count):
        assert b.read(64, 64 * i) == pattern(64, 10 + i)


def test_rdma_write(pair):
    a, b = pair
    a.write(pattern(LEN, 3))
    post_send(a, 4, LEN, opcode=e.IBV_WR_RDMA_WRITE, remote=b.remote(128))
    check_wc(poll_one(a.send_cq), e.IBV_WC_RDMA_WRITE, 4, a.qp)
    assert b.read(LEN, 128) == pattern(LEN, 3)
    assert nothing_to_poll(b.recv_cq)


def test_rdma_write_with_immediate(pair):
    a, b = pair
    a.write(pattern(LEN, 4))
    post_recv(b, 0, wr_id=5)
    post_send(a, 6, LEN, opcode=e.IBV_WR_RDMA_WRITE_WITH_IMM, imm=0x1234,
              remote=b.remote(256))
    check_wc(poll_one(a.send_cq), e.IBV_WC_RDMA_WRITE, 6, a.qp)
    wc = poll_one(b.recv_cq)
    check_wc(wc, e.IBV_WC_RECV_RDMA_WITH_IMM, 5, b.qp)
    assert wc.wc_flags & e.IBV_WC_WITH_IMM
    assert wc.imm_data == 0x1234
    assert b.read(LEN, 256) == pattern(LEN, 4)


def test_rdma_read(pair):
    a, b = pair
    b.write(pattern(LEN, 5), 64)
    post_send(a, 7, LEN, offset=32, opcode=e.IBV_WR_RDMA_READ,
              remote=b.remote(64))
    check_wc(poll_one(a.send_cq), e.IBV_WC_RDMA_READ, 7, a.qp,
             byte_len=LEN)
    assert a.read(LEN, 32) == pattern(LEN, 5)


def test_atomic_compare_and_swap(pair):
    a, b = pair
    b.write(u64(0x1111))
    post_atomic(a, 8, e.IBV_WR_ATOMIC_CMP_AND_SWP, b.remote(), 0x1111,
                0x2222)
    check_wc(poll_one(a.send_cq), e.IBV_WC_COMP_SWAP, 8, a.qp)
    assert from_u64(a.read(8)) == 0x1111
    assert from_u64(b.read(8)) == 0x2222
    # A compare that does not match leaves memory alone, returns the value.
    post_atomic(a, 9, e.IBV_WR_ATOMIC_CMP_AND_SWP, b.remote(), 0x1111,
                0x3333, offset=8)
    check_wc(poll_one(a.send_cq), e.IBV_WC_COMP_SWAP, 9, a.qp)
    assert from_u64(a.read(8, 8)) == 0x2222
    assert from_u64(b.read(8)) == 0x2222


def test_atomic_fetch_and_add(pair):
    a, b = pair
    b.write(u64(2 ** 40), 8)
    for i in range(3):
        post_atomic(a, 10 + i, e.IBV_WR_ATOMIC_FETCH_AND_ADD, b.remote(8),
                    5, offset=8 * i)
        check_wc(poll_one(a.send_cq), e.IBV_WC_FETCH_ADD, 10 + i, a.qp)
    assert [from_u64(a.read(8, 8 * i)) for i in range(3)] == \
        [2 ** 40, 2 ** 40 + 5, 2 ** 40 + 10]
    assert from_u64(b.read(8, 8)) == 2 ** 40 + 15


def test_inline_data_is_taken_at_post_time(dev_name):
    a, b = rc_pair(dev_name, max_inline=64)
    try:
        a.write(pattern(64, 12))
        post_recv(b, 64, wr_id=14)
        post_send(a, 15, 64, flags=e.IBV_SEND_SIGNALED | e.IBV_SEND_INLINE)
        a.write(bytes(64))
        check_wc(poll_one(a.send_cq), e.IBV_WC_SEND, 15, a.qp)
        check_wc(poll_one(b.recv_cq), e.IBV_WC_RECV, 14, b.qp, byte_len=64)
        assert b.read(64) == pattern(64, 12)
    finally:
        close_all(a, b)


@pytest.mark.parametrize('twin_sends', [True, False],
                         ids=['twin-to-lower', 'lower-to-twin'])
def test_twin_and_lower_endpoints_interoperate(lower_name, twin_name,
                                               twin_sends):
    """A migr endpoint talks to a plain one on the real device: SEND,
    RDMA WRITE/READ and an atomic, each way round."""
    name, peer = (twin_name, lower_name) if twin_sends else \
        (lower_name, twin_name)
    a, b = rc_pair(name, peer=peer)
    try:
        a.write(pattern(LEN, 13))
        post_recv(b, LEN, wr_id=16)
        post_send(a, 17, LEN)
        check_wc(poll_one(a.send_cq), e.IBV_WC_SEND, 17, a.qp)
        check_wc(poll_one(b.recv_cq), e.IBV_WC_RECV, 16, b.qp, byte_len=LEN)
        assert b.read(LEN) == pattern(LEN, 13)
        post_send(a, 18, LEN, opcode=e.IBV_WR_RDMA_WRITE,
                  remote=b.remote(LEN))
        check_wc(poll_one(a.send_cq), e.IBV_WC_RDMA_WRITE, 18, a.qp)
        assert b.read(LEN, LEN) == pattern(LEN, 13)
        b.write(pattern(LEN, 14), 2 * LEN)
        post_send(a, 19, LEN, offset=LEN, opcode=e.IBV_WR_RDMA_READ,
                  remote=b.remote(2 * LEN))
        check_wc(poll_one(a.send_cq), e.IBV_WC_RDMA_READ, 19, a.qp)
        assert a.read(LEN, LEN) == pattern(LEN, 14)
        b.write(u64(7), 3 * LEN)
        post_atomic(a, 20, e.IBV_WR_ATOMIC_FETCH_AND_ADD, b.remote(3 * LEN),
                    3, offset=3 * LEN)
        check_wc(poll_one(a.send_cq), e.IBV_WC_FETCH_ADD, 20, a.qp)
        assert (from_u64(a.read(8, 3 * LEN)), from_u64(b.read(8, 3 * LEN))) \
            == (7, 10)
    finally:
        close_all(a, b)


# ------------------------------------------------------------------- SRQ

def test_srq_receive(dev_name):
    a, b = rc_pair(dev_name, srq=True)
    try:
        a.write(pattern(LEN, 6))
        post_recv(b, LEN, wr_id=20)
        post_send(a, 21, LEN)
        check_wc(poll_one(a.send_cq), e.IBV_WC_SEND, 21, a.qp)
        check_wc(poll_one(b.recv_cq), e.IBV_WC_RECV, 20, b.qp, byte_len=LEN)
        assert b.read(LEN) == pattern(LEN, 6)
    finally:
        close_all(a, b)


def test_srq_shared_by_two_qps(dev_name):
    """Completions from one SRQ name the QP each message arrived on."""
    eps = [Endpoint(dev_name) for _ in range(3)]
    a1, a2, b = eps
    try:
        b.make_srq()
        qp1, qp2 = b.make_qp(), b.make_qp()
        a1.make_qp()
        a2.make_qp()
        connect_qps(a1.qp, qp1, b.path)
        connect_qps(a2.qp, qp2, b.path)
        for i in range(2):
            post_recv(b, 64, wr_id=30 + i, offset=64 * i)
        a1.write(pattern(64, 7))
        a2.write(pattern(64, 8))
        post_send(a2, 32, 64)
        check_wc(poll_one(a2.send_cq), e.IBV_WC_SEND, 32, a2.qp)
        check_wc(poll_one(b.recv_cq), e.IBV_WC_RECV, 30, qp2)
        post_send(a1, 33, 64)
        check_wc(poll_one(a1.send_cq), e.IBV_WC_SEND, 33, a1.qp)
        check_wc(poll_one(b.recv_cq), e.IBV_WC_RECV, 31, qp1)
        assert b.read(64) == pattern(64, 8)
        assert b.read(64, 64) == pattern(64, 7)
    finally:
        close_all(*eps)


# -------------------------------------------------------------------- UD

@pytest.mark.parametrize('imm', [None, 0x5a5a5a5a])
def test_ud_send_through_address_handle(dev_name, imm):
    a, b, ah = ud_pair(dev_name)
    try:
        a.write(pattern(LEN, 9))
        post_recv(b, GRH_SIZE + LEN, wr_id=40)
        post_ud_send(a, 41, LEN, ah, b.qp.qp_num, imm=imm)
        check_wc(poll_one(a.send_cq), e.IBV_WC_SEND, 41, a.qp)
        wc = poll_one(b.recv_cq)
        check_wc(wc, e.IBV_WC_RECV, 40, b.qp, byte_len=GRH_SIZE + LEN)
        assert wc.src_qp == a.qp.qp_num
        if a.path.is_global:
            assert wc.wc_flags & e.IBV_WC_GRH
        if imm is not None:
            assert wc.wc_flags & e.IBV_WC_WITH_IMM
            assert wc.imm_data == imm
        assert b.read(LEN, GRH_SIZE) == pattern(LEN, 9)
    finally:
        close_all(a, b)


# --------------------------------------------------------- memory windows

def mw_pair(dev_name, cap):
    a, b = rc_pair(dev_name, mr_access=REMOTE_ACCESS | e.IBV_ACCESS_MW_BIND)
    if not b.ctx.query_device().device_cap_flags & cap:
        close_all(a, b)
        pytest.skip('{} has no such memory windows'.format(dev_name))
    return a, b


def remote_write_and_read(a, b, rkey, seed):
    """a writes through rkey to b's MR start, then reads it back."""
    a.write(pattern(LEN, seed))
    post_send(a, 50, LEN, opcode=e.IBV_WR_RDMA_WRITE, remote=(b.mr.buf, rkey))
    check_wc(poll_one(a.send_cq), e.IBV_WC_RDMA_WRITE, 50, a.qp)
    assert b.read(LEN) == pattern(LEN, seed)
    post_send(a, 51, LEN, offset=LEN, opcode=e.IBV_WR_RDMA_READ,
              remote=(b.mr.buf, rkey))
    check_wc(poll_one(a.send_cq), e.IBV_WC_RDMA_READ, 51, a.qp)
    assert a.read(LEN, LEN) == pattern(LEN, seed)


MW_ACCESS = e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ


def test_mw_type1_bind_gives_remote_access(dev_name):
    a, b = mw_pair(dev_name, e.IBV_DEVICE_MEM_WINDOW)
    try:
        mw = MW(b.pd, e.IBV_MW_TYPE_1)
        info = MWBindInfo(b.mr, b.mr.buf, LEN, MW_ACCESS)
        b.qp.bind_mw(mw, MWBind(info, e.IBV_SEND_SIGNALED, wr_id=52))
        check_wc(poll_one(b.send_cq), e.IBV_WC_BIND_MW, 52, b.qp)
        remote_write_and_read(a, b, mw.rkey, 10)
    finally:
        close_all(a, b)


def test_mw_type2_bind_work_request_gives_remote_access(dev_name):
    a, b = mw_pair(dev_name, e.IBV_DEVICE_MEM_WINDOW_TYPE_2B)
    try:
        mw = MW(b.pd, e.IBV_MW_TYPE_2)
        wr = SendWR(wr_id=53, opcode=e.IBV_WR_BIND_MW,
                    send_flags=e.IBV_SEND_SIGNALED)
        wr.set_bind_wr(mw, MWBindInfo(b.mr, b.mr.buf, LEN, MW_ACCESS))
        b.qp.post_send(wr)
        check_wc(poll_one(b.send_cq), e.IBV_WC_BIND_MW, 53, b.qp)
        remote_write_and_read(a, b, wr.rkey, 11)
    finally:
        close_all(a, b)
