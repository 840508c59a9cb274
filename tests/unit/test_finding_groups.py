"""The finding rules group a cell's few fallback rows in plain Python: the same groups, in the
same order and with the same rows, as ``groupby(column, sort=False)``."""

from __future__ import annotations

import pandas as pd
import pytest

from xlanb.analysis.findings.common import groups
from xlanb.core.schema import make_frame


def _fallbacks(rows: list[tuple[str | None, str, int]]) -> pd.DataFrame:
    return make_frame(
        "fallbacks",
        [
            {
                "backend": "torch_xla",
                "op": op,
                "count": count,
                "cause": cause,
                "advice": "",
                "location": "",
                "cell_line": index + 1,
            }
            for index, (cause, op, count) in enumerate(rows)
        ],
    )


CASES = {
    "one row": [("item", "aten::_local_scalar_dense", 1)],
    "interleaved causes and ops": [
        ("missing_lowering", "aten::median", 2),
        ("item", "aten::_local_scalar_dense", 3),
        ("missing_lowering", "aten::nonzero", 1),
        ("dynamic_shape", "aten::nonzero", 4),
        ("missing_lowering", "aten::median", 5),
    ],
    "a null cause left out": [("item", "aten::_local_scalar_dense", 1), (None, "aten::x", 2)],
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("column", ["cause", "op"])
def test_groups_equal_pandas_groupby(case, column):
    frame = _fallbacks(CASES[case])
    ours = groups(frame, column)
    theirs = list(frame.groupby(column, sort=False))
    assert [key for key, _ in ours] == [key for key, _ in theirs]
    for (_, mine), (_, expected) in zip(ours, theirs, strict=True):
        pd.testing.assert_frame_equal(mine, expected)
