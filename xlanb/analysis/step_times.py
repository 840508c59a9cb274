"""Per-step time accounts: where a cell runs a loop, each step's wall time as the same
exclusive buckets as the cell's, so warm-up steps (compiling) and steady steps are told apart.

Steps are found from the runs of the cell's step program: of the programs (graphs) that ran at
least :data:`MIN_STEPS` times, the one with the most device time, JAX's eager ops left out
where another program qualifies. Step *i* ends when run *i* of it
ends and starts when the previous run ended (step 0: when the cell started), so a step holds
the Python, tracing and compiling that led to its run. A step is ``warm-up`` when a compile
finished inside it and its time holds compile time (its run is then a newly compiled
program's); the others are ``steady``. Under async dispatch a compile can start while earlier
queued runs still execute: its time shows in those steps' buckets where the device was idle,
and a step whose run hid the whole compile is not warm-up.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from xlanb.analysis.breakdown import lane_arrays, lane_intervals
from xlanb.analysis.time_account import accounts_between
from xlanb.core.profile import Profile
from xlanb.core.schema import make_frame

MIN_STEPS = 3


#: Seconds below which a step's compile share is the clocks' rounding, not compile time
#: (epoch seconds as floats are exact to 2.4e-7 s).
CLOCK_RESOLUTION = 1e-6


def step_frame(profile: Profile) -> pd.DataFrame:
    """``backend, step, start, seconds, python, compile, device, transfer, sync_wait, phase,
    estimated``: one row per step of the cell's loop (empty without one); a step whose run
    came after the device trace's window is ``estimated``."""
    spans = profile.spans
    if spans.empty or not profile.wall_seconds:
        return make_frame("step_times", [])
    lanes, run_starts, run_ends, estimated_runs = lane_arrays(profile)
    graphs = spans["graph"]
    device = np.flatnonzero((lanes == "device") & graphs.notna().to_numpy(dtype=bool))
    if not len(device):
        return make_frame("step_times", [])
    device_graphs = graphs.to_numpy(dtype=object)[device]
    seconds = spans["seconds"].to_numpy(dtype=float)[device]
    graph = _step_graph(device_graphs, seconds, _eager_graphs(profile))
    if graph is None:
        return make_frame("step_times", [])
    step_runs = device[device_graphs == graph]
    step_runs = step_runs[np.argsort(run_starts[step_runs], kind="stable")]
    ends = run_ends[step_runs]
    estimated = estimated_runs[step_runs]
    starts = np.concatenate([[min(float(profile.started_at), ends[0])], ends[:-1]])
    intervals = lane_intervals(profile)
    backend = str(spans["backend"].iloc[int(step_runs[0])])
    # one sweep for all steps (windows end where runs end; never backwards)
    bounds = np.maximum.accumulate(np.concatenate([starts[:1], ends]))
    starts, ends = bounds[:-1], bounds[1:]
    rows = []
    for index, (start, end, buckets, guessed) in enumerate(
        zip(starts, ends, accounts_between(bounds, **intervals), estimated.tolist(), strict=True)
    ):
        rows.append(
            {
                "backend": backend,
                "step": index,
                "graph": str(graph),
                "start": float(start) - float(profile.started_at),
                "seconds": float(end - start),
                "python": buckets["python"],
                "compile": buckets["compile"],
                "device": buckets["device"],
                "transfer": buckets["transfer"],
                "sync_wait": buckets["sync_wait"],
                "estimated": guessed,
            }
        )
    # warm-up: the steps a compile finished in (step 0 also holds what finished before it)
    # whose own time holds compile time: one hidden under queued runs is a later call's
    compile_ends = intervals["compile"][:, 1]
    compiled = np.zeros(len(rows), dtype=bool)
    if len(compile_ends) and rows:
        inside = np.searchsorted(bounds, compile_ends, side="left") - 1
        compiled[np.clip(inside[inside < len(rows)], 0, None)] = True
    for row, warm in zip(rows, compiled, strict=True):
        row["phase"] = "warm-up" if warm and row["compile"] > CLOCK_RESOLUTION else "steady"
    return make_frame("step_times", rows)


def _step_graph(graphs: np.ndarray, seconds: np.ndarray, eager: set[str]) -> object | None:
    """The step program of the device runs of `graphs` (each run's program, with its
    `seconds`): of the programs run at least :data:`MIN_STEPS` times, the one with the most
    device time, `eager` ones (JAX's ops outside jit, which make a step's inputs and run as
    often as it, or more) left out where another qualifies; the first by name on a tie. None
    without one."""
    codes, names = pd.factorize(graphs, sort=True)
    runs = np.bincount(codes, minlength=len(names))
    seconds = np.bincount(codes, weights=seconds, minlength=len(names))
    often = runs >= MIN_STEPS
    if not often.any():
        return None
    stepped = often & ~np.isin(names.astype(str), list(eager))
    chosen = stepped if stepped.any() else often
    return names[int(np.argmax(np.where(chosen, seconds, -np.inf)))]


def _eager_graphs(profile: Profile) -> set[str]:
    """The graphs of the single-op programs JAX ran for code outside ``jit``."""
    executions = profile.executions
    if executions.empty or "eager" not in executions:
        return set()
    eager = executions["eager"].fillna(False).to_numpy(dtype=bool)
    return set(executions["graph"].astype(str).to_numpy()[eager])
