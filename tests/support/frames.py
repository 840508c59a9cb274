"""The frame-building recipe ``make_frame`` had before it built frames in one go, kept as the
reference its frames are compared with (columns, order, dtypes and values)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from xlanb.core import schema


def reference_frame(name: str, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The frame of `rows` built column by column in pandas (the recipe make_frame replaced)."""
    if not rows:
        return schema.empty_frame(name)
    declared = schema.columns_of(name)
    frame = pd.DataFrame(rows)
    required = [column for column, spec in declared.items() if spec.required]
    for column in required:
        if column not in frame.columns:
            frame[column] = pd.Series(
                [None] * len(frame), dtype=schema._NULL_DTYPES[declared[column].dtype]
            )
    for column in frame.columns:
        spec = declared.get(column)
        if spec is None or spec.dtype not in ("float64", "int64", "Int64"):
            continue
        series = frame[column]
        current = str(series.dtype)
        if current in (spec.dtype, "Int64") or (current == "int64" and spec.dtype != "float64"):
            continue
        if series.isna().any():
            try:
                frame[column] = series.astype(schema._NULL_DTYPES[spec.dtype])
            except (TypeError, ValueError):
                pass
    extra = [c for c in frame.columns if c not in required]
    return frame[required + extra].reset_index(drop=True)
