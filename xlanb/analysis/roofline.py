"""The roofline of programs and ops: FLOPs and bytes counted from the optimized HLO
(:mod:`xlanb.graphs.hlo_cost`), the device's peak (the data sheet of its ``device_kind``,
:mod:`xlanb.analysis.peaks`, else the peak xlanb measured), achieved rates from measured device
seconds, and what bounds each: ``compute`` when the arithmetic intensity (FLOPs per byte)
exceeds the peak's (peak FLOP/s over peak bytes/s), else ``memory``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from xlanb.analysis.peaks import peak_for
from xlanb.formats.hlo_text import hlo_module_name
from xlanb.graphs.hlo_cost import matmul_dtype, op_costs, program_cost
from xlanb.graphs.ops import ASYNC_HALF

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
    counts = ops["count"].tolist() if "count" in ops.columns else [1] * len(ops)
    for op, count, seconds in zip(ops["op"].tolist(), counts, ops["seconds"].tolist(), strict=True):
        cost = costs.get(str(op))
        op_flops = cost.flops if cost is not None else math.nan
        op_bytes = cost.bytes if cost is not None else math.nan
        runs = float(count or 1)
        seconds = float(seconds) if seconds == seconds else math.nan
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
    ops: pd.DataFrame,
    graphs: pd.DataFrame,
    environment: Mapping[str, Any],
    program_runs: Mapping[int, int] | None = None,
) -> pd.DataFrame:
    """:func:`op_rates` for each program of `ops` whose optimized HLO `graphs` holds (matched
    by ``graph``, else by the ``module`` name the trace gives); `ops` unchanged without any.
    Where a graph's rows add up the runs of several of its programs (a function compiled for
    several shapes) and `program_runs` (module id -> traced runs) names them, an op's cost is
    the mean of its programs' weighted by their runs."""
    if ops.empty or graphs.empty or "kind" not in graphs.columns or "op" not in ops.columns:
        return _trace_cost_rates(ops, environment)
    texts = _optimized_texts(graphs)
    if not texts:
        return _trace_cost_rates(ops, environment)
    parts = []
    for key, rows in ops.groupby(_program_keys(ops, texts), sort=False, dropna=False):
        text = texts.get(str(key)) if isinstance(key, str) else None
        if text is None:
            parts.append(rows)
            continue
        peak = device_peak(environment, matmul_dtype(text))
        programs = _traced_programs(graphs, str(key), program_runs or {})
        parts.append(
            _run_weighted_rates(rows, programs, peak)
            if len(programs) > 1
            else op_rates(rows, text, peak)
        )
    rated = parts[0] if len(parts) == 1 else pd.concat(parts).loc[ops.index]
    if "bound" in rated.columns:
        # rows of programs without a text: None as in the rated rows (a concat fills NaN)
        rated["bound"] = rated["bound"].astype(object).where(rated["bound"].notna(), None)
    return _trace_cost_rates(rated, environment)


def _trace_cost_rates(ops: pd.DataFrame, environment: Mapping[str, Any]) -> pd.DataFrame:
    """`ops` with the rates and bound of the rows whose ``flops`` and ``bytes`` the trace
    gave (a TPU's op metadata) and no HLO text rated: at the device's peak for matrix products
    at XLA's default precision (the trace says no element type). The halves of an async op
    (``copy-start``, ``copy-done``) get none."""
    if ops.empty or "flops" not in ops.columns:
        return ops
    given = ~np.isnan(ops["flops"].to_numpy(dtype=float, na_value=np.nan))
    if "flops_per_second" in ops.columns:
        given &= np.isnan(ops["flops_per_second"].to_numpy(dtype=float, na_value=np.nan))
    if not given.any():  # a live cell's ops: rated from their text, or no costs at all
        return ops
    # an async op's start launches its copy or collective, its done waits for what is left
    # of it: neither moves the bytes in its own time
    given &= ~np.array([ASYNC_HALF.match(op) is not None for op in ops["op"].astype(str)], bool)
    rows = ops[given]
    rated = _rated(
        rows,
        rows["flops"].astype(float).tolist(),
        rows["bytes"].astype(float).tolist(),
        device_peak(environment, "f32"),
    )
    out = ops.copy()
    for column in OP_RATE_COLUMNS:
        if column not in out.columns:
            out[column] = pd.Series(None if column == "bound" else math.nan, index=out.index)
        out[column] = out[column].astype(object if column == "bound" else float)
        out.loc[given, column] = rated[column].to_numpy()
    out["bound"] = out["bound"].where(out["bound"].notna(), None)
    return out


def _traced_programs(
    graphs: pd.DataFrame, key: str, program_runs: Mapping[int, int]
) -> list[tuple[str, int]]:
    """(optimized HLO text, traced runs) of each program of graph (or module name) `key` that
    ran in the trace."""
    if not program_runs or "module_id" not in graphs.columns:
        return []
    found = []
    optimized = graphs[(graphs["kind"] == "hlo_optimized") & graphs["module_id"].notna()]
    for row in optimized.itertuples():
        text = row.text if isinstance(row.text, str) else ""
        runs = program_runs.get(int(row.module_id), 0)
        if runs and text.startswith("HloModule") and key in (str(row.graph), hlo_module_name(text)):
            found.append((text, runs))
    return found


def _run_weighted_rates(
    ops: pd.DataFrame, programs: list[tuple[str, int]], peak: tuple[float, float] | None
) -> pd.DataFrame:
    """:func:`op_rates` where the rows of `ops` add up the runs of several `programs` (text,
    runs): an op's FLOPs and bytes per run are those of the programs whose runs make its
    ``count`` (an instruction name means another op in another program), weighted by their
    runs; unknown where no one set of them does."""
    costs = [(op_costs(text), runs) for text, runs in programs]
    flops, moved = [], []
    counts = ops["count"] if "count" in ops.columns else pd.Series(1, index=ops.index)
    for op, count in zip(ops["op"].astype(str), counts, strict=True):
        found = _programs_of_count([(c[op], runs) for c, runs in costs if op in c], count)
        total = sum(runs for _, runs in found)
        flops.append(sum(c.flops * r for c, r in found) / total if total else math.nan)
        moved.append(sum(c.bytes * r for c, r in found) / total if total else math.nan)
    return _rated(ops, flops, moved, peak)


def _rated(
    ops: pd.DataFrame, flops: list[float], moved: list[float], peak: tuple[float, float] | None
) -> pd.DataFrame:
    """`ops` with `flops` and bytes `moved` of one run of each, their rates over the rows'
    ``seconds`` of ``count`` runs, and bound against `peak`."""
    seconds = ops["seconds"].astype(float).where(ops["seconds"].astype(float) > 0)
    runs = ops["count"].astype(float) if "count" in ops.columns else 1.0
    return ops.assign(
        flops=flops,
        bytes=moved,
        flops_per_second=pd.Series(flops, index=ops.index) * runs / seconds,
        bytes_per_second=pd.Series(moved, index=ops.index) * runs / seconds,
        bound=pd.Series(
            [bound_of(f, b, peak) for f, b in zip(flops, moved, strict=True)],
            index=ops.index,
            dtype=object,
        ),
    )


def _programs_of_count(found: list[tuple[Any, int]], count: Any) -> list[tuple[Any, int]]:
    """The one subset of `found` (an op's cost in a program, that program's runs) whose runs
    add up to `count`; empty when none or several do."""
    matches = [
        chosen
        for size in range(1, len(found) + 1)
        for chosen in itertools.combinations(found, size)
        if sum(runs for _, runs in chosen) == count
    ]
    return list(matches[0]) if len(matches) == 1 else []


def _optimized_texts(graphs: pd.DataFrame) -> dict[str, str]:
    """graph name and HLO module name -> the latest optimized HLO text of that program."""
    texts: dict[str, str] = {}
    for kind, graph, text in zip(
        graphs["kind"].tolist(), graphs["graph"].tolist(), graphs["text"].tolist(), strict=True
    ):
        if kind != "hlo_optimized" or not isinstance(text, str) or not text.startswith("HloModule"):
            continue
        texts[str(graph)] = text
        texts.setdefault(hlo_module_name(text), text)
    return texts


def _program_keys(ops: pd.DataFrame, texts: dict[str, str]) -> pd.Series:
    keys = ops["graph"] if "graph" in ops.columns else pd.Series(None, index=ops.index)
    if "module" in ops.columns:
        known = keys.map(lambda key: isinstance(key, str) and key in texts)
        keys = keys.where(known, ops["module"])
    return keys.astype(object)
