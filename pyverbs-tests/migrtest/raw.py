"""C-level access to what pyverbs keeps private.

pyverbs hides the C pointers of its objects, the async-event fd and the
element of an async event, and its close() methods tear down children
first, so some promises cannot be checked through pyverbs alone:
"the async event names the migr SRQ", "ibv_dealloc_pd() of a PD with a
live MR fails with the lower provider's errno", "wait for a CQ event, but
not forever".

This module finds the C pointer stored inside a pyverbs object by scanning
the object's own memory for a word that points at a struct whose fields
match what pyverbs does expose (cmd_fd, handle, qp_num, ...). Candidate
pointers are read through /proc/self/mem, so a bad guess is an OSError,
never a crash. Calls go to the libibverbs that pyverbs itself loaded.
"""
import ctypes
import os
import select
from contextlib import contextmanager

_c_ptr = ctypes.c_void_p
_WORD = ctypes.sizeof(_c_ptr)
_IBV_SYSFS_NAME_MAX = 64
_CONTEXT_OPS = 32       # function pointers in struct ibv_context_ops


class IbvDevice(ctypes.Structure):
    _fields_ = [('ops', _c_ptr * 2), ('node_type', ctypes.c_int),
                ('transport_type', ctypes.c_int),
                ('name', ctypes.c_char * _IBV_SYSFS_NAME_MAX)]


class IbvContext(ctypes.Structure):
    _fields_ = [('device', _c_ptr), ('ops', _c_ptr * _CONTEXT_OPS),
                ('cmd_fd', ctypes.c_int), ('async_fd', ctypes.c_int),
                ('num_comp_vectors', ctypes.c_int)]


class IbvCompChannel(ctypes.Structure):
    _fields_ = [('context', _c_ptr), ('fd', ctypes.c_int),
                ('refcnt', ctypes.c_int)]


class IbvPd(ctypes.Structure):
    _fields_ = [('context', _c_ptr), ('handle', ctypes.c_uint32)]


class IbvCq(ctypes.Structure):
    _fields_ = [('context', _c_ptr), ('channel', _c_ptr),
                ('cq_context', _c_ptr), ('handle', ctypes.c_uint32),
                ('cqe', ctypes.c_int)]


class IbvSrq(ctypes.Structure):
    _fields_ = [('context', _c_ptr), ('srq_context', _c_ptr),
                ('pd', _c_ptr), ('handle', ctypes.c_uint32)]


class IbvQp(ctypes.Structure):
    _fields_ = [('context', _c_ptr), ('qp_context', _c_ptr), ('pd', _c_ptr),
                ('send_cq', _c_ptr), ('recv_cq', _c_ptr), ('srq', _c_ptr),
                ('handle', ctypes.c_uint32), ('qp_num', ctypes.c_uint32),
                ('state', ctypes.c_int), ('qp_type', ctypes.c_int)]


class IbvMr(ctypes.Structure):
    _fields_ = [('context', _c_ptr), ('pd', _c_ptr), ('addr', _c_ptr),
                ('length', ctypes.c_size_t), ('handle', ctypes.c_uint32),
                ('lkey', ctypes.c_uint32), ('rkey', ctypes.c_uint32)]


class IbvAsyncEvent(ctypes.Structure):
    _fields_ = [('element', _c_ptr), ('event_type', ctypes.c_int)]


_mem_fd = None


def peek(struct_type, addr):
    """Read a struct_type at addr, or None if that memory is not mapped."""
    global _mem_fd
    if not addr:
        return None
    if _mem_fd is None:
        _mem_fd = os.open('/proc/self/mem', os.O_RDONLY)
    size = ctypes.sizeof(struct_type)
    try:
        data = os.pread(_mem_fd, size, addr)
    except (OSError, OverflowError):
        return None
    if len(data) != size:
        return None
    return struct_type.from_buffer_copy(data)


def object_words(obj):
    """The pointer-sized words of a (Cython extension) object's memory."""
    size = type(obj).__basicsize__
    data = ctypes.string_at(id(obj), size)
    return [int.from_bytes(data[i:i + _WORD], 'little')
            for i in range(0, size - _WORD + 1, _WORD)]


def holds_pointer(obj, ptr):
    """Does the pyverbs object keep exactly this C pointer?"""
    return bool(ptr) and ptr in object_words(obj)


def device_name_of_context(ctx_ptr):
    """Name of the device behind a struct ibv_context * (or None)."""
    ctx = peek(IbvContext, ctx_ptr)
    return _device_name(ctx) if ctx else None


def _find(obj, struct_type, match):
    for word in object_words(obj):
        found = peek(struct_type, word)
        if found is not None and match(found):
            return word
    raise LookupError('no {} pointer found in {!r}'.format(
        struct_type.__name__, obj))


def context_ptr(ctx):
    """The struct ibv_context * of a pyverbs Context."""
    def match(c):
        return (c.cmd_fd == ctx.cmd_fd and
                c.num_comp_vectors == ctx.num_comp_vectors and
                _device_name(c) == ctx.name)
    return _find(ctx, IbvContext, match)


def _device_name(context_struct):
    dev = peek(IbvDevice, context_struct.device)
    return dev.name.decode(errors='replace') if dev else None


def pd_ptr(pd, ctx):
    cptr = context_ptr(ctx)
    return _find(pd, IbvPd,
                 lambda p: p.context == cptr and p.handle == pd.handle)


def cq_ptr(cq, ctx):
    cptr = context_ptr(ctx)
    return _find(cq, IbvCq, lambda c: c.context == cptr and c.cqe == cq.cqe)


def srq_ptr(srq, pd, ctx):
    cptr, pptr = context_ptr(ctx), pd_ptr(pd, ctx)
    return _find(srq, IbvSrq, lambda s: s.context == cptr and s.pd == pptr)


def comp_channel_ptr(channel, ctx):
    cptr = context_ptr(ctx)
    return _find(channel, IbvCompChannel,
                 lambda c: c.context == cptr and c.fd >= 0 and
                 c.refcnt >= 0 and _fd_is_open(c.fd))


def _fd_is_open(fd):
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def comp_channel_fd(channel, ctx):
    return peek(IbvCompChannel, comp_channel_ptr(channel, ctx)).fd


def async_fd(ctx):
    return peek(IbvContext, context_ptr(ctx)).async_fd


def wait_readable(fd, timeout):
    """True when fd becomes readable within timeout seconds."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(max(0, int(timeout * 1000))))


_lib = None


def libibverbs():
    """The libibverbs pyverbs loaded (found in this process's maps)."""
    global _lib
    if _lib is None:
        path = None
        with open('/proc/self/maps', encoding='utf-8') as maps:
            for line in maps:
                fields = line.split()
                if len(fields) >= 6 and os.path.basename(
                        fields[5]).startswith('libibverbs.so'):
                    path = fields[5]
                    break
        if path is None:
            raise RuntimeError('libibverbs is not loaded (import pyverbs '
                               'first)')
        lib = ctypes.CDLL(path, use_errno=True)
        for name in ('ibv_dealloc_pd', 'ibv_destroy_cq',
                     'ibv_destroy_comp_channel', 'ibv_destroy_srq'):
            getattr(lib, name).argtypes = [_c_ptr]
            getattr(lib, name).restype = ctypes.c_int
        lib.ibv_get_async_event.argtypes = [_c_ptr,
                                            ctypes.POINTER(IbvAsyncEvent)]
        lib.ibv_get_async_event.restype = ctypes.c_int
        lib.ibv_ack_async_event.argtypes = [ctypes.POINTER(IbvAsyncEvent)]
        lib.ibv_ack_async_event.restype = None
        _lib = lib
    return _lib


def destroy_call(func_name, ptr):
    """Call a libibverbs destroy/dealloc function on a raw pointer and
    return its result (0 or an errno value, as the man pages say)."""
    return getattr(libibverbs(), func_name)(ptr)


def forget_pointer(obj, ptr):
    """Clear ptr inside a pyverbs object (after the C object was destroyed
    behind pyverbs' back) so that pyverbs never frees it a second time."""
    base = id(obj)
    for i, word in enumerate(object_words(obj)):
        if word == ptr:
            ctypes.memset(base + i * _WORD, 0, _WORD)


class AsyncEventTimeout(AssertionError):
    pass


class RawAsyncEvent:
    """A struct ibv_async_event got with ibv_get_async_event()."""

    def __init__(self, lib, event):
        self._lib = lib
        self._event = event
        self.acked = False

    @property
    def event_type(self):
        return self._event.event_type

    @property
    def element(self):
        return self._event.element or 0

    def ack(self):
        if not self.acked:
            self._lib.ibv_ack_async_event(ctypes.byref(self._event))
            self.acked = True


@contextmanager
def async_event(ctx, timeout):
    """Wait (bounded) for the next async event of a pyverbs Context and
    yield it as a RawAsyncEvent; it is acked on exit even if the body
    fails, so that destroying its object later cannot hang."""
    if not wait_readable(async_fd(ctx), timeout):
        raise AsyncEventTimeout('no async event on {} within {}s'.format(
            ctx.name, timeout))
    lib = libibverbs()
    event = IbvAsyncEvent()
    if lib.ibv_get_async_event(context_ptr(ctx), ctypes.byref(event)):
        err = ctypes.get_errno()
        raise OSError(err, 'ibv_get_async_event: ' + os.strerror(err))
    raw = RawAsyncEvent(lib, event)
    try:
        yield raw
    finally:
        raw.ack()


def no_async_event(ctx, quiet_time):
    """True if no async event shows up within quiet_time seconds."""
    return not wait_readable(async_fd(ctx), quiet_time)
