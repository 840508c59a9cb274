"""The ``breakdown`` frame: a Profile's wall time as exclusive buckets, from its ``spans``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from xlanb.analysis.sync_cost import READ_WAITS, read_gaps
from xlanb.analysis.time_account import TimeAccount, account, merge_intervals
from xlanb.core.profile import Profile
from xlanb.core.schema import WHOLE_TRACE, make_frame

#: Span lanes that take part in the account, by bucket.
LANES = ("device", "compile", "transfer", "sync_wait")


def _lane_arrays(profile: Profile) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    spans = profile.spans
    lanes = spans["lane"].to_numpy(dtype=object)
    starts = spans["start"].to_numpy(dtype=float)
    ends = starts + spans["seconds"].to_numpy(dtype=float)
    estimated = spans["estimated"].to_numpy(dtype=object) == True  # noqa: E712 - nulls too
    return lanes, starts, ends, estimated


def lane_intervals(profile: Profile) -> dict[str, np.ndarray]:
    """The ``(start, end)`` intervals of the account's lanes, as ``(n, 2)`` arrays: what
    :func:`xlanb.analysis.time_account.account` takes, for the cell or any window of it.
    ``sync_wait`` holds, besides the host's waits, the device's idle gaps after each read
    (:func:`xlanb.analysis.sync_cost.read_gaps`, from the trace's runs only)."""
    lanes, starts, ends, estimated = _lane_arrays(profile)
    result = {lane: np.column_stack([starts[lanes == lane], ends[lanes == lane]]) for lane in LANES}
    reads = (lanes == "sync_wait") & profile.spans["name"].isin(READ_WAITS).to_numpy(dtype=bool)
    traced = (lanes == "device") & ~estimated
    if reads.any() and traced.any():
        gaps = read_gaps(
            np.column_stack([starts[traced], ends[traced]]),
            np.column_stack([starts[reads], ends[reads]]),
        )
        result["sync_wait"] = np.concatenate([result["sync_wait"], gaps])
    return result


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
    return account(
        profile.started_at, profile.started_at + profile.wall_seconds, **lane_intervals(profile)
    )


def breakdown_frame(profile: Profile) -> pd.DataFrame:
    """``backend, bucket, seconds, share, estimated``: one row per bucket; ``estimated`` is
    True where a bucket's spans came from xlanb's own timers rather than the runtime's trace
    or samples."""
    result = time_account(profile)
    if result is None:
        return make_frame("breakdown", [])
    backend = "+".join(profile.backends) or "-"
    lanes, _, _, estimated = _lane_arrays(profile)
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


def _window(profile: Profile) -> tuple[tuple[float, float] | None, str | None]:
    """The trace window and its name."""
    return _find_window(profile.spans)


def _find_window(spans: pd.DataFrame) -> tuple[tuple[float, float] | None, str | None]:
    if spans.empty:
        return None, None
    lanes = spans["lane"].to_numpy(dtype=object)
    trace = np.flatnonzero(lanes == "trace")
    names = spans["name"].to_numpy(dtype=object)[trace]
    windows = trace[names != WHOLE_TRACE]
    if not len(windows):
        return None, None
    starts = spans["start"].to_numpy(dtype=float)[windows]
    ends = starts + spans["seconds"].to_numpy(dtype=float)[windows]
    return (float(starts.min()), float(ends.max())), str(names[names != WHOLE_TRACE][0])


def host_activity(profile: Profile) -> tuple[float, float] | None:
    """(host busy seconds, of which hidden under device time): the main thread counts as busy
    whenever it was not waiting on the runtime (the trace's ``sync_wait`` spans). Known only
    where the runtime's trace gave the device runs (not for estimates): over the trace's
    window when it closed before the cell ended."""
    if not profile.wall_seconds or not profile.started_at or profile.spans.empty:
        return None
    lanes, starts, ends, estimated = _lane_arrays(profile)
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
