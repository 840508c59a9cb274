"""The ``breakdown`` frame: a Profile's wall time as exclusive buckets, from its ``spans``."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from xlanb.analysis.sync_cost import READ_WAITS, read_gaps
from xlanb.analysis.time_account import TimeAccount, account, merge_intervals
from xlanb.core.frame_memo import FrameMemo
from xlanb.core.profile import Profile
from xlanb.core.schema import SECOND_WINDOW, WHOLE_TRACE, make_frame

#: Span lanes that take part in the account, by bucket.
LANES = ("device", "compile", "transfer", "sync_wait")


@dataclass(frozen=True)
class _Lanes:
    """A spans frame's lanes as arrays, and the account's intervals read from them."""

    lanes: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    estimated: np.ndarray
    intervals: dict[str, np.ndarray]
    #: The accounts of windows asked for, by (start, end).
    accounts: dict[tuple[float, float], TimeAccount] = field(default_factory=dict)


#: The lanes of the last few spans frames read: the end of a cell reads the same spans for
#: the breakdown, the steps, the findings and the views.
_LANES: FrameMemo[_Lanes] = FrameMemo(8)


def _lanes(spans: pd.DataFrame) -> _Lanes:
    """The lanes of `spans`, read once per frame (kept until the frame changes length or is
    replaced: treat a Profile's frames as read-only)."""
    return _LANES.get((spans,), None, lambda: _read_lanes(spans))


def _read_lanes(spans: pd.DataFrame) -> _Lanes:
    lanes = spans["lane"].to_numpy(dtype=object)
    starts = spans["start"].to_numpy(dtype=float)
    ends = starts + spans["seconds"].to_numpy(dtype=float)
    estimated = spans["estimated"].to_numpy(dtype=object) == True  # noqa: E712 - nulls too
    masks = {lane: lanes == lane for lane in LANES}
    intervals = {lane: np.column_stack([starts[mask], ends[mask]]) for lane, mask in masks.items()}
    reads = masks["sync_wait"] & spans["name"].isin(READ_WAITS).to_numpy(dtype=bool)
    traced = masks["device"] & ~estimated
    if reads.any() and traced.any():
        gaps = read_gaps(
            np.column_stack([starts[traced], ends[traced]]),
            np.column_stack([starts[reads], ends[reads]]),
        )
        intervals["sync_wait"] = np.concatenate([intervals["sync_wait"], gaps])
    for array in (lanes, starts, ends, estimated, *intervals.values()):
        array.flags.writeable = False  # shared by every reader
    return _Lanes(lanes, starts, ends, estimated, intervals)


def lane_arrays(profile: Profile) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each span's lane, start, end and whether it is estimated (read-only arrays, read once
    per spans frame)."""
    found = _lanes(profile.spans)
    return found.lanes, found.starts, found.ends, found.estimated


def lane_intervals(profile: Profile) -> dict[str, np.ndarray]:
    """The ``(start, end)`` intervals of the account's lanes, as ``(n, 2)`` arrays (read-only):
    what :func:`xlanb.analysis.time_account.account` takes, for the cell or any window of it.
    ``sync_wait`` holds, besides the host's waits, the device's idle gaps after each read
    (:func:`xlanb.analysis.sync_cost.read_gaps`, from the trace's runs only)."""
    return dict(_lanes(profile.spans).intervals)


def read_seconds(profile: Profile) -> float:
    """Seconds the cell's reads cost, as the account counts them (its ``sync_wait``)."""
    result = time_account(profile)
    return result.sync_wait if result is not None else 0.0


def time_account(profile: Profile) -> TimeAccount | None:
    """The account of `profile`'s wall window, or None without a wall time or start."""
    if not profile.wall_seconds or not profile.started_at:
        return None
    if profile.spans.empty and profile.compiles.empty and profile.executions.empty:
        return None  # nothing ran on a runtime: an empty profile stays empty
    found = _lanes(profile.spans)
    window = (float(profile.started_at), float(profile.started_at + profile.wall_seconds))
    result = found.accounts.get(window)
    if result is None:
        intervals = found.intervals
        result = found.accounts[window] = account(
            *window,
            device=intervals["device"],
            compile=intervals["compile"],
            transfer=intervals["transfer"],
            sync_wait=intervals["sync_wait"],
        )
    return result


def breakdown_frame(profile: Profile) -> pd.DataFrame:
    """``backend, bucket, seconds, share, estimated``: one row per bucket; ``estimated`` is
    True where a bucket's spans came from xlanb's own timers rather than the runtime's trace
    or samples."""
    result = time_account(profile)
    if result is None:
        return make_frame("breakdown", [])
    backend = "+".join(profile.backends) or "-"
    lanes, _, _, estimated = lane_arrays(profile)
    rows = result.rows(backend)
    for row in rows:
        row["estimated"] = bool(estimated[lanes == row["bucket"]].any())
    return make_frame("breakdown", rows)


def traced_window(profile: Profile) -> tuple[float, float] | None:
    """(start, end) epoch seconds of the device trace's window when it closed before the
    cell ended (its ``trace`` span), else None."""
    return _window(profile)[0]


def traced_window_name(profile: Profile) -> str | None:
    """The name of the trace's window (``device trace: first 50 runs``) when it closed before
    the cell ended, else None."""
    return _window(profile)[1]


def later_windows(profile: Profile) -> list[tuple[str, float]]:
    """(name, seconds) of each second window's ``trace`` span (``device trace: then 1 run``:
    a program compiled after the first window closed), in their order."""
    return _window(profile)[2]


def _window(
    profile: Profile,
) -> tuple[tuple[float, float] | None, str | None, list[tuple[str, float]]]:
    """The trace's first window, its name and the later windows' (name, seconds), from the
    lanes read once per spans frame (the trace's few spans' names alone read from the
    frame)."""
    if profile.spans.empty:
        return None, None, []
    lanes, span_starts, span_ends, _estimated = lane_arrays(profile)
    trace = np.flatnonzero(lanes == "trace")
    column = profile.spans["name"]
    names = [str(column.iat[index]) for index in trace.tolist()]
    second = np.array([name.startswith(SECOND_WINDOW) for name in names], dtype=bool)
    later = [
        (name, float(span_ends[index] - span_starts[index]))
        for name, index, is_later in zip(names, trace.tolist(), second, strict=True)
        if is_later
    ]
    first = ~second & np.array([name != WHOLE_TRACE for name in names], dtype=bool)
    windows = trace[first]
    if not len(windows):
        return None, None, later
    starts, ends = span_starts[windows], span_ends[windows]
    return (float(starts.min()), float(ends.max())), names[int(np.flatnonzero(first)[0])], later


def untraced_programs(profile: Profile) -> list[tuple[str, int]]:
    """(program, runs) of each JAX program the profile ran (eager ops left out) that no
    ``device`` span holds, traced or estimated, where spans hold other programs' runs: its
    runs all came after the trace's window closed, and their time is in the python share."""
    executions, spans = profile.executions, profile.spans
    if executions.empty or spans.empty:
        return []
    device = lane_arrays(profile)[0] == "device"
    if not device.any():
        return []
    timed = set(spans["graph"].to_numpy(dtype=object)[device].tolist())
    eager = (
        executions["eager"].fillna(False).astype(bool).tolist()
        if "eager" in executions.columns
        else [False] * len(executions)
    )
    runs: dict[str, int] = {}
    for backend, graph, count, is_eager in zip(
        executions["backend"].tolist(),
        executions["graph"].tolist(),
        executions["count"].tolist(),
        eager,
        strict=True,
    ):
        if backend == "jax" and count > 0 and not is_eager and isinstance(graph, str):
            if graph not in timed:
                runs[graph] = runs.get(graph, 0) + int(count)
    return list(runs.items())


def host_activity(profile: Profile) -> tuple[float, float] | None:
    """(host busy seconds, of which hidden under device time): the main thread counts as busy
    whenever it was not waiting on the runtime (the trace's ``sync_wait`` spans). Known only
    where the runtime's trace gave the device runs (not for estimates): over the trace's
    window when it closed before the cell ended."""
    if not profile.wall_seconds or not profile.started_at or profile.spans.empty:
        return None
    lanes, starts, ends, estimated = lane_arrays(profile)
    device = (lanes == "device") & ~estimated
    if not device.any():
        return None
    wall_start = float(profile.started_at)
    wall_end = wall_start + float(profile.wall_seconds)
    if (window := traced_window(profile)) is not None:
        wall_start, wall_end = max(wall_start, window[0]), min(wall_end, window[1])
        if wall_end <= wall_start:
            return None
    waits = merge_intervals(
        np.column_stack([starts[lanes == "sync_wait"], ends[lanes == "sync_wait"]])
    )
    busy, cursor = [], wall_start
    for start, end in waits:
        if start > cursor:
            busy.append((cursor, min(start, wall_end)))
        cursor = max(cursor, end)
    if cursor < wall_end:
        busy.append((cursor, wall_end))
    result = account(
        wall_start,
        wall_end,
        device=np.column_stack([starts[device], ends[device]]),
        compile=[],
        transfer=[],
        sync_wait=[],
        host_busy=busy,
    )
    return float(result.host_busy_seconds or 0.0), float(result.host_hidden_seconds or 0.0)
