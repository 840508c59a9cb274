"""Findings: the "why is this cell slow" list, derived from a Profile's frames only.

Each rule is a function ``(profile) -> list of finding rows``; the advice follows the PyTorch/XLA
performance caveats (static shapes, no ``.item()`` in the loop, no data-dependent shapes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from xlanb.backends.base import FALLBACK_ADVICE
from xlanb.backends.compile_causes import CHANGED_GRAPH, FORCED_SYNC, NEW_SHAPE
from xlanb.profile import Profile, make_frame

Finding = dict[str, Any]
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def _lines(rows: pd.DataFrame) -> str:
    lines = sorted({int(v) for v in rows["cell_line"].dropna()})
    if lines:
        return " (cell line " + ", ".join(str(n) for n in lines) + ")"
    locations = sorted({str(v) for v in rows["location"].dropna()})
    return f" (at {', '.join(locations[:3])})" if locations else ""


def recompilation(profile: Profile) -> list[Finding]:
    """Graphs recompiled because input shapes changed, or one line compiling many graphs."""
    compiles = profile.compiles
    if compiles.empty:
        return []
    findings = []
    shape_changes = compiles[compiles["cause"].astype(str).str.startswith(NEW_SHAPE)]
    if not shape_changes.empty:
        changes = "; ".join(dict.fromkeys(
            c.split(": ", 1)[1] for c in shape_changes["cause"]))
        seconds = shape_changes["seconds"].sum(skipna=True)
        findings.append({
            "severity": "warning",
            "title": f"{len(shape_changes)} recompilation(s) from changing input shapes"
                     + _lines(shape_changes),
            "detail": f"Same graph, new shapes: {changes}. "
                      f"{seconds:.3f} s spent compiling them.",
            "advice": "Keep shapes static: pad batches to a fixed size or bucket them into a "
                      "few sizes, and drop the last partial batch (drop_last=True).",
        })
    # The first two steps of a loop legitimately differ (fresh inputs, then step outputs);
    # a third "changed" graph from the same line means something changes every step.
    changed = compiles[compiles["cause"] == CHANGED_GRAPH].dropna(subset=["location"])
    for _location, rows in changed.groupby("location"):
        if len(rows) >= 2:
            findings.append({
                "severity": "warning",
                "title": f"{len(rows) + 1} different graphs compiled by the same line"
                         + _lines(rows),
                "detail": "The steps look alike, yet each compiled a new graph: something in "
                          "the traced code changes every step (a Python scalar baked in as a "
                          "constant, a growing list, a changing condition).",
                "advice": "Pass changing Python numbers as tensors, and keep the traced code "
                          "the same every step.",
            })
    return findings


def forced_syncs(profile: Profile) -> list[Finding]:
    """Syncs the user did not ask for: a tensor value was read inside the step."""
    compiles = profile.compiles
    forced = compiles[compiles["cause"].astype(str).str.startswith(FORCED_SYNC)]
    if forced.empty:
        return []
    return [{
        "severity": "warning",
        "title": f"{len(forced)} forced sync(s) compiled a graph mid-step" + _lines(forced),
        "detail": "Reading a tensor's value (.item(), print, bool(), a CPU fallback on pending "
                  "data) cuts the graph and runs it early, so each step compiles and runs "
                  "more, smaller graphs.",
        "advice": FALLBACK_ADVICE["item"],
    }]


def cpu_fallbacks(profile: Profile) -> list[Finding]:
    """Ops that ran on the CPU, one finding per cause."""
    fallbacks = profile.fallbacks
    findings = []
    titles = {"item": "value(s) read back to the host with .item()",
              "dynamic_shape": "op(s) with data-dependent output shapes fell back to the CPU",
              "missing_lowering": "op(s) without a lowering fell back to the CPU"}
    for cause, rows in fallbacks.groupby("cause", sort=False):
        count = int(rows["count"].sum())
        ops = ", ".join(f"{op} ×{n}" for op, n in zip(rows["op"], rows["count"], strict=True))
        findings.append({
            "severity": "error" if cause != "item" else "warning",
            "title": f"{count} {titles.get(cause, 'CPU fallback(s)')}",
            "detail": f"CPU fallbacks: {ops}.",
            "advice": FALLBACK_ADVICE.get(cause, ""),
        })
    return findings


RULES: list[Callable[[Profile], list[Finding]]] = [cpu_fallbacks, recompilation, forced_syncs]


def findings_frame(profile: Profile) -> pd.DataFrame:
    """Every rule's findings, most severe first."""
    rows = [finding for rule in RULES for finding in rule(profile)]
    rows.sort(key=lambda f: SEVERITY_ORDER.get(f["severity"], 9))
    return make_frame("findings", rows)


def check_compile_budget(profile: Profile, limit: int) -> None:
    """Raise :class:`xlanb.CompileBudgetExceeded` when `profile` compiled more than `limit`
    graphs (JAX's eager single-op compiles are not counted)."""
    from xlanb.errors import CompileBudgetExceeded

    compiles = profile.compiles
    if "eager" in compiles.columns:
        compiles = compiles[compiles["eager"] != True]  # noqa: E712 - NaN means not eager
    if len(compiles) <= limit:
        return
    shown = []
    for row in compiles.head(10).itertuples():
        where = f" at cell line {row.cell_line}" if not pd.isna(row.cell_line) else ""
        shown.append(f"  {row.backend} {row.graph}{where}: {row.cause}")
    more = f"\n  ... and {len(compiles) - 10} more" if len(compiles) > 10 else ""
    raise CompileBudgetExceeded(
        f"{profile.name} compiled {len(compiles)} graphs, more than --max-compiles {limit}:\n"
        + "\n".join(shown) + more, len(compiles), limit)
