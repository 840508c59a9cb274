"""A plane's metadata in an XSpace (``tsl/profiler/protobuf/xplane.proto``): its id -> metadata
maps, and a stat's value. Shared by the event reader (:mod:`xlanb.formats.xspace`) and the
TPU lines' reader (:mod:`xlanb.formats.tpu_trace`); imports nothing from ``xlanb``."""

from __future__ import annotations

from typing import Any


def by_id(metadata: Any) -> dict[int, Any]:
    """id -> metadata of a plane's metadata map, declared as a map or as repeated entries
    (:func:`xlanb.formats.xspace._build_messages`); a repeated id keeps its last entry, as a
    map does."""
    if hasattr(metadata, "items"):
        return dict(metadata.items())
    return {entry.key: entry.value for entry in metadata}


def stat_value(stat: Any, stat_names: dict[int, str]) -> Any:
    """An ``XStat``'s value: a reference as the name of the stat metadata it refers to, None
    where it has none."""
    which = stat.WhichOneof("value")
    if which is None:
        return None
    if which == "ref_value":
        return stat_names.get(stat.ref_value)
    return getattr(stat, which)
