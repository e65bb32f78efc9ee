"""MJCF's ``<sensor>`` section, read into ModelBuilder.add_sensor (compiler/sensors.py
holds the kinds)."""

from __future__ import annotations

from .sensors import CONTACT_FIRST, CONTACT_SECOND, KINDS, where

_COMMON = {"name", "noise", "cutoff", "user"}
_FRAME = {"objtype", "objname", "reftype", "refname"}
# MuJoCo's sampling attributes, accepted at the values that leave a sensor unsampled
_SAMPLING = {"nsample": "0", "interp": "zoh", "delay": "0", "interval": "0"}


def read_sensors(reader, node) -> None:
    """Each child of ``<sensor>`` as a sensor of the model; kinds taigym does not compute
    are refused (or, with strict=False, listed in the warning)."""
    reader.check(node, "sensor", (), tuple(KINDS))
    for child in node.children:
        if child.tag == "contact":
            _read_contact_sensor(reader, child)
        elif child.tag in KINDS:
            _read_sensor(reader, child)


def _read_contact_sensor(reader, node) -> None:
    a = node.attrib
    element = where("contact", a.get("name", ""), len(reader.b._sensors))
    objects = set(CONTACT_FIRST) | set(CONTACT_SECOND)
    reader.check(node, element, _COMMON | set(_SAMPLING) | objects | {"num", "data", "reduce"})
    before = len(reader.ignored)
    for key, default in _SAMPLING.items():
        reader.default_only(a, node, element, key, default, f"sensor sampling {key}={a.get(key)!r}")
    if len(reader.ignored) > before:
        return
    kw = dict(name=a.get("name", ""), cutoff=reader.number(a, "cutoff", node, element, 0.0, minimum=0.0),
              noise=reader.number(a, "noise", node, element, 0.0, minimum=0.0),
              num=reader.integer(a, "num", node, element, 1), data=a.get("data", "found"),
              reduce=a.get("reduce", "none"), **{k: a[k] for k in objects if k in a})
    reader.guard(node, element, reader.b.add_contact_sensor, **kw)
    reader.remember("contact", kw["name"] or element.split()[-1], node, element)


def _read_sensor(reader, node) -> None:
    kind, a = KINDS[node.tag], node.attrib
    element = where(node.tag, a.get("name", ""), len(reader.b._sensors))
    attribute = kind.attribute
    allowed = _COMMON | set(_SAMPLING) | (_FRAME if attribute == "objname" else {attribute} if attribute else set())
    before = len(reader.ignored)
    reader.check(node, element, allowed)
    for key, default in _SAMPLING.items():
        reader.default_only(a, node, element, key, default, f"sensor sampling {key}={a.get(key)!r}")
    if len(reader.ignored) > before:  # not strict: the sensor is left out as a whole
        return
    if attribute and attribute not in a:
        raise reader.error(f"<{node.tag}> needs attribute '{attribute}'", node, element, attribute)
    kw = dict(name=a.get("name", ""), cutoff=reader.number(a, "cutoff", node, element, 0.0, minimum=0.0),
              noise=reader.number(a, "noise", node, element, 0.0, minimum=0.0))
    if attribute == "objname" or "refname" in a or "reftype" in a:
        kw.update(objtype=a.get("objtype"), ref=a.get("refname", ""), reftype=a.get("reftype"))
    reader.guard(node, element, reader.b.add_sensor, node.tag, a.get(attribute, "") if attribute else "", **kw)
    reader.remember(node.tag, kw["name"] or element.split()[-1], node, element)
