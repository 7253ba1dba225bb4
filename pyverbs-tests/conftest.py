"""pytest setup for migr's stacking tests.

- pyverbs comes from $MIGR_BUILD_DIR/python (default <repo>/build/trixie);
- the lower device is $MIGR_LOWER_DEV (default: first non-migr device) and
  its twin is migr_<lower>;
- no RDMA device at all: every test is skipped, with the reason;
- tests taking `dev_name` run once on the lower device and once on the twin.
"""
import faulthandler
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from migrtest import env  # noqa: E402

env.use_build_python()

TEST_TIMEOUT = float(os.environ.get('MIGR_TEST_TIMEOUT', '180'))


class Devices:
    """What ibv_get_device_list() shows this process."""

    def __init__(self):
        self.error = None
        self.names = []
        self.list_error = None
        try:
            import pyverbs.device as device
            from pyverbs.pyverbs_error import PyverbsError
        except ImportError as err:
            self.error = 'pyverbs unusable ({}); is {} built?'.format(
                err, env.PYTHON_DIR)
        else:
            try:
                self.names = [dev.name.decode()
                              for dev in device.get_device_list()]
            except PyverbsError as err:
                self.list_error = str(err)
        wanted = os.environ.get('MIGR_LOWER_DEV')
        real = [n for n in self.names if not env.is_twin(n)]
        self.lower = wanted or (real[0] if real else None)
        twin = env.twin_name(self.lower) if self.lower else None
        self.twin = twin if twin in self.names else None
        self.twin_required = env.migr_build_present()

    def skip_reason(self):
        if self.error:
            return self.error
        if not self.names:
            return 'no RDMA device at all (ibv_get_device_list: {})'.format(
                self.list_error or 'empty')
        if self.lower not in self.names:
            return 'MIGR_LOWER_DEV={} is not a device here ({})'.format(
                self.lower, ', '.join(self.names))
        return None

    def no_twin_reason(self):
        return 'no {} listed next to {} (devices: {})'.format(
            env.twin_name(self.lower), self.lower, ', '.join(self.names))


DEVICES = Devices()


def pytest_report_header(config):
    return ['migr build: {} (pyverbs {})'.format(
                env.BUILD_DIR, 'found' if env.HAVE_BUILD else 'not found: '
                'using the installed one'),
            'libibverbs config dir: {}'.format(env.CONFIG_DIR),
            'devices: {} | lower: {} | twin: {}'.format(
                ', '.join(DEVICES.names) or '-', DEVICES.lower,
                DEVICES.twin)]


def pytest_sessionstart(session):
    if DEVICES.error:
        pytest.exit(DEVICES.error, returncode=pytest.ExitCode.USAGE_ERROR)


def pytest_collection_modifyitems(config, items):
    reason = DEVICES.skip_reason()
    if reason:
        for item in items:
            item.add_marker(pytest.mark.skip(reason=reason))


def _need_twin():
    if DEVICES.twin is None:
        if DEVICES.twin_required:
            pytest.fail(DEVICES.no_twin_reason() +
                        ' although the migr provider is built')
        pytest.skip(DEVICES.no_twin_reason())
    return DEVICES.twin


def pytest_generate_tests(metafunc):
    if 'dev_name' in metafunc.fixturenames:
        lower = DEVICES.lower or 'lower'
        metafunc.parametrize('dev_name', ['lower', 'twin'], indirect=True,
                             ids=[lower, env.twin_name(lower)])


@pytest.fixture
def dev_name(request):
    """The lower device, then its migr twin (same test, both devices)."""
    if request.param == 'lower':
        return DEVICES.lower
    return _need_twin()


@pytest.fixture
def lower_name():
    return DEVICES.lower


@pytest.fixture
def twin_name():
    return _need_twin()


@pytest.fixture(scope='session')
def devices():
    return DEVICES


@pytest.fixture(autouse=True)
def watchdog():
    """A hung verb must not hang the suite: dump all stacks and exit."""
    faulthandler.dump_traceback_later(TEST_TIMEOUT, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()
