"""Where the build under test lives, and how to run device listings in a
child process (with an environment variable, or with private config files
mounted over libibverbs' config dir in a private mount namespace).
"""
import glob
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO_DIR = os.path.dirname(TESTS_DIR)

BUILD_DIR = os.path.abspath(os.environ.get(
    'MIGR_BUILD_DIR', os.path.join(REPO_DIR, 'build', 'trixie')))


def _in_build(*parts):
    """BUILD_DIR/<parts>, or BUILD_DIR/rdma-core/<parts> when rdma-core is
    built as a subdirectory of our top-level CMake project."""
    for top in (BUILD_DIR, os.path.join(BUILD_DIR, 'rdma-core')):
        path = os.path.join(top, *parts)
        if os.path.exists(path):
            return path
    return os.path.join(BUILD_DIR, *parts)


PYTHON_DIR = _in_build('python')
HAVE_BUILD = os.path.isdir(PYTHON_DIR)

# The in-place build reads its config dir inside the build tree; an
# installed libibverbs (no build dir) reads /etc/libibverbs.d.
CONFIG_DIR = os.environ.get('MIGR_IBV_CONFIG_DIR') or (
    _in_build('etc', 'libibverbs.d') if HAVE_BUILD
    else '/etc/libibverbs.d')

STACK_ENV = 'RDMAV_STACKED_DEVICES'
TWIN_PREFIX = 'migr_'

LIST_TIMEOUT = 60

_LIST_SCRIPT = (
    'import pyverbs.device as d\n'
    'for dev in d.get_device_list():\n'
    '    print(dev.name.decode())\n')


def use_build_python():
    """Make the build's pyverbs importable ahead of any installed one."""
    if HAVE_BUILD and PYTHON_DIR not in sys.path:
        sys.path.insert(0, PYTHON_DIR)


def twin_name(lower):
    return TWIN_PREFIX + lower


def is_twin(name):
    return name.startswith(TWIN_PREFIX)


def migr_build_present():
    """True when the tree under test carries the migr provider, so twins
    must be there (override with MIGR_REQUIRE_TWIN=0/1)."""
    forced = os.environ.get('MIGR_REQUIRE_TWIN')
    if forced is not None:
        return forced not in ('', '0', 'no', 'false')
    libs = glob.glob(os.path.join(_in_build('lib'), 'libmigr-rdmav*.so'))
    drivers = glob.glob(os.path.join(CONFIG_DIR, 'migr*'))
    return bool(libs or drivers)


def child_env(stacked=None):
    """Environment for a child python: our pyverbs first, and the stacking
    variable either removed (stacked=None) or set to the given string."""
    env = dict(os.environ)
    if HAVE_BUILD:
        old = env.get('PYTHONPATH')
        env['PYTHONPATH'] = PYTHON_DIR + (os.pathsep + old if old else '')
    env.pop(STACK_ENV, None)
    if stacked is not None:
        env[STACK_ENV] = stacked
    return env


@dataclass
class Listing:
    names: list
    stderr: str
    returncode: int

    @property
    def warnings(self):
        return [line for line in self.stderr.splitlines() if line.strip()]


def _run_listing(argv, env):
    proc = subprocess.run(argv, env=env, capture_output=True, text=True,
                          timeout=LIST_TIMEOUT, check=False)
    names = [line.strip() for line in proc.stdout.splitlines()
             if line.strip()]
    return Listing(names, proc.stderr, proc.returncode)


def list_devices(stacked=None):
    """ibv_get_device_list() names in a child with the env var as given."""
    return _run_listing([sys.executable, '-c', _LIST_SCRIPT],
                        child_env(stacked))


def _stacking_line_in(path):
    try:
        with open(path, encoding='utf-8', errors='replace') as f:
            return any(line.split()[:1] == ['stacked_devices']
                       for line in f)
    except OSError:
        return False


def _private_config_dir(files):
    """A temp dir with the real config dir's files (driver entries), minus
    any file that sets stacked_devices, plus `files` {name: text}."""
    tmp = tempfile.mkdtemp(prefix='migr-ibvconf-')
    for entry in os.listdir(CONFIG_DIR):
        src = os.path.join(CONFIG_DIR, entry)
        if os.path.isfile(src) and not _stacking_line_in(src):
            shutil.copy2(src, tmp)
    for name, text in files.items():
        with open(os.path.join(tmp, name), 'w', encoding='utf-8') as f:
            f.write(text)
    return tmp


def list_devices_with_config(files, stacked=None):
    """Device names seen with our own config files in place of the config
    dir's stacking settings; the shared tree is never touched: the temp dir
    is bind-mounted over it in a private mount namespace of the child."""
    tmp = _private_config_dir(files)
    try:
        shell = 'mount --bind {} {} && exec {} -c {}'.format(
            shlex.quote(tmp), shlex.quote(CONFIG_DIR),
            shlex.quote(sys.executable), shlex.quote(_LIST_SCRIPT))
        argv = ['unshare', '--mount', '--propagation', 'private',
                'sh', '-c', shell]
        return _run_listing(argv, child_env(stacked))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def private_mounts_usable():
    """(ok, why) for running children in a private mount namespace."""
    if shutil.which('unshare') is None:
        return False, 'unshare(1) not found'
    if not os.path.isdir(CONFIG_DIR):
        return False, 'config dir {} does not exist'.format(CONFIG_DIR)
    probe = subprocess.run(
        ['unshare', '--mount', '--propagation', 'private', 'sh', '-c',
         'mount --bind {0} {0}'.format(shlex.quote(CONFIG_DIR))],
        capture_output=True, text=True, timeout=LIST_TIMEOUT, check=False)
    if probe.returncode != 0:
        return False, 'cannot bind-mount in a private mount namespace: ' + \
            probe.stderr.strip()
    return True, ''
