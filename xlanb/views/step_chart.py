"""The step-time chart: each step of the cell's loop (``profile.step_times``) as a bar stacked
by the time account's buckets, as XProf's overview draws it. Warm-up steps (a compile finished
in them) are drawn apart, on their own axis to the left, so a second of compiling does not
flatten the steady steps' bars. A plain plotly JSON dict, as the other charts
(``xlanb.views.charts``), with the same static SVG twin.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from xlanb.core.profile import Profile
from xlanb.views.charts import INK, LANE_COLORS, _axis_style, _base_layout
from xlanb.views.summary import time_unit

#: Columns of ``step_times`` that are not buckets; every other float column is one.
NOT_BUCKETS = ("backend", "step", "graph", "start", "seconds", "phase", "estimated", "rank")
#: Colours of buckets the timeline has no lane for.
EXTRA_COLORS = {"python": "#9e9e9e", "other": "#bcaaa4"}
#: Share of the width the warm-up steps' axis takes when there are steady steps too.
WARMUP_SHARE = 0.22


def step_buckets(steps: pd.DataFrame) -> list[str]:
    """The bucket columns of `steps`, in the frame's order, those with any time."""
    return [
        column
        for column in steps.columns
        if column not in NOT_BUCKETS
        and pd.api.types.is_float_dtype(steps[column].dtype)
        and float(np.nansum(steps[column].to_numpy(dtype=float))) > 0
    ]


def _bucket_color(bucket: str, index: int) -> str:
    palette = ("#5c6bc0", "#26a69a", "#d4e157", "#8d6e63")
    return LANE_COLORS.get(bucket) or EXTRA_COLORS.get(bucket) or palette[index % len(palette)]


def step_figure(profile: Profile) -> dict[str, Any] | None:
    """Steps as bars stacked by bucket; warm-up steps on their own axis (left), steady steps
    on the main one. None when the cell ran no loop."""
    steps = profile.step_times
    if steps.empty:
        return None
    buckets = step_buckets(steps)
    if not buckets:
        return None
    # numpy columns, a mask per panel: a frame selected per panel cost ~1 ms a chart
    warm = steps["phase"].to_numpy(dtype=object) == "warm-up"
    seconds_of = steps["seconds"].to_numpy(dtype=float)
    step_labels = np.array([str(step) for step in steps["step"].tolist()], dtype=object)
    bucket_values = {bucket: steps[bucket].to_numpy(dtype=float) for bucket in buckets}
    bucket_values = {b: np.where(np.isnan(v), 0.0, v) for b, v in bucket_values.items()}
    guessed = (
        steps["estimated"].fillna(False).to_numpy(dtype=bool)
        if "estimated" in steps
        else np.zeros(len(steps), dtype=bool)
    )
    panels = [(name, rows) for name, rows in (("warm-up", warm), ("steady", ~warm)) if rows.any()]
    data: list[dict[str, Any]] = []
    layout = _base_layout(height_px=300)
    layout["margin"]["t"] = 70
    layout.update(
        {
            "barmode": "stack",
            "bargap": 0.15,
            "legend": {"orientation": "h", "y": 1.1, "yanchor": "bottom", "font": {"color": INK}},
            "annotations": [],
        }
    )
    for position, (phase, rows) in enumerate(panels):
        x_name, y_name = ("x", "y") if position == 0 else ("x2", "y2")
        seconds = seconds_of[rows]
        unit, factor = time_unit(
            float(np.nanmax(seconds)) if not np.isnan(seconds).all() else np.nan
        )
        if len(panels) == 1:
            domain = [0.0, 1.0]
        else:
            domain = [0.0, WARMUP_SHARE] if position == 0 else [WARMUP_SHARE + 0.08, 1.0]
        labels, panel_values, pale, per_bar = _bars(step_labels, bucket_values, guessed, rows)
        for index, bucket in enumerate(buckets):
            values = panel_values[bucket] * factor
            data.append(
                {
                    "type": "bar",
                    "name": bucket,
                    "legendgroup": bucket,
                    "showlegend": position == 0,
                    "xaxis": x_name,
                    "yaxis": y_name,
                    "x": labels,
                    "y": np.round(values, 6).tolist(),
                    "marker": _marker(_bucket_color(bucket, index), pale),
                    "meta": phase,
                    "hovertemplate": f"{phase} step %{{x}}<br>{bucket} %{{y:.4g}} {unit}"
                    "<extra></extra>",
                }
            )
        layout["xaxis" + x_name[1:]] = _axis_style(
            title=f"{phase} step", type="category", domain=domain, anchor=y_name
        )
        layout["yaxis" + y_name[1:]] = _axis_style(title=unit, rangemode="tozero", anchor=x_name)
        total = float(np.nansum(seconds))
        total_unit, total_factor = time_unit(total)
        layout["annotations"].append(
            {
                "text": f"{phase}: {len(seconds)} step{'s' * (len(seconds) != 1)}, "
                f"{total * total_factor:.3g} {total_unit}"
                + (f" ({int(guessed[rows].sum())} estimated, pale)" if guessed[rows].any() else "")
                + (f"; a bar is the mean of {per_bar}" if per_bar > 1 else ""),
                "xref": "paper",
                "yref": "paper",
                "x": domain[0],
                "y": 1.0,
                "xanchor": "left",
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"color": INK},
            }
        )
    return {"data": data, "layout": layout}


#: Bars a panel draws at most: past it, a bar is the mean of consecutive steps.
MAX_STEP_BARS = 200
#: Opacity of the bars of estimated steps (after the device trace's window).
ESTIMATED_OPACITY = 0.4


def _marker(color: str, estimated: np.ndarray) -> dict[str, Any]:
    """A bar trace's marker: estimated steps pale."""
    if not estimated.any():
        return {"color": color}
    return {"color": color, "opacity": np.where(estimated, ESTIMATED_OPACITY, 1.0).tolist()}


def _bars(
    labels: np.ndarray, values: dict[str, np.ndarray], estimated: np.ndarray, rows: np.ndarray
) -> tuple[list[str], dict[str, np.ndarray], np.ndarray, int]:
    """(labels, values per bucket, which bars are pale, steps per bar) of one panel's steps
    `rows`: a bar a step, or past :data:`MAX_STEP_BARS` the mean of each run of consecutive
    steps (labelled ``first-last``; pale where most of its steps are estimated)."""
    picked = np.flatnonzero(rows)
    per_bar = max(1, -(-len(picked) // MAX_STEP_BARS))
    if per_bar == 1:
        return (
            labels[picked].tolist(),
            {b: v[picked] for b, v in values.items()},
            estimated[picked],
            1,
        )
    starts = np.arange(0, len(picked), per_bar)
    counts = np.diff(np.r_[starts, len(picked)])
    firsts, lasts = labels[picked[starts]], labels[picked[starts + counts - 1]]
    means = {b: np.add.reduceat(v[picked], starts) / counts for b, v in values.items()}
    pale = np.add.reduceat(estimated[picked].astype(float), starts) / counts > 0.5
    return [f"{a}-{b}" for a, b in zip(firsts, lasts, strict=True)], means, pale, per_bar
