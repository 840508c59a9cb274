"""A cell run again without a device trace of its own (issue #27): the last trace of the same
cell's programs stands for this run's.

A trace costs a fixed stop and read whatever its window, which a short steady cell feels (the
README has the figures). So each traced cell leaves, per program it ran and traced,
the per-op rows and the traced runs' device seconds (:class:`TracedProgram`, by the cell's
source). When the same source runs again, its capture starts no trace: the functions whose
program was traced, with as many compiled executables as then, are known
(:func:`known_functions`), and the first call of any other function, or any compile, starts
the trace right there (the backend's ``trace_late``). A capture that never started one has the
kept ops rows, and its runs estimated from the kept run times (:func:`reused_rows`).
Programs with host callbacks are never reused (their counts per run come from a trace).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from xlanb.analysis import device_time
from xlanb.capture import device_trace
from xlanb.capture.backends.base import Capture, CaptureOptions, name_op_places, op_place
from xlanb.core.schema import make_frame
from xlanb.formats.jax_text import BACKEND

#: Cells whose traces are kept (the least recent forgotten first).
KEPT_CELLS = 64


@dataclass(eq=False)
class TracedProgram:
    """One program as the last trace of a cell saw it."""

    #: The jitted function that ran it, and how many executables it had compiled then.
    function: weakref.ref
    cache_size: int
    #: (program key, name, device seconds) of each traced run.
    runs: list[tuple[str, str, float]]
    #: Its ``ops`` rows (all its traced runs), and the graph its runs' spans name.
    ops: list[dict[str, Any]]
    graph: str | None


@dataclass(eq=False)
class KeptTraces:
    """Each cell's traced programs, by the cell's source, then by program key; and the
    ``ops`` frame a capture of the cell last made of them (:func:`reused_ops`)."""

    cells: OrderedDict[str, dict[str, TracedProgram]] = field(default_factory=OrderedDict)
    ops_frames: dict[str, KeptOps] = field(default_factory=dict)


@dataclass(eq=False)
class KeptOps:
    """The ``ops`` rows and frame made of `programs` (the same objects) for ops placed at
    `places` (:func:`~xlanb.capture.backends.base.op_place` of each located op)."""

    programs: tuple[TracedProgram, ...]
    places: tuple[tuple[str, str] | None, ...]
    rows: list[dict[str, Any]]
    frame: pd.DataFrame


def cache_size(function: Any) -> int | None:
    """How many executables a jitted function has compiled (None where JAX does not say)."""
    try:
        return int(function._cache_size())
    except Exception:
        return None


def known_functions(
    kept: KeptTraces, options: CaptureOptions, name_of: Callable[[Any], str]
) -> dict[Any, str] | None:
    """The functions (-> program key) whose runs the last trace of this cell holds and that
    have compiled nothing since; None when the capture must be traced as usual (reuse off, a
    window asked for, no source, nothing kept)."""
    if not (device_trace.REUSE_TRACES and options.source and options.reuse_trace):
        return None
    programs = kept.cells.get(options.source)
    if not programs:
        return None
    known: dict[Any, str] = {}
    for key, program in programs.items():
        function = program.function()
        if function is None or cache_size(function) != program.cache_size:
            continue
        if device_time.program_key(name_of(function)) == key:
            known[function] = key
    kept.cells.move_to_end(options.source)
    return known or None


def remember(
    kept: KeptTraces,
    options: CaptureOptions,
    capture: Capture,
    functions: list[Any],
    name_of: Callable[[Any], str],
    with_callbacks: set[str],
    compiled: set[str],
) -> None:
    """Keep the traced programs of a traced capture of a cell (`functions`: those it called;
    `with_callbacks`: program keys with host callbacks, never kept; `compiled`: those compiled
    in it, whose first run is a warm-up: the runs after it are kept, and a program traced
    once is not). Programs kept before and not traced now (run before a late trace began)
    stay."""
    if not (device_trace.REUSE_TRACES and options.source):
        return
    spans = capture.rows.get("spans", [])
    runs: dict[str, list[tuple[str, str, float]]] = {}
    for run in device_time.traced_runs(spans):
        runs.setdefault(run[0], []).append(run)
    graphs = device_time.traced_graphs(spans)
    ops: dict[str, list[dict[str, Any]]] = {}
    for op in capture.rows.get("ops", []):
        ops.setdefault(device_time.program_key(str(op["module"])), []).append(op)
    programs = kept.cells.pop(options.source, {})
    for function in functions:
        key = device_time.program_key(name_of(function))
        size = cache_size(function)
        steady = runs.get(key, [])[1:] if key in compiled else runs.get(key, [])
        if not steady and key not in runs and _still_stands(programs.get(key), function):
            continue  # not traced now (it ran before a late trace began): kept as it was
        if not steady or key in with_callbacks or size is None:
            programs.pop(key, None)
            continue
        try:
            reference = weakref.ref(function)
        except TypeError:
            continue
        programs[key] = TracedProgram(
            reference, size, steady, [dict(op) for op in ops.get(key, [])], graphs.get(key)
        )
    kept.ops_frames.pop(options.source, None)
    if programs:
        kept.cells[options.source] = programs
        while len(kept.cells) > KEPT_CELLS:
            kept.ops_frames.pop(kept.cells.popitem(last=False)[0], None)


def _still_stands(program: TracedProgram | None, function: Any) -> bool:
    """Whether `program`, kept from an earlier trace, is still `function`'s: the same
    function, having compiled nothing since."""
    return (
        program is not None
        and program.function() is function
        and cache_size(function) == program.cache_size
    )


def kept_programs(
    kept: KeptTraces, source: str, functions: list[Any], name_of: Callable[[Any], str]
) -> dict[str, TracedProgram]:
    """By program key, the programs the last trace of the cell `source` kept of `functions`
    (those a capture called) that still stand for them: what a capture that traced late (a
    cell run again traces from its first compile or new program on) takes the runs and ops
    of where its own trace holds none of them."""
    programs = kept.cells.get(source, {}) if device_trace.REUSE_TRACES and source else {}
    standing: dict[str, TracedProgram] = {}
    for function in dict.fromkeys(functions):
        key = device_time.program_key(name_of(function))
        program = programs.get(key)
        if program is not None and _still_stands(program, function):
            standing[key] = program
    return standing


def kept_ops(programs: list[TracedProgram], options: CaptureOptions) -> list[dict[str, Any]]:
    """Copies of the kept ``ops`` rows of `programs`, placed for the capture of `options`."""
    ops = [dict(op) for program in programs for op in program.ops]
    name_op_places(ops, options)
    return ops


def reused_ops(
    kept: KeptTraces, options: CaptureOptions, programs: list[TracedProgram]
) -> tuple[list[dict[str, Any]], pd.DataFrame]:
    """The ``ops`` rows of a capture that reuses `programs` (:func:`kept_ops`, most device
    time first) and their frame. A cell run again makes the same rows of the same programs:
    the frame made last time is kept per cell and taken while its programs and the ops'
    places stay the same."""
    places = tuple(
        op_place(op, options)
        for program in programs
        for op in program.ops
        if op.get("source_file") and op.get("source_line") is not None
    )
    last = kept.ops_frames.get(options.source)
    if (
        last is not None
        and len(last.programs) == len(programs)
        and all(old is new for old, new in zip(last.programs, programs, strict=True))
        and last.places == places
    ):
        return [dict(op) for op in last.rows], last.frame
    rows = sorted(kept_ops(programs, options), key=lambda op: -op["seconds"])
    frame = make_frame("ops", rows)
    kept.ops_frames[options.source] = KeptOps(
        tuple(programs), places, [dict(op) for op in rows], frame
    )
    return rows, frame


def kept_graphs(programs: list[TracedProgram]) -> dict[str, str]:
    """Program key -> the graph the kept runs of each of `programs` name (where one does)."""
    return {program.runs[0][0]: program.graph for program in programs if program.graph}


def reused_rows(
    capture: Capture,
    kept: KeptTraces,
    options: CaptureOptions,
    calls: list[tuple[str, float]],
    unsampled: list[tuple[str, int]],
    window: tuple[float, float],
    drained: bool,
) -> None:
    """``ops`` and estimated ``device`` spans of a capture that traced nothing, from the kept
    trace of its cell (`calls`, `unsampled`: as
    :func:`~xlanb.analysis.device_time.after_window_from_calls` takes them; `unsampled` names
    every program the capture ran)."""
    programs = kept.cells.get(options.source, {})
    used = [programs[key] for key in dict.fromkeys(key for key, _ in unsampled) if key in programs]
    if not used:
        return
    capture.rows["ops"], capture.frames["ops"] = reused_ops(kept, options, used)
    traced = [run for program in used for run in program.runs]
    graphs = kept_graphs(used)
    spans = capture.rows.setdefault("spans", [])
    spans += device_trace.reused_span(BACKEND, window[0])
    spans += device_time.after_window_from_calls(
        BACKEND,
        traced,
        calls,
        window[0],
        window[1],
        unsampled,
        graphs,
        drained,
        traced_here=False,
    )
