"""make_frame gives the frame of the column-by-column pandas recipe
(:func:`tests.support.frames.reference_frame`) for rows that lack required columns of every
dtype, integers with nulls, text in a numeric column and optional columns only some rows
have (real captures' rows: tests/runtime/test_end_of_cell.py)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.support.frames import reference_frame
from xlanb.core.schema import make_frame

CASES = {
    "no required column": ("compiles", [{"seconds": 0.5}, {"seconds": None}]),
    "integers with nulls": (
        "executions",
        [
            {"backend": "jax", "graph": "jit(f)", "count": 3, "step": 7},
            {"backend": "jax", "graph": "jit(g)", "count": None},
        ],
    ),
    "text in a numeric column": (
        "executions",
        [{"backend": "jax", "count": "many"}, {"backend": "jax", "count": None}],
    ),
    "optional columns in some rows": (
        "findings",
        [
            {"severity": "info", "title": "a", "detail": "", "advice": ""},
            {"severity": "warning", "title": "b", "detail": "", "advice": "", "seconds": 0.1},
        ],
    ),
    "booleans with nulls": (
        "compiles",
        [{"backend": "jax", "eager": True}, {"backend": "jax", "eager": None}],
    ),
    "NaN, NA and NaT as nulls": (
        "executions",
        [
            {"backend": "jax", "count": float("nan"), "seconds": 1.0},
            {"backend": "jax", "count": 2, "seconds": pd.NA, "step": pd.NaT},
        ],
    ),
    "no nulls in a few rows": (
        "executions",
        [{"backend": "jax", "count": 2, "seconds": 1.0}, {"backend": "jax", "count": 3}],
    ),
    "a list in a numeric column": ("executions", [{"backend": "jax", "count": [1, 2]}]),
    "more than a few rows, one null": (
        "executions",
        [{"backend": "jax", "count": index} for index in range(20)]
        + [{"backend": "jax", "count": None}],
    ),
    "keys in another order": (
        "counters",
        [{"delta": 2, "name": "n", "backend": "jax"}, {"backend": "jax", "name": "m", "rank": 1}],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_make_frame_builds_the_reference_frame(case):
    name, rows = CASES[case]
    pd.testing.assert_frame_equal(make_frame(name, rows), reference_frame(name, rows))
