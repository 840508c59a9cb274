"""The HLO text parser gives, on every recorded HLO fixture under ``tests/data``, the same
nodes, edges, scopes and costs (each column's digest) as the parser of commit 9b69c94 did,
before its fast paths (one match per common line, per-shape caches) were added. The digests
in ``tests/data/hlo_parse_golden.json`` were written by that commit's parser:
``python tests/unit/test_hlo_parse_golden.py`` rewrites them (only for a deliberate change)."""

from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from xlanb.graphs import ParseError, detect_kind, parse
from xlanb.graphs.hlo_cost import op_costs

DATA = Path(__file__).resolve().parent.parent / "data"
GOLDEN = DATA / "hlo_parse_golden.json"


def _plain(value: Any) -> Any:
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return value


def _digest(values: list[Any]) -> str:
    text = json.dumps([_plain(v) for v in values], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def hlo_fixtures() -> list[Path]:
    found = []
    for path in sorted(DATA.rglob("*.txt")):
        try:
            if detect_kind(path.read_text()) == "hlo":
                found.append(path)
        except ParseError:
            continue
    return found


def summary(path: Path) -> dict[str, Any]:
    text = path.read_text()
    graph = parse(text)
    entry: dict[str, Any] = {
        "nodes": len(graph.nodes),
        "edges": len(graph.edges),
        "scopes": len(graph.scopes),
    }
    for frame, name in ((graph.nodes, "nodes"), (graph.edges, "edges"), (graph.scopes, "scopes")):
        for column in frame.columns:
            entry[f"{name}.{column}"] = _digest(frame[column].tolist())
    costs = sorted((k, c.flops, c.bytes) for k, c in op_costs(text).items())
    entry["op_costs"] = _digest([[k, _plain(f), _plain(b)] for k, f, b in costs])
    return entry


GOLDEN_SUMMARIES: dict[str, dict[str, Any]] = (
    json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
)


def test_every_hlo_fixture_has_a_golden_summary() -> None:
    names = [str(p.relative_to(DATA)) for p in hlo_fixtures()]
    assert len(names) >= 30
    assert sorted(names) == sorted(GOLDEN_SUMMARIES)


@pytest.mark.parametrize("name", sorted(GOLDEN_SUMMARIES))
def test_parse_matches_the_recorded_parser(name: str) -> None:
    assert summary(DATA / name) == GOLDEN_SUMMARIES[name]


if __name__ == "__main__":
    written = {str(p.relative_to(DATA)): summary(p) for p in hlo_fixtures()}
    GOLDEN.write_text(json.dumps(written, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(written)} summaries to {GOLDEN}", file=sys.stderr)
