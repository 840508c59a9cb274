"""Findings only offline files can give: per-step compile history, compile frequency against
steps, and graphs compiled from one line (PT_XLA_DEBUG) or one function (XLA dumps).

Each rule returns finding rows (``severity, title, detail, advice``);
:func:`xlanb.analysis.derive` merges them with the live rules of :mod:`xlanb.analysis.findings`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from xlanb.core.profile import Profile
from xlanb.core.words import counted
from xlanb.formats.compile_causes import NEW_SHAPE

Finding = dict[str, Any]

#: Steps without a compile after the last one, at least, to call the warm-up over (and at
#: least this fraction of the run).
QUIET_STEPS = 3
QUIET_FRACTION = 0.25
#: Distinct graphs compiled from one line before it is a finding.
GRAPHS_PER_LINE = 3

_STATIC_SHAPES = (
    "Keep shapes static: pad batches to a fixed size or bucket them into a few "
    "sizes, drop the last partial batch, and read tensor values (.item(), "
    "print) outside the step."
)


def compile_frequency(profile: Profile) -> list[Finding]:
    """More compiles than steps (``MarkStep``): PyTorch/XLA's own "CompileTime too frequent"."""
    counters = profile.counters.set_index("name")["total"] if not profile.counters.empty else {}
    steps = int(counters.get("MarkStep", 0)) if len(counters) else 0
    compiles = len(profile.compiles)
    if steps < 2 or compiles <= steps:
        return []
    return [
        {
            "severity": "warning",
            "title": f"{compiles} compiles in {steps} steps",
            "detail": "More graphs were compiled than steps were taken, so the graph changes from "
            "step to step instead of being compiled once and reused.",
            "advice": _STATIC_SHAPES,
        }
    ]


def recompilation_history(table: pd.DataFrame) -> list[Finding]:
    """Whether compiling stopped after a warm-up, from the per-step table of an
    XLA_METRICS_FILE (see :func:`xlanb.offline.metrics_file.step_table`)."""
    if table.empty or "compiles" not in table or not table["compiles"].gt(0).any():
        return []
    compiling = table[table["compiles"] > 0]
    last = compiling.iloc[-1]
    after = len(table) - 1 - int(compiling.index[-1])
    total = int(table["compiles"].sum())
    seconds = float(table["compile_seconds"].sum()) if "compile_seconds" in table else 0.0
    if after >= max(QUIET_STEPS, QUIET_FRACTION * len(table)):
        return [
            {
                "severity": "info",
                "title": f"Recompilation stopped at step {int(last['step'])}",
                "detail": f"{counted(total, 'compile')} ({seconds:.3f} s) in {len(compiling)} of "
                f"{len(table)} recorded steps, the last at step {int(last['step'])}; "
                f"none in the {after} steps after it.",
                "advice": "Nothing to fix: the warm-up is over. Compare runs to see whether it "
                "gets longer.",
            }
        ]
    tail = table.iloc[len(table) // 2 :]
    return [
        {
            "severity": "warning",
            "title": f"Still recompiling at step {int(last['step'])} (of {len(table)} recorded "
            "steps)",
            "detail": f"{counted(tail['compiles'].sum(), 'compile')} in the last {len(tail)} steps "
            "and "
            f"{total} ({seconds:.3f} s) in all: the graph keeps changing from step to "
            "step.",
            "advice": _STATIC_SHAPES,
        }
    ]


def graphs_per_line(compiles: pd.DataFrame) -> list[Finding]:
    """One line that compiled several different graphs (PT_XLA_DEBUG graph hashes)."""
    findings = []
    rows = compiles.dropna(subset=["location"])
    for location, group in rows.groupby("location", sort=False):
        graphs = group["graph"].nunique()
        if graphs >= GRAPHS_PER_LINE:
            findings.append(
                {
                    "severity": "warning",
                    "title": f"{graphs} different graphs compiled from {location}",
                    "detail": "Each graph hash is a different graph: new input shapes or traced "
                    "code that changes (a Python number baked in as a constant, a "
                    "changing condition) compile a new graph every time.",
                    "advice": _STATIC_SHAPES,
                }
            )
    return findings


def shape_changes(compiles: pd.DataFrame) -> list[Finding]:
    """Modules of one name compiled again for new shapes (XLA dumps of JAX programs, whose
    live rules in :mod:`xlanb.analysis.findings` need JAX's own cache-miss explanations)."""
    changed = compiles[compiles["cause"].astype(str).str.startswith(NEW_SHAPE)]
    findings = []
    for graph, group in changed.groupby("graph", sort=False):
        shapes = "; ".join(dict.fromkeys(c.split(": ", 1)[-1] for c in group["cause"]))
        findings.append(
            {
                "severity": "warning",
                "title": f"{graph} compiled {len(group) + 1} times for different shapes",
                "detail": f"Same program, new shapes: {shapes}.",
                "advice": _STATIC_SHAPES,
            }
        )
    return findings
