"""The device-time summary :func:`xlanb.analysis.device_time.summarize` made in pandas
(groupby, boolean masks, assign) before it was rewritten in numpy, kept as the reference the
new one's summaries are compared with (``tests/unit/test_device_time_reference.py``), and the
run count ``_runs_in`` took from it."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from xlanb.analysis.device_time import is_gpu, placed_kernels, program_events
from xlanb.analysis.sync_cost import READ_WAITS
from xlanb.analysis.trace_summary import (
    EXECUTE_SPAN,
    GPU_PLANE,
    MAIN_THREAD,
    MAX_OP_SPANS,
    NO_PROGRAM,
    RUN_GAP_NS,
    SHORTEST_WAIT_NS,
    WAIT_SPAN,
    Summary,
    _OpRow,
    _program,
    _Span,
)


def runs_in(events: Any) -> int:
    """``xlanb.capture.device_trace._runs_in`` as it was."""
    frame = getattr(events, "events", None)
    if frame is None or frame.empty or "run_id" not in frame:
        return 0
    frame = program_events(frame)
    ops = frame[frame["hlo_op"].notna()]
    unwaited = _unwaited_runs(ops, frame)
    if unwaited is not None:
        ops = ops[~unwaited]
    return int(ops["run_id"].nunique())


def summarize(
    events: Any, start: float, end: float, hlo_texts: Mapping[str | int, str] | None = None
) -> Summary:
    """The :class:`Summary` of the events inside ``[start, end]`` (epoch s), as the pandas
    ``summarize`` made it (never kept on `events`)."""
    frame = events.events
    start_ns, end_ns = start * 1e9, end * 1e9
    gpu = not frame.empty and is_gpu(frame)
    if gpu:
        frame = placed_kernels(program_events(frame), hlo_texts or {})
    inside = frame[
        (frame["start_ns"] + frame["duration_ns"] >= start_ns) & (frame["start_ns"] <= end_ns)
    ]
    ops = inside[inside["hlo_op"].notna()]
    executions = _execution_windows(inside)
    ops = ops[~_cut_runs(ops, inside, executions)]
    op_summary, spans, total = _op_summary(ops, executions)
    spans += _host_spans(inside)
    return Summary(op_summary, total, spans, gpu)


def _op_summary(
    ops: pd.DataFrame, executions: np.ndarray
) -> tuple[list[_OpRow], list[_Span], float]:
    """The ops' device time by module, program and op, the spans of the longest ops and of
    each program's runs, and the ops' total seconds (1 when none)."""
    op_summary: list[_OpRow] = []
    spans: list[_Span] = []
    total = 1.0
    if ops.empty:
        return op_summary, spans, total
    ops = ops.assign(
        seconds=_own_ns(ops) / 1e9,
        program=ops["program_id"].fillna(NO_PROGRAM).astype("int64"),
        execution=_executions(ops),
        run=_run_keys(ops, executions),
    )
    total = float(ops["seconds"].sum()) or 1.0
    ops = ops.assign(first_run_seconds=_first_run_seconds(ops))
    grouped = ops.groupby(["hlo_module", "program", "hlo_op"], sort=False).agg(
        count=("execution", "nunique"),
        seconds=("seconds", "sum"),
        first_run_seconds=("first_run_seconds", "sum"),
    )
    runs = ops.groupby(["hlo_module", "program"], sort=False)["run"].nunique().to_dict()
    op_summary = [
        (
            str(module),
            _program(program),
            str(op),
            int(count),
            float(seconds),
            float(first),
            int(runs[module, program]),  # a dict: a Series lookup per op is slow
        )
        for (module, program, op), count, seconds, first in zip(
            grouped.index,
            grouped["count"].tolist(),
            grouped["seconds"].tolist(),
            grouped["first_run_seconds"].tolist(),
            strict=True,
        )
    ]
    longest = ops.nlargest(MAX_OP_SPANS, "duration_ns")
    starts = longest["start_ns"].to_numpy(dtype=float)
    spans += [
        ("op", str(op), str(module), _program(program), begin, begin + duration)
        for op, module, program, begin, duration in zip(
            longest["hlo_op"].tolist(),
            longest["hlo_module"].tolist(),
            longest["program"].tolist(),
            starts.tolist(),
            longest["duration_ns"].to_numpy(dtype=float).tolist(),
            strict=True,
        )
    ]
    for (module, program), program_ops in ops.groupby(["hlo_module", "program"], sort=False):
        for run_start, run_end in _runs(program_ops, executions):
            spans.append(
                ("device", str(module), str(module), _program(program), run_start, run_end)
            )
    return op_summary, spans, total


def _run_keys(ops: pd.DataFrame, executions: np.ndarray) -> np.ndarray:
    """The program run each op event belongs to, as :func:`_runs` tells them: JAX's
    ``run_id``, else the latest runtime run launched before it, else the events of one
    program merged across gaps shorter than :data:`RUN_GAP_NS` (numbered in time order)."""
    if ops["run_id"].notna().all():
        return ops["run_id"].to_numpy(dtype=float)
    starts = ops["start_ns"].to_numpy(dtype=float)
    if len(executions):
        return np.maximum(np.searchsorted(executions[:, 0], starts, side="right") - 1, 0).astype(
            float
        )
    keys = np.zeros(len(ops))
    ends = starts + ops["duration_ns"].to_numpy(dtype=float)
    for positions in ops.groupby(
        ["hlo_module", "program_id"], sort=False, dropna=False
    ).indices.values():
        order = positions[np.argsort(starts[positions], kind="stable")]
        reach = np.maximum.accumulate(ends[order])
        gaps = starts[order][1:] - reach[:-1] > RUN_GAP_NS
        keys[order] = np.r_[0, np.cumsum(gaps)]
    return keys


def _first_run_seconds(ops: pd.DataFrame) -> np.ndarray:
    """Each op event's ``seconds`` where it belongs to its program's first traced run (the one
    holding the program's earliest event), else 0."""
    programs = ops.groupby(["hlo_module", "program"], sort=False).ngroup().to_numpy()
    runs = ops["run"].to_numpy(dtype=float)
    order = np.argsort(ops["start_ns"].to_numpy(dtype=float), kind="stable")
    # the earliest event of each program: its first occurrence in time order
    _, first = np.unique(programs[order], return_index=True)
    first_run = np.empty(programs.max() + 1)
    first_run[programs[order][first]] = runs[order][first]
    in_first = runs == first_run[programs]
    return np.where(in_first, ops["seconds"].to_numpy(dtype=float), 0.0)


def _host_spans(inside: pd.DataFrame) -> list[_Span]:
    """The spans of the main thread's transfers and sync waits."""
    # Only the main (Python) thread's waits and copies hold up the user's code: a runtime
    # thread waiting on donation holds while Python traces the next step does not.
    hosts = inside[
        inside["hlo_op"].isna()
        & inside["kind"].isin(["transfer", "sync_wait"])
        & inside["line"].astype(str).str.fullmatch(MAIN_THREAD)
        # a wait of under SHORTEST_WAIT_NS holds nothing up; a read's is kept (its idle gap)
        & (
            (inside["duration_ns"] >= SHORTEST_WAIT_NS)
            | (inside["kind"] == "transfer")
            | inside["name"].isin(READ_WAITS)
        )
    ]
    host_starts = hosts["start_ns"].to_numpy(dtype=float)
    return [
        (str(kind), str(name), "", None, begin, begin + duration)
        for kind, name, begin, duration in zip(
            hosts["kind"].tolist(),
            hosts["name"].tolist(),
            host_starts.tolist(),
            hosts["duration_ns"].to_numpy(dtype=float).tolist(),
            strict=True,
        )
    ]


def _execution_windows(events: pd.DataFrame) -> np.ndarray:
    """(n, 2) [launch ns, completion ns] of the runtime's program runs in the trace, sorted by
    launch. On each client thread that waits for its runs, a run is launched by the first
    launch span or thunk after the previous run's wait, and completes when its own wait ends
    (NaN: the trace ended before it)."""
    runner_lines = set(events.loc[events["name"] == WAIT_SPAN, "line"])
    on_runners = events[
        events["line"].isin(runner_lines)
        & (events["hlo_op"].notna() | events["name"].isin([EXECUTE_SPAN, WAIT_SPAN]))
    ]
    windows: list[np.ndarray] = []
    for _, line in on_runners.groupby("line", sort=False):
        line = line.sort_values("start_ns", kind="stable")
        starts = line["start_ns"].to_numpy(dtype=float)
        waits = (line["name"] == WAIT_SPAN).to_numpy(dtype=bool)
        # each event's run on this line: the number of waits that ended a run before it
        run = np.cumsum(waits) - waits
        first = np.flatnonzero(np.r_[True, run[1:] != run[:-1]])
        done = np.full(len(first), np.nan)
        done[run[waits]] = (starts + line["duration_ns"].to_numpy(dtype=float))[waits]
        windows.append(np.column_stack([starts[first], done]))
    if not windows:
        return np.empty((0, 2))
    merged = np.concatenate(windows)
    return merged[np.argsort(merged[:, 0], kind="stable")]


def _cut_runs(ops: pd.DataFrame, events: pd.DataFrame, executions: np.ndarray) -> np.ndarray:
    """Which of the op events `ops` belong to a run the trace holds only in part: one still
    going when the profiler stopped (a window closes while the next queued run has started).
    On XLA:CPU every run ends in a wait span, even a 4-float add's (measured on JAX 0.6 and
    0.10), so a run whose wait is not in the trace was cut: with JAX's ``run_id``, a run no
    wait names; else a run with no completion, or ops that start after the completion of the
    latest run launched before them (their run was launched on a thread whose wait the trace
    does not hold). Counted, its first thunks made one op's count exceed the runs', and its
    short span lowered the mean that the runs after the window are estimated from."""
    unwaited = _unwaited_runs(ops, events)
    if unwaited is not None:
        return unwaited
    if not len(executions) or ops.empty or ops["run_id"].notna().all():
        # no waits, or run ids that no wait carries: nothing tells a cut run
        return np.zeros(len(ops), dtype=bool)
    starts = ops["start_ns"].to_numpy(dtype=float)
    run = np.maximum(np.searchsorted(executions[:, 0], starts, side="right") - 1, 0)
    done = executions[run, 1]
    return np.isnan(done) | (starts > done)


def _unwaited_runs(ops: pd.DataFrame, events: pd.DataFrame) -> np.ndarray | None:
    """Where every op event of `ops` has JAX's ``run_id`` and the waits of `events` carry it
    too: which op events belong to a run that no wait names (cut, see :func:`_cut_runs`);
    else None."""
    if ops.empty or not ops["run_id"].notna().all():
        return None
    waited = events.loc[events["name"] == WAIT_SPAN, "run_id"].dropna()
    if waited.empty:
        return None
    return ~ops["run_id"].isin(set(waited)).to_numpy(dtype=bool)


def _runs(ops: pd.DataFrame, executions: np.ndarray) -> list[tuple[float, float]]:
    """(start_ns, end_ns) of each run of one program: by ``run_id`` where the runtime sets it
    (JAX 0.10), else by the runtime's runs (torch_xla, jaxlib 0.6: each op belongs to the latest
    run launched before it, which spans from its launch to its completion), else (a trace
    without either) the op events merged across gaps shorter than :data:`RUN_GAP_NS`."""
    starts = ops["start_ns"].to_numpy(dtype=float)
    ends = starts + ops["duration_ns"].to_numpy(dtype=float)
    if ops["run_id"].notna().all():
        return _group_extents(ops["run_id"].to_numpy(dtype=np.int64), starts, ends)
    if len(executions):
        # an op belongs to the latest run launched before it started (a run's last thunks
        # may finish after its wait span, on the worker pool)
        launches, completions = executions[:, 0], executions[:, 1]
        window = np.maximum(np.searchsorted(launches, starts, side="right") - 1, 0)
        keys = np.unique(window)
        extents = _group_extents(window, starts, ends)
        return [
            (min(start, launches[key]), end if math.isnan(done) else max(end, done))
            for key, (start, end), done in zip(keys, extents, completions[keys], strict=True)
        ]
    runs: list[tuple[float, float]] = []
    for start, end in sorted(zip(starts, ends, strict=True)):
        if runs and start - runs[-1][1] <= RUN_GAP_NS:
            runs[-1] = (runs[-1][0], max(runs[-1][1], end))
        else:
            runs.append((start, end))
    return runs


def _group_extents(
    keys: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> list[tuple[float, float]]:
    """(earliest start, latest end) of the events of each key, in key order."""
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    first = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    run_starts = np.minimum.reduceat(starts[order], first)
    run_ends = np.maximum.reduceat(ends[order], first)
    return list(zip(run_starts.tolist(), run_ends.tolist(), strict=True))


def _executions(ops: pd.DataFrame) -> np.ndarray:
    """What counts as one execution of an op event: each thunk event, but on XLA:GPU each run
    (a library call launches several kernels, a memset and a gemm, in one execution)."""
    key = np.arange(len(ops), dtype=np.int64)
    on_gpu = ops["plane"].astype(str).str.startswith(GPU_PLANE).to_numpy(dtype=bool)
    runs = ops["run_id"].astype("Int64")
    with_run = on_gpu & runs.notna().to_numpy(dtype=bool)
    key[with_run] = -1 - runs[with_run].to_numpy(dtype=np.int64)
    return key


def _own_ns(ops: pd.DataFrame) -> np.ndarray:
    """Each op event's own time: a GPU kernel's duration (kernels on a stream do not nest,
    though one may start before the last one ended), a thunk's :func:`_exclusive_ns`."""
    own = _exclusive_ns(ops)
    on_gpu = ops["plane"].astype(str).str.startswith(GPU_PLANE).to_numpy(dtype=bool)
    own[on_gpu] = ops["duration_ns"].to_numpy(dtype=float)[on_gpu]
    return own


def _exclusive_ns(ops: pd.DataFrame) -> np.ndarray:
    """Each op event's own time: its duration less that of the op events nested in it on its
    line (a ``while`` or ``call`` thunk holds the thunks of the computation it runs; summed
    whole, a loop and its body each took the loop's time). Starts count from the first op's
    in whole ns (epoch ns as floats lose the last 8 bits); an event starting under a ns before
    the last one ended follows it (starts are whole ns, durations to the ps)."""
    own = ops["duration_ns"].to_numpy(dtype=float).copy()
    exact = ops["start_ns"].to_numpy(dtype=np.int64)
    starts = (exact - (exact.min() if len(exact) else 0)).astype(float)
    for positions in ops.groupby(["plane", "line"], sort=False).indices.values():
        # outer events first where two start together
        order = positions[np.lexsort((-own[positions], starts[positions]))]
        open_ends: list[tuple[float, int]] = []  # the events enclosing the next one
        for position in order:
            start, end = starts[position], starts[position] + own[position]
            while open_ends and open_ends[-1][0] <= start + 1.0:
                open_ends.pop()
            if open_ends:
                own[open_ends[-1][1]] -= end - start
            open_ends.append((end, position))
    return np.maximum(own, 0.0)
