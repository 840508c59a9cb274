"""The per-rank section of a merged multi-process profile: one row per rank (compiles,
execute time, ops that left the device, transfers, collectives, wall time), the ranks that stand out
highlighted, and the ranks that wrote no profile. Every value is escaped."""

from __future__ import annotations

from typing import Any

import pandas as pd

from xlanb.core.profile import Profile
from xlanb.views.escape import cell, escape
from xlanb.views.scrolling import scrolling
from xlanb.views.summary import format_seconds

#: (column of the rank table, header, is a duration)
SHOWN: list[tuple[str, str, bool]] = [
    ("rank", "rank", False),
    ("host", "host", False),
    ("device", "device", False),
    ("compiles", "compiles", False),
    ("compile_seconds", "compile time", True),
    ("executions", "executions", False),
    ("execute_seconds", "execute time", True),
    ("host_ops", "left the device", False),
    ("transfers", "transfers", False),
    ("collective_ops", "collectives", False),
    ("collective_seconds", "collective wait", True),
    ("wall_seconds", "wall", True),
    ("status", "status", False),
]

STYLE = """
.xlanb-ranks td{white-space:nowrap}.xlanb-ranks td.xlanb-out{color:#d62728;font-weight:600}
.xlanb-ranks tr.xlanb-missing td{opacity:.6;font-style:italic}
"""


def ranks_section(profile: Profile) -> str:
    """The per-rank table of `profile` (merged by :func:`xlanb.ranks.load_ranks`), open."""
    info = profile.environment.get("ranks", {})
    table = profile.shown.rank_table
    standing_out = profile.shown.rank_outliers
    head = "".join(f"<th>{escape(label)}</th>" for _, label, _ in SHOWN)
    rows = [_row(record, standing_out) for record in table.to_dict("records")]
    for rank in info.get("missing", []):
        rows.append(
            "<tr class='xlanb-missing'>"
            + "".join(
                f"<td>{escape(str(rank)) if column == 'rank' else ''}</td>"
                if column != "status"
                else "<td class='xlanb-out'>no profile</td>"
                for column, _, _ in SHOWN
            )
            + "</tr>"
        )
    present, world = len(table), info.get("world_size", len(table))
    run = escape(str(info.get("run_id", "")))
    note = (
        f"<div class='xlanb-note'>run {run} · red: a count above the usual value of the "
        "ranks, a duration at least 1.5x the other ranks' median, or a collective wait "
        "far below it (the straggler the others wait for)</div>"
    )
    return (
        f"<style>{STYLE}</style><details open><summary>Ranks ({present} of {world})"
        f"</summary>{note}"
        + scrolling(
            "<table class='xlanb-table xlanb-sortable xlanb-ranks'>"
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        )
        + "</details>"
    )


def _row(record: dict[str, Any], standing_out: dict[str, list[int]]) -> str:
    rank = int(record["rank"])
    cells = []
    for column, _, duration in SHOWN:
        value = record[column]
        out = rank in standing_out.get(column, []) or (column == "status" and value != "ok")
        css = " class='xlanb-out'" if out else ""
        if column == "collective_seconds" and not value:
            cells.append("<td>-</td>")  # no torch.distributed collective was timed
        elif duration:
            sort_key = "" if pd.isna(value) else f" data-v='{float(value):.9g}'"
            cells.append(f"<td{css}{sort_key}>{escape(format_seconds(value))}</td>")
        else:
            cells.append(f"<td{css}>{cell(value)}</td>")
    return f"<tr>{''.join(cells)}</tr>"
