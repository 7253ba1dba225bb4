"""Turn pyverbs attribute objects (DeviceAttr, PortAttr, GIDEntry, ...)
into plain dicts so two devices' answers compare with == and a mismatch
shows as a readable diff."""
import inspect

from pyverbs.base import PyverbsObject


def fields(obj):
    """{property: value} of a pyverbs attribute object, nested attribute
    objects (e.g. DeviceAttrEx.odp_caps) turned into dicts as well."""
    out = {}
    for name, member in inspect.getmembers(type(obj)):
        if name.startswith('_') or not inspect.isdatadescriptor(member):
            continue
        value = getattr(obj, name)
        if isinstance(value, PyverbsObject):
            value = fields(value)
        out[name] = value
    return out


def gid_entry(entry):
    return {'gid': entry.gid_str(), 'index': entry.gid_index,
            'port': entry.port_num, 'type': entry.gid_type,
            'ndev_ifindex': entry.ndev_ifindex}
