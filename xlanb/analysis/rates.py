"""Achieved rates of each program: FLOP/s and bytes/s from XLA's cost analysis (or the count
from the optimized HLO where that is larger: XLA:GPU's cost analysis leaves cuBLAS calls out)
and the measured device time, against the device's peak, and what bounds the program."""

from __future__ import annotations

import math

import pandas as pd

from xlanb.analysis.roofline import bound_of, device_peak, program_counts
from xlanb.core.profile import Profile

#: A program whose runs last less than this on average is launch-bound: its time goes to
#: starting it, whatever its arithmetic.
LAUNCH_BOUND_SECONDS = 20e-6


def with_rates(profile: Profile) -> pd.DataFrame:
    """``executions`` with ``flops_per_second``, ``bytes_per_second`` and ``bound``
    (``compute``, ``memory``, ``launch``) where the graph has a cost analysis or optimized HLO
    (JAX) and measured device time; unchanged otherwise."""
    executions = profile.executions
    # XLA:CPU's cost analysis counts every op: its HLO is not read again
    complete = profile.environment.get("jax_platform") == "cpu"
    costs = program_costs(profile.graphs, count_hlo=not complete)
    if executions.empty or not costs:
        return executions
    by_program = {} if complete else _costs_by_module(profile.graphs)
    programs = (
        executions["module_id"]
        if "module_id" in executions.columns
        else pd.Series(None, index=executions.index, dtype=object)
    )
    flop_rates, byte_rates, bounds = [], [], []
    estimated = (
        executions["seconds_estimated"]
        if "seconds_estimated" in executions.columns
        else pd.Series(False, index=executions.index)
    )
    for row, guessed, program in zip(executions.itertuples(), estimated, programs, strict=True):
        flop_rate = byte_rate = math.nan
        bound = None
        cost = by_program.get(program) if pd.notna(program) else None
        cost = cost or costs.get(row.graph)
        if cost is not None and row.seconds and row.seconds > 0 and guessed is not True:
            flops, accessed, dtype = cost
            flop_rate = flops * row.count / row.seconds
            byte_rate = accessed * row.count / row.seconds
            if row.seconds / row.count < LAUNCH_BOUND_SECONDS:
                bound = "launch"
            elif accessed > 0:
                bound = bound_of(flops, accessed, device_peak(profile.environment, dtype))
        flop_rates.append(flop_rate)
        byte_rates.append(byte_rate)
        bounds.append(bound)
    return executions.assign(
        flops_per_second=flop_rates,
        bytes_per_second=byte_rates,
        bound=pd.Series(bounds, index=executions.index, dtype=object),
    )


def program_costs(
    graphs: pd.DataFrame, count_hlo: bool = True
) -> dict[str, tuple[float, float, str]]:
    """graph -> (FLOPs, bytes, matrix-product element type) of one run: the cost analysis's
    ``flops``/``bytes_accessed``, or (`count_hlo`) the count from the graph's optimized HLO
    where that has more FLOPs (or the cost analysis none). A function compiled for several
    shapes keeps its first program, as its executions' row counts them together."""
    if graphs.empty or "graph" not in graphs.columns:
        return {}
    found: dict[str, tuple[float, float, str]] = {}
    if "flops" in graphs.columns:
        analysed = graphs.dropna(subset=["flops"]).drop_duplicates("graph")
        for row in analysed.itertuples():
            accessed = getattr(row, "bytes_accessed", math.nan)
            found[str(row.graph)] = (float(row.flops), float(accessed), "")
    if count_hlo and "kind" in graphs.columns and "text" in graphs.columns:
        optimized = graphs[graphs["kind"] == "hlo_optimized"].drop_duplicates("graph")
        for row in optimized.itertuples():
            counted = _counted(row.text)
            if counted is None:
                continue
            analysed_flops = found.get(str(row.graph), (math.nan,))[0]
            if math.isnan(analysed_flops) or counted[0] > analysed_flops:
                found[str(row.graph)] = counted
            else:
                found[str(row.graph)] = (*found[str(row.graph)][:2], counted[2])
    return found


def _costs_by_module(graphs: pd.DataFrame) -> dict[int, tuple[float, float, str]]:
    """module id -> (FLOPs, bytes, matrix-product element type) of one run, counted from each
    optimized HLO with a module id (a trace's runs say which of a graph's programs ran)."""
    if graphs.empty or not {"kind", "text", "module_id"} <= set(graphs.columns):
        return {}
    optimized = graphs[(graphs["kind"] == "hlo_optimized") & graphs["module_id"].notna()]
    found = {}
    for row in optimized.itertuples():
        counted = _counted(row.text)
        if counted is not None:
            found[int(row.module_id)] = counted
    return found


def _counted(text: object) -> tuple[float, float, str] | None:
    if not isinstance(text, str) or not text.startswith("HloModule"):
        return None
    try:
        flops, moved, dtype = program_counts(text)
    except Exception:  # a module the reader does not follow: the cost analysis stands
        return None
    return None if math.isnan(flops) else (flops, moved, dtype)
