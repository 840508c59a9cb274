"""A Profile as Chrome trace events (the JSON that Perfetto and chrome://tracing open).

Layout: one process per backend (``process_name`` metadata), one thread (track) per graph
holding its compile and execute events, plus a ``transfers`` track (samples of the
``Transfer*`` metrics) and a ``syncs`` track (``SyncTime`` samples), and the time account's
``spans``: a ``device <graph>`` track per program (its runs, from the device trace) and
``compile``, ``transfer``, ``sync_wait`` tracks. Every event is a
complete event (``ph: "X"``) with ``ts``/``dur`` in microseconds from the earliest event.

Only events whose start and duration are known become events (see
:mod:`xlanb.views.events`): rows with a missing ``time`` or ``seconds`` (offline files,
forced syncs) and aggregated rows (``count`` > 1) are skipped, never invented. ``time`` is
when an event ended, so an event starts at ``time - seconds``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd

from xlanb.core.files import write_atomically
from xlanb.core.profile import Profile
from xlanb.core.units import event_span, finite_number
from xlanb.views.events import graph_events

TRANSFER_PREFIX = "Transfer"
SYNC_METRIC = "SyncTime"
_UNKNOWN_GRAPH = "(graph unknown)"


def _plain(value: Any) -> Any:
    """A JSON-safe scalar, or None for missing values."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) or hasattr(value, "item"):
        number = finite_number(value)
        if number is None:
            return None
        return (
            int(number) if float(number).is_integer() and not isinstance(value, float) else number
        )
    return str(value)


class _Tracks:
    """Process and thread ids, with their name metadata events."""

    def __init__(self) -> None:
        self.pids: dict[str, int] = {}
        self.tids: dict[tuple[str, str], int] = {}
        self.metadata: list[dict[str, Any]] = []

    def process(self, backend: str) -> int:
        pid = self.pids.get(backend)
        if pid is None:
            pid = self.pids[backend] = len(self.pids) + 1
            self.metadata.append(
                {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": backend}}
            )
            self.metadata.append(
                {
                    "ph": "M",
                    "name": "process_sort_index",
                    "pid": pid,
                    "tid": 0,
                    "args": {"sort_index": pid},
                }
            )
        return pid

    def ids(self, backend: str, track: str) -> tuple[int, int]:
        pid = self.process(backend)
        key = (backend, track)
        tid = self.tids.get(key)
        if tid is None:
            tid = self.tids[key] = sum(1 for b, _ in self.tids if b == backend) + 1
            self.metadata.append(
                {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": track}}
            )
        return pid, tid


def _raw_events(profile: Profile) -> list[tuple[str, str, str, str, float, float, dict]]:
    """(backend, track, name, category, start, duration, args) of every timed event."""
    events = []
    for event in graph_events(profile):
        if event.seconds < 0:
            continue  # a complete event cannot end before it starts
        row = event.row
        graph = _plain(row.get("graph")) or _UNKNOWN_GRAPH
        if event.kind == "compile":
            args = {
                key: _plain(row.get(key))
                for key in ("graph", "cause", "trigger", "location", "cell_line")
            }
        else:
            args = {"graph": _plain(row.get("graph"))}
        events.append(
            (
                str(row["backend"]),
                f"graph {graph}",
                event.kind,
                event.kind,
                event.start,
                event.seconds,
                args,
            )
        )
    # The intervals of the time account, one track per lane (device runs per program).
    for row in profile.spans.to_dict("records"):
        start, seconds = finite_number(row["start"]), finite_number(row["seconds"])
        if start is None or seconds is None or seconds < 0:
            continue
        lane = str(row["lane"])
        graph = _plain(row.get("graph"))
        track = f"{lane} {graph}" if lane == "device" and graph else lane
        events.append(
            (
                str(row["backend"]),
                track,
                str(row["name"]),
                lane,
                start,
                seconds,
                {"graph": graph, "estimated": bool(row.get("estimated"))},
            )
        )
    units = {(r["backend"], r["name"]): r["unit"] for r in profile.metrics.to_dict("records")}
    for row in profile.samples.to_dict("records"):
        metric, backend = str(row["metric"]), str(row["backend"])
        if units.get((backend, metric), "s") != "s":
            continue
        if metric.startswith(TRANSFER_PREFIX):
            track, category = "transfers", "transfer"
        elif metric == SYNC_METRIC:
            track, category = "syncs", "sync"
        else:
            continue
        span = event_span(row["time"], row["value"])
        if span is not None and span[1] >= 0:
            events.append((backend, track, metric, category, *span, {}))
    return events


def chrome_trace(profile: Profile) -> dict[str, Any]:
    """The trace as a JSON-ready dict: ``{"traceEvents": [...], "displayTimeUnit": "ms"}``."""
    raw = _raw_events(profile)
    tracks = _Tracks()
    for backend in profile.backends:  # processes in the profile's order, even if empty
        tracks.process(str(backend))
    starts = [start for *_, start, _, _ in raw]
    origin = min(starts) if starts else 0.0
    if profile.started_at and finite_number(profile.started_at) is not None:
        origin = min(origin, float(profile.started_at)) if starts else float(profile.started_at)
    events = []
    for backend, track, name, category, start, duration, args in sorted(raw, key=lambda e: e[4]):
        pid, tid = tracks.ids(backend, track)
        events.append(
            {
                "name": name,
                "cat": category,
                "ph": "X",
                "pid": pid,
                "tid": tid,
                "ts": round((start - origin) * 1e6, 3),
                "dur": round(duration * 1e6, 3),
                "args": {k: v for k, v in args.items() if v is not None},
            }
        )
    return {
        "traceEvents": tracks.metadata + events,
        "displayTimeUnit": "ms",
        "otherData": {
            "profile": str(profile.name),
            "origin_epoch_seconds": origin if starts else None,
        },
    }


def write_chrome_trace(profile: Profile, path: str | os.PathLike) -> Path:
    """Write the trace JSON to `path` (open it in https://ui.perfetto.dev)."""
    path = Path(path)
    write_atomically(path, json.dumps(chrome_trace(profile), allow_nan=False))
    return path
