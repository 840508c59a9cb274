"""One reader of the XLA profiler's XSpace files (``<host>.xplane.pb``), for JAX and torch_xla.

Both write ``<log_dir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.xplane.pb`` (JAX
``jax.profiler.start_trace(dir, profiler_options=opts)``; torch_xla
``torch_xla.debug.profiler.start_trace(dir)``; then ``stop_trace()``). The message classes are
built at import time from a hand-written descriptor of ``tsl/profiler/protobuf/xplane.proto``
(package ``tensorflow.profiler``) in a private descriptor pool: no TensorFlow, JAX or protoc, no
clash with another ``xplane_pb2``. Needs ``protobuf`` (upb: a 20 MB / 810k-event trace parses in
0.3 s, the table takes ~2 s in all on a 2-core VM). Imports nothing from ``xlanb``.

Observed (JAX 0.10.2 XLA:CPU, torch_xla 2.9 PJRT CPU, 2-core VM, no GPU; fixtures and
numbers from tests/data/xspace/make_xspace.py):

- Planes: ``/host:CPU`` (one line per thread: ``python``; ``tf_XLAPjRtCpuClient/<id>``,
  ``tf_XLAEigen/<id>`` run the thunks; ``tf_pytorchxla/<id>`` launches torch_xla runs;
  ``tf_PjRtCompilerThreadPool/<id>``, ``tf_xla-cpu-codegen/<id>`` compile), ``/host:metadata``
  (versions, ``Hlo Proto``), ``Task Environment`` (``profile_start_time``/``_stop_time``). GPU
  kernels would be on ``/device:GPU:N`` (not seen here).
- Ops: thunks named after the HLO instruction carry ``hlo_op``/``hlo_module`` (``ref_value``:
  the string is the referenced XStatMetadata's *name*), ``program_id``, ``device_ordinal`` and
  on JAX 0.10 only ``run_id`` (one per execution; jaxlib 0.6.1 writes none). ``end: <op>``
  and zero-length ``ThreadpoolListener::*`` events are markers. hlo_module: ``jit_<fn>`` /
  ``SyncTensorsGraph.N``.
- Host spans (:func:`classify_span`): execute = JAX ``...::ExecuteHelperOnSingleDevice``,
  torch_xla ``PjRtComputationClient::ExecuteComputation`` (launch) and ``ThunkExecutor::Execute``
  (the run); compile = JAX ``backend_compile_and_load`` > ``PjRtCpuClient::Compile``, torch_xla
  ``XLAGraphExecutor::Compile`` > ``PjRtComputationClient::Compile`` > ... (+ one event per HLO
  pass); transfer = JAX ``batched_copy_array_to_devices_with_sharding``, torch_xla
  ``PjRtComputationClient::TransferToDevice``/``TransferFromDevice``, ``D2H Dispatch``;
  sync_wait = ``Wait for usage holds``/``donation holds``, ``CommonPjRtBuffer::Await``
  (``block_until_ready``), torch_xla ``TensorCollectionBarrier``; trace = ``PjitFunction(f)``,
  ``trace_to_jaxpr_dynamic``, ``lower_sharding_computation``, torch_xla ``StepMarker`` >
  ``SyncTensorsGraph*``. These TraceMe spans are there with ``python_tracer_level = 0``.
- Clock: events use CLOCK_REALTIME ns (= ``time.time_ns()``), but both runtimes write
  ``XLine.timestamp_ns`` *relative to* ``profile_start_time`` (a few µs, not 1.7e18), so
  ``timestamp_ns + offset_ps/1000`` alone is not epoch time. We add ``profile_start_time`` to
  lines below half of it (``XSpaceEvents.normalized``). Then a ``time.time_ns()`` taken before
  each JAX call precedes its ``PjitFunction`` by 1.4-4.1 µs, each ``run_id``'s thunks lie in
  their call's window, and each torch_xla ``StepMarker`` in its step; torch_xla runs are async
  (launched 1-2 ms after ``sync()`` returns, overlapping the next step's Python).
  ``jax.profiler.ProfileData`` reports the relative times.
- Cost per cell: start_trace 0.1-0.2 ms (JAX), 0.04 ms (torch_xla; 3.5 ms for the first session
  of a process). stop_trace (collect + write .xplane.pb + .trace.json.gz), 20 steps: JAX 3-11
  ms, torch_xla 17-53 ms; 2000 steps: JAX 0.4 s, torch_xla MLP 2.7-3.7 s (7.3 MB). Taking the
  bytes instead (``jax._src.lib._profiler.ProfilerSession(opts).stop()``,
  ``torch_xla._XLAC.profiler.TslProfilerSessionWrapper().stop()``; read with
  :func:`parse_xspace`) costs 1.4 ms / 9 ms (20 steps) and 0.14 s / 1.35 s (2000). The
  traced code runs ~5-20% slower (noisy machine).
- Python tracer: JAX's default ``python_tracer_level`` is 1; on 2000 x (50 Python calls + a
  jit call) it makes the loop 2-3x slower and the file 1.1 -> 2.7 MB (``$file:line fn`` events
  on an unnamed line): set 0. torch_xla 2.9 hard-codes ``set_python_tracer_level(1)``
  (C++ ``TslProfilerSessionWrapper::Create``; no options reach it from Python) but _XLAC
  registers no Python tracer: no ``$`` events, and a 2000-step MLP loop takes 2.6-3.6 s
  untraced vs 3.2-4.1 s traced (host tracer only, within noise). Nothing to avoid today; a
  torch_xla that links the Python tracer would cost as JAX's level 1 does.
- Pitfalls: two traces in the same second into one ``log_dir`` share the run directory (named
  to the second) and overwrite each other: use a fresh directory per trace. XLA writes a
  0-byte file for traces over 2 GB: an error here, never an empty trace.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from google.protobuf.message import DecodeError

from xlanb.formats.proto_schema import FIELD, ProtoFile

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


def _build_messages() -> dict[str, type]:
    proto = ProtoFile("xlanb/xplane.proto", _PACKAGE)
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
        nested.options.map_entry = True
        nested.field.add(name="key", number=1, type=_F.TYPE_INT64, label=opt)
        nested.field.add(
            name="value", number=2, type=_F.TYPE_MESSAGE, label=opt, type_name=proto.ref(value)
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
            ("stats", 4, _F.TYPE_MESSAGE, rep, "XStat"),
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
    names = ("XSpace", "XPlane", "XLine", "XEvent", "XStat", "XEventMetadata", "XStatMetadata")
    return proto.classes(names)


_MESSAGES = _build_messages()
#: The ``tensorflow.profiler.XSpace`` message class (private descriptor pool).
XSpace: type = _MESSAGES["XSpace"]

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
    for kind, pattern in _SPAN_RULES:
        if pattern.search(name):
            return kind
    return "other"


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
)

#: Events an allocator records on each allocation and free while tracing (tsl's BFC allocator,
#: GPU/TPU clients), with the bytes it holds in use after it in the ``bytes_allocated`` stat.
MEMORY_EVENT_NAMES = ("MemoryAllocation", "MemoryDeallocation")
MEMORY_COLUMNS = ("start_ns", "allocator", "bytes_in_use", "peak_bytes_in_use")

# Stat name -> events column.
_STAT_COLUMNS = {
    "hlo_op": "hlo_op",
    "hlo_module": "hlo_module",
    "program_id": "program_id",
    "run_id": "run_id",
    "correlation_id": "correlation_id",
}
#: The stats read into columns, in the order the reader keeps their values.
_STAT_ORDER = ("hlo_op", "hlo_module", "program_id", "run_id", "correlation_id")


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

    def intervals_s(self, frame: pd.DataFrame | None = None) -> list[tuple[float, float]]:
        """``(start, end)`` in epoch seconds of ``frame``'s rows (default: all events)."""
        frame = self.events if frame is None else frame
        start = frame["start_ns"].to_numpy(dtype="float64")
        end = start + frame["duration_ns"].to_numpy(dtype="float64")
        return list(zip((start / 1e9).tolist(), (end / 1e9).tolist(), strict=True))


def _stat_value(stat: Any, stat_names: dict[int, str]) -> Any:
    which = stat.WhichOneof("value")
    if which is None:
        return None
    if which == "ref_value":
        return stat_names.get(stat.ref_value)
    return getattr(stat, which)


def _plane_stats(plane: Any, stat_names: dict[int, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for stat in plane.stats:
        value = _stat_value(stat, stat_names)
        out[stat_names.get(stat.metadata_id, str(stat.metadata_id))] = value
    return out


def parse_xspace(data: bytes, source: str = "<bytes>", *, markers: bool = True) -> XSpaceEvents:
    """:func:`read_xspace` for serialized bytes (e.g. what ``ProfilerSession.stop()`` returns).

    ``source`` names the data in errors; ``markers=False`` leaves ``marker`` events out (two
    in three events of an XLA:CPU trace, never needed for times: skipping them is cheaper
    than reading them).
    """
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
    space = XSpace()
    try:
        space.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise XSpaceError(source, f"not an XSpace protobuf ({exc})") from exc
    if not len(space.planes):
        raise XSpaceError(source, "not an XSpace: no planes")
    if any(not plane.name for plane in space.planes):
        raise XSpaceError(source, "not an XSpace: a plane without a name")

    plane_stats: dict[str, dict[str, Any]] = {}
    for plane in space.planes:
        if plane.stats:
            stat_names_of = {k: v.name for k, v in plane.stat_metadata.items()}
            plane_stats.setdefault(plane.name, {}).update(_plane_stats(plane, stat_names_of))
    env = plane_stats.get("Task Environment", {})
    start = env.get("profile_start_time")
    stop = env.get("profile_stop_time")
    start = int(start) if isinstance(start, int) and start > 0 else None
    stop = int(stop) if isinstance(stop, int) and stop > 0 else None

    # Hot loop: per event only three appends (+ stats for events that carry some); names,
    # absolute times and the sparse stat columns are assembled with numpy afterwards.
    names: list[str] = []  # global name table
    line_planes: list[int] = []  # per line: index into plane_names
    line_names: list[str] = []
    line_ts: list[int] = []
    line_counts: list[int] = []
    plane_names: list[str] = []
    gid_tables: list[dict[int, int]] = []  # per plane: metadata id -> index into names
    mids: list[int] = []
    offsets: list[int] = []
    durations: list[int] = []
    stat_rows: list[int] = []  # event index of each stat_values entry
    stat_values: list[list[Any]] = []
    normalized = False
    no_stats = (None,) * len(_STAT_ORDER)
    event_count = 0
    for plane in space.planes:
        if not len(plane.lines):
            continue
        stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
        # stat metadata id -> index in _STAT_ORDER
        wanted = {
            sid: _STAT_ORDER.index(col)
            for sid, name in stat_names.items()
            if (col := _STAT_COLUMNS.get(name))
        }
        n_wanted = len(wanted)
        gids: dict[int, int] = {}
        meta_stats: dict[int, tuple[Any, ...]] = {}
        skipped: set[int] = set()
        for mid, md in plane.event_metadata.items():
            gids[mid] = len(names)
            names.append(md.name or md.display_name)
            if not markers and classify_span(names[-1]) == "marker" and not len(md.stats):
                skipped.add(mid)
            if wanted and len(md.stats):
                base = list(no_stats)
                for stat in md.stats:
                    idx = wanted.get(stat.metadata_id)
                    if idx is not None:
                        base[idx] = _stat_value(stat, stat_names)
                if base != list(no_stats):
                    meta_stats[mid] = tuple(base)
        plane_index = len(plane_names)
        plane_names.append(plane.name)
        gid_tables.append(gids)
        mids_append, offsets_append, durations_append = (
            mids.append,
            offsets.append,
            durations.append,
        )
        for line in plane.lines:
            events = line.events
            event_count += len(events)
            if not len(events):
                continue
            ts = line.timestamp_ns
            if start is not None and ts < start // 2:
                ts += start
                normalized = True
            first = len(mids)
            for ev in events:
                mid = ev.metadata_id
                if mid in skipped:
                    continue
                offset = ev.offset_ps
                if not offset and ev.num_occurrences:
                    continue  # aggregated event: no time
                mids_append(mid)
                offsets_append(offset)
                durations_append(ev.duration_ps)
                if wanted:
                    stats = ev.stats
                    if stats:
                        values = None
                        found = 0
                        for stat in stats:
                            idx = wanted.get(stat.metadata_id)
                            if idx is not None:
                                if values is None:
                                    values = list(meta_stats.get(mid, no_stats))
                                which = stat.WhichOneof("value")
                                if which == "ref_value":
                                    values[idx] = stat_names.get(stat.ref_value)
                                elif which is not None:
                                    values[idx] = getattr(stat, which)
                                found += 1
                                if found == n_wanted:
                                    break
                        if values is not None:
                            stat_rows.append(len(mids) - 1)
                            stat_values.append(values)
                            continue
                    if meta_stats and mid in meta_stats:
                        stat_rows.append(len(mids) - 1)
                        stat_values.append(list(meta_stats[mid]))
            line_planes.append(plane_index)
            line_names.append(line.name or line.display_name or str(line.id))
            line_ts.append(ts)
            line_counts.append(len(mids) - first)

    events = _events_frame(
        names,
        plane_names,
        gid_tables,
        line_planes,
        line_names,
        line_ts,
        line_counts,
        mids,
        offsets,
        durations,
        stat_rows,
        stat_values,
    )
    return XSpaceEvents(
        memory=memory_events(space, start),
        path=source,
        events=events,
        hostnames=list(space.hostnames),
        errors=list(space.errors),
        warnings=list(space.warnings),
        plane_stats=plane_stats,
        profile_start_ns=start,
        profile_stop_ns=stop,
        normalized=normalized,
        event_count=event_count,
    )


def memory_events(space: Any, start: int | None = None) -> pd.DataFrame:
    """The ``MemoryAllocation``/``MemoryDeallocation`` events of a parsed XSpace (GPU/TPU
    allocators; none on XLA:CPU), in time order: when (epoch ns, line timestamps relative to
    `start` shifted as for the events), which allocator, the bytes it holds in use after the
    event (``bytes_allocated``) and its peak so far (``peak_bytes_in_use``), by the
    allocator's stat names (tsl ``bfc_allocator.cc``); checked on an H100 trace (JAX 0.11.2:
    allocator ``GPU_0_bfc``), not yet on a TPU's."""
    rows: list[tuple[int, str, float, float]] = []
    for plane in space.planes:
        memory_ids = {
            mid for mid, md in plane.event_metadata.items() if md.name in MEMORY_EVENT_NAMES
        }
        if not memory_ids:
            continue
        stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
        for line in plane.lines:
            ts = line.timestamp_ns
            if start is not None and ts < start // 2:
                ts += start
            for event in line.events:
                if event.metadata_id not in memory_ids:
                    continue
                stats = {
                    stat_names.get(stat.metadata_id, ""): _stat_value(stat, stat_names)
                    for stat in event.stats
                }
                in_use = stats.get("bytes_allocated")
                if not isinstance(in_use, int | float):
                    continue
                peak = stats.get("peak_bytes_in_use")
                rows.append(
                    (
                        ts + event.offset_ps // 1000,
                        str(stats.get("allocator_name") or line.name or plane.name),
                        float(in_use),
                        float(peak) if isinstance(peak, int | float) else np.nan,
                    )
                )
    rows.sort()
    return pd.DataFrame(rows, columns=list(MEMORY_COLUMNS))


def _events_frame(
    names: list[str],
    plane_names: list[str],
    gid_tables: list[dict[int, int]],
    line_planes: list[int],
    line_names: list[str],
    line_ts: list[int],
    line_counts: list[int],
    mids: list[int],
    offsets: list[int],
    durations: list[int],
    stat_rows: list[int],
    stat_values: list[list[Any]],
) -> pd.DataFrame:
    n = len(mids)
    counts = np.asarray(line_counts, dtype=np.int64)
    plane_of_event = np.repeat(np.asarray(line_planes, dtype=np.int64), counts)
    mids_arr = np.asarray(mids, dtype=np.int64)
    # metadata id -> global name index, per plane (unknown ids -> their number as name)
    gid = np.full(n, -1, dtype=np.int64)
    for p, table in enumerate(gid_tables):
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
    missing = np.flatnonzero(gid < 0)
    name_table = np.array([*names, ""], dtype=object)
    name_col = name_table[gid]  # -1 -> "" placeholder, fixed below
    for i in missing:
        name_col[i] = str(mids[i])
    starts = (
        np.repeat(np.asarray(line_ts, dtype=np.int64), counts)
        + np.asarray(offsets, dtype=np.int64) // 1000
    )
    hlo_op = np.full(n, None, dtype=object)
    hlo_module = np.full(n, None, dtype=object)
    program = np.zeros(n, dtype=np.int64)
    program_na = np.ones(n, dtype=bool)
    run = np.zeros(n, dtype=np.int64)
    run_na = np.ones(n, dtype=bool)
    correlation = np.zeros(n, dtype=np.int64)
    correlation_na = np.ones(n, dtype=bool)
    if stat_rows:
        rows = np.asarray(stat_rows, dtype=np.int64)
        ops, modules, programs, runs, correlations = zip(*stat_values, strict=True)
        hlo_op[rows] = _as_str(ops)
        hlo_module[rows] = _as_str(modules)
        for values, dest, na in (
            (programs, program, program_na),
            (runs, run, run_na),
            (correlations, correlation, correlation_na),
        ):
            ok = [isinstance(v, int) and -(2**63) <= v < 2**63 for v in values]
            ok_arr = np.asarray(ok, dtype=bool)
            dest[rows[ok_arr]] = [v for v, good in zip(values, ok, strict=True) if good]
            na[rows[ok_arr]] = False
    # kind: classify each distinct name once (via the name table), then "op" where hlo_op.
    kind_table = np.array([*(classify_span(nm) for nm in names), "other"], dtype=object)
    kinds = kind_table[gid]
    if stat_rows:
        has_op = rows[np.asarray([v is not None for v in hlo_op[rows]], dtype=bool)]
        kinds[has_op] = "op"
    return pd.DataFrame(
        {
            "plane": np.asarray(plane_names, dtype=object)[plane_of_event],
            "line": np.repeat(np.asarray(line_names, dtype=object), counts),
            "name": name_col,
            "start_ns": starts,
            "duration_ns": np.asarray(durations, dtype=np.float64) / 1000.0,
            "hlo_op": hlo_op,
            "hlo_module": hlo_module,
            "program_id": pd.arrays.IntegerArray(program, program_na),
            "run_id": pd.arrays.IntegerArray(run, run_na),
            "kind": kinds,
            "correlation_id": pd.arrays.IntegerArray(correlation, correlation_na),
        },
        columns=list(EVENT_COLUMNS),
    )


def _as_str(values: Iterable[Any]) -> list[Any]:
    """Stat values of a string column: bytes decoded, numbers as text, None kept."""
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
