"""The torch runtimes' counters: their categories, the CPU fallbacks they reveal (with cause
and advice), and ``metrics`` rows from a runtime's accumulators and samples."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

# -- counters ------------------------------------------------------------------------------
_COMPILE_COUNTERS = {"CachedCompile", "UncachedCompile", "CreateCompileHandles"}
_EXECUTE_COUNTERS = {"ExecuteComputation", "MarkStep", "ExecuteReplicated", "ExecuteParallel"}
_TRANSFER_COUNTERS = {
    "xla::_to_cpu",
    "lazy::_to_copy",
    "lazy::_copy_from",
    "xla::_copy_from",
    "TransferToServer",
    "TransferFromServer",
}


def counter_category(name: str) -> str:
    """The category of a runtime counter (one of ``COUNTER_CATEGORIES``)."""
    if name.startswith("aten::"):
        return "fallback"
    if name in _COMPILE_COUNTERS:
        return "compile"
    if name in _EXECUTE_COUNTERS:
        return "execute"
    if name in _TRANSFER_COUNTERS or "Transfer" in name:
        return "transfer"
    if name.startswith(("xla::", "lazy::")):
        return "lowered_op"
    if "Tensor" in name:
        return "tensor"
    return "other"


def counter_rows(
    backend: str, before: dict[str, int], after: dict[str, int]
) -> list[dict[str, Any]]:
    """One row per counter that changed between two snapshots (deltas, never a reset)."""
    rows: list[dict[str, Any]] = []
    for name, total in after.items():
        delta = total - before.get(name, 0)
        if delta:
            rows.append(
                {
                    "backend": backend,
                    "name": name,
                    "category": counter_category(name),
                    "delta": int(delta),
                    "total": int(total),
                }
            )
    rows.sort(key=lambda r: (r["category"], -r["delta"], r["name"]))
    return rows


# -- fallbacks -----------------------------------------------------------------------------
_DYNAMIC_SHAPE_OPS = {
    "nonzero",
    "masked_select",
    "_unique2",
    "unique",
    "unique_dim",
    "unique_consecutive",
    "index.Tensor",
    "masked_scatter",
    "argwhere",
    "index_put_",
    "_unique",
}

FALLBACK_ADVICE = {
    "item": "Keep values as tensors: compare and branch with torch.where instead of .item(), "
    "and log scalars every N steps (or with a step closure) rather than every step.",
    "dynamic_shape": "The output shape depends on the data, so the graph is cut and the op runs "
    "on the CPU. Use fixed-shape forms: torch.where(mask, x, 0) instead of "
    "x[mask], multiply by the mask instead of nonzero/masked_select, pad to a "
    "fixed size.",
    "missing_lowering": "This op has no lowering on this runtime and runs on the CPU, with a "
    "sync and two transfers each time. Replace it with lowered ops, or "
    "report it upstream (PyTorch/XLA: open an issue naming the op).",
}


def fallback_cause(op: str) -> str:
    """Why an ``aten::`` op fell back to the CPU: ``item``, ``dynamic_shape`` or
    ``missing_lowering``."""
    bare = op.removeprefix("aten::")
    if bare == "_local_scalar_dense":
        return "item"
    if bare in _DYNAMIC_SHAPE_OPS:
        return "dynamic_shape"
    return "missing_lowering"


def fallback_rows(
    backend: str, counter_delta_rows: Iterable[dict[str, Any]]
) -> list[dict[str, Any]]:
    rows = []
    for row in counter_delta_rows:
        if row["category"] != "fallback":
            continue
        cause = fallback_cause(row["name"])
        rows.append(
            {
                "backend": backend,
                "op": row["name"],
                "count": row["delta"],
                "cause": cause,
                "advice": FALLBACK_ADVICE[cause],
            }
        )
    rows.sort(key=lambda r: -r["count"])
    return rows


# -- metrics -------------------------------------------------------------------------------
def metric_row(
    backend: str, name: str, unit: str, count: int, total: float, values: Sequence[float]
) -> dict[str, Any]:
    """A ``metrics`` row: count and total from the runtime's own accumulators (exact even when
    the sample buffer dropped old samples), percentiles from the samples in the cell."""
    if len(values):
        p50, p90, p99, largest = _percentiles(values)
    else:
        p50 = p90 = p99 = largest = math.nan
    return {
        "backend": backend,
        "name": name,
        "unit": unit,
        "count": int(count),
        "total": float(total),
        "mean": float(total) / count if count else math.nan,
        "p50": float(p50),
        "p90": float(p90),
        "p99": float(p99),
        "max": largest,
    }


#: At most this many samples are sorted in plain Python for their percentiles.
_FEW_SAMPLES = 256
#: The percentiles of a ``metrics`` row, as fractions (``np.true_divide(q, 100)``).
_QUANTILES = (50 / 100, 90 / 100, 99 / 100)


def _percentiles(values: Sequence[float]) -> tuple[float, float, float, float]:
    """(p50, p90, p99, max) of `values`: ``np.percentile(values, [50, 90, 99])`` to the last
    bit (its linear method's index, weight and interpolation, in the same float operations)
    in plain Python, which costs a fraction of numpy's fixed cost on a cell's few hundred
    samples; numpy itself on more (its partition beats a sort) or where a value is NaN."""
    ordered = sorted(map(float, values)) if len(values) <= _FEW_SAMPLES else []
    if not ordered or any(value != value for value in ordered):  # NaN: numpy's own rules
        array = np.asarray(values, dtype=float)
        p50, p90, p99 = np.percentile(array, [50, 90, 99])
        return float(p50), float(p90), float(p99), float(array.max())
    last = len(ordered) - 1
    found = []
    for quantile in _QUANTILES:
        index = last * quantile
        below = math.floor(index)
        if index >= last:
            found.append(ordered[last])
            continue
        weight = index - below
        low, high = ordered[below], ordered[below + 1]
        step = high - low
        found.append(high - step * (1 - weight) if weight >= 0.5 else low + step * weight)
    return found[0], found[1], found[2], ordered[last]
