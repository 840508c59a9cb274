"""Plotly figures of a Profile: percentile curves of every timed metric and a timeline of
compiles and executions.

Figures are built as plain plotly JSON dicts (what ``go.Figure(...).to_plotly_json()`` gives),
not through ``plotly.graph_objects``: validation there costs tens of milliseconds per cell, and
the figures are rendered by plotly.js in the front end either way. Every figure also gets a
static SVG twin (``figure_svg``) for front ends and exports without plotly.js (nbconvert HTML,
a notebook reopened without its kernel's extensions).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from xlanb.core.profile import Profile
from xlanb.core.schema import HOST_KINDS, headline_host_kinds
from xlanb.core.words import on_each_device
from xlanb.formats.jax_text import strip_jit
from xlanb.views.events import graph_events
from xlanb.views.summary import time_unit
from xlanb.views.svg import INK, figure_svg  # noqa: F401 - figure_svg re-exported

PERCENTILES = np.arange(1, 100)
MARKED = (50, 90, 99)
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")
COMPILE_COLOR, EXECUTE_COLOR = "#ff7f0e", "#1f77b4"


def steady_samples(profile: Profile, samples: pd.DataFrame) -> pd.DataFrame:
    """The samples of the loop's steady steps (``step_times``), when the cell ran a loop with
    at least :data:`MIN_STEADY` steady steps: warm-up steps (compiling) would otherwise bend
    every percentile curve. All samples otherwise."""
    inside = _in_steady_steps(profile, samples)
    return samples if inside is None else samples[inside]


def _in_steady_steps(profile: Profile, samples: pd.DataFrame) -> np.ndarray | None:
    """Which `samples` fell in a steady step (:func:`steady_samples`); None for all."""
    steps = profile.step_times
    if steps.empty:
        return None
    steady = steps["phase"].to_numpy(dtype=object) == "steady"
    if steady.sum() < MIN_STEADY:
        return None
    starts = steps["start"].to_numpy(dtype=float)[steady] + float(profile.started_at)
    ends = starts + steps["seconds"].to_numpy(dtype=float)[steady]
    times = samples["time"].to_numpy(dtype=float)
    # samples are stamped when their work ended: a step holds those in (start, end], with a
    # little slack for a stamp that rounds just past its step's end
    slack = 1e-6
    if len(starts) and (np.diff(starts) >= 0).all() and (starts[1:] >= ends[:-1]).all():
        # one loop's steps, in order and apart: a sample can only be in the last step that
        # started before it (every sample against every step is a matrix of both)
        last = np.searchsorted(starts + slack, times, side="left") - 1
        return (last >= 0) & (times <= ends[np.maximum(last, 0)] + slack)
    return (
        (times[:, None] > starts[None, :] + slack) & (times[:, None] <= ends[None, :] + slack)
    ).any(1)


#: Steady steps needed before percentile curves leave the warm-up steps out.
MIN_STEADY = 5
#: Samples needed for a percentile curve; fewer are drawn as dots, one per sample.
MIN_CURVE_SAMPLES = 20
#: What xlanb's own timing metrics measure (the runtimes' are documented by the runtimes).
METRIC_MEANINGS = {
    "SyncTime": "each mark_step, timed by xlanb",
    "DispatchTime": "host time of each jitted call, timed by xlanb",
}


def percentile_series(profile: Profile) -> list[dict[str, Any]]:
    """For each timing metric with samples: name, backend, unit, factor and its p1..p99 (of
    the steady steps where the cell ran a loop: see :func:`steady_samples`)."""
    series = []
    samples = profile.samples
    if samples.empty:
        return series
    metrics = profile.metrics
    timed = {
        name
        for name, unit in zip(metrics["name"].tolist(), metrics["unit"].tolist(), strict=True)
        if unit == "s"
    }
    inside = _in_steady_steps(profile, samples)
    # (backend, metric) pairs by their codes, in the order they first appear (as a groupby
    # with sort=False, rows of a missing key left out): a groupby cost more than the chart
    backend_codes, backends = pd.factorize(samples["backend"].to_numpy(dtype=object))
    metric_codes, metrics_named = pd.factorize(samples["metric"].to_numpy(dtype=object))
    pairs = backend_codes * len(metrics_named) + metric_codes
    pairs[(backend_codes < 0) | (metric_codes < 0)] = -1
    all_values = samples["value"].to_numpy(dtype=float)
    if inside is not None:
        pairs, all_values = pairs[inside], all_values[inside]
    found, firsts = np.unique(pairs, return_index=True)
    for pair in found[np.argsort(firsts)]:
        if pair < 0:
            continue
        backend = backends[pair // len(metrics_named)]
        metric = metrics_named[pair % len(metrics_named)]
        rows = np.flatnonzero(pairs == pair)
        if metric not in timed or len(rows) < 2:
            continue
        values = np.sort(all_values[rows])
        # the unit of the largest value: a few long compiles among short calls stay readable
        unit, factor = time_unit(float(values[-1]))
        if len(values) >= MIN_CURVE_SAMPLES:
            x, y, dots = PERCENTILES, np.percentile(values, PERCENTILES), False
        else:  # too few for percentiles: each sample at its rank
            x, y, dots = (np.arange(len(values)) + 0.5) / len(values) * 100, values, True
        series.append(
            {
                "backend": backend,
                "metric": metric,
                "unit": unit,
                "count": len(values),
                "x": x,
                "values": y * factor,
                "dots": dots,
            }
        )
    series.sort(
        key=lambda s: (s["metric"] not in ("CompileTime", "ExecuteTime", "SyncTime"), s["metric"])
    )
    return series


def _axis(index: int) -> tuple[str, str]:
    return ("x", "y") if index == 0 else (f"x{index + 1}", f"y{index + 1}")


def percentile_figure(profile: Profile, columns: int = 2) -> dict[str, Any] | None:
    """One small chart per timing metric: value at each percentile, p50/p90/p99 marked."""
    series = percentile_series(profile)
    if not series:
        return None
    rows = math.ceil(len(series) / columns)
    gap_x, gap_y = 0.08, 0.5 / max(rows, 1) / 1.5
    width = (1 - gap_x * (columns - 1)) / columns
    height = (1 - gap_y * (rows - 1)) / rows
    data: list[dict[str, Any]] = []
    layout: dict[str, Any] = _base_layout(height_px=230 * rows + 40)
    layout["showlegend"] = False
    annotations = []
    for index, item in enumerate(series):
        row, column = divmod(index, columns)
        x_name, y_name = _axis(index)
        x0 = column * (width + gap_x)
        y1 = 1 - row * (height + gap_y)
        color = COLORS[index % len(COLORS)]
        data.append(
            {
                "type": "scatter",
                "mode": "markers" if item["dots"] else "lines",
                "xaxis": x_name,
                "yaxis": y_name,
                "x": np.round(item["x"], 2).tolist(),
                "y": item["values"].round(4).tolist(),
                "line": {"color": color},
                "marker": {"color": color, "size": 7},
                "name": item["metric"],
                "hovertemplate": (
                    f"%{{y:.3g}} {item['unit']}<extra></extra>"
                    if item["dots"]
                    else f"p%{{x}}: %{{y:.3g}} {item['unit']}<extra></extra>"
                ),
            }
        )
        if not item["dots"]:
            marked_y = [float(item["values"][p - 1]) for p in MARKED]
            data.append(
                {
                    "type": "scatter",
                    "mode": "markers+text",
                    "xaxis": x_name,
                    "yaxis": y_name,
                    "x": list(MARKED),
                    "y": [round(v, 4) for v in marked_y],
                    "text": [f"p{p} {v:.3g}" for p, v in zip(MARKED, marked_y, strict=True)],
                    "textposition": "top left",
                    "marker": {"color": color, "size": 7},
                    "textfont": {"color": INK, "size": 10},
                    "hoverinfo": "skip",
                }
            )
        layout["xaxis" + x_name[1:]] = _axis_style(
            domain=[x0, x0 + width],
            anchor=y_name,
            title="rank (%)" if item["dots"] else "percentile",
        )
        layout["yaxis" + y_name[1:]] = _axis_style(
            domain=[y1 - height, y1], anchor=x_name, title=item["unit"], rangemode="tozero"
        )
        meaning = METRIC_MEANINGS.get(item["metric"])
        too_few = ", too few for percentiles: each one at its rank" if item["dots"] else ""
        annotations.append(
            {
                "text": f"{item['metric']} ({item['backend']}, {item['count']} samples{too_few})"
                + (f": {meaning}" if meaning else ""),
                "xref": "paper",
                "yref": "paper",
                "x": x0,
                "y": y1 + 0.02,
                "xanchor": "left",
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"color": INK, "size": 12},
            }
        )
    layout["annotations"] = annotations
    return {"data": data, "layout": layout}


_HEX = re.compile(r"[0-9a-f]{16,}")


def _short_graph(graph: str) -> str:
    """A graph's row label: a hash cut to 12 digits (enough to tell graphs apart), a name
    (``jit(train_step)``) kept whole up to 40 characters."""
    if _HEX.fullmatch(graph):
        return graph[:12]
    return graph if len(graph) <= 40 else graph[:39] + "…"


def timeline_events(profile: Profile) -> pd.DataFrame:
    """Compile and execution events with a known time: graph, kind, start and end seconds
    after the cell started (runtimes time-stamp an event when it ends)."""
    events = []
    for event in graph_events(profile):
        row = event.row
        end = event.end - profile.started_at
        graph = (
            str(row["graph"])
            if row["graph"] is not None and not pd.isna(row["graph"])
            else "(unknown graph)"
        )
        events.append(
            {
                "graph": f"{row['backend']} {_short_graph(graph)}",
                "kind": event.kind,
                "start": end - event.seconds,
                "end": end,
            }
        )
    return pd.DataFrame(events, columns=["graph", "kind", "start", "end"])


#: Lane colours of the time-account timeline (the account bar's colours).
LANE_COLORS = {
    "device": "#2e7d32",
    "op": "#81c784",
    "compile": "#c62828",
    "transfer": "#ef6c00",
    "sync_wait": "#6a1b9a",
    "trace": "#90a4ae",
}


def lane_events(profile: Profile) -> pd.DataFrame:
    """The time account's spans as rows of a timeline: one row per program for device runs,
    one each for compile, transfer and sync_wait; start and end in seconds after the cell
    started. Spans that lasted no time draw no bar: the runtime marks every donation and usage
    check as a 0 s wait, and at the minimum bar width they looked like waiting."""
    columns = lane_columns(profile)
    if columns is None:
        return pd.DataFrame(columns=["row", "lane", "start", "end", "name", "exact"])
    return pd.DataFrame(columns)


def _row_labels(lanes: np.ndarray, graphs: np.ndarray) -> np.ndarray:
    """Each span's timeline row: ``device <graph>`` and ``ops <graph>`` per program, else
    its lane (the device trace's window as ``device trace``); one label per distinct pair."""
    lane_codes, lane_names = pd.factorize(lanes)
    graph_codes, graph_names = pd.factorize(graphs)  # a missing graph: -1
    width = len(graph_names) + 1
    found, inverse = np.unique(lane_codes * width + graph_codes + 1, return_inverse=True)
    labels = []
    for pair in found:
        lane, graph = lane_names[pair // width], pair % width - 1
        labels.append(
            f"{'ops' if lane == 'op' else 'device'} {graph_names[graph][:16]}"
            if lane in ("device", "op") and graph >= 0 and isinstance(graph_names[graph], str)
            else "device trace"
            if lane == "trace"
            else lane
        )
    return np.array(labels, dtype=object)[inverse.ravel()]


def lane_columns(profile: Profile) -> dict[str, np.ndarray] | None:
    """:func:`lane_events` as numpy columns by name (None without a span that lasted)."""
    spans = profile.spans
    if spans.empty:
        return None
    seconds = spans["seconds"].to_numpy(dtype=float)
    kept = np.flatnonzero(seconds > 0)
    if not len(kept):
        return None
    # numpy columns, one frame at the end: a long cell has thousands of spans, and a pandas
    # group per timeline row cost more than the rest of the chart
    lanes = spans["lane"].astype(str).to_numpy(dtype=object)[kept]
    labels = _row_labels(lanes, spans["graph"].to_numpy(dtype=object)[kept])
    start = spans["start"].to_numpy(dtype=float)[kept] - profile.started_at
    end = start + seconds[kept]
    names = spans["name"].astype(str).to_numpy(dtype=object)[kept]
    extent = max(float(end.max()), profile.wall_seconds, 1e-6)
    codes, rows = pd.factorize(labels)  # timeline rows in the order they first appear
    runs = _last_runs(codes, rows, lanes, start, end)
    pieces: list[_Bars] = []
    for code, row in enumerate(rows):
        chosen = np.flatnonzero(codes == code)
        run = runs.get(f"device {row[4:]}") if row.startswith("ops ") else None
        group = _Bars(row, lanes[chosen], start[chosen], end[chosen], names[chosen])
        if run is None:
            pieces.append(_thinned(group, extent))
            continue
        # the ops of the program's last run stay one bar each: zoom in to read them
        inside = (group.start >= run[0]) & (group.end <= run[1])
        exact = group.take(np.flatnonzero(inside))
        if len(exact.start) > RUN_OPS:
            longest = np.argsort(-(exact.end - exact.start), kind="stable")[:RUN_OPS]
            exact = exact.take(longest)
        exact.exact = True
        pieces += [_thinned(group.take(np.flatnonzero(~inside)), extent), exact]
    return {
        "row": np.concatenate([np.full(len(p.start), p.row, dtype=object) for p in pieces]),
        "lane": np.concatenate([p.lane for p in pieces]),
        "start": np.concatenate([p.start for p in pieces]),
        "end": np.concatenate([p.end for p in pieces]),
        "name": np.concatenate([p.name for p in pieces]),
        "exact": np.concatenate([np.full(len(p.start), p.exact) for p in pieces]),
    }


@dataclass
class _Bars:
    """One timeline row's bars as numpy columns (``exact``: a run's own ops, kept apart)."""

    row: str
    lane: np.ndarray
    start: np.ndarray
    end: np.ndarray
    name: np.ndarray
    exact: bool = False

    def take(self, index: np.ndarray) -> _Bars:
        return _Bars(
            self.row, self.lane[index], self.start[index], self.end[index], self.name[index]
        )


def _last_runs(
    codes: np.ndarray, rows: Any, lanes: np.ndarray, start: np.ndarray, end: np.ndarray
) -> dict[str, tuple[float, float]]:
    """``(start, end)`` of each device row's last run (the latest start; of equal starts, the
    later span), by row."""
    runs = {}
    device = lanes == "device"
    for code, row in enumerate(rows):
        chosen = np.flatnonzero(device & (codes == code))
        if len(chosen):
            last = chosen[np.argsort(start[chosen], kind="stable")[-1]]
            runs[str(row)] = (float(start[last]), float(end[last]))
    return runs


def last_run_ops(profile: Profile) -> pd.DataFrame:
    """The op bars :func:`lane_events` keeps one per op (``exact``): those inside each
    program's last traced run (``row, lane, start, end, name``; seconds after the cell
    started)."""
    events = lane_events(profile)
    return events[events["exact"]] if not events.empty else events


#: Op bars of one run kept exact (the longest, if it ran more ops).
RUN_OPS = 1500
#: Bars one timeline row draws at most: closer spans merge into one bar, as no screen could
#: tell them apart (a 20,000-step loop drew 3,000 waits and 2,000 ops: 0.7 MB of output).
ROW_BARS = 300


def _thinned(bars: _Bars, extent: float) -> _Bars:
    """`bars` (one timeline row) with spans closer than a gap merged, the gap doubling from
    1/4000 of the cell's `extent` until at most :data:`ROW_BARS` bars are left."""
    if len(bars.start) <= ROW_BARS:
        return bars
    bars = bars.take(np.argsort(bars.start, kind="stable"))
    start, end = bars.start, bars.end
    reach = np.maximum.accumulate(end)  # the latest end so far: spans may overlap
    gap = extent / 4000
    while True:
        firsts = np.r_[0, np.flatnonzero(start[1:] > reach[:-1] + gap) + 1]
        if len(firsts) <= ROW_BARS:
            break
        gap *= 2
    counts = np.diff(np.r_[firsts, len(start)])
    names = bars.name[firsts]
    lane = str(bars.lane[0])
    return _Bars(
        bars.row,
        np.full(len(firsts), lane, dtype=object),
        start[firsts],
        np.maximum.reduceat(end, firsts),
        np.array(
            [
                name if count == 1 else f"{count:,} {lane} spans from {name}"
                for name, count in zip(names, counts, strict=True)
            ],
            dtype=object,
        ),
    )


#: Colours of the memory lane's traces.
MEMORY_COLORS = {"live": "#1565c0", "in use": "#0277bd", "peak": "#c62828"}
#: The ``samples`` metric of the device trace's memory events (``device_trace.MEMORY_METRIC``).
MEMORY_METRIC = "DeviceMemoryInUse"


def _bytes_unit(largest: float) -> tuple[str, float]:
    for unit, factor in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if largest >= factor:
            return unit, factor
    return "B", 1.0


def _program_key(name: str) -> str:
    """``jit(train step)`` and its HLO module ``jit_train_step`` (the trace's name of a program
    compiled in an earlier cell) as one key; a torch_xla graph hash as itself."""
    return re.sub(r"\W", "_", strip_jit(name.removeprefix("jit_")))


def memory_lane(profile: Profile) -> list[dict[str, Any]]:
    """The memory lane's series, times in seconds after the cell started: ``live`` (live
    device memory before and after the cell), ``in use`` (the allocators' bytes in use after
    each allocation and free, from the device trace: GPU/TPU), ``peak`` (each program's
    compiled peak, at each of its device runs, also when it was compiled in an earlier cell);
    [] when the profile knows none of them. Each: name, kind, x, y (bytes), text."""
    series = _live_series(profile)
    samples = profile.samples
    if not samples.empty:
        chosen = np.flatnonzero(samples["metric"].to_numpy(dtype=object) == MEMORY_METRIC)
        backends = samples["backend"].to_numpy(dtype=object)[chosen].astype(str)
        times = samples["time"].to_numpy(dtype=float)[chosen]
        values = samples["value"].to_numpy(dtype=float)[chosen]
        devices = _allocators(samples, chosen)
        for backend in dict.fromkeys(backends):
            mine = backends == backend
            device = next((name for name in devices[mine] if name), "")
            series.append(
                {
                    "name": f"in use {backend}" + (f" {device}" if device else ""),
                    "kind": "in use",
                    "x": np.round(times[mine] - profile.started_at, 6).tolist(),
                    "y": values[mine].tolist(),
                    "text": [f"{device or 'allocator'} bytes in use"] * int(mine.sum()),
                }
            )
    points = _peak_points(profile)
    if points:
        points.sort()
        points = points[:: -(-len(points) // ROW_BARS)]  # at most as many as a row's bars
        series.append(
            {
                "name": "program peak",
                "kind": "peak",
                "x": [round(start, 6) for start, _graph, _peak in points],
                "y": [peak for _start, _graph, peak in points],
                "text": [label for _start, label, _peak in points],
            }
        )
    return series


def _allocators(samples: pd.DataFrame, chosen: np.ndarray) -> np.ndarray:
    """The allocator (``device``) of each of the `chosen` samples, "" where none is named
    (a profile saved before samples named it)."""
    if "device" not in samples:
        return np.full(len(chosen), "", dtype=object)
    names = samples["device"].to_numpy(dtype=object)[chosen]
    return np.where(pd.isna(names), "", names).astype(object)


def _live_series(profile: Profile) -> list[dict[str, Any]]:
    """Per backend, live device memory before and after the cell (all ranks of a merged run
    together; none where a rank does not say)."""
    live = profile.live_arrays
    if live.empty:
        return []
    sizes: dict[str, dict[str, float]] = {}
    for backend, snapshot, size in zip(
        live["backend"].astype(str), live["snapshot"], live["bytes"].astype(float), strict=True
    ):
        if snapshot in ("before", "after"):
            per = sizes.setdefault(backend, {})
            per[snapshot] = per.get(snapshot, 0.0) + size  # NaN stays NaN: unknown
    return [
        {
            "name": f"live {backend}",
            "kind": "live",
            "x": [0.0, float(profile.wall_seconds)],
            "y": [per["before"], per["after"]],
            "text": ["before the cell", "after the cell"],
        }
        for backend, per in sizes.items()
        if {"before", "after"} <= per.keys() and not math.isnan(per["before"] + per["after"])
    ]


def _peak_points(profile: Profile) -> list[tuple[float, str, float]]:
    """(start, what the point is: ``jit(f) compiled peak``, on each of its devices where
    several, compiled peak bytes) at each device run of a program whose peak is known (the
    cell's latest compile's where it compiled)."""
    peaks: dict[str, tuple[str, float]] = {}
    for frame in (profile.executions, profile.compiles):  # the cell's latest compile last
        if "peak_bytes" in frame.columns:
            devices = frame["devices"] if "devices" in frame.columns else [None] * len(frame)
            for graph, peak, count in zip(
                frame["graph"], frame["peak_bytes"], devices, strict=True
            ):
                if isinstance(graph, str) and peak == peak:
                    label = f"{graph} compiled peak{on_each_device(count)}"
                    peaks[_program_key(graph)] = (label, float(peak))
    spans = profile.spans
    if not peaks or spans.empty:
        return []
    device = np.flatnonzero(spans["lane"].to_numpy(dtype=object) == "device")
    graphs = spans["graph"].to_numpy(dtype=object)[device]
    names = spans["name"].to_numpy(dtype=object)[device]
    starts = spans["start"].to_numpy(dtype=float)[device] - profile.started_at
    keys: dict[str, tuple[str, float] | None] = {}
    points = []
    for graph, name, start in zip(graphs, names, starts, strict=True):
        program = str(name if graph is None or graph != graph else graph)
        if program not in keys:
            keys[program] = peaks.get(_program_key(program))
        known = keys[program]
        if known is not None:
            points.append((float(start), known[0], known[1]))
    return points


def lanes_figure(
    profile: Profile, events: pd.DataFrame | Mapping[str, np.ndarray]
) -> dict[str, Any]:
    """Device runs per program, compiles, transfers and waits over the cell's time: the
    intervals the time account is built from (the gaps are Python); under each program, its
    longest HLO ops (zoom in to read them); and the part of the cell the device trace covered."""
    # numpy columns, masked per lane: a pandas selection per lane and column cost ~10 ms a cell
    lanes = np.asarray(events["lane"], dtype=object)
    rows_of, names_of = np.asarray(events["row"], dtype=object), np.asarray(events["name"])
    starts, ends = np.asarray(events["start"], dtype=float), np.asarray(events["end"], dtype=float)
    exact_ops = np.asarray(events["exact"], dtype=bool)
    span = max(float(ends.max()), profile.wall_seconds, 1e-6)
    unit, factor = time_unit(span)
    data = []
    for lane in ("device", "op", "compile", "transfer", "sync_wait", "trace"):
        chosen = lanes == lane
        if not chosen.any():
            continue
        lasting = (ends[chosen] - starts[chosen]) * factor
        # significant figures, not decimals of the unit: a 0.3 µs wait in a 2 s cell is not 0
        exact = [float(f"{value:.6g}") for value in lasting]
        data.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": lane,
                "y": rows_of[chosen].tolist(),
                # a run's own ops keep their width (zoom in to them), merged bars a visible one
                "x": np.round(
                    np.where(
                        exact_ops[chosen],
                        np.maximum(lasting, span * factor / 1e6),
                        np.maximum(lasting, span * factor / 400),
                    ),
                    9,
                ).tolist(),
                "base": np.round(starts[chosen] * factor, 9).tolist(),
                "customdata": [
                    [name, value] for name, value in zip(names_of[chosen], exact, strict=True)
                ],
                "marker": {"color": LANE_COLORS[lane]},
                "hovertemplate": f"{lane} %{{customdata[0]}}<br>starts %{{base:.4g}} "
                f"{unit}, lasts %{{customdata[1]:.4g}} {unit}"
                "<extra></extra>",
            }
        )
    count = len(pd.unique(rows_of))
    memory = memory_lane(profile)
    lane_px = 130 if memory else 0
    layout = _base_layout(height_px=min(150 + 22 * count, 600) + lane_px)
    layout["margin"]["l"] = 170
    layout["margin"]["t"] = 60
    layout.update(
        {
            "barmode": "overlay",
            "xaxis": _axis_style(
                title=f"time in cell ({unit})", rangemode="tozero", range=[0, span * factor]
            ),
            "yaxis": _axis_style(automargin=True, type="category"),
            "legend": {"orientation": "h", "y": 1.02, "yanchor": "bottom", "font": {"color": INK}},
        }
    )
    if memory:
        share = lane_px / layout["height"]
        largest = max(max(s["y"]) for s in memory)
        memory_unit, memory_factor = _bytes_unit(largest)
        layout["yaxis"]["domain"] = [share + 0.06, 1.0]
        # the shared time axis under the memory lane: its title never lands inside the lane
        layout["xaxis"]["anchor"] = "y2"
        layout["yaxis2"] = _axis_style(
            title=f"memory ({memory_unit})", domain=[0.0, share], rangemode="tozero", anchor="x"
        )
        for line in memory:
            mode = {"live": "lines+markers", "in use": "lines", "peak": "markers"}[line["kind"]]
            data.append(
                {
                    "type": "scatter",
                    "mode": mode,
                    "name": line["name"],
                    "xaxis": "x",
                    "yaxis": "y2",
                    "x": [x * factor for x in line["x"]],
                    "y": [round(y / memory_factor, 6) for y in line["y"]],
                    "customdata": line["text"],
                    "line": {"color": MEMORY_COLORS[line["kind"]], "shape": "hv"},
                    "marker": {"color": MEMORY_COLORS[line["kind"]], "size": 5},
                    "hovertemplate": f"%{{customdata}}<br>%{{y:.4g}} {memory_unit} at "
                    f"%{{x:.4g}} {unit}<extra></extra>",
                }
            )
    return {"data": data, "layout": layout}


def timeline_figure(profile: Profile) -> dict[str, Any] | None:
    """The cell's time: the time account's lanes when the profile has spans (live captures),
    else compiles and executions, one row per graph (offline files)."""
    lanes = lane_columns(profile)
    if lanes is not None:
        return lanes_figure(profile, lanes)
    events = timeline_events(profile)
    if events.empty:
        return None
    span = max(float(events["end"].max()), profile.wall_seconds, 1e-6)
    unit, factor = time_unit(span)
    data = []
    # Compiles drawn last, on top: a torch._lazy sync that compiled is one bar of both kinds.
    for kind, color in (("execute", EXECUTE_COLOR), ("compile", COMPILE_COLOR)):
        rows = events[events["kind"] == kind]
        if rows.empty:
            continue
        durations = ((rows["end"] - rows["start"]) * factor).clip(lower=span * factor / 400)
        data.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": kind,
                "y": rows["graph"].tolist(),
                "x": durations.round(6).tolist(),
                "base": (rows["start"] * factor).round(6).tolist(),
                "marker": {"color": color},
                "hovertemplate": f"{kind} %{{y}}<br>%{{base:.3g}} {unit} "
                f"+%{{x:.3g}} {unit}<extra></extra>",
            }
        )
    graphs = events["graph"].nunique()
    layout = _base_layout(height_px=min(150 + 22 * graphs, 600))
    layout["margin"]["l"] = 170
    layout["margin"]["t"] = 60  # the legend sits above the plot, never over the bars
    layout.update(
        {
            "barmode": "overlay",
            "xaxis": _axis_style(title=f"time in cell ({unit})", rangemode="tozero"),
            "yaxis": _axis_style(automargin=True, type="category"),
            "legend": {"orientation": "h", "y": 1.02, "yanchor": "bottom", "font": {"color": INK}},
        }
    )
    return {"data": data, "layout": layout}


def comparison_figure(comparison) -> dict[str, Any]:
    """Headline numbers of two profiles side by side: counts on one chart, seconds on one."""
    summary = comparison.summary
    either = {kind.key: summary.loc[kind.key, ["a", "b"]].any() for kind in HOST_KINDS.values()}
    counts = ["compiles", "executions", "transfers"]
    kinds = headline_host_kinds(either)
    counts += [kind.key for kind in kinds]
    labels = {kind.key: kind.label for kind in kinds}  # as the headline says them
    seconds = ["compile_seconds", "execute_seconds", "wall_seconds"]
    longest = float(summary.loc[seconds, ["a", "b"]].to_numpy().max()) or 1e-9
    unit, factor = time_unit(longest)
    data = []
    for side, color, label in (
        ("a", COLORS[0], comparison.a.name),
        ("b", COLORS[1], comparison.b.name),
    ):
        data.append(
            {
                "type": "bar",
                "name": label,
                "x": [labels.get(c, c) for c in counts],
                "y": [float(summary.loc[c, side]) for c in counts],
                "marker": {"color": color},
                "legendgroup": side,
            }
        )
        data.append(
            {
                "type": "bar",
                "name": label,
                "x": [c.replace("_seconds", "") for c in seconds],
                "y": [round(float(summary.loc[c, side]) * factor, 6) for c in seconds],
                "marker": {"color": color},
                "xaxis": "x2",
                "yaxis": "y2",
                "legendgroup": side,
                "showlegend": False,
            }
        )
    layout = _base_layout(height_px=320)
    layout.update(
        {
            "barmode": "group",
            "xaxis": _axis_style(domain=[0, 0.45], anchor="y"),
            "yaxis": _axis_style(title="count", rangemode="tozero", anchor="x"),
            "xaxis2": _axis_style(domain=[0.55, 1], anchor="y2"),
            "yaxis2": _axis_style(title=unit, rangemode="tozero", anchor="x2"),
            "legend": {"orientation": "h", "y": 1.15, "font": {"color": INK}},
        }
    )
    return {"data": data, "layout": layout}


def _base_layout(height_px: int) -> dict[str, Any]:
    return {
        "height": height_px,
        "margin": {"l": 60, "r": 20, "t": 30, "b": 40},
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "font": {"color": INK, "size": 11},
    }


def _axis_style(title: str = "", **extra: Any) -> dict[str, Any]:
    style = {
        "gridcolor": "rgba(136,136,136,0.25)",
        "zerolinecolor": "rgba(136,136,136,0.4)",
        "linecolor": INK,
        "tickfont": {"color": INK},
    }
    if title:
        style["title"] = {"text": title, "font": {"color": INK}}
    style.update(extra)
    return style
