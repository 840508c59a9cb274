"""One reader of the XLA profiler's XSpace files (``<host>.xplane.pb``), for JAX and torch_xla.

Both write ``<log_dir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.xplane.pb`` (JAX
``jax.profiler.start_trace(dir, profiler_options=opts)``; torch_xla
``torch_xla.debug.profiler.start_trace(dir)``; then ``stop_trace()``). The message classes are
built at import time from a hand-written descriptor of ``tsl/profiler/protobuf/xplane.proto``
(package ``tensorflow.profiler``) in a private descriptor pool: no TensorFlow, JAX or protoc, no
clash with another ``xplane_pb2``. Needs ``protobuf``; imports nothing from ``xlanb`` but
the ``proto_schema``, ``proto_wire``, ``xplane_metadata`` and ``tpu_trace`` modules beside it
(TPU planes' lines). What the runtimes
write (planes, span names, the clock, costs, pitfalls) is in the README ("Runtime notes",
XSpace traces).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
from google.protobuf.message import DecodeError

from xlanb.formats import tpu_trace
from xlanb.formats.proto_schema import FIELD, ProtoFile
from xlanb.formats.proto_wire import UNREAD, stat_from_wire
from xlanb.formats.xplane_metadata import by_id, stat_value

__all__ = [
    "EVENT_COLUMNS",
    "SPAN_KINDS",
    "XSpace",
    "XSpaceError",
    "XSpaceEvents",
    "XSpaceNotFoundError",
    "classify_span",
    "find_xspace_files",
    "parse_xspace",
    "read_xspace",
]

# ---------------------------------------------------------------------------------------------
# Message classes from a hand-written descriptor (tsl/profiler/protobuf/xplane.proto).

_PACKAGE = "tensorflow.profiler"
_F = FIELD


def _build_messages(*, for_reader: bool = False) -> dict[str, type]:
    """The message classes of ``xplane.proto`` (the fields xlanb reads), in a private pool.

    ``for_reader`` changes two declarations, not the wire format: ``XEvent.stats`` is
    repeated bytes (each stat stays serialized, decoded only when the reader keeps it), and
    the plane's metadata maps are repeated entries (iterated without a Python map view).
    """
    proto = ProtoFile("xlanb/xplane.proto", _PACKAGE)
    _add_space_and_plane(proto, metadata_as_map=not for_reader)
    _add_line_and_events(proto, event_stats_as_bytes=for_reader)
    names = ("XSpace", "XPlane", "XLine", "XEvent", "XStat", "XEventMetadata", "XStatMetadata")
    return proto.classes(names)


def _add_space_and_plane(proto: ProtoFile, *, metadata_as_map: bool) -> None:
    """``XSpace`` and ``XPlane`` (with its two metadata maps)."""
    message = proto.message
    opt, rep = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
    message(
        "XSpace",
        [
            ("planes", 1, _F.TYPE_MESSAGE, rep, "XPlane"),
            ("errors", 2, _F.TYPE_STRING, rep),
            ("warnings", 3, _F.TYPE_STRING, rep),
            ("hostnames", 4, _F.TYPE_STRING, rep),
        ],
    )
    plane = message(
        "XPlane",
        [
            ("id", 1, _F.TYPE_INT64),
            ("name", 2, _F.TYPE_STRING),
            ("lines", 3, _F.TYPE_MESSAGE, rep, "XLine"),
            ("event_metadata", 4, _F.TYPE_MESSAGE, rep, "XPlane.EventMetadataEntry"),
            ("stat_metadata", 5, _F.TYPE_MESSAGE, rep, "XPlane.StatMetadataEntry"),
            ("stats", 6, _F.TYPE_MESSAGE, rep, "XStat"),
        ],
    )
    for entry, value in (
        ("EventMetadataEntry", "XEventMetadata"),
        ("StatMetadataEntry", "XStatMetadata"),
    ):
        nested = plane.nested_type.add(name=entry)
        nested.options.map_entry = metadata_as_map
        nested.field.add(name="key", number=1, type=_F.TYPE_INT64, label=opt)
        nested.field.add(
            name="value", number=2, type=_F.TYPE_MESSAGE, label=opt, type_name=proto.ref(value)
        )


def _add_line_and_events(proto: ProtoFile, *, event_stats_as_bytes: bool) -> None:
    """``XLine``, ``XEvent``, ``XStat`` and the event and stat metadata."""
    message = proto.message
    rep = _F.LABEL_REPEATED
    event_stats = (
        ("stats", 4, _F.TYPE_BYTES, rep)
        if event_stats_as_bytes
        else ("stats", 4, _F.TYPE_MESSAGE, rep, "XStat")
    )
    message(
        "XLine",
        [
            ("id", 1, _F.TYPE_INT64),
            ("display_id", 10, _F.TYPE_INT64),
            ("name", 2, _F.TYPE_STRING),
            ("display_name", 11, _F.TYPE_STRING),
            ("timestamp_ns", 3, _F.TYPE_INT64),
            ("duration_ps", 9, _F.TYPE_INT64),
            ("events", 4, _F.TYPE_MESSAGE, rep, "XEvent"),
        ],
    )
    message(
        "XEvent",
        [
            ("metadata_id", 1, _F.TYPE_INT64),
            ("offset_ps", 2, _F.TYPE_INT64, None, None, 0),
            ("num_occurrences", 5, _F.TYPE_INT64, None, None, 0),
            ("duration_ps", 3, _F.TYPE_INT64),
            event_stats,
        ],
        oneofs=("data",),
    )
    message(
        "XStat",
        [
            ("metadata_id", 1, _F.TYPE_INT64),
            ("double_value", 2, _F.TYPE_DOUBLE, None, None, 0),
            ("uint64_value", 3, _F.TYPE_UINT64, None, None, 0),
            ("int64_value", 4, _F.TYPE_INT64, None, None, 0),
            ("str_value", 5, _F.TYPE_STRING, None, None, 0),
            ("bytes_value", 6, _F.TYPE_BYTES, None, None, 0),
            ("ref_value", 7, _F.TYPE_UINT64, None, None, 0),
        ],
        oneofs=("value",),
    )
    message(
        "XEventMetadata",
        [
            ("id", 1, _F.TYPE_INT64),
            ("name", 2, _F.TYPE_STRING),
            ("display_name", 4, _F.TYPE_STRING),
            ("metadata", 3, _F.TYPE_BYTES),
            ("stats", 5, _F.TYPE_MESSAGE, rep, "XStat"),
            ("child_id", 6, _F.TYPE_INT64, rep),
        ],
    )
    message(
        "XStatMetadata",
        [("id", 1, _F.TYPE_INT64), ("name", 2, _F.TYPE_STRING), ("description", 3, _F.TYPE_STRING)],
    )


_MESSAGES = _build_messages()
#: The ``tensorflow.profiler.XSpace`` message class (private descriptor pool).
XSpace: type = _MESSAGES["XSpace"]
#: What the reader parses: ``XSpace`` with each event's stats left serialized.
_XSpaceRaw: type = _build_messages(for_reader=True)["XSpace"]
_XStat: Any = _MESSAGES["XStat"]

# ---------------------------------------------------------------------------------------------
# Errors and files


class XSpaceError(ValueError):
    """An XSpace file that cannot be read: missing, empty (0 bytes) or not an XSpace."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


class XSpaceNotFoundError(XSpaceError, FileNotFoundError):
    """The XSpace file does not exist."""


def find_xspace_files(trace_dir: str | os.PathLike[str]) -> list[Path]:
    """The ``*.xplane.pb`` files of the newest profiling run under ``trace_dir``.

    ``trace_dir`` is a ``log_dir`` given to ``start_trace`` (files lie under
    ``plugins/profile/<run>/``), a run directory, or any directory above them. The newest run is
    the directory of the most recently modified ``*.xplane.pb``; all hosts' files of that run
    are returned, sorted by name. No file -> ``[]``.
    """
    root = Path(trace_dir)
    if root.is_file():
        return [root] if root.name.endswith(".xplane.pb") else []
    files = [p for p in root.rglob("*.xplane.pb") if p.is_file()]
    if not files:
        return []
    newest = max(files, key=lambda p: (p.stat().st_mtime_ns, str(p)))
    return sorted(p for p in files if p.parent == newest.parent)


# ---------------------------------------------------------------------------------------------
# Classification of host spans


#: ``kind`` values of the events table, besides ``"op"`` (an event with ``hlo_op``).
SPAN_KINDS = ("execute", "compile", "transfer", "sync_wait", "trace", "marker", "other")

# First match wins; matched against the event name. Built from the names observed in JAX 0.10.2
# and torch_xla 2.9 traces (module docstring).
_SPAN_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("marker", re.compile(r"^(end: |ThreadpoolListener::)")),
    (
        "sync_wait",
        re.compile(
            r"Wait for (usage|donation) holds|::Await\b|TensorCollectionBarrier|"
            r"BlockHostUntilReady|block_until_ready|WaitDeviceOps|wait for completion|"
            r"Synchroni[sz]e",
            re.I,
        ),
    ),
    (
        "transfer",
        re.compile(
            r"Transfer(To|From)|ToLiteral|BufferFromHostBuffer|CopyToDevice|CopyRawToHost|"
            r"CopyToHost|copy_array_to_devices|BatchedCopyToDevice|device_put|device_get|"
            r"\bD2H\b|\bH2D\b",
            re.I,
        ),
    ),
    ("compile", re.compile(r"compil|^Codegen$|RunBackend|RunHloPasses|^HLO passes", re.I)),
    (
        "execute",
        re.compile(
            r"(Executable|ComputationClient|Client)::Execute|ExecuteReplicated|ExecuteHelper|"
            r"ExecuteSharded|ExecuteComputation|^ThunkExecutor::Execute$"
        ),
    ),
    (
        "trace",
        re.compile(
            r"^PjitFunction\(|trace_to_jaxpr|^lower_|ParseArguments|shard_args|SyncTensors|"
            r"SyncLiveTensors|StepMarker|MarkStep|mark_step|CollectSyncTensors|"
            r"ExtractIRAndPrepareXlaData|GetTensors|BuildGraph",
            re.I,
        ),
    ),
)


def classify_span(name: str) -> str:
    """The ``kind`` of a host span (an event without ``hlo_op``) from its name.

    One of :data:`SPAN_KINDS`: ``execute`` (a program launch/run on the host side),
    ``compile``, ``transfer`` (host<->device copies), ``sync_wait`` (the host blocked on the
    device), ``trace`` (dispatch, tracing, lazy-graph building), ``marker`` (zero-length or
    ``end:`` bookkeeping events) or ``other``.
    """
    if name.startswith(_MARKER_PREFIXES):
        return "marker"
    for kind, pattern in _SPAN_RULES:
        if pattern.search(name):
            return kind
    return "other"


#: :func:`classify_span` remembered per name: each cell's trace repeats the runtime's span names.
_classify_span_cached = functools.lru_cache(maxsize=8192)(classify_span)

#: The names the ``marker`` rule matches (its pattern, as a prefix test).
_MARKER_PREFIXES = ("end: ", "ThreadpoolListener::")


# ---------------------------------------------------------------------------------------------
# Reading

#: Columns of :attr:`XSpaceEvents.events`, in order.
EVENT_COLUMNS = (
    "plane",
    "line",
    "name",
    "start_ns",
    "duration_ns",
    "hlo_op",
    "hlo_module",
    "program_id",
    "run_id",
    "kind",
    "correlation_id",
    "device_ordinal",
)

#: Events an allocator records on each allocation and free while tracing (tsl's BFC allocator,
#: GPU/TPU clients), with the bytes it holds in use after it in the ``bytes_allocated`` stat.
MEMORY_EVENT_NAMES = ("MemoryAllocation", "MemoryDeallocation")
MEMORY_COLUMNS = ("start_ns", "allocator", "bytes_in_use", "peak_bytes_in_use")
_MEMORY_EVENT_NAME_SET = frozenset(MEMORY_EVENT_NAMES)
#: The stats of a memory event that :func:`memory_events` reads, in the order it keeps them.
_MEMORY_STATS = ("bytes_allocated", "peak_bytes_in_use", "allocator_name", "index_on_host")

# Stat name -> events column.
_STAT_COLUMNS = {
    "hlo_op": "hlo_op",
    "hlo_module": "hlo_module",
    "program_id": "program_id",
    "run_id": "run_id",
    "correlation_id": "correlation_id",
    "device_ordinal": "device_ordinal",
}
#: The stats read into columns, in the order the reader keeps their values.
_STAT_ORDER = ("hlo_op", "hlo_module", "program_id", "run_id", "correlation_id", "device_ordinal")
_HLO_OP, _PROGRAM = _STAT_ORDER.index("hlo_op"), _STAT_ORDER.index("program_id")


@dataclass
class XSpaceEvents:
    """The events of one XSpace, on the epoch-ns clock of ``time.time_ns()``.

    ``events`` has one row per timed XEvent (aggregated events without a time are skipped)::

        plane        str    XPlane name, e.g. "/host:CPU", "/device:GPU:0"
        line         str    XLine (thread / stream) name, e.g. "python", "tf_XLAEigen/123"
        name         str    event name (XEventMetadata.name, else display_name)
        start_ns     int64  absolute epoch ns (see the module docstring on normalization)
        duration_ns  float  duration in ns (picosecond resolution kept)
        hlo_op       str | None   HLO instruction (XLA thunk / GPU kernel), else None
        hlo_module   str | None   HLO module name, e.g. "jit_step", "SyncTensorsGraph.12"
        program_id   Int64 (NA)   XLA program (executable) id
        run_id       Int64 (NA)   one execution of the program
        kind         str    "op" when hlo_op is set, else classify_span(name)
        correlation_id Int64 (NA) CUPTI's id joining a GPU kernel to its host launch
        device_ordinal Int64 (NA) the device an XLA:CPU thunk ran for (JAX 0.10: one per
                     forced host device); a GPU kernel's device is its plane's

    Stats are resolved through the plane's stat metadata (``ref_value`` -> the referenced
    metadata's name) and the event metadata's stats (event stats win).
    """

    path: str
    events: pd.DataFrame
    hostnames: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: Plane name -> {stat name: value} (e.g. "/host:metadata" -> {"jax_version": ...}).
    plane_stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: ``profile_start_time`` / ``profile_stop_time`` of the Task Environment plane (epoch ns).
    profile_start_ns: int | None = None
    profile_stop_ns: int | None = None
    #: True when line timestamps were relative to ``profile_start_ns`` and were shifted.
    normalized: bool = False
    #: The allocators' memory events (:func:`memory_events`): ``start_ns``, ``allocator``,
    #: ``bytes_in_use`` after the event, ``peak_bytes_in_use``; empty when the trace has none
    #: (XLA:CPU writes none).
    memory: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=MEMORY_COLUMNS))
    #: Every event of the space, those left out (markers, aggregated events) included.
    event_count: int = 0
    #: (program id, HLO op) -> what the trace's op metadata says of the op (TPU).
    op_facts: dict[tuple[int, str], tpu_trace.OpFacts] = field(default_factory=dict)

    @property
    def planes(self) -> list[str]:
        """Names of the planes that hold events."""
        return list(dict.fromkeys(self.events["plane"]))

    def op_events(self) -> pd.DataFrame:
        """Rows with an ``hlo_op``: XLA:CPU thunks on host threads, kernels on GPU planes."""
        return self.events[self.events["hlo_op"].notna()].reset_index(drop=True)

    def host_spans(
        self, kinds: Iterable[str] | None = None, *, include_markers: bool = False
    ) -> pd.DataFrame:
        """Rows without ``hlo_op`` (runtime spans), optionally only the given ``kinds``.

        ``marker`` rows (``end: <op>``, ``ThreadpoolListener::*``) are left out unless
        ``include_markers``.
        """
        ev = self.events
        mask = ev["hlo_op"].isna()
        if kinds is not None:
            mask &= ev["kind"].isin(list(kinds))
        elif not include_markers:
            mask &= ev["kind"] != "marker"
        return ev[mask].reset_index(drop=True)


def _plane_stats(plane: Any, stat_names: dict[int, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for stat in plane.stats:
        value = stat_value(stat, stat_names)
        out[stat_names.get(stat.metadata_id, str(stat.metadata_id))] = value
    return out


def parse_xspace(data: bytes, source: str = "<bytes>", *, markers: bool = True) -> XSpaceEvents:
    """:func:`read_xspace` for serialized bytes (e.g. what ``ProfilerSession.stop()`` returns).

    ``source`` names the data in errors; ``markers=False`` leaves ``marker`` events out (two
    in three events of an XLA:CPU trace, never needed for times: skipping them is cheaper
    than reading them).
    """
    space = _parse_space(data, source)
    plane_stats, start, stop = _profile_window(space)
    columns = _EventColumns()
    for plane in space.planes:
        if len(plane.lines):
            _read_plane(plane, columns, start, markers)
    return XSpaceEvents(
        memory=(
            memory_events(space, start)
            if not _MEMORY_EVENT_NAME_SET.isdisjoint(columns.names)
            else _memory_frame([])
        ),
        path=source,
        events=_events_frame(columns),
        hostnames=list(space.hostnames),
        errors=list(space.errors),
        warnings=list(space.warnings),
        plane_stats=plane_stats,
        profile_start_ns=start,
        profile_stop_ns=stop,
        normalized=columns.normalized,
        event_count=columns.event_count,
        op_facts=tpu_trace.op_facts(space),
    )


def _parse_space(data: bytes, source: str) -> Any:
    """The XSpace message of `data`, or an :class:`XSpaceError` saying why it is not one."""
    if not data:
        raise XSpaceError(
            source,
            "empty XSpace (0 bytes). XLA writes an empty file when the "
            "serialized trace exceeds 2 GB: trace a shorter window",
        )
    if data[:2] == b"\x1f\x8b":
        raise XSpaceError(
            source, "gzip data, not an XSpace (a trace.json.gz? read the *.xplane.pb next to it)"
        )
    space = _XSpaceRaw()
    try:
        space.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise XSpaceError(source, f"not an XSpace protobuf ({exc})") from exc
    if not len(space.planes):
        raise XSpaceError(source, "not an XSpace: no planes")
    if any(not plane.name for plane in space.planes):
        raise XSpaceError(source, "not an XSpace: a plane without a name")
    return space


def _profile_window(space: Any) -> tuple[dict[str, dict[str, Any]], int | None, int | None]:
    """Each plane's stats, and the profile's start and stop (epoch ns, from the ``Task
    Environment`` plane; None where absent)."""
    plane_stats: dict[str, dict[str, Any]] = {}
    for plane in space.planes:
        if plane.stats:
            stat_names_of = {k: v.name for k, v in by_id(plane.stat_metadata).items()}
            plane_stats.setdefault(plane.name, {}).update(_plane_stats(plane, stat_names_of))
    env = plane_stats.get("Task Environment", {})
    start = env.get("profile_start_time")
    stop = env.get("profile_stop_time")
    start = int(start) if isinstance(start, int) and start > 0 else None
    stop = int(stop) if isinstance(stop, int) and stop > 0 else None
    return plane_stats, start, stop


@dataclass
class _EventColumns:
    """The events read so far as flat lists. Hot loop: per event only three appends (+ stats
    for events that carry some); names, absolute times and the sparse stat columns are
    assembled with numpy afterwards (:func:`_events_frame`)."""

    names: list[str] = field(default_factory=list)  # global name table
    line_planes: list[int] = field(default_factory=list)  # per line: index into plane_names
    line_names: list[str] = field(default_factory=list)
    line_ts: list[int] = field(default_factory=list)
    line_counts: list[int] = field(default_factory=list)
    plane_names: list[str] = field(default_factory=list)
    #: per plane: metadata id -> index into names
    gid_tables: list[dict[int, int]] = field(default_factory=list)
    mids: list[int] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)
    durations: list[int] = field(default_factory=list)
    stat_rows: list[int] = field(default_factory=list)  # event index of each stat_values entry
    stat_values: list[list[Any]] = field(default_factory=list)
    normalized: bool = False
    event_count: int = 0


class _PlaneMetadata(NamedTuple):
    """What the event loop needs from a plane's metadata."""

    stat_names: dict[int, str]
    #: stat metadata id -> index in _STAT_ORDER
    wanted: dict[int, int]
    #: event metadata id -> the stat values its metadata carries
    meta_stats: dict[int, tuple[Any, ...]]
    #: event metadata ids left out (markers, with ``markers=False``)
    skipped: set[int]
    tpu: bool = False  # a TPU chip's plane: an op event's hlo_op is its metadata's name


def _read_plane(plane: Any, columns: _EventColumns, start: int | None, markers: bool) -> None:
    """Append the events of `plane` (one with lines) to `columns`. Each field is read with one
    comprehension over a line's events; skipped events are dropped before any other field is
    read, and an event's stats (serialized) are decoded only once per distinct stat."""
    meta = _plane_metadata(plane, columns, markers)
    plane_index = len(columns.plane_names)
    columns.plane_names.append(plane.name)
    skipped = meta.skipped
    decode = _StatDecoder(meta)
    for line in plane.lines:
        events = line.events
        columns.event_count += len(events)
        if not len(events):
            continue
        ts = line.timestamp_ns
        if start is not None and ts < start // 2:
            ts += start
            columns.normalized = True
        kept = [ev for ev in events if ev.metadata_id not in skipped] if skipped else events
        offsets = [ev.offset_ps for ev in kept]
        if 0 in offsets:  # aggregated events have no time
            kept = [ev for ev in kept if ev.offset_ps or not ev.num_occurrences]
            offsets = [ev.offset_ps for ev in kept]
        first = len(columns.mids)
        mids = [ev.metadata_id for ev in kept]
        columns.mids += mids
        columns.offsets += offsets
        columns.durations += [ev.duration_ps for ev in kept]
        if meta.wanted and (not meta.tpu or line.name in tpu_trace.TPU_STAT_LINES):
            decode.line_stats([ev.stats for ev in kept], mids, first, columns)
        columns.line_planes.append(plane_index)
        columns.line_names.append(line.name or line.display_name or str(line.id))
        columns.line_ts.append(ts)
        columns.line_counts.append(len(mids))


class _StatDecoder:
    """The wanted stat values of events whose stats are serialized ``XStat`` bytes: each
    distinct stat is decoded once (a plane's ops repeat the same module, program, op names);
    a stat's id is read off its first bytes, so a stat not wanted is never parsed, and an
    integer value (a correlation id, new on every event) is read off its varint."""

    def __init__(self, meta: _PlaneMetadata, wanted: dict[int, int] | None = None) -> None:
        self.meta = meta
        self.wanted = meta.wanted if wanted is None else wanted
        self.no_stats = (None,) * len(_STAT_ORDER)
        #: stat bytes -> (index in _STAT_ORDER, has a value, value); None when not wanted
        self.cache: dict[bytes, tuple[int, bool, Any] | None] = {}

    def decode(self, raw: bytes) -> tuple[int, bool, Any] | None:
        hit = stat_from_wire(raw, self.wanted)
        if hit is UNREAD:
            stat = _XStat.FromString(raw)
            idx = self.wanted.get(stat.metadata_id)
            if idx is None:
                hit = None
            else:
                which = stat.WhichOneof("value")
                if which == "ref_value":
                    hit = (idx, True, self.meta.stat_names.get(stat.ref_value))
                else:
                    hit = (idx, which is not None, None if which is None else getattr(stat, which))
        self.cache[raw] = hit
        return hit

    def values(self, stats: Iterable[Any], size: int) -> list[Any]:
        """The `size` wanted values of one event's `stats` (serialized, or ``XStat``
        messages), by index (None where absent); a stat given twice keeps its last value."""
        found: list[Any] = [None] * size
        for raw in stats:
            if isinstance(raw, bytes):
                hit = self.cache.get(raw, UNREAD)
                if hit is UNREAD:
                    hit = self.decode(raw)
                if hit is not None:
                    found[hit[0]] = hit[2]
            elif (idx := self.wanted.get(raw.metadata_id)) is not None:
                found[idx] = stat_value(raw, self.meta.stat_names)
        return found

    def line_stats(
        self, stat_lists: list[Any], mids: list[int], first: int, columns: _EventColumns
    ) -> None:
        """Append the stat rows of one line's kept events (event ``first + i`` has
        ``stat_lists[i]``): its own wanted stats over its metadata's, as
        :class:`XSpaceEvents` says."""
        meta_stats, cache, no_stats = self.meta.meta_stats, self.cache, self.no_stats
        n_wanted = len(self.meta.wanted)
        for i, stats in enumerate(stat_lists):
            values = None
            if stats:
                found = 0
                for raw in stats:
                    hit = cache.get(raw, UNREAD)
                    if hit is UNREAD:
                        hit = self.decode(raw)
                    if hit is None:
                        continue
                    if values is None:
                        values = list(meta_stats.get(mids[i], no_stats))
                    if hit[1]:
                        values[hit[0]] = hit[2]
                    found += 1
                    if found == n_wanted:
                        break
            if values is None and meta_stats and mids[i] in meta_stats:
                values = list(meta_stats[mids[i]])
            if values is not None:
                columns.stat_rows.append(first + i)
                columns.stat_values.append(values)


def _plane_metadata(plane: Any, columns: _EventColumns, markers: bool) -> _PlaneMetadata:
    """Read `plane`'s event metadata: each event name goes into the global name table (its
    index into ``columns.gid_tables``), with the stats the metadata carries."""
    names = columns.names
    no_stats = (None,) * len(_STAT_ORDER)
    stat_names = {k: v.name for k, v in by_id(plane.stat_metadata).items()}
    wanted = {
        sid: _STAT_ORDER.index(col)
        for sid, name in stat_names.items()
        if (col := _STAT_COLUMNS.get(name))
    }
    of_id = by_id(plane.event_metadata)
    metadatas = list(of_id.values())
    plane_names = [md.name or md.display_name for md in metadatas]
    stat_counts = [len(md.stats) for md in metadatas]
    gids = dict(zip(of_id, range(len(names), len(names) + len(metadatas)), strict=True))
    names += plane_names
    skipped: set[int] = set()
    if not markers:
        skipped = {
            mid
            for mid, name, n in zip(of_id, plane_names, stat_counts, strict=True)
            if not n and name.startswith(_MARKER_PREFIXES)
        }
    meta_stats: dict[int, tuple[Any, ...]] = {}
    tpu = plane.name.startswith(tpu_trace.TPU_PLANE)
    for mid, md, n in zip(of_id, metadatas, stat_counts, strict=True):
        if not n or not wanted:
            continue
        base: list[Any] = list(no_stats)
        for stat in md.stats:
            idx = wanted.get(stat.metadata_id)
            if idx is not None:
                base[idx] = stat_value(stat, stat_names)
        if tpu and base[_PROGRAM] is not None:
            base[_HLO_OP] = tpu_trace.tpu_op_name(md)
        if base != list(no_stats):
            meta_stats[mid] = tuple(base)
    columns.gid_tables.append(gids)
    return _PlaneMetadata(stat_names, wanted, meta_stats, skipped, tpu)


def memory_events(space: Any, start: int | None = None) -> pd.DataFrame:
    """The ``MemoryAllocation``/``MemoryDeallocation`` events of a parsed XSpace (GPU/TPU
    allocators; none on XLA:CPU), in time order: when (epoch ns, line timestamps relative to
    `start` shifted as for the events), which allocator, the bytes it holds in use after the
    event (``bytes_allocated``) and its peak so far (``peak_bytes_in_use``), by the
    allocator's stat names (tsl ``bfc_allocator.cc``); checked on an H100 trace (JAX 0.11.2:
    allocator ``GPU_0_bfc``) and a TPU's (no allocator name: ``device N`` by the event's
    ``index_on_host``, its chip)."""
    rows: list[tuple[int, str, float, float]] = []
    for plane in space.planes:
        memory_ids = {
            mid for mid, md in by_id(plane.event_metadata).items() if md.name in MEMORY_EVENT_NAMES
        }
        if not memory_ids:
            continue
        stat_names = {k: v.name for k, v in by_id(plane.stat_metadata).items()}
        wanted = {
            sid: _MEMORY_STATS.index(name)
            for sid, name in stat_names.items()
            if name in _MEMORY_STATS
        }
        decoder = _StatDecoder(_PlaneMetadata(stat_names, wanted, {}, set()))
        for line in plane.lines:
            ts = line.timestamp_ns
            if start is not None and ts < start // 2:
                ts += start
            for event in line.events:
                if event.metadata_id not in memory_ids:
                    continue
                in_use, peak, allocator, device = decoder.values(event.stats, len(_MEMORY_STATS))
                if not isinstance(in_use, int | float):
                    continue
                if not allocator and isinstance(device, int):  # a TPU's: its chip on the host
                    allocator = f"device {device}"
                rows.append(
                    (
                        ts + event.offset_ps // 1000,
                        str(allocator or line.name or plane.name),
                        float(in_use),
                        float(peak) if isinstance(peak, int | float) else np.nan,
                    )
                )
    return _memory_frame(rows)


def _memory_frame(rows: list[tuple[int, str, float, float]]) -> pd.DataFrame:
    """The memory events frame (:data:`MEMORY_COLUMNS`) of `rows`, in time order."""
    return pd.DataFrame(sorted(rows), columns=list(MEMORY_COLUMNS))


def _events_frame(columns: _EventColumns) -> pd.DataFrame:
    """The events table (:data:`EVENT_COLUMNS`) of the columns read from the planes."""
    n = len(columns.mids)
    counts = np.asarray(columns.line_counts, dtype=np.int64)
    plane_of_event = np.repeat(np.asarray(columns.line_planes, dtype=np.int64), counts)
    gid = _name_indices(columns, plane_of_event)
    names = columns.names
    missing = np.flatnonzero(gid < 0)
    # an id the plane does not know is named by its number
    name_codes = gid.copy()
    name_codes[missing] = np.arange(len(names), len(names) + len(missing))
    name_table = [*names, *(str(columns.mids[i]) for i in missing)]
    starts = (
        np.repeat(np.asarray(columns.line_ts, dtype=np.int64), counts)
        + np.asarray(columns.offsets, dtype=np.int64) // 1000
    )
    hlo_op, hlo_module, program_id, run_id, correlation_id, device = _stat_columns(columns, n)
    kind_table, kind_codes = _kinds(names, gid, hlo_op, columns.stat_rows)
    line_codes = np.repeat(np.arange(len(columns.line_names)), counts)
    frame = pd.DataFrame(
        {
            "plane": _taken(columns.plane_names, plane_of_event),
            "line": _taken(columns.line_names, line_codes),
            "name": _taken(name_table, name_codes),
            "start_ns": starts,
            "duration_ns": np.asarray(columns.durations, dtype=np.float64) / 1000.0,
            "hlo_op": hlo_op,
            "hlo_module": hlo_module,
            "program_id": program_id,
            "run_id": run_id,
            "kind": _taken(kind_table, kind_codes),
            "correlation_id": correlation_id,
            "device_ordinal": device,
        },
        columns=list(EVENT_COLUMNS),
    )
    if any(name.startswith(tpu_trace.TPU_PLANE) for name in columns.plane_names):
        tpu_trace.place_tpu_ops(frame)
    return frame


def _taken(table: list[str], codes: np.ndarray) -> Any:
    """The strings of `table` at `codes`, as the column pandas makes of them (its string
    dtype, where it infers one): the table's strings are checked once, not once per row."""
    if not len(codes):
        return np.asarray(table, dtype=object)[codes]
    return pd.Series(np.asarray(table, dtype=object)).array.take(codes)


def _kinds(
    names: list[str], gid: np.ndarray, hlo_op: np.ndarray, stat_rows: list[int]
) -> tuple[list[str], np.ndarray]:
    """The ``kind`` column as (kinds, the code of each event's): "op" where ``hlo_op`` is set,
    else :func:`classify_span` of the name, classified once per distinct name of the events
    that are not ops ("other" for an id its plane does not know)."""
    is_op = np.zeros(len(gid), dtype=bool)
    if stat_rows:
        rows = np.asarray(stat_rows, dtype=np.int64)
        is_op[rows[np.asarray([v is not None for v in hlo_op[rows]], dtype=bool)]] = True
    kind_table = ["other"] * len(names) + ["other", "op"]  # then: an unknown id, an op
    for g in np.unique(gid[~is_op]).tolist():
        if g >= 0:
            kind_table[g] = _classify_span_cached(names[g])
    codes = np.where(gid < 0, len(names), gid)
    codes[is_op] = len(names) + 1
    return kind_table, codes


def _name_indices(columns: _EventColumns, plane_of_event: np.ndarray) -> np.ndarray:
    """Per event, the index of its name in ``columns.names`` (metadata id -> global name
    index, per plane); -1 for an id its plane does not know."""
    mids_arr = np.asarray(columns.mids, dtype=np.int64)
    gid = np.full(len(columns.mids), -1, dtype=np.int64)
    for p, table in enumerate(columns.gid_tables):
        sel = np.flatnonzero(plane_of_event == p)
        if not len(sel) or not table:
            continue
        keys = np.fromiter(table.keys(), dtype=np.int64, count=len(table))
        vals = np.fromiter(table.values(), dtype=np.int64, count=len(table))
        order = np.argsort(keys)
        keys, vals = keys[order], vals[order]
        pos = np.clip(np.searchsorted(keys, mids_arr[sel]), 0, len(keys) - 1)
        hit = keys[pos] == mids_arr[sel]
        gid[sel[hit]] = vals[pos[hit]]
    return gid


def _stat_columns(columns: _EventColumns, n: int) -> tuple[Any, ...]:
    """The sparse stat columns of `n` events: ``hlo_op``, ``hlo_module`` (objects, None where
    absent), ``program_id``, ``run_id``, ``correlation_id``, ``device_ordinal`` (nullable
    integers)."""
    hlo_op = np.full(n, None, dtype=object)
    hlo_module = np.full(n, None, dtype=object)
    ints = [(np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool)) for _ in _STAT_ORDER[2:]]
    if columns.stat_rows:
        rows = np.asarray(columns.stat_rows, dtype=np.int64)
        ops, modules, *numbers = (
            [values[i] for values in columns.stat_values] for i in range(len(_STAT_ORDER))
        )
        hlo_op[rows] = _as_str(ops)
        hlo_module[rows] = _as_str(modules)
        for values, (dest, na) in zip(numbers, ints, strict=True):
            _set_ints(values, rows, dest, na)
    return (hlo_op, hlo_module, *(pd.arrays.IntegerArray(dest, na) for dest, na in ints))


def _set_ints(values: list[Any], rows: np.ndarray, dest: np.ndarray, na: np.ndarray) -> None:
    """Put the int64 values of a stat column (None where absent) at `rows` of `dest` (others
    stay NA in `na`)."""
    present = [value for value in values if value is not None]
    if not present:
        return
    if len(present) < len(values):
        rows = rows[np.fromiter((value is not None for value in values), bool, len(values))]
    if set(map(type, present)) == {int}:
        try:
            dest[rows] = np.array(present, dtype=np.int64)
        except OverflowError:
            pass
        else:
            na[rows] = False
            return
    present = [tpu_trace.int64_of(v) if isinstance(v, int) else v for v in present]
    ok = np.array([isinstance(v, int) and -(2**63) <= v < 2**63 for v in present], dtype=bool)
    dest[rows[ok]] = [v for v, good in zip(present, ok.tolist(), strict=True) if good]
    na[rows[ok]] = False


def _as_str(values: Iterable[Any]) -> list[Any]:
    """Stat values of a string column: bytes decoded, numbers as text, None kept."""
    if set(map(type, values)) <= {str, type(None)}:
        return list(values)
    out: list[Any] = []
    for v in values:
        if v is None or isinstance(v, str):
            out.append(v)
        elif isinstance(v, bytes):
            out.append(v.decode("utf-8", "replace"))
        else:
            out.append(str(v))
    return out


def read_xspace(path: str | os.PathLike[str], *, markers: bool = True) -> XSpaceEvents:
    """Read one ``*.xplane.pb`` (or the newest one under a trace directory).

    Raises :class:`XSpaceError` naming the file when it is missing
    (:class:`XSpaceNotFoundError`, also a ``FileNotFoundError``), empty (0 bytes: XLA writes
    that for traces over 2 GB, never an empty success) or not an XSpace.
    """
    p = Path(path)
    if p.is_dir():
        files = find_xspace_files(p)
        if not files:
            raise XSpaceNotFoundError(p, "no *.xplane.pb under this directory")
        p = files[0]
    try:
        data = p.read_bytes()
    except FileNotFoundError as exc:
        raise XSpaceNotFoundError(p, "no such XSpace file") from exc
    except OSError as exc:
        raise XSpaceError(p, f"cannot read ({exc})") from exc
    return parse_xspace(data, source=str(p), markers=markers)
