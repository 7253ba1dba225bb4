"""Area 1: device listing, twin naming and ibv_devinfo-level attributes.

Listing modes are checked in child processes: with RDMAV_STACKED_DEVICES
set, or with our own config files bind-mounted over libibverbs' config dir
in a private mount namespace (the shared tree is never modified).
"""
import pytest

from pyverbs.device import Context, get_device_list

from migrtest import env
from migrtest.attrs import fields, gid_entry
from migrtest.raw import context_ptr, device_name_of_context
from migrtest.verbs import PORT, outcome

MODES = ('after', 'first', 'none')


# ------------------------------------------------------------ listing modes

def split(names):
    real = [n for n in names if not env.is_twin(n)]
    twins = [n for n in names if env.is_twin(n)]
    return real, twins


def assert_layout(listing, mode, real_devices):
    """The names of a listing are real_devices (in their own order) with
    their twins placed as `mode` says."""
    assert listing.returncode == 0, listing.stderr
    real, twins = split(listing.names)
    assert real == real_devices, 'real devices changed: {}'.format(
        listing.names)
    if mode == 'none':
        assert twins == [], listing.names
        return
    assert sorted(twins) == sorted(env.twin_name(r) for r in real), \
        'one twin per real device expected: {}'.format(listing.names)
    expected = real + twins if mode == 'after' else twins + real
    assert listing.names == expected, '{}: {}'.format(mode, listing.names)


@pytest.fixture(scope='module')
def real_devices():
    """Real devices, as listed with stacking turned off."""
    listing = env.list_devices('none')
    assert listing.returncode == 0, listing.stderr
    real, twins = split(listing.names)
    assert twins == [], 'RDMAV_STACKED_DEVICES=none still lists twins: ' \
        '{}'.format(listing.names)
    assert real, 'no real device listed'
    return real


@pytest.fixture(scope='module')
def private_mounts():
    ok, why = env.private_mounts_usable()
    if not ok:
        pytest.skip(why)


@pytest.fixture(autouse=True)
def needs_twin(twin_name):
    """Everything here is about the twin: skip (or fail, with the migr
    build) when it is not listed."""


def config(mode):
    return {'stacking.conf': 'stacked_devices {}\n'.format(mode)}


def test_shipped_tree_lists_twins_after(real_devices):
    listing = env.list_devices()
    assert not listing.warnings, listing.stderr
    assert_layout(listing, 'after', real_devices)


@pytest.mark.parametrize('mode', MODES)
def test_env_var_places_twins(mode, real_devices):
    listing = env.list_devices(mode)
    assert not listing.warnings, listing.stderr
    assert_layout(listing, mode, real_devices)


def test_default_without_any_setting_is_after(real_devices,
                                              private_mounts):
    listing = env.list_devices_with_config({})
    assert not listing.warnings, listing.stderr
    assert_layout(listing, 'after', real_devices)


@pytest.mark.parametrize('mode', MODES)
def test_config_file_places_twins(mode, real_devices, private_mounts):
    listing = env.list_devices_with_config(config(mode))
    assert not listing.warnings, listing.stderr
    assert_layout(listing, mode, real_devices)


def test_any_file_name_in_config_dir_counts(real_devices, private_mounts):
    files = {'zz-local-override': 'stacked_devices first\n'}
    assert_layout(env.list_devices_with_config(files), 'first',
                  real_devices)


@pytest.mark.parametrize('file_mode,env_mode', [
    ('first', 'after'), ('none', 'first'), ('after', 'none'),
    ('none', 'after')])
def test_env_var_overrides_config_file(file_mode, env_mode, real_devices,
                                       private_mounts):
    listing = env.list_devices_with_config(config(file_mode), env_mode)
    assert not listing.warnings, listing.stderr
    assert_layout(listing, env_mode, real_devices)


def assert_one_line_warning(listing, bad_value):
    assert len(listing.warnings) == 1, \
        'expected one warning line, got:\n' + listing.stderr
    assert bad_value in listing.warnings[0], listing.warnings[0]


def test_bad_env_value_warns_and_uses_default(real_devices):
    listing = env.list_devices('sideways')
    assert_one_line_warning(listing, 'sideways')
    assert_layout(listing, 'after', real_devices)


def test_bad_config_value_warns_and_uses_default(real_devices,
                                                 private_mounts):
    listing = env.list_devices_with_config(config('upside-down'))
    assert_one_line_warning(listing, 'upside-down')
    assert_layout(listing, 'after', real_devices)


# ------------------------------------------------------------- identity

def device_entry(name):
    matches = [d for d in get_device_list() if d.name.decode() == name]
    assert len(matches) == 1, '{} listed {} times'.format(name, len(matches))
    return matches[0]


def test_twin_mirrors_lower_device_entry(lower_name, twin_name):
    lower, twin = device_entry(lower_name), device_entry(twin_name)
    assert twin.guid == lower.guid
    assert twin.index == lower.index
    assert twin.node_type == lower.node_type
    assert twin.transport_type == lower.transport_type


def test_opened_twin_reports_its_own_name(twin_name):
    with Context(name=twin_name) as ctx:
        assert ctx.name == twin_name
        assert device_name_of_context(context_ptr(ctx)) == twin_name


# ----------------------------------------------------------- attributes

@pytest.fixture
def contexts(lower_name, twin_name):
    lower = Context(name=lower_name)
    twin = Context(name=twin_name)
    yield lower, twin
    twin.close()
    lower.close()


def ports(ctx):
    return range(1, ctx.query_device().phys_port_cnt + 1)


def test_query_device_equal(contexts):
    lower, twin = contexts
    assert fields(twin.query_device()) == fields(lower.query_device())


def test_query_device_ex_equal(contexts):
    lower, twin = contexts
    assert fields(twin.query_device_ex()) == fields(lower.query_device_ex())


def test_num_comp_vectors_equal(contexts):
    lower, twin = contexts
    assert twin.num_comp_vectors == lower.num_comp_vectors


def test_query_port_equal(contexts):
    lower, twin = contexts
    assert list(ports(twin)) == list(ports(lower))
    for port in ports(lower):
        assert fields(twin.query_port(port)) == \
            fields(lower.query_port(port)), 'port {}'.format(port)


def test_gid_table_equal(contexts):
    lower, twin = contexts
    size = sum(lower.query_port(p).gid_tbl_len for p in ports(lower))
    lower_table = [gid_entry(g) for g in lower.query_gid_table(size)]
    assert lower_table, 'the lower device has no GID'
    assert [gid_entry(g) for g in twin.query_gid_table(size)] == lower_table


def gid_answers(ctx, port, index):
    return (outcome(lambda: str(ctx.query_gid(port, index))),
            outcome(ctx.query_gid_type, port, index),
            outcome(lambda: gid_entry(ctx.query_gid_ex(port, index))))


def test_each_gid_entry_equal(contexts):
    lower, twin = contexts
    for port in ports(lower):
        for index in range(lower.query_port(port).gid_tbl_len):
            assert gid_answers(twin, port, index) == \
                gid_answers(lower, port, index), \
                'port {} gid index {}'.format(port, index)


def test_pkey_equal(contexts):
    lower, twin = contexts
    assert outcome(twin.query_pkey, PORT, 0) == \
        outcome(lower.query_pkey, PORT, 0)
