"""The frame schema (xlanb/core/schema.py): README is generated from it, strict mode refuses
undeclared columns, make_frame types optional columns, and every column the recorded fixtures
give is declared."""

from __future__ import annotations

import copy
import json
import math
import warnings
from pathlib import Path

import pandas as pd
import pytest

import xlanb
from tests.support.helpers import ROOT
from xlanb.analysis import derive
from xlanb.core.errors import SchemaError, XlanbError
from xlanb.core.schema import (
    DTYPES,
    FRAME_COLUMNS,
    FRAME_NAMES,
    SCHEMA,
    STRICT_ENV,
    WRITERS,
    columns_of,
    empty_frame,
    make_frame,
    markdown_table,
    undeclared,
)
from xlanb.offline.ranks import merge

DATA = ROOT / "tests" / "data"


def test_schema_is_consistent():
    for name, columns in SCHEMA.items():
        names = [c.name for c in columns]
        assert len(names) == len(set(names)), name
        for column in columns:
            assert column.dtype in DTYPES, (name, column)
            assert column.writers and set(column.writers) <= set(WRITERS), (name, column)
            assert column.meaning, (name, column)
    for name in FRAME_NAMES:
        assert FRAME_COLUMNS[name] == [c.name for c in SCHEMA[name] if c.required]
        assert list(empty_frame(name).columns) == FRAME_COLUMNS[name]
    assert FRAME_COLUMNS["compiles"] == [
        "backend",
        "graph",
        "cause",
        "seconds",
        "time",
        "trigger",
        "location",
        "cell_line",
    ]


def test_markdown_table_lists_every_column():
    table = markdown_table()
    for name, columns in SCHEMA.items():
        assert f"**`{name}`**" in table
        for column in columns:
            label = f"**`{column.name}`**" if column.required else f"`{column.name}`"
            assert f"| {label} | {column.dtype} |" in table, (name, column.name)


# -- make_frame --------------------------------------------------------------------------------
def test_strict_mode_rejects_an_undeclared_column(monkeypatch):
    rows = [
        {
            "backend": "jax",
            "graph": "jit(f)",
            "cause": "never seen function",
            "trace_secs": 0.1,
            "zzz": 1,
        }
    ]
    monkeypatch.setenv(STRICT_ENV, "1")
    with pytest.raises(SchemaError) as raised:
        make_frame("compiles", rows)
    assert isinstance(raised.value, XlanbError)
    assert raised.value.frame == "compiles" and raised.value.columns == ["trace_secs", "zzz"]
    assert "'compiles'" in str(raised.value) and "'trace_secs'" in str(raised.value)
    # read on every call: off again, the column is kept after the required ones
    monkeypatch.setenv(STRICT_ENV, "0")
    frame = make_frame("compiles", rows)
    assert list(frame.columns) == FRAME_COLUMNS["compiles"] + ["trace_secs", "zzz"]


def test_strict_mode_accepts_declared_optional_columns(monkeypatch):
    monkeypatch.setenv(STRICT_ENV, "1")
    frame = make_frame(
        "findings",
        [
            {
                "severity": "warning",
                "title": "t",
                "detail": "d",
                "advice": "a",
                "rank": 1,
                "ranks": "1",
            }
        ],
    )
    assert list(frame.columns) == ["severity", "title", "detail", "advice", "rank", "ranks"]


def test_make_frame_types_declared_optional_columns():
    frame = make_frame(
        "compiles",
        [
            {
                "backend": "jax",
                "graph": "jit(f)",
                "cause": "never seen function",
                "seconds": 0.5,
                "time": 1.0,
                "trace_seconds": 0.1,
                "compile_id": 7,
                "explanation": "why",
            },
            {
                "backend": "torch_xla",
                "graph": "abc",
                "cause": "new graph",
                "seconds": 0.2,
                "time": 2.0,
                "inputs": None,
            },
        ],
    )
    assert list(frame.columns)[:8] == FRAME_COLUMNS["compiles"]
    assert set(frame.columns[8:]) == {"trace_seconds", "compile_id", "explanation", "inputs"}
    assert frame["trace_seconds"].dtype == "float64" and math.isnan(frame["trace_seconds"][1])
    assert frame["compile_id"].dtype == "Int64" and frame["compile_id"][0] == 7
    assert frame["compile_id"][1] is pd.NA
    assert frame["inputs"].dtype == "Int64"  # all missing: typed nulls, not object None
    assert frame["cell_line"].dtype == "Int64" and frame["location"].isna().all()


def test_make_frame_adds_no_optional_column_that_no_row_has():
    frame = make_frame(
        "executions",
        [{"backend": "torch_xla", "graph": "g", "seconds": 0.1, "time": 1.0, "count": 1}],
    )
    assert list(frame.columns) == FRAME_COLUMNS["executions"]
    assert list(make_frame("graphs", []).columns) == FRAME_COLUMNS["graphs"]


def test_make_frame_leaves_columns_that_do_not_convert():
    frame = make_frame(
        "executions",
        [
            {
                "backend": "jax",
                "graph": "g",
                "seconds": 0.1,
                "time": 1.0,
                "count": 1,
                "mean_seconds": "n/a",
            },
            {"backend": "jax", "graph": "h", "seconds": 0.1, "time": 1.0, "count": 1},
        ],
    )
    assert list(frame["mean_seconds"])[0] == "n/a"


# -- what the writers really write -------------------------------------------------------------
def _inputs() -> list[Path]:
    """Every recorded file and directory (a saved profile, reports, a metrics file, a debug
    file, XLA dumps and one HLO module file)."""
    one_module = sorted((DATA / "jax_dump").glob("*.jit_step.cpu_after_optimizations.txt"))
    return [
        *sorted((DATA / "torch_xla").iterdir()),
        DATA / "jax_dump",
        *one_module[:1],
        *sorted(DATA.glob("*.txt")),
    ]


def _compatible(dtype: str, series: pd.Series) -> bool:
    values = series.dropna()
    if values.empty:
        return True
    if dtype == "float64":
        return pd.api.types.is_float_dtype(series)
    if dtype in ("int64", "Int64"):
        return pd.api.types.is_integer_dtype(series)
    if dtype == "bool":
        return pd.api.types.is_bool_dtype(series) or all(isinstance(v, bool) for v in values)
    return not pd.api.types.is_numeric_dtype(series) or isinstance(
        series.dtype, pd.CategoricalDtype
    )


def _check_declared(profile: xlanb.Profile, source: str) -> None:
    for name, frame in profile.frames().items():
        assert undeclared(name, frame.columns) == [], (source, name)
        declared = columns_of(name)
        for column in frame.columns:
            assert _compatible(declared[column].dtype, frame[column]), (
                source,
                name,
                column,
                str(frame[column].dtype),
            )


@pytest.mark.parametrize("path", _inputs(), ids=lambda p: str(p.relative_to(DATA)))
def test_every_column_of_a_fixture_is_declared(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        profile = xlanb.load(path)
    _check_declared(profile, str(path))


def test_every_column_of_merged_ranks_is_declared():
    document = json.loads((DATA / "torch_xla" / "live.xlanb.json").read_text())
    documents = []
    for rank in range(2):
        ranked = copy.deepcopy(document)
        ranked["meta"]["environment"]["rank"] = {
            "rank": rank,
            "world_size": 3,
            "run_id": "schema-test",
        }
        ranked["file"] = f"run.rank{rank:05d}.xlanb.json"
        documents.append(ranked)
    profile = derive(merge(documents))
    assert list(profile.compiles.columns)[0] == "rank"
    assert "ranks" in profile.findings.columns  # rank 2 is missing: a finding
    _check_declared(profile, "merged ranks")
