"""Area 2: completion events and async events come back as the objects
the application created (the migr ones on the twin), and acks work.

Waiting is always bounded: we poll the channel / async fd before the
blocking verbs call.
"""
import pytest

import pyverbs.enums as e
from pyverbs.srq import SrqAttr

from migrtest import raw
from migrtest.verbs import (POLL_TIMEOUT, QUIET_TIME, check_wc, close_all,
                            modify, poll, poll_one, post_recv, post_send,
                            rc_pair)

LEN = 64


@pytest.fixture
def chan_pair(dev_name):
    """Connected RC endpoints whose CQs all report to a completion
    channel (one channel per endpoint)."""
    a, b = rc_pair(dev_name, channel=True)
    yield a, b
    close_all(a, b)


def channel_readable(ep, timeout):
    return raw.wait_readable(raw.comp_channel_fd(ep.channel, ep.ctx),
                             timeout)


def take_cq_event(ep, cq):
    """Wait (bounded) for one CQ event and check it names `cq`: pyverbs'
    get_cq_event compares the returned ibv_cq pointer with cq's own."""
    assert channel_readable(ep, POLL_TIMEOUT), \
        'no completion event within {}s'.format(POLL_TIMEOUT)
    ep.channel.get_cq_event(cq)


def send_one(a, b, wr_id=1, flags=e.IBV_SEND_SIGNALED):
    post_recv(b, LEN, wr_id=wr_id)
    post_send(a, wr_id, LEN, flags=flags)


# ------------------------------------------------------ completion events

def test_cq_event_returns_the_armed_cq(chan_pair):
    a, b = chan_pair
    b.recv_cq.req_notify()
    send_one(a, b, wr_id=7)
    take_cq_event(b, b.recv_cq)
    b.recv_cq.ack_events(1)
    check_wc(poll_one(b.recv_cq), e.IBV_WC_RECV, wr_id=7, qp=b.qp)


def test_event_names_the_right_cq_of_a_shared_channel(chan_pair):
    a, b = chan_pair
    a.send_cq.req_notify()
    a.recv_cq.req_notify()
    send_one(a, b)
    check_wc(poll_one(a.send_cq), e.IBV_WC_SEND)
    take_cq_event(a, a.send_cq)
    a.send_cq.ack_events(1)
    assert not channel_readable(a, QUIET_TIME), \
        'a second event although only the send CQ completed'


def test_no_event_unless_armed(chan_pair):
    a, b = chan_pair
    send_one(a, b)
    poll_one(b.recv_cq)
    assert not channel_readable(b, QUIET_TIME)


def test_rearm_gives_one_event_per_arming(chan_pair):
    a, b = chan_pair
    for round_ in range(3):
        b.recv_cq.req_notify()
        send_one(a, b, wr_id=round_)
        take_cq_event(b, b.recv_cq)
        b.recv_cq.ack_events(1)
        check_wc(poll_one(b.recv_cq), e.IBV_WC_RECV, wr_id=round_)
    poll(a.send_cq, 3)
    send_one(a, b, wr_id=9)
    poll_one(b.recv_cq)
    assert not channel_readable(b, QUIET_TIME), 'event without arming'


def test_cq_destroyed_after_acking_its_events(chan_pair):
    a, b = chan_pair
    b.recv_cq.req_notify()
    send_one(a, b)
    take_cq_event(b, b.recv_cq)
    b.recv_cq.ack_events(1)
    poll_one(b.recv_cq)
    b.qp.close()
    b.recv_cq.close()      # would block forever if the ack were lost
    b.channel.close()


def solicited_outcome(name):
    """(event after an unsolicited send?, event after a solicited one?)
    with the receive CQ armed for solicited completions only."""
    a, b = rc_pair(name, channel=True)
    try:
        b.recv_cq.req_notify(solicited_only=True)
        send_one(a, b, wr_id=1)
        poll_one(b.recv_cq)
        first = channel_readable(b, QUIET_TIME)
        if not first:
            send_one(a, b, wr_id=2,
                     flags=e.IBV_SEND_SIGNALED | e.IBV_SEND_SOLICITED)
            poll_one(b.recv_cq)
        second = first or channel_readable(b, POLL_TIMEOUT)
        if first or second:
            take_cq_event(b, b.recv_cq)
            b.recv_cq.ack_events(1)
        return first, second
    finally:
        close_all(a, b)


def test_solicited_only_arming_behaves_like_lower(lower_name, twin_name):
    assert solicited_outcome(twin_name) == solicited_outcome(lower_name)


# ------------------------------------------------------------ async events

@pytest.fixture
def srq_pair(dev_name):
    a, b = rc_pair(dev_name, srq=True)
    yield a, b
    close_all(a, b)


def exchange(a, b, count, first_wr_id=100):
    """a sends `count` messages that b's posted receives take."""
    for i in range(count):
        post_send(a, first_wr_id + i, LEN)
    poll(a.send_cq, count)
    for wc in poll(b.recv_cq, count):
        check_wc(wc, e.IBV_WC_RECV, qp=b.qp)


def drop_srq_below_limit(a, b, posted=6, limit=3):
    """Arm the SRQ limit on an empty SRQ, then consume receives until fewer
    than `limit` are left, which must raise IBV_EVENT_SRQ_LIMIT_REACHED.
    Returns how many receives are still posted."""
    for i in range(posted):
        post_recv(b, LEN, wr_id=i)
    b.srq.modify(SrqAttr(srq_limit=limit), e.IBV_SRQ_LIMIT)
    assert b.srq.query().srq_limit == limit
    exchange(a, b, posted - limit)
    assert raw.no_async_event(b.ctx, QUIET_TIME), \
        'async event while the SRQ still had {} receives'.format(limit)
    exchange(a, b, 1)
    return limit - 1


def check_event_names(event, ep, obj, struct_type):
    """The event's element is `obj` as the application holds it (same C
    pointer), created on ep's context (the migr one on the twin)."""
    assert raw.holds_pointer(obj, event.element), \
        'the event names another {} than the application created'.format(
            struct_type.__name__)
    element = raw.peek(struct_type, event.element)
    assert element.context == raw.context_ptr(ep.ctx)
    assert raw.device_name_of_context(element.context) == ep.name


def test_srq_limit_event_names_the_srq(srq_pair):
    a, b = srq_pair
    drop_srq_below_limit(a, b)
    with raw.async_event(b.ctx, POLL_TIMEOUT) as event:
        assert event.event_type == e.IBV_EVENT_SRQ_LIMIT_REACHED
        check_event_names(event, b, b.srq, raw.IbvSrq)
        event.ack()
    b.srq.close()          # blocks forever if the ack were lost


def test_last_wqe_reached_names_the_qp(srq_pair):
    a, b = srq_pair
    post_recv(b, LEN, wr_id=1)
    modify(b.qp, 0, qp_state=e.IBV_QPS_ERR)
    with raw.async_event(b.ctx, POLL_TIMEOUT) as event:
        assert event.event_type == e.IBV_EVENT_QP_LAST_WQE_REACHED
        check_event_names(event, b, b.qp, raw.IbvQp)
        assert raw.peek(raw.IbvQp, event.element).qp_num == b.qp.qp_num
        event.ack()
    b.qp.close()           # blocks forever if the ack were lost


def test_sq_drained_names_the_qp(dev_name):
    a, b = rc_pair(dev_name)
    try:
        modify(a.qp, e.IBV_QP_EN_SQD_ASYNC_NOTIFY, qp_state=e.IBV_QPS_SQD,
               en_sqd_async_notify=1)
        with raw.async_event(a.ctx, POLL_TIMEOUT) as event:
            assert event.event_type == e.IBV_EVENT_SQ_DRAINED
            check_event_names(event, a, a.qp, raw.IbvQp)
        a.qp.close()
    finally:
        close_all(a, b)


def test_srq_limit_event_via_pyverbs_and_rearm(srq_pair):
    a, b = srq_pair
    for _ in range(2):
        left = drop_srq_below_limit(a, b)
        assert raw.wait_readable(raw.async_fd(b.ctx), POLL_TIMEOUT), \
            'no async event within {}s'.format(POLL_TIMEOUT)
        event = b.ctx.get_async_event()
        event.ack()
        assert event.event_type == e.IBV_EVENT_SRQ_LIMIT_REACHED
        assert b.srq.query().srq_limit == 0, 'limit still armed'
        exchange(a, b, left)      # the SRQ is empty again
    assert raw.no_async_event(b.ctx, QUIET_TIME), 'event while disarmed'


def cq_overflow_event(name):
    """Overflow b's receive CQ (a tiny CQ under a deeper receive queue):
    (event type, does it name that CQ?), or None if no event comes."""
    a, b = rc_pair(name, depth=32, cqe=2)
    try:
        count = b.recv_cq.cqe + 2
        for i in range(count):
            post_recv(b, 8, wr_id=i)
        for i in range(count):
            post_send(a, i, 8, flags=0)
        if not raw.wait_readable(raw.async_fd(b.ctx), POLL_TIMEOUT):
            return None
        with raw.async_event(b.ctx, 0) as event:
            names_cq = raw.holds_pointer(b.recv_cq, event.element) and \
                raw.peek(raw.IbvCq, event.element).context == \
                raw.context_ptr(b.ctx)
            return event.event_type, names_cq
    finally:
        close_all(a, b)


def test_cq_overflow_event_like_lower(lower_name, twin_name):
    lower = cq_overflow_event(lower_name)
    if lower is None:
        pytest.skip(lower_name + ' reports no async event on CQ overrun')
    assert lower == (e.IBV_EVENT_CQ_ERR, True)
    assert cq_overflow_event(twin_name) == lower
