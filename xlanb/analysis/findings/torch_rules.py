"""Findings for PyTorch/XLA: recompilation, forced syncs and CPU fallbacks."""

from __future__ import annotations

from xlanb.analysis.findings.common import _JAX_FALLBACK_CAUSES, Finding, _lines
from xlanb.core.profile import Profile
from xlanb.core.units import format_seconds
from xlanb.formats import jax_text
from xlanb.formats.compile_causes import CHANGED_GRAPH, FORCED_SYNC, NEW_SHAPE
from xlanb.formats.counters import FALLBACK_ADVICE


def recompilation(profile: Profile) -> list[Finding]:
    """Graphs recompiled because input shapes changed, or one line compiling many graphs."""
    compiles = profile.compiles
    compiles = compiles[compiles["backend"] != jax_text.BACKEND]  # see jax_recompilation
    if compiles.empty:
        return []
    findings = []
    shape_changes = compiles[compiles["cause"].astype(str).str.startswith(NEW_SHAPE)]
    if not shape_changes.empty:
        changes = "; ".join(dict.fromkeys(c.split(": ", 1)[1] for c in shape_changes["cause"]))
        seconds = shape_changes["seconds"].sum(skipna=True)
        findings.append(
            {
                "severity": "warning",
                "title": f"{len(shape_changes)} recompilation(s) from changing input shapes"
                + _lines(shape_changes),
                "detail": f"Same graph, new shapes: {changes}. "
                f"{format_seconds(seconds)} spent compiling them.",
                "advice": "Keep shapes static: pad batches to a fixed size or bucket them into a "
                "few sizes, and drop the last partial batch (drop_last=True).",
                "seconds": float(seconds),
            }
        )
    # The first two steps of a loop legitimately differ (fresh inputs, then step outputs);
    # a third "changed" graph from the same line means something changes every step.
    changed = compiles[compiles["cause"] == CHANGED_GRAPH].dropna(subset=["location"])
    for location, rows in changed.groupby("location"):
        if len(rows) >= 2:
            # this profile's graphs from the line: its first one may be in an earlier profile
            graphs = int((compiles["location"] == location).sum())
            findings.append(
                {
                    "severity": "warning",
                    "title": f"{graphs} different graphs compiled by the same line" + _lines(rows),
                    "detail": "The steps look alike, yet each compiled a new graph: something in "
                    "the traced code changes every step (a Python scalar baked in as a "
                    "constant, a growing list, a changing condition).",
                    "advice": "Pass changing Python numbers as tensors, and keep the traced code "
                    "the same every step.",
                    "seconds": float(rows["seconds"].sum(skipna=True)),
                }
            )
    return findings


def forced_syncs(profile: Profile) -> list[Finding]:
    """Syncs the user did not ask for: a tensor value was read inside the step."""
    compiles = profile.compiles
    forced = compiles[compiles["cause"].astype(str).str.startswith(FORCED_SYNC)]
    if forced.empty:
        return []
    return [
        {
            "severity": "warning",
            "title": f"{len(forced)} forced sync(s) compiled a graph mid-step" + _lines(forced),
            "detail": "Reading a tensor's value (.item(), print, bool(), a CPU fallback on pending "
            "data) cuts the graph and runs it early, so each step compiles and runs "
            "more, smaller graphs.",
            "advice": FALLBACK_ADVICE["item"],
            "seconds": float(forced["seconds"].sum(skipna=True)),
        }
    ]


def cpu_fallbacks(profile: Profile) -> list[Finding]:
    """Ops that ran on the CPU, one finding per cause."""
    fallbacks = profile.fallbacks
    findings = []
    titles = {
        "item": "value(s) read back to the host with .item()",
        "dynamic_shape": "op(s) with data-dependent output shapes fell back to the CPU",
        "missing_lowering": "op(s) without a lowering fell back to the CPU",
    }
    for cause, rows in fallbacks.groupby("cause", sort=False):
        if cause in _JAX_FALLBACK_CAUSES:  # see jax_host_callbacks, jax_host_transfers
            continue
        count = int(rows["count"].sum())
        ops = ", ".join(f"{op} ×{n}" for op, n in zip(rows["op"], rows["count"], strict=True))
        findings.append(
            {
                "severity": "error" if cause != "item" else "warning",
                "title": f"{count} {titles.get(cause, 'CPU fallback(s)')}",
                "detail": f"CPU fallbacks: {ops}.",
                "advice": FALLBACK_ADVICE.get(cause, ""),
            }
        )
    return findings
