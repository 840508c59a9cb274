"""A ``metrics`` row's percentiles are numpy's (``np.percentile(values, [50, 90, 99])`` and
the largest) to the last bit, whether computed in plain Python (a cell's few hundred samples)
or by numpy (more, or a NaN among them)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from xlanb.formats.counters import metric_row

SIZES = [1, 2, 3, 4, 7, 10, 11, 99, 100, 101, 127, 203, 255, 256, 257, 1024]


def _samples(kind: str, size: int) -> list[float]:
    rng = np.random.default_rng(size)
    if kind == "normal":
        return rng.normal(size=size).tolist()
    if kind == "ties":
        return rng.integers(0, 4, size=size).astype(float).tolist()
    if kind == "durations":
        return (rng.integers(1, 1 << 40, size=size) * 1e-9).tolist()
    return np.round(rng.exponential(1e-3, size=size), 6).tolist()


@pytest.mark.parametrize("kind", ["normal", "ties", "durations", "rounded"])
@pytest.mark.parametrize("size", SIZES)
def test_percentiles_are_numpys_to_the_last_bit(kind, size):
    values = _samples(kind, size)
    row = metric_row("torch_xla", "ExecuteTime", "s", size, sum(values), values)
    p50, p90, p99 = np.percentile(np.asarray(values), [50, 90, 99])
    assert (row["p50"], row["p90"], row["p99"], row["max"]) == (
        float(p50),
        float(p90),
        float(p99),
        float(np.max(values)),
    )


def test_a_nan_sample_gives_numpys_answer_and_no_samples_give_nans():
    row = metric_row("torch_xla", "ExecuteTime", "s", 3, 3.0, [1.0, math.nan, 2.0])
    assert all(math.isnan(row[key]) for key in ("p50", "p90", "p99", "max"))
    empty = metric_row("torch_xla", "ExecuteTime", "s", 0, 0.0, [])
    assert all(math.isnan(empty[key]) for key in ("mean", "p50", "p90", "p99", "max"))
