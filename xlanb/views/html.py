"""HTML of a Profile: the fragment shown under a profiled cell, a comparison, a standalone page.

Everything is plain HTML with ``<details>`` sections, so it reads the same in JupyterLab,
Notebook 7, VS Code, an nbconvert export and a notebook reopened without its kernel. One small
inline script makes tables sortable where scripts run; without it they are still tables. Every
value is escaped.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from xlanb.core.profile import Profile, is_multi_rank
from xlanb.core.units import format_bytes
from xlanb.core.words import bytes_on_each_device, magic_command
from xlanb.graphs import diff
from xlanb.views.compare import summary_rows, verdict
from xlanb.views.escape import cell, escape
from xlanb.views.graph_viewer import graph_fragment, graph_views, overlay_fragment, viewer_assets
from xlanb.views.graph_viewer.html import KIND_LABELS
from xlanb.views.graph_viewer.payload import least_packed_size
from xlanb.views.ranks import ranks_section
from xlanb.views.scrolling import scrolling
from xlanb.views.summary import (
    ALARM_KIND,
    ALARM_LABEL,
    BUCKET_COLOURS,
    FINDING_COLUMNS,
    account_line,
    account_parts,
    cell_codes,
    file_and_line,
    finding_cost,
    format_seconds,
    graph_names,
    headline,
    host_kind,
    rows_of,
    runs_texts,
    shown_top_ops,
    steps_line,
    title,
    top_op_table_columns,
    trace_coverage,
    with_code,
)

if TYPE_CHECKING:
    from xlanb.views.graph_viewer.patch import PagePayloads

STYLE = """
.xlanb{font-family:system-ui,-apple-system,sans-serif;font-size:13px;color:inherit;
line-height:1.4}
.xlanb-title{font-weight:600}.xlanb-failed{color:#d62728}
.xlanb-head{margin:2px 0 6px}
.xlanb-head b{font-weight:600}
.xlanb-bad,.xlanb-bad td{color:#d62728}
.xlanb-table{border-collapse:collapse;margin:4px 0 8px}
.xlanb .xlanb-table td,.xlanb .xlanb-table th{border:1px solid rgba(136,136,136,.35);
padding:2px 6px;text-align:left;vertical-align:top}
.xlanb-table th{cursor:pointer;user-select:none}
.xlanb-table code{white-space:pre}
.xlanb details{margin:2px 0}.xlanb summary{cursor:pointer;font-weight:600}
.xlanb pre{max-height:24em;overflow:auto;font-size:12px}
.xlanb-note{opacity:.75;font-size:12px}
"""

# Click a header to sort by that column (numbers numerically); tables stay plain without JS.
SORT_SCRIPT = """
(function(){var root=document.currentScript&&document.currentScript.parentElement;
if(!root)return;root.querySelectorAll('table.xlanb-sortable').forEach(function(t){
t.querySelectorAll('th').forEach(function(th,i){th.addEventListener('click',function(){
var body=t.tBodies[0],rows=Array.from(body.rows),asc=th.dataset.asc!=='1';
th.dataset.asc=asc?'1':'0';rows.sort(function(a,b){var x=a.cells[i].dataset.v||
a.cells[i].textContent,y=b.cells[i].dataset.v||b.cells[i].textContent,
nx=parseFloat(x),ny=parseFloat(y);var c=(!isNaN(nx)&&!isNaN(ny))?nx-ny:x.localeCompare(y);
return asc?c:-c;});rows.forEach(function(r){body.appendChild(r);});});});});})();
"""


#: A table cell kept to one line, at most `{width}` em wide (inline: it reads in untrusted
#: notebooks too).
CLIPPED_STYLE = "max-width:{width}em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap"


def table(
    frame: pd.DataFrame | Mapping[str, Sequence[Any]],
    columns: list[str],
    *,
    highlight: bool | list[bool] = False,
    sortable: bool = False,
    code_columns: tuple[str, ...] = ("code",),
    clipped_columns: tuple[str, ...] | dict[str, float] = (),
    tooltips: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """An HTML table of `columns` of `frame` (a DataFrame, or the values of each column by
    name; `highlight`: all rows red, or those marked); `clipped_columns` keep to one line, cut
    with an ellipsis at 18 em (or the width given, in em), the whole text in a tooltip (or
    the one `tooltips` gives the column's cells)."""
    widths = (
        clipped_columns if isinstance(clipped_columns, dict) else dict.fromkeys(clipped_columns, 18)
    )
    classes = "xlanb-table" + (" xlanb-sortable" if sortable else "")
    head = "".join(f"<th>{escape(str(c))}</th>" for c in columns)
    # a column at a time, as Python values: a row at a time through pandas cost ~1 ms a table
    by_column = [
        _column_cells(_values(frame[c]), c in code_columns, widths.get(c), (tooltips or {}).get(c))
        for c in columns
    ]
    count = len(frame) if isinstance(frame, pd.DataFrame) else len(by_column[0]) if columns else 0
    marks = highlight if isinstance(highlight, list) else [highlight] * count
    rows = zip(*by_column, strict=True) if columns else ((),) * count
    body = "".join(
        f"<tr{_BAD_ROW if marked else ''}>{''.join(row)}</tr>"
        for marked, row in zip(marks, rows, strict=True)
    )
    return scrolling(
        f"<table class='{classes}'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


_BAD_ROW = ' class="xlanb-bad"'


def _values(column: pd.Series | Sequence[Any]) -> list[Any]:
    """A column's values as Python objects (numpy scalars as Python numbers)."""
    return column.tolist() if isinstance(column, pd.Series) else list(column)


def _column_cells(
    values: list[Any], code: bool, width: float | None, tooltips: Sequence[str] | None = None
) -> list[str]:
    """The ``<td>`` of each value of one column: escaped, in ``<code>`` for a code column,
    kept to one line `width` em wide for a clipped one, with its whole text (or its one of
    `tooltips`) in a tooltip."""
    texts = [cell(value) for value in values]
    shown = (
        [f"<code style='white-space:pre'>{t}</code>" if t else t for t in texts] if code else texts
    )
    if width is None:
        return [f"<td>{t}</td>" for t in shown]
    style = CLIPPED_STYLE.format(width=f"{width:g}")
    wholes = texts if tooltips is None else [cell(tooltip) for tooltip in tooltips]
    return [
        f"<td title='{whole}' style='{style}'>{t}</td>" if t else "<td></td>"
        for t, whole in zip(shown, wholes, strict=True)
    ]


def _section(label: str, count: int, content: str, open_: bool = False) -> str:
    state = " open" if open_ else ""
    return f"<details{state}><summary>{escape(label)} ({count})</summary>{content}</details>"


def _account(profile: Profile) -> str:
    """The time account as a line and a bar (inline styles: it reads untrusted too)."""
    line = account_line(profile)
    if not line:
        return ""
    segments = "".join(
        f"<span title='{escape(bucket)} {escape(format_seconds(seconds))}' "
        f"style='display:inline-block;height:8px;width:{share * 100:.2f}%;"
        f"background:{BUCKET_COLOURS.get(bucket, '#757575')}'></span>"
        for bucket, seconds, share in account_parts(profile)
    )
    steps = steps_line(profile)
    steps_html = (
        f"<div class='xlanb-steps' data-field='steps' style='margin:2px 0'>{escape(steps)}</div>"
        if steps
        else ""
    )
    return (
        f"<div class='xlanb-account' data-field='account' style='margin:2px 0'>"
        f"{escape(line)}</div><div class='xlanb-bar' style='width:100%;max-width:40em;"
        f"white-space:nowrap;overflow:hidden;line-height:0'>{segments}</div>{steps_html}"
    )


def _top_ops(profile: Profile) -> str:
    if profile.ops.empty:
        return ""
    columns = top_op_table_columns(profile)
    values = shown_top_ops(profile)
    values["runs"] = runs_texts(values)  # before the seconds it reads become text
    values["seconds"] = [format_seconds(s) for s in values["seconds"]]
    values["share"] = [f"{s * 100:.1f}%" for s in values["share"]]
    places = values["where"]
    values["where"] = [file_and_line(place) for place in places]
    coverage = trace_coverage(profile)
    return _section(
        f"Top ops (device time; {coverage})" if coverage else "Top ops (device time)",
        len(profile.ops),
        table(
            values,
            columns,
            sortable=True,
            # one line a row, as wide as a notebook's output: long texts cut, whole in a tooltip
            clipped_columns={
                "op": 10,
                "program": 12,
                "seconds": 6,
                "runs": 20,
                "where": 12,
                "code": 20,
                "op_name": 16,
            },
            tooltips={"where": places},
        ),
        open_=True,
    )


#: Inline styles of the first screen (headline, findings): the only styles they have, so they
#: read the same untrusted, where JupyterLab drops the <style> element but keeps these.
_HEAD_SPAN = "margin-right:1.4em;white-space:nowrap"
_RED = "color:#d62728"
_SEVERITY_COLOURS = {"error": "#d62728", "warning": "#c08a00", "info": "#888888"}


def _findings(profile: Profile) -> str:
    parts = []
    for row in rows_of(profile.findings, FINDING_COLUMNS):
        severity = escape(str(row.severity))
        colour = _SEVERITY_COLOURS.get(str(row.severity), "#888888")
        advice = str(row.advice) if isinstance(row.advice, str) else ""
        advice_html = f"<br><b>Advice:</b> {escape(advice)}" if advice else ""
        parts.append(
            f"<div class='xlanb-finding xlanb-sev-{severity}' style='margin:3px 0;"
            f"padding-left:6px;border-left:3px solid {colour}'>"
            f"<span class='xlanb-sev' style='font-weight:600;font-size:11px;color:{colour}'>"
            f"{severity.upper()}</span> <b data-field='cost'>"
            f"{escape(finding_cost(row))}</b>{escape(str(row.title))}"
            f"<br><small>{escape(str(row.detail))}{advice_html}</small></div>"
        )
    return "".join(parts)


def _with_rank(frame: pd.DataFrame, columns: list[str]) -> list[str]:
    """`columns`, after ``rank`` when `frame` comes from several ranks (xlanb.ranks)."""
    return ["rank", *columns] if "rank" in frame.columns else columns


def _executions_by_graph(profile: Profile) -> dict[str, list[Any]]:
    """The executions summed by graph (and rank), in the order graphs first ran: each column's
    values by name."""
    executions = profile.executions
    keys = _with_rank(executions, ["backend", "graph"])
    key_values = [executions[key].tolist() for key in keys]
    graph_at = keys.index("graph")
    names = graph_names(profile)
    key_values[graph_at] = [
        "(unknown)" if pd.isna(graph) else names.get(graph, graph) for graph in key_values[graph_at]
    ]
    groups: dict[tuple[Any, ...], list[int]] = {}
    for row, key in enumerate(zip(*key_values, strict=True)):
        if not any(pd.isna(part) for part in key):  # as groupby: rows of no key left out
            groups.setdefault(key, []).append(row)
    counts, seconds = executions["count"].tolist(), executions["seconds"].tolist()
    grouped: dict[str, list[Any]] = {key: [k[i] for k in groups] for i, key in enumerate(keys)}
    summed = [
        (sum(counts[i] for i in rows), _sum(seconds[i] for i in rows)) for rows in groups.values()
    ]
    grouped["count"] = [count for count, _ in summed]
    grouped["seconds"] = [format_seconds(total) for _, total in summed]
    grouped["mean"] = [format_seconds(total / count) if count else "-" for count, total in summed]
    if "peak_bytes" in executions.columns:
        peaks, devices = executions["peak_bytes"].tolist(), _column(executions, "devices", None)
        grouped["peak_memory"] = [
            _peak_text([peaks[i] for i in rows], [devices[i] for i in rows])
            for rows in groups.values()
        ]
    if "flops_per_second" in executions.columns:
        flops, bounds = executions["flops_per_second"].tolist(), executions["bound"].tolist()
        grouped["GFLOP/s"] = [
            f"{v / 1e9:.1f}" if v == v else "-"
            for v in (_max(flops[i] for i in rows) for rows in groups.values())
        ]
        grouped["bound"] = [
            next((bounds[i] for i in rows if isinstance(bounds[i], str)), "-")
            for rows in groups.values()
        ]
    return grouped


def _sum(values: Iterable[Any]) -> float:
    """The sum of the known `values` (0.0 where none is), as pandas sums."""
    return math.fsum(v for v in values if not pd.isna(v))


def _max(values: Iterable[Any]) -> float:
    """The largest of the known `values` (NaN where none is)."""
    return max((float(v) for v in values if not pd.isna(v)), default=math.nan)


def _readable_metrics(profile: Profile, columns: list[str]) -> dict[str, list[Any]]:
    """The metrics' `columns` by name, their times readable."""
    metrics = profile.metrics
    readable = {column: metrics[column].tolist() for column in {*columns, "unit"}}
    units = readable["unit"]
    for column in ("total", "mean", "p50", "p90", "p99", "max"):
        readable[column] = [
            format_seconds(v) if unit == "s" else cell(v)
            for v, unit in zip(readable[column], units, strict=True)
        ]
    return readable


def profile_html(profile: Profile, graph_viewers: bool = True, titled: bool = True) -> str:
    """The fragment shown under a profiled cell: headline, findings, highlighted fallbacks,
    then compiles, executions, counters, metrics and graphs one click away (with the viewer
    of the first graphs unless `graph_viewers` is false: a report draws them all); its title
    first unless `titled` is false (a report's heading says it)."""
    failed = " xlanb-failed" if profile.failed else ""
    parts = [
        f"<div class='xlanb'><style>{STYLE}</style>",
        f"<div class='xlanb-title{failed}'>{escape(title(profile))}</div>" if titled else "",
        f"<div class='xlanb-head'>{_headline(profile)}</div>",
        _account(profile),
        _findings(profile),
        _top_ops(profile),
        ranks_section(profile) if is_multi_rank(profile) else "",
        "" if profile.fallbacks.empty else _left_the_device(profile),
        _live_arrays(profile),
        _alive_at_failure(profile),
        _temporaries(profile),
        _forced_syncs(profile),
        "" if profile.compiles.empty else _compiles(profile),
        "" if profile.executions.empty else _executions(profile),
        "" if profile.counters.empty else _counters(profile),
        "" if profile.metrics.empty else _metrics(profile),
        _graph_viewers(profile) if graph_viewers else "",
    ]
    for note in profile.notes:
        parts.append(f"<div class='xlanb-note'>{escape(note)}</div>")
    parts.append(f"<script>{SORT_SCRIPT}</script></div>")
    return "".join(parts)


def _headline(profile: Profile) -> str:
    """The headline's spans, the alarm red when something left the device."""
    numbers = profile.summary()
    head = []
    for label, value in headline(profile):
        bad = label == ALARM_LABEL and numbers["fallback_ops"] > 0
        # inline styles too: an untrusted notebook drops the <style> element
        css = f' class="xlanb-bad" style="{_HEAD_SPAN};{_RED}"' if bad else f' style="{_HEAD_SPAN}"'
        head.append(
            f"<span{css} data-field='{escape(label)}'><b>{escape(label)}</b> {escape(value)}</span>"
        )
    return "".join(head)


def _left_the_device(profile: Profile) -> str:
    """The ops that ran on the host, the alarming ones highlighted."""
    fallbacks = profile.fallbacks
    columns = _with_rank(fallbacks, ["op", "count", "kind", "cell_line", "code", "backend"])
    left = {c: fallbacks[c].tolist() for c in columns if c not in ("kind", "code")}
    left["code"] = cell_codes(profile, left["cell_line"])
    left["kind"] = [host_kind(cause) for cause in fallbacks["cause"].tolist()]
    return "<div class='xlanb-title'>Left the device</div>" + table(
        left, columns, highlight=[kind == ALARM_KIND for kind in left["kind"]]
    )


def _forced_syncs(profile: Profile) -> str:
    """Where the runtime's own stack says a value was read; "" when nowhere."""
    places = profile.shown.forced_syncs
    if places.empty:
        return ""
    heading = (
        "<div class='xlanb-title'>Forced syncs by place "
        "<span class='xlanb-note'>(the runtime's own stack: where a value was read)"
        "</span></div>"
    )
    places = with_code(profile, places)
    return heading + table(places, ["read_at", "count", "cell_line", "code", "backend"])


def _compiles(profile: Profile) -> str:
    """The compiles, with cause, trigger, peak memory and diff commands where known."""
    hits = (
        profile.compiles["cache_hit"].fillna(False).astype(bool)
        if "cache_hit" in profile.compiles.columns
        else [False] * len(profile.compiles)
    )
    names = graph_names(profile)
    compiles = with_code(profile, profile.compiles).assign(
        graph=[names.get(graph, graph) for graph in profile.compiles["graph"]],
        seconds=[
            format_seconds(s) + (" (read from the persistent cache)" if hit else "")
            for s, hit in zip(profile.compiles["seconds"], hits, strict=True)
        ],
        diff=_diff_commands(profile),
        peak_memory=[
            bytes_on_each_device(v, devices)
            for v, devices in zip(
                _column(profile.compiles, "peak_bytes", math.nan),
                _column(profile.compiles, "devices", None),
                strict=True,
            )
        ],
    )
    return _section(
        "Compiles",
        len(compiles),
        # the diff command beside the cause, long texts (torch_xla's graph hashes, causes,
        # code, triggers) to one line each, the backend only where there are several: the
        # table fits a notebook's width, or scrolls
        "<div style='overflow-x:auto'>"
        + table(
            compiles,
            _with_rank(
                compiles,
                (["backend"] if compiles["backend"].nunique() > 1 else [])
                + ["graph", "cause"]
                + (["diff"] if any(compiles["diff"]) else [])
                + ["seconds", "cell_line", "code", "trigger"]
                + (["peak_memory"] if (compiles["peak_memory"] != "-").any() else []),
            ),
            sortable=True,
            code_columns=("code", "diff"),
            clipped_columns={
                # a hash to its first characters; a program's name (torch_xla) to its function
                "graph": 16 if names else 8,
                "cause": 16,
                "code": 14,
                "trigger": 9,
                "seconds": 8,
            },
        )
        + "</div>",
        open_=len(compiles) <= 8,
    )


def _peak_text(peaks: list[float], devices: list[Any]) -> str:
    """The largest of `peaks`, on each of its devices where it is one device's of several."""
    known = [(float(p), n) for p, n in zip(peaks, devices, strict=True) if not pd.isna(p)]
    if not known:
        return "-"
    return bytes_on_each_device(*max(known, key=lambda pair: pair[0]))


def _column(frame: pd.DataFrame, column: str, missing: Any) -> list[Any]:
    """`frame`'s `column` as a list, `missing` on each row where it has no such column."""
    return frame[column].tolist() if column in frame.columns else [missing] * len(frame)


def _executions(profile: Profile) -> str:
    """Executions summed by graph."""
    return _section(
        "Executions by graph",
        int(profile.executions["count"].sum()),
        table(
            _executions_by_graph(profile),
            _with_rank(
                profile.executions,
                ["backend", "graph", "count", "seconds", "mean"]
                + (["peak_memory"] if "peak_bytes" in profile.executions.columns else [])
                + (
                    ["GFLOP/s", "bound"] if "flops_per_second" in profile.executions.columns else []
                ),
            ),
            sortable=True,
        ),
    )


def _counters(profile: Profile) -> str:
    """The runtime's counters."""
    return _section(
        "Counters",
        len(profile.counters),
        table(
            profile.counters,
            _with_rank(profile.counters, ["backend", "category", "name", "delta", "total"]),
            sortable=True,
        ),
    )


def _metrics(profile: Profile) -> str:
    """The runtime's metrics, readable."""
    columns = _with_rank(
        profile.metrics,
        ["backend", "name", "unit", "count", "total", "mean", "p50", "p90", "p99", "max"],
    )
    return _section(
        "Metrics",
        len(profile.metrics),
        table(_readable_metrics(profile, columns), columns, sortable=True),
    )


def _live_arrays(profile: Profile) -> str:
    """Live device arrays before and after the cell, and a closed table of what it left alive
    (JAX); "" when the profile has none or nothing changed."""
    live = profile.live_arrays
    if live.empty:
        return ""
    snapshots = live["snapshot"].tolist()
    counts, sizes = live["count"].tolist(), live["bytes"].tolist()
    # all ranks of a run; bytes no rank measured stay unknown ("-"), not 0
    totals: dict[str, list[float]] = {}
    for snapshot, count, size in zip(snapshots, counts, sizes, strict=True):
        total = totals.setdefault(snapshot, [0, math.nan])
        total[0] += count
        if not pd.isna(size):
            total[1] = size if math.isnan(total[1]) else total[1] + size
    if "before" not in totals or "after" not in totals:
        return ""
    before, after = totals["before"], totals["after"]
    left = [i for i, snapshot in enumerate(snapshots) if snapshot == "left alive"]
    if int(before[0]) == int(after[0]) and not left:
        return ""
    backends = live["backend"].tolist()
    noun = "tensors" if {str(backend) for backend in backends} == {"torch_xla"} else "arrays"
    line = (
        f"<div class='xlanb-note'>live device {noun}: "
        f"{int(before[0]):,} ({escape(format_bytes(float(before[1])))}) before, "
        f"{int(after[0]):,} ({escape(format_bytes(float(after[1])))}) after</div>"
    )
    if not left:
        return line
    columns = ["shape", "count", "size"]
    shapes = live["shape"].tolist()
    rows = {
        "shape": [shapes[i] for i in left],
        "count": [counts[i] for i in left],
        "size": [format_bytes(float(sizes[i])) for i in left],
        "backend": [backends[i] for i in left],
    }
    if "created_at" in live.columns:  # where they were made: in the cell, or a file's line
        made = live["created_at"].tolist()
        rows["created_at"] = [made[i] if not pd.isna(made[i]) else "" for i in left]
        columns.append("created_at")
        if "cell_line" in live.columns:
            cell_lines = live["cell_line"].tolist()
            rows["code"] = cell_codes(profile, (cell_lines[i] for i in left))
            columns.append("code")
    return line + _section(
        "Left alive by the cell", int(sum(rows["count"])), table(rows, [*columns, "backend"])
    )


def _alive_at_failure(profile: Profile) -> str:
    """An open table of the arrays alive when the cell ran out of memory (largest first,
    after the results that failed), with what held them; "" when it did not."""
    live = profile.live_arrays
    failed = ("failed result", "at failure")
    # the snapshots as a list first: a cell that did not fail has none, and a frame filter
    # costs more than reading the column
    if live.empty or not any(snapshot in failed for snapshot in live["snapshot"].tolist()):
        return ""
    rows = live[live["snapshot"].isin(failed)]
    rows = rows.assign(
        size=[format_bytes(float(b)) for b in rows["bytes"]],
        state=[
            "failed: never allocated" if s == "failed result" else "alive" for s in rows["snapshot"]
        ],
    )
    columns = ["shape", "count", "size", "state"]
    if "origin" in rows.columns:
        columns.append("origin")
    return _section(
        "Alive at the failure", int(rows["count"].sum()), table(rows, columns), open_=True
    )


def _temporaries(profile: Profile) -> str:
    """A closed table of each program's largest temporary buffers (its HLO op, shape, size and
    source line); "" when the profile has none."""
    rows = profile.temporaries
    if rows.empty:
        return ""
    named = rows["source"] if "source" in rows.columns else pd.Series([None] * len(rows))
    rows = with_code(profile, rows).assign(
        size=[format_bytes(float(b)) for b in rows["bytes"]],
        source=[
            given
            if isinstance(given, str)
            else (
                f"{os.path.basename(str(f))}:{int(n)}"
                if isinstance(f, str) and not pd.isna(n)
                else ""
            )
            for given, f, n in zip(named, rows["source_file"], rows["source_line"], strict=True)
        ],
    )
    if "code" in profile.temporaries.columns:  # the source line's own text, read at capture
        own = profile.temporaries["code"].to_numpy()
        rows["code"] = [
            mine if isinstance(mine, str) and mine else called
            for mine, called in zip(own, rows["code"], strict=True)
        ]
    columns = ["graph", "op", "shape", "size", "source", "code", "cell_line", "backend"]
    return _section(
        "Largest temporaries",
        len(rows),
        "<div class='xlanb-note'>the largest buffers each program holds while it runs "
        "(sizes overlap in time: they do not add up)</div>"
        + table(rows, _with_rank(rows, columns)),
    )


#: Compile rows past this many get no diff command (each looks up its previous compile).
DIFF_ROWS = 200


def _diff_commands(profile: Profile) -> list[str]:
    """Per compile row, the magic that shows its graph against the previous compile of the
    same function or line (``%xla_profile diff cell-3 2``), or "" for a first compile."""
    commands = [""] * len(profile.compiles)
    if profile.graphs.empty or len(profile.compiles) > DIFF_ROWS:
        return commands
    entries = profile.graph_entries()
    index_of = {
        (str(graph), int(key)): i
        for i, (graph, key) in enumerate(zip(entries["graph"], entries["compile"], strict=True))
    }
    keys = (
        profile.compiles["compile_id"].astype("Int64").fillna(-1)
        if "compile_id" in profile.compiles.columns
        else pd.Series(-1, index=profile.compiles.index)
    )
    for row, (graph, key) in enumerate(zip(profile.compiles["graph"], keys, strict=True)):
        index = index_of.get((str(graph), int(key)))
        if index is not None and profile.previous_compile(index, entries) is not None:
            commands[row] = magic_command("diff", profile.name, index)
    return commands


#: Graphs drawn in the cell's display (more are one ``prof.graph(name)`` away): at most this
#: many, of at most this many nodes each, the viewer's script and their packed payloads within
#: this many bytes (a 4,400-node transformer step is ~175 kB; a first graph over it is not
#: drawn: its smallest text is, or nothing).
VIEWER_GRAPHS, VIEWER_MAX_NODES, VIEWER_BYTES = 4, 5000, 160_000
#: A graph whose part alone packs to more than the room left, by this share of it, is not
#: packed to be tried (:func:`~xlanb.views.graph_viewer.payload.least_packed_size`: gzip
#: may pack a text that holds another's a little smaller than that one).
LEAST_SIZE_SHARE = 0.98


def _graph_viewers(profile: Profile) -> str:
    """The interactive viewer of the first graphs compiled in the cell, packed, in a closed
    section (the viewer lays itself out when the section opens), each program's other texts
    (a JAX program's StableHLO) a tab away while they fit too. A cell's output never holds a
    graph's text: a notebook stays small; ``prof.graph(i).text`` has it."""
    if profile.graphs.empty:  # no text of any program: nothing to draw
        return ""
    # one viewer per compile (a JAX function recompiled shows each program)
    entries = labelled_entries(profile)
    if entries.empty:
        return ""
    shown = entries[entries["nodes"] <= VIEWER_MAX_NODES].head(VIEWER_GRAPHS)
    if shown.empty:
        return ""
    assets = viewer_assets(packed=True)
    budget = _ViewerBudget(len(assets))
    views: list[list[tuple[str, str]]] = []
    firsts: list[str] = []
    for index, label, graph in zip(shown["index"], shown["label"], shown["graph"], strict=True):
        shown_first = _first_text(profile, int(index), label, str(graph), budget, bool(views))
        if shown_first is None:
            break
        first, fragment = shown_first
        views.append([(KIND_LABELS.get(first, first), fragment)])
        firsts.append(first)
    # then the programs' other texts, and each recompile's changes, while they fit
    for view, first, index, label, graph in zip(
        views, firsts, shown["index"], shown["label"], shown["graph"], strict=False
    ):
        changes = changes_view(profile, int(index), entries, CHANGES_NODES, budget)
        if changes is not None:
            view.append(changes)
        for kind in [k for k in profile.graph_kinds(int(index)) if k != first]:
            fragment = _other_text(profile, int(index), label, str(graph), kind, budget)
            view.append((KIND_LABELS.get(kind, kind), fragment))
    rest = len(entries) - len(views)
    more = (
        (
            f"<div class='xlanb-note'>{rest} more {'graph' if rest == 1 else 'graphs'}: "
            "prof.graph(i) shows any of them.</div>"
        )
        if rest
        else ""
    )
    return _section(
        "Graph viewer",
        len(views),
        assets + "".join(graph_views(view) for view in views) + more,
    )


def _first_text(
    profile: Profile, index: int, label: str, graph: str, budget: _ViewerBudget, after: bool
) -> tuple[str, str] | None:
    """The kind and viewer of the text a program shows first, or None when it does not fit
    (`after`: other programs' viewers came before it, and the budget may stop it early)."""
    # the text shown first, unless it is too big (a program's optimized HLO may have
    # many times the instructions of its HLO): then its smallest text
    kinds = profile.graph_kinds(index)
    sizes = {kind: _graph_nodes(profile, graph, kind) for kind in kinds}
    first = kinds[0] if sizes[kinds[0]] <= VIEWER_MAX_NODES else min(kinds, key=sizes.get)
    if after and not budget.fits(sizes[first]):
        return None
    # the first graph too stays within the budget: on a smaller text if need be
    for kind in [first, *sorted((k for k in kinds if k != first), key=sizes.get)]:
        if sizes[kind] > VIEWER_MAX_NODES:
            continue
        graph_parsed = profile.graph(index, kind=kind)
        least = least_packed_size(graph_parsed)
        if least is not None and not budget.has_room_for(least * LEAST_SIZE_SHARE):
            continue  # clearly too big: not packed only to be dropped
        fragment = graph_fragment(graph_parsed, height=460, title=label, packed=True)
        if budget.has_room(fragment):
            budget.spend(fragment, sizes[kind])
            return kind, fragment
    return None


def _other_text(
    profile: Profile, index: int, label: str, graph: str, kind: str, budget: _ViewerBudget
) -> str:
    """The lazy viewer of one of a program's other texts, or a note saying how to show it
    when it does not fit the budget."""
    nodes = _graph_nodes(profile, graph, kind)
    if budget.fits(nodes):
        fragment = graph_fragment(
            profile.graph(index, kind=kind), height=460, title=label, packed=True, lazy=True
        )
        if budget.has_room(fragment):  # the estimate was right
            budget.spend(fragment, nodes)
            return fragment
    return (
        f"<div class='xlanb-note'>Not embedded, to keep the notebook small: "
        f"<code>prof.graph({index}, kind=&quot;{escape(kind)}&quot;)</code> "
        "shows it.</div>"
    )


def labelled_entries(profile: Profile) -> pd.DataFrame:
    """:meth:`Profile.graph_entries` with ``index`` (as :meth:`Profile.graph` counts) and
    ``label`` (``jax jit(step) (compile 3)`` where a function compiled more than once)."""
    entries = profile.graph_entries()
    if entries.empty:
        return entries
    entries["index"] = range(len(entries))
    compiles_of = entries.groupby("graph")["compile"].transform("size")
    entries["label"] = [
        f"{backend} {name}" + (f" (compile {key})" if many > 1 else "")
        for name, key, backend, many in zip(
            entries["graph"], entries["compile"], entries["backend"], compiles_of, strict=True
        )
    ]
    return entries


#: A recompile's "Changes" tab is built in a cell's output only for programs of at most this
#: many nodes (matching two graphs is superlinear: 60 ms at 370 nodes, 0.5 s at 1,000, 2 s at
#: 3,900); bigger ones say the command that shows them.
CHANGES_NODES = 500


def changes_view(
    profile: Profile,
    index: int,
    entries: pd.DataFrame,
    max_nodes: int,
    budget: _ViewerBudget | None = None,
    page: PagePayloads | None = None,
) -> tuple[str, str] | None:
    """A recompiled program's tab "Changes from compile N": its graph against the previous
    compile of the same function or line, changed / added / removed nodes marked (None for a
    first compile). Past `max_nodes` or the `budget`, a note with the command instead; `page`:
    the payloads on the page, the changes sent as a patch of the one most like them."""
    previous = profile.previous_compile(index, entries)
    if previous is None:
        return None
    before = entries.iloc[previous]
    tab = "Changes from " + (
        f"compile {before['compile']}" if int(before["compile"]) != -1 else "the previous graph"
    )
    nodes = float(max(entries["nodes"].iloc[index], before["nodes"]))
    if nodes <= max_nodes and (budget is None or budget.fits(nodes)):
        try:
            result = diff(profile.graph(previous), profile.graph(index))
        except Exception as error:  # a graph that did not parse: the viewer says why
            return tab, f"<div class='xlanb-note'>{escape(f'No diff: {error}')}</div>"
        fragment = overlay_fragment(
            result,
            height=460,
            title=f"{before['label']} → {entries['label'].iloc[index]}",
            packed=True,
            lazy=True,
            page=page,
        )
        if budget is None:
            return tab, fragment
        if budget.has_room(fragment):
            budget.spend(fragment, nodes)
            return tab, fragment
    command = magic_command("diff", profile.name, index)
    return tab, (
        "<div class='xlanb-note'>Not embedded, to keep the notebook small: "
        f"<code>{escape(command)}</code> shows it (or <code>xlanb.graphs.diff("
        f"prof.graph({previous}), prof.graph({index}))</code>).</div>"
    )


class _ViewerBudget:
    """The bytes a cell's output spends on graphs (:data:`VIEWER_BYTES`: the viewer's script,
    `fixed`, and the packed payloads): a graph is packed only when the bytes per node so far
    say it fits, and kept only when it did."""

    def __init__(self, fixed: int = 0) -> None:
        self.fixed = fixed
        self.size = self.nodes = 0

    def fits(self, nodes: float) -> bool:
        return self.fixed + self.size + self.size / max(self.nodes, 1) * nodes <= VIEWER_BYTES

    def has_room(self, fragment: str) -> bool:
        return self.has_room_for(len(fragment))

    def has_room_for(self, length: float) -> bool:
        return self.fixed + self.size + length <= VIEWER_BYTES

    def spend(self, fragment: str, nodes: float) -> None:
        self.size += len(fragment)
        self.nodes += int(nodes)


def _graph_nodes(profile: Profile, graph: str, kind: str) -> float:
    rows = profile.graphs[
        (profile.graphs["graph"].astype(str) == graph) & (profile.graphs["kind"] == kind)
    ]
    return float(rows["nodes"].max()) if not rows.empty and rows["nodes"].notna().any() else 0.0


def _verdict_html(comparison) -> str:
    """The verdict line (red where the second profile is slower)."""
    line, slower = verdict(comparison)
    if not line:
        return ""
    marked = " xlanb-bad" if slower else ""
    return f"<div class='xlanb-verdict{marked}' data-field='verdict'>{escape(line)}</div>"


def comparison_html(comparison) -> str:
    """The difference between two profiles as HTML tables (escaped)."""

    def frame_table(frame: pd.DataFrame, index_name: str) -> str:
        flat = frame.reset_index()
        flat.columns = [
            index_name if str(c).startswith(("index", "level_")) else str(c) for c in flat.columns
        ]
        return table(flat, list(flat.columns))

    a, b = comparison.a, comparison.b
    # b's column name gets a space: two profiles of one name must still be two columns
    headline_numbers = pd.DataFrame(
        summary_rows(comparison), columns=["", str(a.name), f"{b.name} ", "change"]
    )
    parts = [
        f"<div class='xlanb'><style>{STYLE}</style>",
        f"<div class='xlanb-title'>{escape(a.name)} → {escape(b.name)}</div>",
        _verdict_html(comparison),
        table(headline_numbers, list(headline_numbers.columns)),
    ]
    if not comparison.fallbacks.empty:
        parts += [
            "<div class='xlanb-title'>Left the device</div>",
            frame_table(
                comparison.fallbacks.astype(int).rename(
                    columns={"a": str(a.name), "b": f"{b.name} "}
                ),
                "op",
            ),
        ]
    if not comparison.findings.empty:
        parts += [
            "<div class='xlanb-title'>Findings</div>",
            table(comparison.findings, ["status", "change", "title"]),
        ]
    if not comparison.counters.empty:
        changed = comparison.counters[comparison.counters["change"] != 0]
        parts.append(
            _section("Counters that changed", len(changed), frame_table(changed, "counter"))
        )
    parts.append("</div>")
    return "".join(parts)
