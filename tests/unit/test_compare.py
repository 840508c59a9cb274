"""Comparing two profiles: headline numbers with units, % and ×; findings matched by kind."""

from __future__ import annotations

from pathlib import Path

import xlanb
from xlanb.analysis.compare import compare, finding_kind
from xlanb.core.profile import Profile, make_frame
from xlanb.views.compare import change_text
from xlanb.views.html import comparison_html

XLA = Path(__file__).parent.parent / "data" / "torch_xla"


def _with_findings(name: str, titles: list[str]) -> Profile:
    rows = [{"severity": "warning", "title": t, "detail": "", "advice": ""} for t in titles]
    return Profile(name=name, findings=make_frame("findings", rows))


def test_findings_of_the_same_kind_are_one_changed_row():
    assert finding_kind("20 values read back to the host (syncs) (cell line 6)") == finding_kind(
        "1 value read back to the host (syncs) (cell line 14)"
    )
    a = _with_findings(
        "before",
        ["20 values read back to the host (syncs) (cell line 6)", "3 recompilations from x"],
    )
    b = _with_findings(
        "after", ["1 value read back to the host (syncs) (cell line 14)", "2 graphs differ"]
    )
    rows = compare(a, b).findings.to_dict("records")
    assert rows == [
        {"title": "3 recompilations from x", "status": "gone", "change": ""},
        {
            "title": "1 value read back to the host (syncs) (cell line 14)",
            "status": "changed",
            "change": "20 → 1",
        },
        {"title": "2 graphs differ", "status": "added", "change": ""},
    ]


def test_changes_are_written_with_units_percent_and_ratio():
    assert change_text("compiles", 7, 2) == "−5 (−71%)"
    assert change_text("compile_seconds", 0.4, 0.1) == "−300.0 ms (−75%, 0.25×)"
    assert change_text("execute_seconds", 0.01, 0.5) == "+490.0 ms (+4900%, 50×)"
    assert change_text("wall_seconds", 1.0, 1.034) == "+34.0 ms (+3%, 1.03×)"  # not "1×"
    assert change_text("syncs", 0, 3) == "+3 (new)"
    assert change_text("transfers", 4, 4) == "="
    assert change_text("wall_seconds", 0, 0) == "-"


def test_offline_comparison_reads_as_text_and_html():
    a = xlanb.load(XLA / "report.txt")
    b = xlanb.load(XLA / "metrics.txt")
    text = repr(compare(a, b))
    assert "compile time    388.4 ms    171.4 ms     −217.0 ms (−56%, 0.44×)" in text
    assert "wall            -           -            -" in text
    html = comparison_html(compare(a, b))
    assert "compile_seconds" not in html and "<td>compile time</td>" in html


def test_left_the_device_and_the_chart_name_the_profiles_and_kinds():
    """The "Left the device" table's columns are the two profiles' names (they were `a` and
    `b`), and the chart's labels are the headline's (it showed `fallback_ops`)."""
    from xlanb.views.charts import comparison_figure

    a, b = xlanb.load(XLA / "report.txt"), xlanb.load(XLA / "metrics.txt")
    comparison = compare(a, b)
    assert not comparison.fallbacks.empty
    html = comparison_html(comparison)
    left = html.split("Left the device", 1)[1].split("</tr>", 1)[0]
    assert "<th>report.txt</th>" in left and "<th>metrics.txt </th>" in left
    assert "<th>a</th>" not in left and "<th>b</th>" not in left
    labels = {x for trace in comparison_figure(comparison)["data"] for x in trace["x"]}
    assert "CPU fallbacks" in labels and not any("_" in label for label in labels), labels
