"""`forced_sync_places` sums each read place's counts in plain Python: the same frame as
pandas' ``groupby(dropna=False, sort=False).sum()`` and a stable sort, most first."""

from __future__ import annotations

import pandas as pd
import pytest

from xlanb.analysis.attribution import cell_place, forced_sync_places
from xlanb.core.schema import make_frame

LIB = "site-packages/torch/nn/utils/clip_grad.py:71 (clip_grad_norm_)"
CELL = "/tmp/ipykernel_1/123.py:4 (<module>)"


def _by_pandas(placed: pd.DataFrame) -> pd.DataFrame:
    return (
        placed.assign(cell_line=placed["cell_line"].astype("Int64"))
        .groupby(["backend", "read_at", "cell_line"], dropna=False, sort=False)["count"]
        .sum()
        .reset_index()
        .sort_values("count", ascending=False, kind="stable")
        .reset_index(drop=True)
    )


def _reads(rows: list[tuple[str, str, int | None, int]]) -> pd.DataFrame:
    return make_frame(
        "fallbacks",
        [
            {
                "backend": backend,
                "op": "aten::_local_scalar_dense",
                "count": count,
                "cause": "item",
                "advice": "",
                "location": "",
                "read_at": read_at,
                "cell_line": line,
            }
            for backend, read_at, line, count in rows
        ],
    )


CASES = {
    "one read": [("torch_xla", CELL, 4, 1)],
    "summed, ties in first-seen order": [
        ("torch_xla", CELL, 4, 2),
        ("torch_xla", LIB, 3, 5),
        ("torch_xla", CELL, 4, 3),
        ("torch_xla", LIB, None, 5),
        ("torch_lazy", CELL, 4, 1),
    ],
    "most first": [("torch_xla", CELL, 2, 1), ("torch_xla", LIB, 3, 4)],
    "unknown cell lines together": [
        ("torch_xla", LIB, None, 1),
        ("torch_xla", CELL, 2, 1),
        ("torch_xla", LIB, None, 7),
    ],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_places_equal_pandas_groupby(case):
    reads = _reads(CASES[case])
    places = forced_sync_places(make_frame("executions", []), reads)
    expected = _by_pandas(reads)
    assert places["library"].tolist() == [
        p.startswith("site-packages") for p in expected["read_at"]
    ]
    expected["read_at"] = [
        cell_place(place, line)
        for place, line in zip(expected["read_at"], expected["cell_line"], strict=True)
    ]
    pd.testing.assert_frame_equal(places[expected.columns.tolist()], expected)
