"""Findings rank by their cost, and an error never below a finding of under 1% of the wall."""

from __future__ import annotations

from xlanb.analysis.findings import by_cost


def test_costliest_first_and_errors_above_minor_findings():
    rows = [
        {"severity": "warning", "title": "recompile 8 ms", "seconds": 0.008},
        {"severity": "error", "title": "24 CPU fallbacks"},
        {"severity": "warning", "title": "reads 0.5 s", "seconds": 0.5},
        {"severity": "info", "title": "note"},
        {"severity": "warning", "title": "transfers 0.2 s", "seconds": 0.2},
    ]
    titles = [row["title"] for row in by_cost(rows, wall_seconds=2.0)]
    assert titles == [
        "reads 0.5 s",
        "transfers 0.2 s",
        "24 CPU fallbacks",
        "recompile 8 ms",
        "note",
    ]
