"""The roofline of programs and ops: FLOPs and bytes counted from the optimized HLO
(:mod:`xlanb.graphs.hlo_cost`), the device's peak (the data sheet of its ``device_kind``,
:mod:`xlanb.analysis.peaks`, else the peak xlanb measured), achieved rates from measured device
seconds, and what bounds each: ``compute`` when the arithmetic intensity (FLOPs per byte)
exceeds the peak's (peak FLOP/s over peak bytes/s), else ``memory``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from xlanb.analysis.peaks import peak_for
from xlanb.graphs.hlo_cost import matmul_dtype, op_costs, program_cost

#: The columns :func:`op_rates` adds.
OP_RATE_COLUMNS = ("flops", "bytes", "flops_per_second", "bytes_per_second", "bound")


def device_peak(environment: Mapping[str, Any], dtype: str) -> tuple[float, float] | None:
    """(FLOP/s, bytes/s) for products in `dtype`: the data sheet of the environment's
    ``device_kind`` where it is known, else the measured ``peak_flops_per_second`` and
    ``peak_bytes_per_second``; None when neither is there."""
    kind = environment.get("device_kind")
    if isinstance(kind, str) and kind:
        found = peak_for(kind, dtype or "f32")
        if found is not None:
            return found
    flops, moved = (
        environment.get("peak_flops_per_second"),
        environment.get("peak_bytes_per_second"),
    )
    if flops and moved:
        return float(flops), float(moved)
    return None


def bound_of(flops: float, moved: float, peak: tuple[float, float] | None) -> str | None:
    """``compute`` or ``memory`` by arithmetic intensity against the peak's; None unknown."""
    if peak is None or not moved or math.isnan(moved) or math.isnan(flops):
        return None
    return "compute" if flops / moved > peak[0] / peak[1] else "memory"


def program_counts(hlo_text: str) -> tuple[float, float, str]:
    """(FLOPs, bytes, matrix-product element type) of one run of an optimized module."""
    cost = program_cost(hlo_text)
    return cost.flops, cost.bytes, matmul_dtype(hlo_text)


def op_rates(ops: pd.DataFrame, hlo_text: str, peak: tuple[float, float] | None) -> pd.DataFrame:
    """`ops` (rows of one program's instructions: ``op``, ``seconds`` of all runs, ``count``)
    with ``flops`` and ``bytes`` of one run of each op from `hlo_text`, achieved
    ``flops_per_second`` and ``bytes_per_second``, and ``bound``. Ops the module does not
    name keep NaN and no bound."""
    costs = op_costs(hlo_text)
    flops, moved, flop_rates, byte_rates, bounds = [], [], [], [], []
    for row in ops.itertuples():
        cost = costs.get(str(row.op))
        op_flops = cost.flops if cost is not None else math.nan
        op_bytes = cost.bytes if cost is not None else math.nan
        runs = float(getattr(row, "count", 1) or 1)
        seconds = float(row.seconds) if row.seconds == row.seconds else math.nan
        measured = seconds > 0
        flops.append(op_flops)
        moved.append(op_bytes)
        flop_rates.append(op_flops * runs / seconds if measured else math.nan)
        byte_rates.append(op_bytes * runs / seconds if measured else math.nan)
        bounds.append(bound_of(op_flops, op_bytes, peak) if cost is not None else None)
    return ops.assign(
        flops=flops,
        bytes=moved,
        flops_per_second=flop_rates,
        bytes_per_second=byte_rates,
        bound=pd.Series(bounds, index=ops.index, dtype=object),
    )


def with_op_rates(
    ops: pd.DataFrame, graphs: pd.DataFrame, environment: Mapping[str, Any]
) -> pd.DataFrame:
    """:func:`op_rates` for each program of `ops` whose optimized HLO `graphs` holds (matched
    by ``graph``, else by the ``module`` name the trace gives); `ops` unchanged without any."""
    if ops.empty or graphs.empty or "kind" not in graphs.columns or "op" not in ops.columns:
        return ops
    texts = _optimized_texts(graphs)
    if not texts:
        return ops
    parts = []
    for key, rows in ops.groupby(_program_keys(ops, texts), sort=False, dropna=False):
        text = texts.get(str(key)) if isinstance(key, str) else None
        if text is None:
            parts.append(rows)
            continue
        peak = device_peak(environment, matmul_dtype(text))
        parts.append(op_rates(rows, text, peak))
    rated = pd.concat(parts).loc[ops.index]
    if "bound" in rated.columns:
        # rows of programs without a text: None as in the rated rows (a concat fills NaN)
        rated["bound"] = rated["bound"].astype(object).where(rated["bound"].notna(), None)
    return rated


def _optimized_texts(graphs: pd.DataFrame) -> dict[str, str]:
    """graph name and HLO module name -> the latest optimized HLO text of that program."""
    texts: dict[str, str] = {}
    optimized = graphs[graphs["kind"] == "hlo_optimized"]
    for row in optimized.itertuples():
        text = row.text if isinstance(row.text, str) else ""
        if not text.startswith("HloModule"):
            continue
        texts[str(row.graph)] = text
        texts.setdefault(text[len("HloModule") :].split(",")[0].strip(), text)
    return texts


def _program_keys(ops: pd.DataFrame, texts: dict[str, str]) -> pd.Series:
    keys = ops["graph"] if "graph" in ops.columns else pd.Series(None, index=ops.index)
    if "module" in ops.columns:
        known = keys.map(lambda key: isinstance(key, str) and key in texts)
        keys = keys.where(known, ops["module"])
    return keys.astype(object)
