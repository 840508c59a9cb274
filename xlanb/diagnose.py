"""Findings: the "why is this cell slow" list, derived from a Profile's frames only.

Each rule is a function ``(profile) -> list of finding rows``; the advice follows the PyTorch/XLA
performance caveats (static shapes, no ``.item()`` in the loop, no data-dependent shapes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from xlanb.backends import jax as jax_backend
from xlanb.backends.base import FALLBACK_ADVICE
from xlanb.backends.compile_causes import CHANGED_GRAPH, FORCED_SYNC, NEW_SHAPE
from xlanb.profile import Profile, make_frame
from xlanb.views.summary import format_seconds

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
    compiles = compiles[compiles["backend"] != jax_backend.NAME]  # see jax_recompilation
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
                      f"{format_seconds(seconds)} spent compiling them.",
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
        if cause in _JAX_FALLBACK_CAUSES:  # see jax_host_callbacks, jax_host_transfers
            continue
        count = int(rows["count"].sum())
        ops = ", ".join(f"{op} ×{n}" for op, n in zip(rows["op"], rows["count"], strict=True))
        findings.append({
            "severity": "error" if cause != "item" else "warning",
            "title": f"{count} {titles.get(cause, 'CPU fallback(s)')}",
            "detail": f"CPU fallbacks: {ops}.",
            "advice": FALLBACK_ADVICE.get(cause, ""),
        })
    return findings


_JAX_FALLBACK_CAUSES = {jax_backend.HOST_CALLBACK, jax_backend.HOST_TRANSFER}
_JAX_RECOMPILE_CAUSES = (jax_backend.NEW_TYPES, jax_backend.STATIC_CHANGED,
                         jax_backend.NEW_PYTREE, jax_backend.NEW_CONTEXT)
#: A function run this many times in a cell is hot: a host callback in it is a warning.
HOT_CALLS = 10
#: This many eager-op compiles in a cell are worth a warning.
EAGER_COMPILES = 10


def _jax_rows(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["backend"] == jax_backend.NAME]


def _flag(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame.columns:
        return pd.Series(False, index=frame.index)
    return frame[column].eq(True)


def jax_recompilation(profile: Profile) -> list[Finding]:
    """A jitted function compiled again in the cell: new input shapes or dtypes, a new static
    argument value, or a new function object each time."""
    compiles = _jax_rows(profile.compiles)
    compiles = compiles[~_flag(compiles, "eager")]
    findings = []
    for graph, rows in compiles.groupby("graph", sort=False):
        causes = rows["cause"].astype(str)
        again = rows[causes.str.startswith(_JAX_RECOMPILE_CAUSES)]
        # The same line compiling a function of the same name that JAX never saw, again and
        # again: a new function object each time.
        fresh = rows[causes == jax_backend.NEVER_SEEN]
        repeated = fresh["location"].value_counts()
        fresh = fresh[fresh["location"].isin(repeated[repeated >= 2].index)]
        phases = [c for c in ("trace_seconds", "lower_seconds", "seconds") if c in rows]
        seconds = float(rows[phases].sum(skipna=True).sum())
        if not again.empty:
            changes = "; ".join(dict.fromkeys(again["cause"].astype(str)))
            static = again["cause"].astype(str).str.startswith(jax_backend.STATIC_CHANGED)
            advice = []
            if static.any():
                advice.append("Every new value of a static argument compiles a new program: "
                              "pass values that change as traced (array) arguments, and keep "
                              "static arguments to a few values such as flags and sizes.")
            if not static.all():
                advice.append("Keep shapes and dtypes static: pad batches to a fixed size or "
                              "bucket them into a few sizes, drop the last partial batch, and "
                              "keep dtypes fixed (a Python float vs a float32 array is a new "
                              "type).")
            findings.append({
                "severity": "warning",
                "title": f"{graph} recompiled {len(again)} time(s) in this cell" + _lines(again),
                "detail": f"JAX traced and compiled it again because: {changes}. "
                          f"{len(rows)} compile(s) of it took {format_seconds(seconds)} in all.",
                "advice": " ".join(advice),
            })
        if not fresh.empty:
            findings.append({
                "severity": "warning",
                "title": f"{graph} compiled {len(fresh)} times as a function JAX had never "
                         "seen" + _lines(fresh),
                "detail": "Each call used a new function object, so JAX's caches never hit: "
                          "jax.jit (or a lambda or partial passed to it) is applied inside a "
                          f"loop or a function. {format_seconds(seconds)} spent compiling.",
                "advice": "Create the jitted function once, outside the loop, and reuse it; "
                          "pass changing values as arguments.",
            })
    return findings


def jax_host_callbacks(profile: Profile) -> list[Finding]:
    """Host callbacks (pure_callback, io_callback, jax.debug.print) in jitted functions."""
    fallbacks = _jax_rows(profile.fallbacks)
    fallbacks = fallbacks[fallbacks["cause"] == jax_backend.HOST_CALLBACK]
    findings = []
    group = "graph" if "graph" in fallbacks.columns else "op"
    for graph, rows in fallbacks.groupby(group, sort=False):
        calls = int(rows["calls"].max()) if "calls" in rows else int(rows["count"].max())
        ops = ", ".join(dict.fromkeys(str(op).split(" in ")[0] for op in rows["op"]))
        count = int(rows["count"].sum())
        hot = calls >= HOT_CALLS
        findings.append({
            "severity": "warning" if hot else "info",
            "title": f"host callback(s) {ops} in {'hot function ' if hot else ''}{graph}: "
                     f"{count} round trip(s) to Python" + _lines(rows),
            "detail": f"{graph} ran {calls} time(s) in this cell, and each run stops the "
                      f"device program for: {ops}.",
            "advice": jax_backend.ADVICE[jax_backend.HOST_CALLBACK],
        })
    return findings


def jax_host_transfers(profile: Profile) -> list[Finding]:
    """NumPy arrays or Python scalars passed to jitted functions: a copy to the device on
    every call."""
    fallbacks = _jax_rows(profile.fallbacks)
    rows = fallbacks[fallbacks["cause"] == jax_backend.HOST_TRANSFER]
    if rows.empty:
        return []
    count = int(rows["count"].sum())
    ops = ", ".join(f"{op} ×{n}" for op, n in zip(rows["op"], rows["count"], strict=True))
    return [{
        "severity": "warning",
        "title": f"{count} implicit host-to-device transfer(s) into jitted functions"
                 + _lines(rows),
        "detail": f"Host values passed to jitted functions are copied to the device on every "
                  f"call: {ops}.",
        "advice": "; ".join(dict.fromkeys(rows["advice"].astype(str))) + ".",
    }]


def jax_eager_compiles(profile: Profile) -> list[Finding]:
    """Many small programs compiled for ops run outside jax.jit."""
    compiles = _jax_rows(profile.compiles)
    eager = compiles[_flag(compiles, "eager")]
    if len(eager) < EAGER_COMPILES:
        return []
    top = eager["graph"].value_counts().head(5)
    names = ", ".join(f"{name} ×{n}" for name, n in top.items())
    seconds = float(eager["seconds"].sum(skipna=True))
    return [{
        "severity": "warning",
        "title": f"{len(eager)} small eager-op compiles" + _lines(eager),
        "detail": f"Each jax.numpy/lax op run outside jax.jit compiles its own program per "
                  f"shape and dtype ({names}); {format_seconds(seconds)} spent compiling them.",
        "advice": "Put the computation in a function decorated with jax.jit so it compiles "
                  "once as one program (and runs faster), and keep shapes fixed.",
    }]


RULES: list[Callable[[Profile], list[Finding]]] = [
    cpu_fallbacks, recompilation, forced_syncs,
    jax_recompilation, jax_host_callbacks, jax_host_transfers, jax_eager_compiles,
]


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
