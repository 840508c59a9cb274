"""Reading a serialized ``XStat`` (``tsl/profiler/protobuf/xplane.proto``) off its wire bytes,
without parsing it: its id, and an integer value. The XSpace reader
(:mod:`xlanb.formats.xspace`) keeps each event's stats serialized; most are not wanted, and
the wanted integer ones (a kernel's correlation id) are new on every event, so reading them
off their bytes spares a message per stat. Protobuf writes a message's fields in field-number
order: an ``XStat``'s id (field 1) comes first, then its one value.
"""

from __future__ import annotations

from typing import Any

__all__ = ["UNREAD", "stat_from_wire", "varint"]

#: What :func:`stat_from_wire` gives where the bytes need a full parse.
UNREAD: Any = object()

#: The wire tags of ``XStat``'s integer values: ``uint64_value`` (3) and ``int64_value`` (4).
_UINT64_TAG, _INT64_TAG = 0x18, 0x20


def varint(raw: bytes, pos: int) -> tuple[int, int]:
    """The unsigned varint at `pos` of `raw` and the position after it."""
    value = shift = 0
    while True:
        byte = raw[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def stat_from_wire(raw: bytes, wanted: dict[int, int]) -> Any:
    """A serialized ``XStat`` read off its bytes: None for a stat whose id `wanted` (stat id
    -> index) does not hold; (index, True, value) for a wanted one holding only an integer
    value; :data:`UNREAD` for any other (a string, a reference, bytes not as expected)."""
    try:
        if raw[0] != 0x08:
            return UNREAD
        stat_id, pos = varint(raw, 1)
        idx = wanted.get(stat_id)
        if idx is None:
            return None
        tag = raw[pos]
        if tag != _UINT64_TAG and tag != _INT64_TAG:
            return UNREAD
        value, end = varint(raw, pos + 1)
    except IndexError:
        return UNREAD
    if end != len(raw) or value >= 1 << 64:
        return UNREAD
    if tag == _INT64_TAG and value >= 1 << 63:
        value -= 1 << 64
    return (idx, True, value)
