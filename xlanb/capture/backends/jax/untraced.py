"""The runs a capture's device traces did not hold: estimated ``device`` spans for them, from
the dispatch counter's calls by program and launch time, and the note naming the programs
with no device time at all."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

import xlanb.capture.backends.jax.hooks as hooks
import xlanb.capture.backends.jax.reuse as reuse
from xlanb.analysis import device_time
from xlanb.capture import device_trace
from xlanb.capture.backends.jax.state import Taken
from xlanb.formats import jax_text

NAME = jax_text.BACKEND


def estimated_runs(
    taken: Taken,
    spans: list[dict[str, Any]],
    traces: list[tuple[device_trace.Trace, list[tuple[str, str, float]]]],
    window: tuple[float, float],
    drained: bool,
    kept: list[reuse.TracedProgram],
    compiled: set[str],
) -> list[dict[str, Any]]:
    """Estimated ``device`` spans for the runs the trace did not hold
    (:func:`xlanb.analysis.device_time.after_window_from_calls`), from the capture's calls by
    program and launch time (the dispatch samples, and the calls past their cap): those
    before a trace that started late (a cell run again traces from its first compile or new
    program on: those runs are taken to end before it, shortened alike where they would not)
    and those after its window, each for its program's mean traced run (less the warm-up
    first run of one compiled in the capture), else the mean of those its last trace `kept`."""
    calls, unsampled = calls_by_program(taken)
    kept_runs = [run for program in kept for run in program.runs]
    graphs = {**reuse.kept_graphs(kept), **device_time.traced_graphs(spans)}
    first = traces[0][0]
    late = first.started_at > window[0]
    segments = [_calls_before(calls, first)] if late else [[]]
    for index in range(len(traces)):
        taken_calls = sum(map(len, segments))
        following = traces[index + 1][0] if index + 1 < len(traces) else None
        segments.append(_calls_before(calls[taken_calls:], following, taken_calls))
    counts = [Counter[str]()] + [Counter(run[0] for run in runs) for _, runs in traces]
    unsampled_calls = Counter[str]()
    for key, count in unsampled:
        unsampled_calls[key] += count
    before, *segments = device_time.without_queued_runs(segments, counts, unsampled_calls)
    estimated: list[dict[str, Any]] = []
    if late:
        estimated += device_time.after_window_from_calls(
            NAME, device_time.traced_runs(spans), before, window[0], first.started_at, (),
            graphs, drained=True, traced_here=False, earlier=kept_runs,
        )  # fmt: skip
    for index, ((trace, runs), segment) in enumerate(zip(traces, segments, strict=True)):
        last = index == len(traces) - 1
        end = window[1] if last else traces[index + 1][0].started_at
        if trace.stopped_at is None:
            continue
        new = compiled - {run[0] for _, earlier_runs in traces[:index] for run in earlier_runs}
        others = [run for other, other_runs in traces if other is not trace for run in other_runs]
        estimated += device_time.after_window_from_calls(
            NAME, runs, segment, trace.stopped_at, end, unsampled if last else (), graphs,
            drained or not last, earlier=others + kept_runs, compiled=new,
        )  # fmt: skip
    return estimated


def _calls_before(
    calls: list[tuple[str, float]], trace: device_trace.Trace | None, taken_calls: int = 0
) -> list[tuple[str, float]]:
    """The first of `calls` (the capture's from its `taken_calls`-th on) launched before
    `trace` started (all of them where there is none): those before the call it started
    inside, where it started at that call's compile, else by launch time."""
    if trace is None:
        return calls
    if trace.first_call is not None:
        return calls[: max(trace.first_call - taken_calls, 0)]
    return [call for call in calls if call[1] < trace.started_at]


def programs_note(taken: Taken, spans: list[dict[str, Any]], traced_again: bool) -> list[str]:
    """A note naming the programs the capture ran that have no device time (traced or
    estimated): their runs all came after the trace's window closed (`traced_again`: the
    cell run again traces them, :mod:`.reuse`)."""
    timed = {
        device_time.program_key(str(span["name"])) for span in spans if span["lane"] == "device"
    }
    runs: Counter[str] = Counter()
    for call in taken.calls:
        name, eager = hooks.function_name(call.function)
        if not eager:  # an eager op's few µs are not worth a note
            runs[name] += call.count
    missing = [
        f"{name} ({count} {'run' if count == 1 else 'runs'})"
        for name, count in runs.items()
        if count and device_time.program_key(name) not in timed
    ]
    if not missing:
        return []
    again = "; the cell run again traces them from their first run" if traced_again else ""
    return [
        f"not traced: {', '.join(missing)}, first run after the trace's window closed: their "
        f"device time is not in the account (its python share holds it){again}"
    ]


def calls_by_program(taken: Taken) -> tuple[list[tuple[str, float]], list[tuple[str, int]]]:
    """(program key, launch epoch s) of each sampled call, in call order, and (program key,
    calls past the samples' cap) of every function called."""
    wall_offset = time.time() - time.perf_counter()
    programs = {
        function: device_time.program_key(hooks.function_name(function)[0])
        for function in {sample.function for sample in taken.samples}
    }
    calls = [(programs[sample.function], sample.started + wall_offset) for sample in taken.samples]
    sampled = Counter(sample.function for sample in taken.samples)
    unsampled = [
        (
            device_time.program_key(hooks.function_name(call.function)[0]),
            call.count - sampled[call.function],
        )
        for call in taken.calls
    ]
    return calls, unsampled
