"""Helpers shared by the finding rules of several groups."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from xlanb.analysis.breakdown import lane_arrays
from xlanb.analysis.time_account import intervals_seconds
from xlanb.formats import jax_text

Finding = dict[str, Any]


def _lines(rows: pd.DataFrame) -> str:
    lines = sorted({int(v) for v in rows["cell_line"].dropna()})
    if lines:
        return " (cell line " + ", ".join(str(n) for n in lines) + ")"
    locations = sorted({str(v) for v in rows["location"].dropna()})
    return f" (at {', '.join(locations[:3])})" if locations else ""


def groups(frame: pd.DataFrame, column: str) -> list[tuple[Any, pd.DataFrame]]:
    """``frame.groupby(column, sort=False)`` as a list of (key, rows): keys in the order
    they first appear, rows of a null key left out, each group the rows of `frame` (its index
    kept). Made in plain Python: a cell's few fallback rows make pandas' fixed cost of a
    groupby the whole cost."""
    positions: dict[Any, list[int]] = {}
    for position, key in enumerate(frame[column].tolist()):
        if not pd.isna(key):
            positions.setdefault(key, []).append(position)
    return [
        (key, frame if len(rows) == len(frame) else frame.iloc[rows])
        for key, rows in positions.items()
    ]


#: Fallback causes reported by the JAX rules (cpu_fallbacks skips them).
_JAX_FALLBACK_CAUSES = {jax_text.HOST_CALLBACK, jax_text.HOST_TRANSFER}


def lane_seconds(profile, lane: str, backend: str | None = None) -> float:
    """Seconds of the profile's spans in `lane` (of `backend`), overlaps counted once."""
    # the lanes as the breakdown read them (once per spans frame), not a frame filter
    lanes, starts, ends, _estimated = lane_arrays(profile)
    inside = lanes == lane
    if backend is not None and inside.any():
        inside &= profile.spans["backend"].to_numpy(dtype=object) == backend
    return intervals_seconds(np.column_stack([starts[inside], ends[inside]]))
