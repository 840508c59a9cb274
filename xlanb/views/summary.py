"""The plain summary of a Profile: text, an HTML fragment for notebooks, a standalone page."""

from __future__ import annotations

import html
import math
from typing import Any

import pandas as pd

from xlanb.profile import Profile


def format_seconds(seconds: float) -> str:
    """``1.23 s``, ``45.6 ms``, ``789 µs``: a duration in a readable unit."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"


def headline(profile: Profile) -> list[tuple[str, str]]:
    """(label, value) pairs of the summary line."""
    numbers = profile.summary()
    return [
        ("wall", format_seconds(numbers["wall_seconds"])),
        ("compiles", f"{numbers['compiles']} ({format_seconds(numbers['compile_seconds'])})"),
        ("executions",
         f"{numbers['executions']} ({format_seconds(numbers['execute_seconds'])})"),
        ("transfers", str(numbers["transfers"])),
        ("fallback ops", str(numbers["fallback_ops"])),
    ]


def with_code(profile: Profile, frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with a ``code`` column: the text of its ``cell_line`` in the profiled cell."""
    lines = profile.source.splitlines()
    code = [lines[int(n) - 1].strip() if not pd.isna(n) and 0 < int(n) <= len(lines) else ""
            for n in frame["cell_line"]]
    return frame.assign(code=code)


def _title(profile: Profile) -> str:
    backends = ", ".join(profile.backends) or "no runtime in use"
    status = " FAILED: " + profile.error if profile.failed else ""
    return f"xlanb profile {profile.name!s} [{backends}]{status}"


def summary_text(profile: Profile) -> str:
    lines = [_title(profile), "  " + " | ".join(f"{k}: {v}" for k, v in headline(profile))]
    for row in profile.findings.itertuples():
        lines.append(f"  [{row.severity}] {row.title}")
    if not profile.fallbacks.empty:
        lines.append("  CPU fallbacks:")
        for row in with_code(profile, profile.fallbacks).itertuples():
            where = f" line {row.cell_line}: {row.code}" if row.code else ""
            lines.append(f"    {row.op} ×{row.count} ({row.cause}){where}")
    if not profile.compiles.empty:
        lines.append("  compiles:")
        for row in profile.compiles.head(20).itertuples():
            line = f" line {row.cell_line}" if not pd.isna(row.cell_line) else ""
            lines.append(f"    {row.graph} {format_seconds(row.seconds)}{line}: {row.cause}")
    lines.extend("  note: " + note for note in profile.notes)
    return "\n".join(lines)


def _table(frame: pd.DataFrame, columns: list[str], highlight: bool = False) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = []
    for record in frame[columns].to_dict("records"):
        cells = "".join(f"<td>{_cell(record[c])}</td>" for c in columns)
        style = ' class="xlanb-bad"' if highlight else ""
        body.append(f"<tr{style}>{cells}</tr>")
    return f"<table class='xlanb-table'><thead><tr>{head}</tr></thead>" \
           f"<tbody>{''.join(body)}</tbody></table>"


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return html.escape(str(value))


_STYLE = """
.xlanb{font-family:system-ui,sans-serif;font-size:13px;color:inherit}
.xlanb-head span{margin-right:1.2em}.xlanb-head b{font-weight:600}
.xlanb-bad,.xlanb-bad td{color:#d62728}
.xlanb-table{border-collapse:collapse;margin:4px 0}
.xlanb-table td,.xlanb-table th{border:1px solid rgba(128,128,128,.4);padding:2px 6px;
text-align:left}
.xlanb-finding{margin:2px 0}.xlanb-sev-error{color:#d62728}.xlanb-sev-warning{color:#b8860b}
"""


def summary_html(profile: Profile) -> str:
    """An HTML fragment: the headline, findings, fallbacks and compiles, every value escaped."""
    numbers = profile.summary()
    head = []
    for label, value in headline(profile):
        bad = label == "fallback ops" and numbers["fallback_ops"] > 0
        css = ' class="xlanb-bad"' if bad else ""
        head.append(f"<span{css}><b>{html.escape(label)}</b> {html.escape(value)}</span>")
    parts = [f"<div class='xlanb'><style>{_STYLE}</style>",
             f"<div><b>{html.escape(_title(profile))}</b></div>",
             f"<div class='xlanb-head'>{''.join(head)}</div>"]
    for row in profile.findings.itertuples():
        parts.append(
            f"<div class='xlanb-finding xlanb-sev-{html.escape(str(row.severity))}'>"
            f"<b>{html.escape(str(row.severity))}</b>: {html.escape(str(row.title))}"
            f"<br><small>{html.escape(str(row.detail))} "
            f"<i>{html.escape(str(row.advice))}</i></small></div>")
    if not profile.fallbacks.empty:
        parts.append("<div><b>CPU fallbacks</b></div>")
        parts.append(_table(with_code(profile, profile.fallbacks),
                            ["backend", "op", "count", "cause", "cell_line", "code", "advice"],
                            highlight=True))
    if not profile.compiles.empty:
        parts.append("<div><b>Compiles</b></div>")
        parts.append(_table(profile.compiles.head(50),
                            ["backend", "graph", "cause", "seconds", "cell_line"]))
    for note in profile.notes:
        parts.append(f"<div><small>{html.escape(note)}</small></div>")
    parts.append("</div>")
    return "".join(parts)


def summary_page(profile: Profile) -> str:
    """A standalone page (no external resources) with the summary and every frame."""
    sections = [summary_html(profile)]
    for name, frame in profile.frames().items():
        if name in ("findings", "graphs", "samples") or frame.empty:
            continue
        sections.append(f"<h3>{html.escape(name)}</h3>")
        sections.append(_table(frame, list(frame.columns)))
    if not profile.graphs.empty:
        sections.append("<h3>graphs</h3>")
        for row in profile.graphs.itertuples():
            sections.append(f"<details><summary>{_cell(row.backend)} {_cell(row.graph)} "
                            f"({_cell(row.kind)}, {_cell(row.nodes)} nodes)</summary>"
                            f"<pre>{_cell(row.text)}</pre></details>")
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'>"
            f"<title>{html.escape(_title(profile))}</title></head>"
            f"<body>{''.join(sections)}</body></html>")


def comparison_html(comparison) -> str:
    """The difference between two profiles as HTML tables (escaped)."""
    def frame_table(frame: pd.DataFrame, index_name: str) -> str:
        flat = frame.reset_index()
        flat.columns = [index_name if str(c).startswith(("index", "level_")) else str(c)
                        for c in flat.columns]
        return _table(flat, list(flat.columns))

    a, b = comparison.a, comparison.b
    parts = [f"<div class='xlanb'><style>{_STYLE}</style>",
             f"<div><b>{html.escape(a.name)} → {html.escape(b.name)}</b> "
             "(a → b, change = b − a)</div>",
             frame_table(comparison.summary, "")]
    if not comparison.fallbacks.empty:
        parts += ["<div><b>CPU fallbacks</b></div>", frame_table(comparison.fallbacks, "op")]
    if not comparison.findings.empty:
        parts += ["<div><b>Findings</b></div>",
                  _table(comparison.findings, ["status", "title"])]
    if not comparison.counters.empty:
        changed = comparison.counters[comparison.counters["change"] != 0]
        parts += ["<details><summary>counters that changed</summary>",
                  frame_table(changed, "counter"), "</details>"]
    parts.append("</div>")
    return "".join(parts)
