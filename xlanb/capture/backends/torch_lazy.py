"""PyTorch lazy tensor core backend (``torch._lazy``, TorchScript backend, device ``lazy``).

The runtime exposes counters but no compile or execute timings, so xlanb times each
``mark_step`` itself (wrapping ``torch._C._lazy._mark_step`` for the cell only) and labels it
cached or uncached from the UncachedCompile counter. Syncs the user did not ask for (``.item()``,
printing, a fallback op on pending data) raise the compile counters without a MarkStep; the
graphs and Python stacks of every sync come from ``LTC_SAVE_TENSORS_FILE``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from xlanb.capture import switches, torch_reads, versions, workdir
from xlanb.capture.backends.base import (
    Capture,
    CaptureOptions,
    Progress,
    fallback_progress,
    history_location,
    location_fields,
    read_place_of,
)
from xlanb.formats.compile_causes import CompileHistory
from xlanb.formats.counters import counter_rows, fallback_rows, metric_row
from xlanb.formats.metrics_report import parse_report
from xlanb.formats.python_frames import python_frame

NAME = "torch_lazy"
INSTALL_HINT = (
    "torch._lazy needs PyTorch: `pip install torch==2.13.0` (or `pip install 'xlanb[torch]'`)."
)
LATE_LOSS = "no graphs or source lines of syncs"
SYNC_METRIC = "SyncTime"  # xlanb's own timing of each mark_step
#: The features of :data:`xlanb.capture.versions.RUNTIMES` this module switches.
SYNC_FEATURE = "sync times (cached / uncached)"
GRAPHS_FEATURE = "graphs and sync locations"

_SYNC_COUNTERS = ("UncachedCompile", "CachedCompile")


def is_installed() -> bool:
    return "torch" in sys.modules or importlib.util.find_spec("torch") is not None


def is_imported() -> bool:
    """torch._lazy is picked by ``auto`` whenever torch is imported without torch_xla (which
    replaces the TorchScript backend and shares its counters)."""
    return "torch" in sys.modules and "torch_xla" not in sys.modules


#: The switches of :func:`debug_switches`.
SWITCH_NAMES = ("LTC_SAVE_TENSORS_FILE", "LTC_SAVE_TENSORS_FMT")


def has_started() -> bool:
    """The runtime has synced (and so read its debug switches, at its first sync). Imports
    nothing: it also runs on the workdir's janitor thread, which must never wait on an import
    in progress."""
    torch = sys.modules.get("torch")
    if torch is None or getattr(getattr(torch, "__spec__", None), "_initializing", False):
        return False
    lazy_c = getattr(getattr(torch, "_C", None), "_lazy", None)
    if lazy_c is None:
        return False
    names = set(lazy_c._counter_names())
    return any(name in names for name in ("MarkStep", *_SYNC_COUNTERS))


#: The runtime has read its debug switches (for :func:`xlanb.capture.switches.seal`).
switches_read = has_started


def debug_switches(workdir: str, deep: bool = False) -> dict[str, str]:
    if not versions.gate(NAME).allows(GRAPHS_FEATURE):
        return {}  # its text format is checked only on the supported releases
    return {
        "LTC_SAVE_TENSORS_FILE": os.path.join(workdir, "ltc_graphs.txt"),
        "LTC_SAVE_TENSORS_FMT": "text",
    }


def _counters() -> dict[str, int]:
    import torch._lazy.metrics as metrics

    return {name: metrics.counter_value(name) for name in metrics.counter_names()}


def _report_metrics() -> dict[str, tuple[int, float, str]]:
    import torch._C._lazy as lazy_c

    if not versions.gate(NAME).supported:
        return {}
    try:
        text = lazy_c._metrics_report()
    except RuntimeError:  # "Lazy tensor backend not registered" until ts_backend.init()
        return {}
    report, _unknown = parse_report(text)
    return {name: (m.count or 0, m.total or 0.0, m.unit) for name, m in report.metrics.items()}


@dataclass
class _Sync:
    wall: float
    seconds: float
    uncached: int
    cached: int


@dataclass
class _Token:
    wall_start: float
    counters: dict[str, int]
    report_metrics: dict[str, tuple[int, float, str]]
    graphs_file: workdir.AppendedFile
    syncs: list[_Sync] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: The values read back in the capture, by place.
    reads: torch_reads.Reads | None = None


@dataclass(eq=False)
class _LazyState:
    """This module's mutable state, one instance (:data:`_STATE`); its containers are only
    changed in place."""

    #: The graphs compiled so far, by place: what a compile's cause compares with.
    history: CompileHistory = field(default_factory=CompileHistory)
    #: The graphs seen compiled in this process.
    seen_graphs: set[str] = field(default_factory=set)
    #: The latest cached mark_step time of each graph: the execute estimate of its next compile.
    cached_seconds: dict[str, float] = field(default_factory=dict)
    #: Active captures' sync lists: one wrapper around ``_mark_step``, installed while any
    #: capture runs and removed when the last one ends, whatever the order of ends.
    sync_lists: list[list[_Sync]] = field(default_factory=list)
    #: The ``_mark_step`` the wrapper replaced, while it is installed.
    original_mark_step: Any = None


_STATE = _LazyState()


def between_cells() -> None:
    """Remember the graphs synced since the last capture (cells run without profiling; the
    file has every sync's graph, compiled or cached: each distinct graph is remembered once)
    before xlanb empties the file, so a profiled compile is compared with them too."""
    path = switches.value("LTC_SAVE_TENSORS_FILE")
    if not (path and workdir.is_owned(path) and os.path.exists(path) and os.path.getsize(path)):
        return
    with open(path, encoding="utf-8", errors="replace") as handle:
        entries = parse_saved_graphs(handle.read())
    distinct = {(entry.graph, history_location(entry.frames)): entry for entry in entries}
    for (_graph, location), entry in distinct.items():
        _STATE.history.remember(location, entry.text)


def begin(options: CaptureOptions) -> _Token:
    if workdir.held() <= 1:  # a script's syncs before its first capture
        between_cells()
    graphs_file = workdir.AppendedFile(switches.value("LTC_SAVE_TENSORS_FILE"))
    graphs_file.start()
    token = _Token(time.time(), _counters(), _report_metrics(), graphs_file)
    gate = versions.gate(NAME)
    token.notes = versions.tell_once([gate.note])
    if gate.allows(SYNC_FEATURE):
        if _mark_step_found():
            _hook_mark_step(token.syncs)
        else:
            token.notes += versions.tell_once(
                [f"{NAME}: no sync times (torch._C._lazy._mark_step not found)."]
            )
    token.reads = torch_reads.start("lazy")
    return token


@functools.cache
def _mark_step_found() -> bool:
    """The private entry whose wrapper times each sync exists (checked once)."""
    import torch._C._lazy as lazy_c

    return callable(getattr(lazy_c, "_mark_step", None))


def _hook_mark_step(syncs: list[_Sync]) -> None:
    import torch._C._lazy as lazy_c

    _STATE.sync_lists.append(syncs)
    if _STATE.original_mark_step is not None:
        return  # installed by an earlier capture that is still running
    original = _STATE.original_mark_step = lazy_c._mark_step

    def counter_value(name: str) -> int:
        return lazy_c._counter_value(name) or 0  # None until the counter first moves

    def timed_mark_step(*args, **kwargs):
        uncached, cached = counter_value("UncachedCompile"), counter_value("CachedCompile")
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            seconds = time.perf_counter() - started
            # Stamped when the sync ends, like the runtimes stamp their own samples.
            sync = _Sync(
                time.time(),
                seconds,
                counter_value("UncachedCompile") - uncached,
                counter_value("CachedCompile") - cached,
            )
            for active in list(_STATE.sync_lists):
                active.append(sync)
            # the runtime has read its switches at its first sync: a child process started
            # next in the cell must not inherit them
            switches.seal_pending()

    lazy_c._mark_step = timed_mark_step


def _unhook_mark_step(syncs: list[_Sync]) -> None:
    import torch._C._lazy as lazy_c

    for index, active in enumerate(_STATE.sync_lists):
        if active is syncs:
            del _STATE.sync_lists[index]
            break
    if not _STATE.sync_lists and _STATE.original_mark_step is not None:
        lazy_c._mark_step, _STATE.original_mark_step = _STATE.original_mark_step, None


def peek(token: _Token) -> Progress:
    counters = _counters()
    syncs = sum(counters.get(name, 0) - token.counters.get(name, 0) for name in _SYNC_COUNTERS)
    fallbacks, syncs_read = fallback_progress(token.counters, counters)
    return Progress(
        compiles=counters.get("UncachedCompile", 0) - token.counters.get("UncachedCompile", 0),
        executions=syncs,
        fallbacks=fallbacks,
        syncs=syncs_read,
    )


@dataclass
class _Entry:
    frames: list[tuple[str, str, int]]
    graph: str
    text: str

    @property
    def via_mark_step(self) -> bool:
        return any(
            function == "mark_step" and file.endswith(os.path.join("_lazy", "__init__.py"))
            for function, file, _line in self.frames
        )


def parse_saved_graphs(text: str) -> list[_Entry]:
    """Entries of an ``LTC_SAVE_TENSORS_FILE`` written with ``LTC_SAVE_TENSORS_FMT=text``::

        [ScheduleSyncTensorsGraph]
        Python Stacktrace:
          mark_step (/.../torch/_lazy/__init__.py:17)
          <module> (/tmp/train.py:13)

        Hashes: (237efb2c..., 75a378ee...)

        ## BEGIN_GRAPH
        IR { ... }
        ## END_GRAPH

    A training loop writes one entry per step, so this scans with ``str.find`` and parses
    only each entry's short header line by line."""
    entries: list[_Entry] = []
    begin_marker, end_marker = "## BEGIN_GRAPH", "## END_GRAPH"
    position = 0
    while True:
        begin = text.find(begin_marker, position)
        if begin < 0:
            break
        finish = text.find(end_marker, begin)
        if finish < 0:
            break  # the runtime is still writing this entry
        header = text[position:begin]
        frames: list[tuple[str, str, int]] = []
        hashes = ""
        for line in header[header.rfind("Python Stacktrace:") :].splitlines()[1:]:
            if line.startswith("Hashes:"):
                hashes = line[7:].strip()
            else:
                frame = python_frame(line)
                if frame:
                    frames.append(frame)
        graph = hashlib.md5(hashes.encode()).hexdigest()[:16]
        entries.append(_Entry(frames, graph, text[begin + len(begin_marker) : finish].strip()))
        position = finish + len(end_marker)
    return entries


def end(token: _Token, options: CaptureOptions) -> Capture:
    _unhook_mark_step(token.syncs)
    reads = torch_reads.stop(token.reads) if token.reads is not None else []
    capture = Capture(notes=list(token.notes))
    counter_deltas = counter_rows(NAME, token.counters, _counters())
    capture.rows["counters"] = counter_deltas
    capture.rows["fallbacks"] = torch_reads.placed_rows(
        fallback_rows(NAME, counter_deltas),
        reads,
        lambda frames: location_fields(frames, options),
        lambda frames: read_place_of(frames, options),
    )
    _add_metrics(capture, token)

    deltas = {row["name"]: row["delta"] for row in counter_deltas}
    entries = parse_saved_graphs(token.graphs_file.read_new())
    step_entries = [e for e in entries if e.via_mark_step]
    forced_entries = [e for e in entries if not e.via_mark_step]
    syncs = [s for s in token.syncs if s.uncached or s.cached]

    _add_mark_steps(capture, options, syncs, step_entries)
    _add_forced_syncs(capture, options, entries, forced_entries, syncs, deltas)
    if options.graphs:
        _add_ir_graphs(capture, entries)
    if not switches.value("LTC_SAVE_TENSORS_FILE") and versions.gate(NAME).supported:
        capture.notes.append(
            "torch_lazy: graphs and sync locations need LTC_SAVE_TENSORS_FILE "
            "set before the first sync (load xlanb first)."
        )
    capture.environment = _environment()
    return capture


def _add_mark_steps(
    capture: Capture, options: CaptureOptions, syncs: list[_Sync], step_entries: list[_Entry]
) -> None:
    """The executions, spans and compiles of the timed ``mark_step`` syncs, each matched in
    order with its saved graph."""
    graphs = [step_entries[i].graph if i < len(step_entries) else None for i in range(len(syncs))]
    for sync, graph in zip(syncs, graphs, strict=True):
        if graph is not None and sync.cached and not sync.uncached:
            _STATE.cached_seconds[graph] = sync.seconds
    for index, sync in enumerate(syncs):
        entry = step_entries[index] if index < len(step_entries) else None
        graph = graphs[index]
        # No compile or execute timer on this runtime: a mark_step that compiled is split into
        # compile and execute with the graph's latest cached run as the execute estimate (no
        # cached run yet: all of it is compile, execution unknown). Marked estimated.
        start = sync.wall - sync.seconds
        execute = sync.seconds
        compile_seconds = 0.0
        if sync.uncached:
            cached = _STATE.cached_seconds.get(graph) if graph is not None else None
            execute = cached if cached is not None and cached < sync.seconds else math.nan
            compile_seconds = sync.seconds - (0.0 if math.isnan(execute) else execute)
        capture.add(
            "executions",
            {
                "backend": NAME,
                "graph": graph,
                "seconds": execute,
                "time": sync.wall,
                "count": 1,
                "seconds_estimated": True,
            },
        )
        if compile_seconds > 0:
            capture.add("spans", _span("compile", graph, start, compile_seconds))
        if not math.isnan(execute) and execute > 0:
            capture.add("spans", _span("device", graph, start + compile_seconds, execute))
        if sync.uncached:
            _add_compile(
                capture,
                options,
                entry,
                forced=False,
                seconds=compile_seconds,
                wall=start + compile_seconds,
                trigger="mark_step",
            )
        if entry:
            _STATE.seen_graphs.add(entry.graph)


def _add_forced_syncs(
    capture: Capture,
    options: CaptureOptions,
    entries: list[_Entry],
    forced_entries: list[_Entry],
    syncs: list[_Sync],
    deltas: dict[str, Any],
) -> None:
    """The executions and compiles of the syncs forced outside ``mark_step`` (no time)."""
    forced_uncached = deltas.get("UncachedCompile", 0) - sum(s.uncached for s in syncs)
    for entry in forced_entries:
        capture.add(
            "executions",
            {
                "backend": NAME,
                "graph": entry.graph,
                "seconds": math.nan,
                "time": math.nan,
                "count": 1,
                "trigger": "forced sync",
                "read_at": read_place_of(entry.frames, options),
                "cell_line": location_fields(entry.frames, options)["cell_line"],
            },
        )
        if forced_uncached > 0 and entry.graph not in _STATE.seen_graphs:
            forced_uncached -= 1
            _add_compile(
                capture,
                options,
                entry,
                forced=True,
                seconds=math.nan,
                wall=math.nan,
                trigger="forced sync",
            )
        _STATE.seen_graphs.add(entry.graph)
    for _ in range(max(forced_uncached, 0)):  # forced syncs whose graphs were not saved
        _add_compile(
            capture,
            options,
            None,
            forced=True,
            seconds=math.nan,
            wall=math.nan,
            trigger="forced sync",
        )
    if not entries:
        forced_syncs = sum(deltas.get(n, 0) for n in _SYNC_COUNTERS) - sum(
            s.uncached + s.cached for s in syncs
        )
        if forced_syncs > 0:
            capture.add(
                "executions",
                {
                    "backend": NAME,
                    "graph": None,
                    "seconds": math.nan,
                    "time": math.nan,
                    "count": forced_syncs,
                },
            )


def _add_ir_graphs(capture: Capture, entries: list[_Entry]) -> None:
    """One ``graphs`` row (the lazy IR) per graph compiled in the cell."""
    compiled = {row["graph"] for row in capture.rows.get("compiles", [])}
    for entry in entries:
        if entry.graph not in compiled:
            continue
        compiled.discard(entry.graph)  # one graphs row per graph
        capture.add(
            "graphs",
            {
                "backend": NAME,
                "graph": entry.graph,
                "kind": "ir",
                "text": entry.text,
                "nodes": count_ir_nodes(entry.text),
            },
        )


def _span(lane: str, graph: str | None, start: float, seconds: float) -> dict[str, Any]:
    return {
        "backend": NAME,
        "lane": lane,
        "name": "mark_step",
        "graph": graph,
        "start": start,
        "seconds": seconds,
        "estimated": True,
    }


def _add_compile(
    capture: Capture,
    options: CaptureOptions,
    entry: _Entry | None,
    *,
    forced: bool,
    seconds: float,
    wall: float,
    trigger: str,
) -> None:
    where = location_fields(entry.frames if entry else [], options)
    cause = _STATE.history.cause(
        history_location(entry.frames if entry else []), entry.text if entry else None, forced
    )
    capture.add(
        "compiles",
        {
            "backend": NAME,
            "graph": entry.graph if entry else None,
            "cause": cause,
            "seconds": seconds,
            "time": wall,
            "trigger": trigger,
            **where,
        },
    )


def _add_metrics(capture: Capture, token: _Token) -> None:
    sync_values = [s.seconds for s in token.syncs if s.uncached or s.cached]
    if sync_values:
        capture.add(
            "metrics",
            metric_row(NAME, SYNC_METRIC, "s", len(sync_values), sum(sync_values), sync_values),
        )
        for sync in token.syncs:
            if sync.uncached or sync.cached:
                capture.add(
                    "samples",
                    {
                        "backend": NAME,
                        "metric": SYNC_METRIC,
                        "time": sync.wall,
                        "value": sync.seconds,
                    },
                )
    for name, (count, total, unit) in _report_metrics().items():
        before_count, before_total, _ = token.report_metrics.get(name, (0, 0.0, unit))
        if count > before_count:
            capture.add(
                "metrics",
                metric_row(NAME, name, unit, count - before_count, total - before_total, []),
            )


def count_ir_nodes(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.lstrip().startswith("%"))


def _environment() -> dict[str, Any]:
    import torch

    started_with = {name: switches.value(name) for name in SWITCH_NAMES}
    return {
        "torch": torch.__version__,
        "torch_lazy_switches": {k: v for k, v in started_with.items() if v is not None},
    }
