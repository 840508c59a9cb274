"""PyTorch/XLA backend: counters and raw metric samples from ``torch_xla.debug.metrics``, compile
causes and graph hashes from the PT_XLA_DEBUG analysis, HLO from ``--xla_dump_to``.

Nothing here clears the runtime's counters or metrics: every number is a difference between two
snapshots.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from xlanb.analysis import device_time
from xlanb.capture import backward_ops, device_trace, switches, torch_reads, versions, workdir
from xlanb.capture.backends.base import (
    Capture,
    CaptureOptions,
    Progress,
    fallback_progress,
    history_location,
    location_fields,
    name_op_places,
    name_programs,
    program_names,
    read_place_of,
)
from xlanb.formats.buffer_assignment import temporaries_from_text, temporary_rows
from xlanb.formats.compile_causes import CompileHistory
from xlanb.formats.counters import counter_rows, fallback_rows, metric_row
from xlanb.formats.hlo_proto import dumped_module_stacks, with_stack_frames
from xlanb.formats.hlo_text import count_hlo_instructions
from xlanb.formats.pt_xla_debug import AnalysisBlock, parse_analysis
from xlanb.formats.python_frames import user_code_frame
from xlanb.formats.xla_dump_names import BEFORE_OPTIMIZATIONS, dump_file_name

NAME = "torch_xla"
INSTALL_HINT = (
    "torch_xla is not installed: `pip install torch==2.9.0 torch-xla==2.9.0` "
    "(or `pip install 'xlanb[xla]'`), then run with PJRT_DEVICE=CPU or your device."
)
LATE_LOSS = "no compile causes, source lines or HLO"
#: The features of :data:`xlanb.capture.versions.RUNTIMES` this module switches.
CAUSES_FEATURE = "compile and execution causes, source lines"
TRACE_FEATURE = "device trace (per-op device times)"

_BYTE_METRICS = {"InboundData", "OutboundData"}
_COUNT_METRICS = {"TensorsGraphSize", "InputOutputAliasCount"}


@dataclass(eq=False)
class _XlaState:
    """This module's mutable state, one instance (:data:`_STATE`); its containers are only
    changed in place."""

    #: The graphs compiled so far, by place: what a compile's cause compares with.
    history: CompileHistory = field(default_factory=CompileHistory)
    #: Program id (the dump's module number) and HLO module name -> graph id of every graph
    #: compiled in this process that xlanb has seen (the device trace names a run by both: a
    #: graph compiled in an earlier cell keeps its hash). Programs of one line share a module
    #: name (``SyncTensorsGraph.10`` for every shape): only the id tells them apart.
    module_graphs: dict[str | int, str] = field(default_factory=dict)
    #: Whether the device's allocator answered ``get_memory_info`` (None: not asked yet). The
    #: CPU client's raises UNIMPLEMENTED: asked once.
    memory_info: bool | None = None
    #: Captures holding the sync wrappers, and the (module, name, function) each replaced.
    step_marker_holds: int = 0
    original_step_markers: list[tuple[Any, str, Any]] = field(default_factory=list)
    #: Each graph's peak memory (its Post Compilation Analysis), for its runs in later cells.
    peaks: dict[str, float] = field(default_factory=dict)
    #: Each graph's place in the user's code (function, file, line: where it was cut), which
    #: names its ops' program in later cells too.
    graph_places: dict[str, tuple[str, str, int]] = field(default_factory=dict)


_STATE = _XlaState()


def is_installed() -> bool:
    return "torch_xla" in sys.modules or importlib.util.find_spec("torch_xla") is not None


def is_imported() -> bool:
    return "torch_xla" in sys.modules


def has_started() -> bool:
    return "torch_xla" in sys.modules


#: The switches of :func:`debug_switches`.
SWITCH_NAMES = (
    "PT_XLA_DEBUG_LEVEL",
    "PT_XLA_DEBUG_FILE",
    "PT_XLA_DEBUG_MAX_FRAME",
    "XLA_IR_DEBUG",
    "XLA_HLO_DEBUG",
    "XLA_FLAGS",
)


def switches_read() -> bool:
    """The runtime has read its debug switches (they are read at the first compile). Imports
    nothing: it runs on the workdir's janitor thread, which must never wait on an import in
    progress."""
    modules = [sys.modules.get(name) for name in ("torch_xla", "torch_xla.debug.metrics")]
    if any(
        module is None or getattr(getattr(module, "__spec__", None), "_initializing", False)
        for module in modules
    ):
        return False
    return "CompileTime" in modules[1].metric_names()


def debug_switches(workdir: str, deep: bool = False) -> dict[str, str]:
    """The switches for compile causes (the debug file) and graphs (the dump); with `deep`,
    also the Python source line of every IR node and HLO op (``XLA_IR_DEBUG``/
    ``XLA_HLO_DEBUG``), which slows the user's tracing, and an analysis of every execution
    (its graph and the line that ran it: ``PT_XLA_DEBUG_LEVEL=2``, ~60 µs a run; see
    ``bench/switches.py``)."""
    dump_dir = os.path.join(workdir, "xla_dump")
    os.makedirs(dump_dir, exist_ok=True)
    if not versions.gate(NAME).allows(CAUSES_FEATURE):
        # the debug file's wording is checked only on the supported releases
        return {"XLA_FLAGS": f"--xla_dump_to={dump_dir} --xla_dump_hlo_as_text"}
    switches = {
        # Level 1 writes one analysis per compile; level 2 adds one per execution (deep).
        "PT_XLA_DEBUG_LEVEL": "2" if deep else "1",
        "PT_XLA_DEBUG_FILE": os.path.join(workdir, "pt_xla_debug.txt"),
        # The analysis prints 8 frames by default: a read deep in a library (a model's
        # forward) would lose the cell's frame that called it.
        "PT_XLA_DEBUG_MAX_FRAME": "32",
        "XLA_FLAGS": f"--xla_dump_to={dump_dir} --xla_dump_hlo_as_text",
    }
    if deep:
        # the module's proto keeps each op's whole Python stack; its text, the innermost frame
        switches.update(XLA_IR_DEBUG="1", XLA_HLO_DEBUG="1")
        switches["XLA_FLAGS"] += " --xla_dump_hlo_as_proto"
    return switches


def _metrics_module():
    import torch_xla.debug.metrics as metrics

    return metrics


def metric_unit(name: str) -> tuple[str, float]:
    """(unit, scale from the runtime's raw value) of a torch_xla metric."""
    if name in _BYTE_METRICS:
        return "bytes", 1.0
    if name in _COUNT_METRICS:
        return "count", 1.0
    return "s", 1e-9  # every other torch_xla metric is a duration in nanoseconds


@dataclass
class _Token:
    wall_start: float
    counters: dict[str, int]
    metric_totals: dict[str, tuple[int, float]]
    debug_file: workdir.AppendedFile
    dump_dir: str | None
    dump_seen: set[str] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    trace: device_trace.Trace | None = None
    #: The device allocator's bytes in use when the capture began (NaN where it keeps none).
    device_bytes: float = field(default_factory=lambda: _device_bytes())
    #: The values read back in the capture, by place.
    reads: torch_reads.Reads | None = None
    #: The fallback ops of its backward passes, by place.
    backward: backward_ops.BackwardOps | None = None


def _counters(metrics) -> dict[str, int]:
    return {name: metrics.counter_value(name) for name in metrics.counter_names()}


def _aten_counters(metrics) -> dict[str, int]:
    """The runtime's ``aten::`` counters (the ops that left the device)."""
    return {
        name: metrics.counter_value(name)
        for name in metrics.counter_names()
        if name.startswith("aten::")
    }


def _live_tensors(counters: dict[str, int]) -> int:
    """XLA tensors alive: made less destroyed (the runtime's own counters; a tensor whose value
    is still a pending graph counts too)."""
    return int(counters.get("CreateXlaTensor") or 0) - int(counters.get("DestroyXlaTensor") or 0)


def _device_bytes() -> float:
    """Bytes in use in the device's allocator (``xm.get_memory_info``: GPU, TPU); NaN where it
    keeps no statistics (the CPU)."""
    if _STATE.memory_info is False:
        return math.nan
    try:
        import torch_xla
        import torch_xla.core.xla_model as xm

        used = float(xm.get_memory_info(torch_xla.device())["bytes_used"])
    except Exception:
        _STATE.memory_info = False
        return math.nan
    _STATE.memory_info = True
    return used


def _live_rows(capture: Capture, token: _Token, counters_after: dict[str, int]) -> None:
    """``live_arrays`` ``before``/``after``: the live XLA tensors, and the allocator's bytes in
    use where the device keeps them (else NaN: unknown, never a guess); nothing when the cell
    changed neither."""
    count_before, count_after = _live_tensors(token.counters), _live_tensors(counters_after)
    bytes_before, bytes_after = token.device_bytes, _device_bytes()
    same_bytes = bytes_before == bytes_after or (
        math.isnan(bytes_before) and math.isnan(bytes_after)
    )
    if count_before == count_after and same_bytes:
        return
    for snapshot, count, size in (
        ("before", count_before, bytes_before),
        ("after", count_after, bytes_after),
    ):
        capture.add(
            "live_arrays",
            {"backend": NAME, "snapshot": snapshot, "shape": "", "count": count, "bytes": size},
        )


def begin(options: CaptureOptions) -> _Token:
    metrics = _metrics_module()
    debug_file = workdir.AppendedFile(switches.value("PT_XLA_DEBUG_FILE"))
    dump_dir = switches.dump_dir_from_flags(switches.value("XLA_FLAGS") or "")
    if workdir.held() <= 1:  # a script's compiles before its first capture
        # Runs (and their compiles: torch_xla compiles on its worker thread) launched before
        # the capture belong to the code before it: let them finish and write their files
        # before the files are read and emptied.
        import torch_xla.core.xla_model as xm

        xm.wait_device_ops()
        between_cells()
    debug_file.start()
    seen: set[str] = set()
    if dump_dir and os.path.isdir(dump_dir):
        if workdir.is_owned(dump_dir) and workdir.held() <= 1:
            workdir.empty_directory(dump_dir)
        else:  # the user's dump, or an outer capture's files: only new ones are this one's
            seen = set(os.listdir(dump_dir))
    totals = {}
    for name in metrics.metric_names():
        data = metrics.metric_data(name)
        if data is not None:
            totals[name] = (data[0], data[1])
    token = _Token(time.time(), _counters(metrics), totals, debug_file, dump_dir, seen)
    gate = versions.gate(NAME)
    token.notes.extend(versions.tell_once([gate.note]))
    if options.device_trace and gate.allows(TRACE_FEATURE):
        window = device_trace.Window(
            runs=lambda: metrics.counter_value("ExecuteComputation") or 0,
            window_runs=options.trace_runs,
            snapshot=lambda: _execute_totals(metrics),
            settle=_settler(metrics),
            source=options.source,
            busy=lambda: _execute_totals(metrics)[1],
        )
        token.trace, note = device_trace.start(NAME, _start_trace, window)
        if token.trace is not None:
            token.trace.capture_start = token.wall_start
        if note:
            token.notes.append(note)
    token.reads = torch_reads.start("xla")
    token.backward = backward_ops.start(lambda: _aten_counters(metrics))
    _hook_step_marker()
    return token


def _hook_step_marker() -> None:
    """Wrap ``torch_xla.sync`` and ``xm.mark_step`` (torch_xla 2.7's does not call ``sync``)
    while captures run and a switch is not given back yet: after a sync the runtime has read
    its switches (its first compile), so they are given back at once and a child process
    started next in the cell does not inherit them. Not the C++ ``_xla_step_marker`` under
    them: PT_XLA_DEBUG names a sync's cause from its immediate Python caller (``sync`` or
    ``mark_step``), which a wrapper there would replace."""
    _STATE.step_marker_holds += 1
    if _STATE.original_step_markers or not switches.pending():
        return
    try:
        import torch_xla
        import torch_xla.core.xla_model as xm
    except Exception:
        return
    for module, name in ((torch_xla, "sync"), (xm, "mark_step")):
        original = getattr(module, name, None)
        if original is None:
            continue

        def step_marker_then_seal(*args, _original=original, **kwargs):
            try:
                return _original(*args, **kwargs)
            finally:
                switches.seal_pending()

        try:
            setattr(module, name, functools.wraps(original)(step_marker_then_seal))
        except Exception:
            continue
        _STATE.original_step_markers.append((module, name, original))


def _unhook_step_marker() -> None:
    _STATE.step_marker_holds = max(0, _STATE.step_marker_holds - 1)
    if _STATE.step_marker_holds:
        return
    while _STATE.original_step_markers:
        module, name, original = _STATE.original_step_markers.pop()
        try:
            setattr(module, name, original)
        except Exception:
            pass


def between_cells() -> bool:
    """Put the compiles since the last capture (cells run without profiling) in the compile
    history before xlanb empties the files that hold them: a profiled compile is then
    compared with the graphs its line compiled anywhere in the session (after an unprofiled
    warm-up at batch 8, batch 16 is a new shape, not a new graph). False, remembering
    nothing, while a compile is still being written (its analysis without the sizes that
    follow the compile, written in the last :data:`IN_FLIGHT_SECONDS`)."""
    debug_path = switches.value("PT_XLA_DEBUG_FILE")
    if not (debug_path and workdir.is_owned(debug_path) and os.path.exists(debug_path)):
        return True  # the user's own file: not emptied, so not read either
    if not os.path.getsize(debug_path):
        return True
    blocks = [b for b in parse_analysis(_read(debug_path)) if b.kind == "compile"]
    if blocks and not blocks[-1].sizes and _written_within(debug_path, IN_FLIGHT_SECONDS):
        return False
    dump_dir = switches.dump_dir_from_flags(switches.value("XLA_FLAGS") or "")
    owned_dump = bool(dump_dir) and workdir.is_owned(dump_dir)
    modules = _dump_modules(dump_dir, set(), optimized_too=False) if owned_dump else []
    for index, block in enumerate(blocks):
        if index < len(modules):
            _STATE.history.remember(history_location(block.frames), modules[index].hlo)
    _remember_modules(blocks, modules)
    return True


#: A compile analysis without its post-compilation sizes, written this recently, is a
#: compile still running (its dump is not written yet).
IN_FLIGHT_SECONDS = 120.0


def _written_within(path: str, seconds: float) -> bool:
    try:
        return time.time() - os.path.getmtime(path) < seconds
    except OSError:
        return False


def _remember_modules(blocks: list[AnalysisBlock], modules: list[_DumpModule]) -> None:
    for index, module in enumerate(modules):
        _STATE.module_graphs[module.name] = _STATE.module_graphs[module.module_id] = _graph_id(
            index, blocks, modules
        )
    for index, block in enumerate(blocks):
        if block.sizes:
            _STATE.peaks[_graph_id(index, blocks, modules)] = _memory(block.sizes)["peak_bytes"]
        _remember_place(_graph_id(index, blocks, modules), block)
    while len(_STATE.peaks) > PEAKS_KEPT:
        del _STATE.peaks[next(iter(_STATE.peaks))]


def _remember_place(graph: str, block: AnalysisBlock | None) -> None:
    place = user_code_frame(block.frames) if block is not None else None
    if place is not None:
        _STATE.graph_places[graph] = place
        while len(_STATE.graph_places) > PEAKS_KEPT:
            del _STATE.graph_places[next(iter(_STATE.graph_places))]


#: Graphs whose peak memory is remembered (the oldest forgotten first).
PEAKS_KEPT = 4096


def _execution_peaks(capture: Capture) -> None:
    """``executions.peak_bytes``: the compiled peak of each run's graph, where known."""
    for row in capture.rows.get("executions", []):
        peak = _STATE.peaks.get(row["graph"]) if isinstance(row.get("graph"), str) else None
        if peak is not None:
            row["peak_bytes"] = peak


def _execute_totals(metrics) -> tuple[int, float]:
    """(count, seconds) of the runtime's ExecuteTime so far."""
    data = metrics.metric_data("ExecuteTime") if "ExecuteTime" in metrics.metric_names() else None
    return (int(data[0]), float(data[1]) * metric_unit("ExecuteTime")[1]) if data else (0, 0.0)


#: The longest the trace's window waits for its launched runs to finish.
SETTLE_SECONDS = 2.0


def _settler(metrics) -> Callable[[device_trace.Until], None]:
    """The trace window's wait (on its watchdog thread) until the runs launched so far have
    finished: torch_xla counts a launch (``ExecuteComputation``) before its run ends
    (``ExecuteTime``), so the window's last runs would be missing from the trace."""
    launched_before = metrics.counter_value("ExecuteComputation") or 0
    finished_before = _execute_totals(metrics)[0]

    def settle(ended: device_trace.Until) -> None:
        launched = (metrics.counter_value("ExecuteComputation") or 0) - launched_before
        deadline = time.monotonic() + SETTLE_SECONDS
        while _execute_totals(metrics)[0] - finished_before < launched:
            if ended.wait(device_trace.POLL_SECONDS) or time.monotonic() > deadline:
                return

    return settle


def _start_trace(directory: str):
    """Start the XLA profiler through torch_xla's session wrapper (what
    ``torch_xla.debug.profiler.start_trace`` uses); its ``stop()`` returns the XSpace bytes, so
    no file is written. A trace the user starts in the cell stops ours first (one session at a
    time), so theirs works as without xlanb."""
    import torch_xla
    import torch_xla.debug.profiler as xla_profiler

    if getattr(xla_profiler._profile_state, "profile_session", None) is not None:
        raise RuntimeError("a torch_xla profiler trace is already running")
    session = torch_xla._XLAC.profiler.TslProfilerSessionWrapper()
    user_start = xla_profiler.start_trace

    def start_trace_after_ours(*args, **kwargs):  # the user's own trace: ours steps aside
        device_trace.yield_to_user()
        return user_start(*args, **kwargs)

    xla_profiler.start_trace = start_trace_after_ours

    def stop() -> bytes:
        if xla_profiler.start_trace is start_trace_after_ours:
            xla_profiler.start_trace = user_start
        return session.stop()

    return stop


def peek(token: _Token) -> Progress:
    metrics = _metrics_module()
    counters = _counters(metrics)
    fallbacks, syncs_read = fallback_progress(token.counters, counters)
    return Progress(
        compiles=counters.get("UncachedCompile", 0) - token.counters.get("UncachedCompile", 0),
        executions=_count_delta(token, metrics, "ExecuteTime"),
        fallbacks=fallbacks,
        syncs=syncs_read,
    )


def end(token: _Token, options: CaptureOptions) -> Capture:
    import torch_xla.core.xla_model as xm

    reads = torch_reads.stop(token.reads) if token.reads is not None else []
    passes = backward_ops.stop(token.backward) if token.backward is not None else []
    _unhook_step_marker()
    # Executions run asynchronously: wait for the cell's to finish and record their times.
    xm.wait_device_ops()
    ended_at = time.time()
    trace_events = device_trace.finish(token.trace) if token.trace is not None else None
    metrics = _metrics_module()
    capture = Capture(notes=list(token.notes) + (token.trace.notes if token.trace else []))
    counters_after = _counters(metrics)
    _live_rows(capture, token, counters_after)
    counter_deltas = counter_rows(NAME, token.counters, counters_after)
    capture.rows["counters"] = counter_deltas
    where = functools.partial(location_fields, options=options)
    capture.rows["fallbacks"] = backward_ops.split_rows(
        torch_reads.placed_rows(
            fallback_rows(NAME, counter_deltas),
            reads,
            where,
            functools.partial(read_place_of, options=options),
        ),
        passes,
        where,
    )

    in_cell = _add_metric_rows(capture, token, metrics)

    # without a trace, device spans are the runtime's ExecuteTime samples
    capture.rows["spans"] = _sample_spans(in_cell, device=trace_events is None)
    blocks = parse_analysis(token.debug_file.read_new())
    compile_blocks = [b for b in blocks if b.kind == "compile"]
    execute_blocks = [b for b in blocks if b.kind == "execute"]
    modules = _new_dump_modules(token)
    _remember_modules(compile_blocks, modules)
    compile_count = _count_delta(token, metrics, "CompileTime")
    _add_compiles(
        capture, options, compile_count, in_cell.get("CompileTime", []), compile_blocks, modules
    )
    names = program_names(options, _STATE.graph_places)
    for row in capture.rows.get("compiles", []):
        if row.get("graph") in names:
            row["program"] = names[row["graph"]]
    _add_executions(
        capture, token, metrics, in_cell.get("ExecuteTime", []), execute_blocks, options
    )
    if options.graphs:
        _add_graphs(capture, compile_blocks, modules, options)
    if trace_events is not None:
        _trace_rows(capture, trace_events, (token.wall_start, ended_at), options)
        if token.trace is not None:
            capture.rows["spans"] += device_trace.window_span(
                NAME, token.trace, ended_at, capture.rows["spans"]
            )
        if token.trace is not None and token.trace.stopped_at is not None:
            untraced = _untraced_runs(
                token, metrics, in_cell.get("ExecuteTime", []), capture, ended_at
            )
            capture.rows["spans"].extend(untraced)
            # each run after the window is its sample's span: the graph that span was given
            device_trace.label_runs(capture.rows.get("executions", []), untraced)
    _execution_peaks(capture)
    if token.dump_dir and workdir.is_owned(token.dump_dir) and workdir.held() <= 1:
        workdir.empty_directory(token.dump_dir)
    if not switches.value("PT_XLA_DEBUG_FILE"):
        capture.notes.append(
            "torch_xla: compile causes need PT_XLA_DEBUG_FILE set before "
            "torch_xla starts (load xlanb first)."
        )
    capture.environment = _environment()
    return capture


def _add_metric_rows(
    capture: Capture, token: _Token, metrics: Any
) -> dict[str, list[tuple[float, float]]]:
    """A ``metrics`` row per metric with new samples in the cell and a ``samples`` row per
    sample; returns each metric's samples in the cell as (time, value)."""
    in_cell: dict[str, list[tuple[float, float]]] = {}
    for name in metrics.metric_names():
        data = metrics.metric_data(name)
        if data is None:
            continue
        count, accumulator, samples = data
        before_count, before_total = token.metric_totals.get(name, (0, 0.0))
        new_count = count - before_count
        if new_count <= 0:
            continue
        unit, scale = metric_unit(name)
        # The runtime keeps the newest ~1024 samples; the newest `new_count` that fall inside
        # the cell are this cell's.
        window = [
            (ts, value * scale) for ts, value in samples[-new_count:] if ts >= token.wall_start
        ]
        in_cell[name] = window
        capture.add(
            "metrics",
            metric_row(
                NAME,
                name,
                unit,
                new_count,
                (accumulator - before_total) * scale,
                [v for _, v in window],
            ),
        )
        capture.rows.setdefault("samples", []).extend(
            [{"backend": NAME, "metric": name, "time": ts, "value": value} for ts, value in window]
        )
    return in_cell


#: Timed metrics whose samples are spans of the time account (sample time = the span's end).
_SPAN_METRICS = {
    "CompileTime": "compile",
    "TransferToDeviceTime": "transfer",
    "TransferFromDeviceTime": "transfer",
    "ExecuteTime": "device",
}


def _sample_spans(
    in_cell: dict[str, list[tuple[float, float]]], device: bool
) -> list[dict[str, Any]]:
    """Spans from the runtime's own timed samples; ``ExecuteTime`` only without a trace (the
    trace's per-run spans are exact)."""
    spans = []
    for metric, lane in _SPAN_METRICS.items():
        if lane == "device" and not device:
            continue
        for end_time, seconds in in_cell.get(metric, []):
            spans.append(
                {
                    "backend": NAME,
                    "lane": lane,
                    "name": metric,
                    "graph": None,
                    "start": end_time - seconds,
                    "seconds": seconds,
                    "estimated": False,
                }
            )
    return spans


def _untraced_runs(
    token: _Token,
    metrics,
    samples: list[tuple[float, float]],
    capture: Capture,
    ended_at: float,
) -> list[dict[str, Any]]:
    """Estimated ``device`` spans for the runs after the trace's window closed
    (:func:`xlanb.analysis.device_time.after_window_from_samples`): the runtime's ExecuteTime
    samples, and its totals at the capture's start, the window's end and now."""
    trace = token.trace
    if trace is None or trace.stopped_at is None:
        return []
    total_count, total_seconds = _execute_totals(metrics)
    at_stop_seconds = (trace.snapshot_at_stop or (total_count, total_seconds))[1]
    before_count, before_total = token.metric_totals.get("ExecuteTime", (0, 0.0))
    before_seconds = before_total * metric_unit("ExecuteTime")[1]
    device = [span for span in capture.rows["spans"] if span["lane"] == "device"]
    compiled_after = [  # a graph compiled after the window: its runs are not the loop's
        span["start"] + span["seconds"]
        for span in capture.rows["spans"]
        if span["lane"] == "compile" and span["start"] + span["seconds"] > trace.stopped_at
    ]
    return device_time.after_window_from_samples(
        NAME,
        (len(device), sum(span["seconds"] for span in device)),
        at_stop_seconds - before_seconds,
        samples,
        (total_count - before_count, total_seconds - before_seconds),
        trace.stopped_at,
        ended_at,
        device_time.looping_graph(capture.rows["spans"], trace.stopped_at),
        min(compiled_after, default=math.inf),
    )


def _trace_rows(
    capture: Capture, events: Any, window: tuple[float, float], options: CaptureOptions
) -> None:
    """``ops`` and device ``spans`` from the device trace; ops are located through the HLO
    metadata (``XLA_HLO_DEBUG=1``) of the graphs dumped in this capture. Transfers come from
    the runtime's own samples (:func:`_sample_spans`)."""
    ops, spans = device_trace.rows(
        NAME,
        events,
        window,
        capture.rows.get("graphs", []),
        ("hlo", "hlo_optimized"),
        options.cell_filename,
        options.cell_line_offset,
        _STATE.module_graphs,
    )
    name_op_places(ops, options)
    name_programs(ops, capture, options, _STATE.graph_places)
    capture.rows["ops"] = ops
    capture.rows["spans"].extend(s for s in spans if s["lane"] != "transfer")
    for sample in device_trace.memory_samples(NAME, events, window):
        capture.add("samples", sample)
    # at the default debug level the runtime does not say which graph a run ran: the traced
    # runs do (the runs after the trace's window stay unknown)
    device_trace.label_runs(capture.rows.get("executions", []), spans)


def _count_delta(token: _Token, metrics, name: str) -> int:
    data = metrics.metric_data(name) if name in metrics.metric_names() else None
    if data is None:
        return 0
    return data[0] - token.metric_totals.get(name, (0, 0.0))[0]


@dataclass
class _DumpModule:
    module_id: int
    name: str
    hlo: str
    hlo_optimized: str
    buffer_assignment: str = ""


def _new_dump_modules(token: _Token) -> list[_DumpModule]:
    return _dump_modules(token.dump_dir, token.dump_seen)


def _dump_modules(
    dump_dir: str | None, seen: set[str], optimized_too: bool = True
) -> list[_DumpModule]:
    """The HLO modules dumped in `dump_dir` (but for the files in `seen`), in compile order."""
    if not dump_dir or not os.path.isdir(dump_dir):
        return []
    modules = []
    for filename in os.listdir(dump_dir):
        name = dump_file_name(filename)
        if (
            name is None
            or name.stage != BEFORE_OPTIMIZATIONS
            or not name.is_hlo
            or (filename in seen)
        ):
            continue
        prefix = filename[: -len("before_optimizations.txt")]
        optimized = ""
        if optimized_too:
            optimized = os.path.join(dump_dir, prefix + "cpu_after_optimizations.txt")
            if not os.path.exists(optimized):
                candidates = [
                    f
                    for f in os.listdir(dump_dir)
                    if f.startswith(prefix) and f.endswith("after_optimizations.txt")
                ]
                optimized = os.path.join(dump_dir, candidates[0]) if candidates else ""
        assignment = optimized[: -len(".txt")] + "-buffer-assignment.txt" if optimized else ""
        modules.append(
            _DumpModule(
                name.module_id,
                name.module,
                _read(os.path.join(dump_dir, filename)),
                _read_optimized(optimized) if optimized else "",
                _read(assignment) if assignment and os.path.exists(assignment) else "",
            )
        )
    modules.sort(key=lambda m: m.module_id)
    return modules


def _read_optimized(path: str) -> str:
    """The optimized module's text at `path`, with the Python stacks of its ops that its
    proto beside it records (``--deep``: :func:`xlanb.formats.hlo_proto.with_stack_frames`)."""
    text = _read(path)
    stacks = dumped_module_stacks(path.removesuffix(".txt") + ".hlo.pb")
    return with_stack_frames(text, stacks) if stacks is not None else text


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


def _graph_id(index: int, blocks: list[AnalysisBlock], modules: list[_DumpModule]) -> str:
    if index < len(blocks) and blocks[index].graph_hash:
        return blocks[index].graph_hash
    if index < len(modules):
        return modules[index].name
    return f"graph-{index}"


def _add_compiles(
    capture: Capture,
    options: CaptureOptions,
    count: int,
    samples: list[tuple[float, float]],
    blocks: list[AnalysisBlock],
    modules: list[_DumpModule],
) -> None:
    # Samples, analysis blocks and dumped modules are each in compile order.
    for index in range(max(count, len(blocks))):
        block = blocks[index] if index < len(blocks) else None
        module = modules[index] if index < len(modules) else None
        where = location_fields(block.frames if block else [], options)
        forced = bool(block and block.forced)
        cause = _STATE.history.cause(
            history_location(block.frames if block else []), module.hlo if module else None, forced
        )
        ts, seconds = samples[index] if index < len(samples) else (math.nan, math.nan)
        _remember_place(_graph_id(index, blocks, modules), block)
        capture.add(
            "compiles",
            {
                "backend": NAME,
                "graph": _graph_id(index, blocks, modules),
                "cause": cause,
                "seconds": seconds,
                "time": ts,
                "trigger": block.cause if block else None,
                **where,
                **(_memory(block.sizes) if block else {}),
            },
        )


def _memory(sizes: dict[str, float]) -> dict[str, float]:
    """A compile's static memory from its Post Compilation Analysis, with ``peak_bytes``
    estimated as inputs + outputs + intermediates - aliased (what XLA reports as the peak
    where it knows one)."""
    if not sizes:
        return {}
    peak = (
        sizes.get("input_bytes", 0.0)
        + sizes.get("output_bytes", 0.0)
        + sizes.get("intermediate_bytes", 0.0)
        - sizes.get("aliased_bytes", 0.0)
    )
    return {**sizes, "peak_bytes": peak}


def _add_executions(
    capture: Capture,
    token: _Token,
    metrics,
    samples: list[tuple[float, float]],
    blocks: list[AnalysisBlock],
    options: CaptureOptions,
) -> None:
    count = _count_delta(token, metrics, "ExecuteTime")
    missing = max(count - len(samples), 0)  # older than the runtime's sample buffer
    # One execution analysis per run (PT_XLA_DEBUG_LEVEL=2, --deep), in run order: the
    # samples are the newest runs, so they pair with the last blocks.
    graphs = [block.graph_hash for block in blocks] if len(blocks) == count else []
    for index, (ts, seconds) in enumerate(samples):
        row = {"backend": NAME, "graph": None, "seconds": seconds, "time": ts, "count": 1}
        if graphs:
            block = blocks[missing + index]
            row.update(
                graph=block.graph_hash,
                trigger=block.cause or None,
                read_at=read_place_of(block.frames, options) if block.forced else None,
                cell_line=location_fields(block.frames, options)["cell_line"],
            )
        capture.add("executions", row)
    if missing:  # one row per graph, the runs' total time shared by count
        total = (
            metrics.metric_data("ExecuteTime")[1]
            - token.metric_totals.get("ExecuteTime", (0, 0.0))[1]
        ) * 1e-9 - sum(s for _, s in samples)
        older = Counter(graphs[:missing]) if graphs else Counter({None: missing})
        for graph, runs in older.items():
            capture.add(
                "executions",
                {
                    "backend": NAME,
                    "graph": graph,
                    "seconds": total * runs / missing,
                    "time": token.wall_start,
                    "count": runs,
                },
            )


def _add_graphs(
    capture: Capture,
    blocks: list[AnalysisBlock],
    modules: list[_DumpModule],
    options: CaptureOptions,
) -> None:
    for index, module in enumerate(modules):
        graph = _graph_id(index, blocks, modules)
        temporaries = temporaries_from_text(module.buffer_assignment)
        rows = temporary_rows(
            NAME,
            graph,
            temporaries,
            module.hlo_optimized,
            options.cell_filename,
            options.cell_line_offset,
        )
        name_op_places(rows, options)
        for row in rows:
            capture.add("temporaries", row)
        for kind, text in (("hlo", module.hlo), ("hlo_optimized", module.hlo_optimized)):
            if text:
                capture.add(
                    "graphs",
                    {
                        "backend": NAME,
                        "graph": graph,
                        "kind": kind,
                        "text": text,
                        "nodes": count_hlo_instructions(text),
                        "module_id": module.module_id,
                    },
                )


def _environment() -> dict[str, Any]:
    import torch
    import torch_xla

    names = ("PJRT_DEVICE", "PT_XLA_DEBUG_LEVEL", "XLA_IR_DEBUG", "XLA_HLO_DEBUG", "XLA_FLAGS")
    started_with = {name: switches.value(name) for name in names}
    return {
        "torch_xla": getattr(torch_xla, "__version__", "?"),
        "torch": torch.__version__,
        "torch_xla_switches": {k: v for k, v in started_with.items() if v is not None},
    }
