"""A cell's wall time split into exclusive buckets.

Pure functions over intervals ``(start, end)`` given in seconds on one clock (typically
``time.time_ns() / 1e9`` on the Python side and ``start_ns / 1e9`` for trace events, which
share the UNIX epoch; see ``xlanb.formats.xspace``); numpy only, nothing from ``xlanb``.
Every instant of the wall window ``[wall_start, wall_end]`` goes to exactly one bucket:

1. ``device``    - some program is running (union of the device intervals);
2. ``compile``   - of the remaining time, any compile interval is open;
3. ``transfer``  - then any host<->device transfer;
4. ``sync_wait`` - then the host waiting on the device (a sync / ``block_until_ready``);
5. ``other``     - then xlanb's own overhead, only when ``other`` intervals are given;
6. ``python``    - the rest: the user's Python, tracing, lazy graph building.
The buckets sum to the wall time; times are shifted to the window start before any difference.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from xlanb.core.units import percent

__all__ = [
    "BUCKETS",
    "TimeAccount",
    "account",
    "format_duration",
    "intervals_seconds",
    "merge_intervals",
    "percent",
    "steps_from_marks",
]

#: Bucket order of :meth:`TimeAccount.rows` (fixed, for stable tables and stacked bars).
BUCKETS: tuple[str, ...] = ("python", "compile", "device", "transfer", "sync_wait", "other")

# Priority of the interval kinds in the sweep (first wins); "python" is the remainder.
_PRIORITY: tuple[str, ...] = ("device", "compile", "transfer", "sync_wait", "other")

Interval = tuple[float, float]


def _as_array(intervals: Iterable[Sequence[float]] | np.ndarray | None) -> np.ndarray:
    """``intervals`` as a float64 array of shape (n, 2) without NaN or reversed rows."""
    if intervals is None:
        return np.empty((0, 2))
    if not isinstance(intervals, np.ndarray):
        intervals = list(intervals)
        if not intervals:
            return np.empty((0, 2))
    arr = np.asarray(intervals, dtype=np.float64)
    if arr.size == 0:
        return np.empty((0, 2))
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(f"intervals must be (start, end) pairs, got shape {arr.shape}")
    keep = (arr[:, 1] > arr[:, 0]) & np.isfinite(arr).all(axis=1)
    return arr[keep]


def _clip(arr: np.ndarray, lo: float, hi: float) -> np.ndarray:
    arr = np.clip(arr, lo, hi)
    return arr[arr[:, 1] > arr[:, 0]]


def merge_intervals(intervals: Iterable[Sequence[float]] | np.ndarray) -> list[Interval]:
    """The union of ``intervals`` as sorted, disjoint ``(start, end)`` pairs.

    Touching intervals (``a.end == b.start``) are merged; empty, reversed and NaN intervals are
    dropped. O(n log n).
    """
    arr = _as_array(intervals)
    if len(arr) == 0:
        return []
    arr = arr[np.argsort(arr[:, 0], kind="stable")]
    starts, ends = arr[:, 0], np.maximum.accumulate(arr[:, 1])
    # A new run begins where the start is past every end seen before it.
    new_run = np.empty(len(arr), dtype=bool)
    new_run[0] = True
    new_run[1:] = starts[1:] > ends[:-1]
    first = np.flatnonzero(new_run)
    last = np.append(first[1:] - 1, len(arr) - 1)
    return [(float(s), float(e)) for s, e in zip(starts[first], ends[last], strict=True)]


def intervals_seconds(
    intervals: Iterable[Sequence[float]] | np.ndarray,
    start: float | None = None,
    end: float | None = None,
) -> float:
    """Length of the union of ``intervals``, optionally clipped to ``[start, end]``."""
    arr = _as_array(intervals)
    if start is not None or end is not None:
        arr = _clip(arr, -np.inf if start is None else start, np.inf if end is None else end)
    return float(sum(e - s for s, e in merge_intervals(arr)))


def steps_from_marks(marks: Iterable[float], wall_start: float, wall_end: float) -> list[Interval]:
    """Step intervals from step-end marks (e.g. the times of ``torch_xla.sync()`` calls).

    Step ``i`` runs from the previous mark (or ``wall_start`` for the first) to mark ``i``.
    Marks outside ``[wall_start, wall_end]`` are ignored, duplicates collapse, and the tail after
    the last mark (code after the loop) is not a step. No marks -> no steps.
    """
    if wall_end < wall_start:
        raise ValueError(f"wall_end {wall_end} is before wall_start {wall_start}")
    inside = sorted({float(m) for m in marks if wall_start < m <= wall_end})
    bounds = [float(wall_start), *inside]
    return list(zip(bounds[:-1], bounds[1:], strict=True))


def format_duration(seconds: float) -> str:
    """``seconds`` with a unit chosen for the value: ``"850 µs"``, ``"41.0 ms"``, ``"2.81 s"``."""
    value, unit = seconds, "s"
    magnitude = abs(seconds)
    # Pick the unit after rounding: 0.99996 s is "1.00 s", not "1000 ms".
    if magnitude < 999.5e-6:
        value, unit = seconds * 1e6, "µs"
    elif magnitude < 0.9995:
        value, unit = seconds * 1e3, "ms"
    # Three significant digits.
    if abs(value) >= 99.95:
        text = f"{value:.0f}"
    elif abs(value) >= 9.995:
        text = f"{value:.1f}"
    else:
        text = f"{value:.2f}"
    return f"{text} {unit}"


@dataclass(frozen=True)
class TimeAccount:
    """Exclusive buckets of one wall window, in seconds (see the module docstring).

    ``python + compile + device + transfer + sync_wait + other == wall_seconds``.
    ``host_busy_seconds`` / ``host_hidden_seconds`` are ``None`` unless ``host_busy`` intervals
    were given; hidden = host busy while some device interval is open (overlapped work).
    """

    wall_start: float
    wall_end: float
    python: float
    compile: float
    device: float
    transfer: float
    sync_wait: float
    other: float = 0.0
    host_busy_seconds: float | None = None
    host_hidden_seconds: float | None = None

    @property
    def wall_seconds(self) -> float:
        return self.wall_end - self.wall_start

    def buckets(self) -> dict[str, float]:
        """Seconds per bucket, in :data:`BUCKETS` order."""
        return {name: getattr(self, name) for name in BUCKETS}

    def share(self, bucket: str) -> float:
        """Share of the wall time (0..1) of ``bucket``; 0 for an empty window."""
        wall = self.wall_seconds
        return getattr(self, bucket) / wall if wall > 0 else 0.0

    def rows(self, backend: str) -> list[dict[str, object]]:
        """One dict per bucket (keys ``backend, bucket, seconds, share``), in BUCKETS order."""
        return [
            {"backend": backend, "bucket": name, "seconds": seconds, "share": self.share(name)}
            for name, seconds in self.buckets().items()
        ]

    def header(self) -> str:
        """One line, largest bucket first, zero buckets omitted, e.g.
        ``wall 2.81 s = compile 2.11 s (75%) · device 410 ms (15%) · python 220 ms (8%)``."""
        parts = sorted(
            ((s, n) for n, s in self.buckets().items() if s > 0), key=lambda item: -item[0]
        )  # stable: ties keep BUCKETS order
        body = " · ".join(
            f"{name} {format_duration(seconds)} ({percent(self.share(name))})"
            for seconds, name in parts
        )
        head = f"wall {format_duration(self.wall_seconds)}"
        return f"{head} = {body}" if body else head


def account(
    wall_start: float,
    wall_end: float,
    *,
    device: Iterable[Sequence[float]] | np.ndarray,
    compile: Iterable[Sequence[float]] | np.ndarray,
    transfer: Iterable[Sequence[float]] | np.ndarray,
    sync_wait: Iterable[Sequence[float]] | np.ndarray,
    host_busy: Iterable[Sequence[float]] | np.ndarray | None = None,
    other: Iterable[Sequence[float]] | np.ndarray | None = None,
) -> TimeAccount:
    """Split ``[wall_start, wall_end]`` into exclusive buckets.

    Each keyword is a sequence of ``(start, end)`` intervals (or an ``(n, 2)`` array) on the
    same clock as the wall window. Priority: device > compile > transfer > sync_wait > other >
    python (remainder). ``host_busy`` does not take part in the buckets: it yields
    ``host_busy_seconds`` (its union within the window) and ``host_hidden_seconds`` (the part of
    that union overlapping the device union).

    Intervals may overlap and extend outside the window (clipped); empty, reversed or NaN ones
    are ignored. One sort of all boundaries, then a vectorised sweep: O(n log n).
    """
    wall_start, wall_end = float(wall_start), float(wall_end)
    if not (np.isfinite(wall_start) and np.isfinite(wall_end)):
        raise ValueError(f"wall window must be finite, got [{wall_start}, {wall_end}]")
    if wall_end < wall_start:
        raise ValueError(f"wall_end {wall_end} is before wall_start {wall_start}")
    wall = wall_end - wall_start
    kinds = {
        "device": device,
        "compile": compile,
        "transfer": transfer,
        "sync_wait": sync_wait,
        "other": other,
    }
    # Track host_busy as one more column; it never wins a bucket.
    columns = [*_PRIORITY, "host_busy"]
    arrays = [_as_array(kinds[name]) for name in _PRIORITY] + [_as_array(host_busy)]
    # Shift to the window start first: later differences are then exact.
    arrays = [_clip(a - wall_start, 0.0, wall) for a in arrays]

    seconds = dict.fromkeys(_PRIORITY, 0.0)
    busy = hidden = 0.0
    n = sum(len(a) for a in arrays)
    if n and wall > 0:
        times = np.concatenate([np.concatenate([a[:, 0], a[:, 1]]) for a in arrays])
        col = np.concatenate([np.full(2 * len(a), k) for k, a in enumerate(arrays)])
        delta = np.concatenate([np.repeat([1, -1], len(a)) for a in arrays])
        order = np.argsort(times, kind="stable")
        times, col, delta = times[order], col[order], delta[order]
        # Open-interval counts per column after each boundary (2n x 6 int32).
        counts = np.zeros((len(times), len(columns)), dtype=np.int32)
        counts[np.arange(len(times)), col] = delta
        np.cumsum(counts, axis=0, out=counts)
        lengths = np.diff(times)  # segment i = [times[i], times[i+1]) with counts[i]
        active = counts[:-1] > 0
        pri = active[:, : len(_PRIORITY)]
        # Winner = first active kind in priority order; len(_PRIORITY) means python.
        winner = np.where(pri.any(axis=1), pri.argmax(axis=1), len(_PRIORITY))
        totals = np.bincount(winner, weights=lengths, minlength=len(_PRIORITY) + 1)
        for k, name in enumerate(_PRIORITY):
            seconds[name] = float(totals[k])
        host = active[:, -1]
        busy = float(lengths[host].sum())
        hidden = float(lengths[host & active[:, 0]].sum())
    python = wall - sum(seconds.values())
    if python < 0:  # rounding only; buckets never exceed the window
        python = 0.0
    return TimeAccount(
        wall_start=wall_start,
        wall_end=wall_end,
        python=python,
        compile=seconds["compile"],
        device=seconds["device"],
        transfer=seconds["transfer"],
        sync_wait=seconds["sync_wait"],
        other=seconds["other"],
        host_busy_seconds=None if host_busy is None else busy,
        host_hidden_seconds=None if host_busy is None else hidden,
    )


def accounts_between(
    bounds: Sequence[float] | np.ndarray,
    *,
    device: Iterable[Sequence[float]] | np.ndarray,
    compile: Iterable[Sequence[float]] | np.ndarray,
    transfer: Iterable[Sequence[float]] | np.ndarray,
    sync_wait: Iterable[Sequence[float]] | np.ndarray,
) -> list[dict[str, float]]:
    """The buckets of each window ``[bounds[i], bounds[i + 1]]`` (sorted bounds), as
    :func:`account` gives them for that window alone, in one sweep over all intervals: per
    window, seconds by bucket (``python`` the remainder). O((n + w) log(n + w)) for n
    intervals and w windows, where calling :func:`account` per window would be O(n w)."""
    cuts = np.asarray(bounds, dtype=float)
    if len(cuts) < 2:
        return []
    start, end = float(cuts[0]), float(cuts[-1])
    kinds = [device, compile, transfer, sync_wait]
    arrays = [_clip(_as_array(k) - start, 0.0, end - start) for k in kinds]
    marks = cuts - start
    times = np.concatenate([marks, *(np.concatenate([a[:, 0], a[:, 1]]) for a in arrays)])
    col = np.concatenate(
        [np.full(len(marks), len(arrays)), *(np.full(2 * len(a), k) for k, a in enumerate(arrays))]
    )
    delta = np.concatenate(
        [np.zeros(len(marks), dtype=int), *(np.repeat([1, -1], len(a)) for a in arrays)]
    )
    order = np.argsort(times, kind="stable")
    times, col, delta = times[order], col[order], delta[order]
    counts = np.zeros((len(times), len(arrays) + 1), dtype=np.int32)
    counts[np.arange(len(times)), col] = delta
    np.cumsum(counts, axis=0, out=counts)
    lengths = np.diff(times)
    active = counts[:-1, : len(arrays)] > 0
    winner = np.where(active.any(axis=1), active.argmax(axis=1), len(arrays))
    window = np.clip(np.searchsorted(marks, times[:-1], side="right") - 1, 0, len(cuts) - 2)
    totals = np.zeros((len(cuts) - 1, len(arrays) + 1))
    np.add.at(totals, (window, winner), lengths)
    names = ("device", "compile", "transfer", "sync_wait")
    result = []
    for row, width in zip(totals, np.diff(marks), strict=True):
        buckets = {name: float(row[k]) for k, name in enumerate(names)}
        buckets["python"] = max(float(width) - sum(buckets.values()), 0.0)
        result.append(buckets)
    return result
