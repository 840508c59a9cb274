"""Findings for PyTorch/XLA: recompilation, forced syncs and CPU fallbacks."""

from __future__ import annotations

import pandas as pd

from xlanb.analysis.attribution import cell_place, forced_sync_places
from xlanb.analysis.breakdown import read_seconds
from xlanb.analysis.findings.common import _JAX_FALLBACK_CAUSES, Finding, _lines, groups
from xlanb.core.profile import Profile
from xlanb.core.units import format_seconds
from xlanb.core.words import counted
from xlanb.formats import jax_text
from xlanb.formats.compile_causes import CHANGED_GRAPH, FORCED_SYNC, NEW_SHAPE
from xlanb.formats.counters import FALLBACK_ADVICE


def recompilation(profile: Profile) -> list[Finding]:
    """Graphs recompiled because input shapes changed, or one line compiling many graphs."""
    compiles = profile.compiles
    if compiles.empty:
        return []
    compiles = compiles[compiles["backend"] != jax_text.BACKEND]  # see jax_recompilation
    if compiles.empty:
        return []
    findings = []
    shape_changes = compiles[compiles["cause"].astype(str).str.startswith(NEW_SHAPE)]
    if not shape_changes.empty:
        changes = "; ".join(dict.fromkeys(c.split(": ", 1)[1] for c in shape_changes["cause"]))
        seconds = shape_changes["seconds"].sum(skipna=True)
        fallbacks = profile.fallbacks
        dynamic = fallbacks[fallbacks["cause"] == "dynamic_shape"]
        if dynamic.empty:
            cause, why = "input shapes", ""
            advice = (
                "Keep shapes static: pad batches to a fixed size or bucket them into a few "
                "sizes, and drop the last partial batch (drop_last=True)."
            )
        else:  # the shapes change because an op's output size follows the data
            names = list(dict.fromkeys(dynamic["op"].astype(str)))
            verb = "returns" if len(names) == 1 else "return"
            cause = "shapes that follow the data"
            why = (
                f" {', '.join(names)}{_lines(dynamic)} {verb} as many elements as the data "
                "holds, so what is computed from it changes shape from step to step."
            )
            advice = FALLBACK_ADVICE["dynamic_shape"]
        findings.append(
            {
                "severity": "warning",
                "title": f"{counted(len(shape_changes), 'recompilation')} from changing {cause}"
                + _lines(shape_changes),
                "detail": f"Same graph, new shapes: {changes}.{why} "
                f"{format_seconds(seconds)} spent compiling them.",
                "advice": advice,
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


#: Advice when every forced sync the runtime placed read its value inside a library.
LIBRARY_READS = (
    'The reads are inside library functions (see the forced-sync finding or "Forced syncs by '
    'place"), not in a .item() of yours: look for an option of theirs that skips the check '
    "(clip_grad_norm_'s error_if_nonfinite, a padding-mask test such as an all-ones attention "
    "mask), or call them every N steps."
)


def _reads_all_in_libraries(profile: Profile) -> bool:
    return _repeated_reads_in_libraries(forced_sync_places(profile.executions, profile.fallbacks))


def _repeated_reads_in_libraries(places: pd.DataFrame) -> bool:
    """Whether the places that read more than once (every step) are all inside libraries: a
    value read once, after the loop, costs little and does not change the advice."""
    repeated = places[places["count"] > 1]
    if repeated.empty:
        repeated = places
    return not repeated.empty and bool(repeated["library"].astype(bool).all())


def forced_syncs(profile: Profile) -> list[Finding]:
    """Syncs the user did not ask for: a tensor value was read inside the step. A value read
    once in the cell (a loss printed after the loop) is information, not a warning."""
    compiles = profile.compiles
    if compiles.empty:
        return []
    forced = compiles[compiles["cause"].astype(str).str.startswith(FORCED_SYNC)]
    if forced.empty:
        return []
    places = forced_sync_places(profile.executions, profile.fallbacks)
    syncs = max(_reads(profile), len(forced), int(places["count"].sum()))
    repeated = syncs > 1
    advice = FALLBACK_ADVICE["item"] if repeated else ""
    in_libraries = places[places["library"].astype(bool)]
    where = ""
    if not in_libraries.empty:
        where = (
            " Library code read values: "
            + "; ".join(
                f"{row.read_at} ×{row['count']}"
                + (
                    f" (called from cell line {row.cell_line})"
                    if not pd.isna(row.cell_line)
                    else ""
                )
                for _, row in in_libraries.head(4).iterrows()
            )
            + "."
        )
        if repeated and _repeated_reads_in_libraries(places):
            advice = LIBRARY_READS
    return [
        {
            "severity": "warning" if repeated else "info",
            "title": f"{counted(syncs, 'forced sync')} cut the graph, compiling "
            f"{counted(len(forced), 'graph')}" + _lines(forced),
            "detail": "Reading a tensor's value (.item(), print, bool(), an op whose output "
            "shape depends on the data) cuts the graph and runs it early, so each step "
            "compiles and runs more, smaller graphs."
            + ("" if repeated else " Once in a cell, after the loop, this costs little.")
            + where,
            "advice": advice,
            "seconds": float(forced["seconds"].sum(skipna=True)),
        }
    ]


def _reads(profile: Profile) -> int:
    """Values read back and data-dependent shapes of torch runtimes in the profile (a JAX
    read beside them never cuts a torch graph)."""
    fallbacks = profile.fallbacks
    torch_rows = fallbacks[
        fallbacks["cause"].isin(["item", "dynamic_shape"])
        & (fallbacks["backend"] != jax_text.BACKEND)
    ]
    return int(torch_rows["count"].sum())


#: Per cause: (noun, what happened, severity).
_KINDS = {
    "item": ("value", "read back to the host (syncs)", "warning"),
    "dynamic_shape": ("op", "with data-dependent output shapes synced to the host", "warning"),
    "missing_lowering": ("op", "without a lowering fell back to the CPU", "error"),
}


def cpu_fallbacks(profile: Profile) -> list[Finding]:
    """Ops that left the device, one finding per cause: values read back (a warning when read
    more than once), data-dependent shapes (a warning) and CPU fallbacks (an error)."""
    fallbacks = profile.fallbacks
    if set(fallbacks["cause"].tolist()) <= _JAX_FALLBACK_CAUSES:
        return []  # none, or only JAX's: see jax_host_callbacks, jax_host_transfers
    findings = []
    for cause, rows in groups(fallbacks, "cause"):
        if cause in _JAX_FALLBACK_CAUSES:  # see jax_host_callbacks, jax_host_transfers
            continue
        count = int(rows["count"].sum())
        noun, happened, severity = _KINDS.get(str(cause), _KINDS["missing_lowering"])
        if cause == "item" and count <= 1:
            severity = "info"
        ops = ", ".join(_ran(op, group) for op, group in groups(rows, "op"))
        finding: Finding = {
            "severity": severity,
            "title": f"{counted(count, noun)} {happened}" + _lines(rows),
            "detail": f"Ran on the host: {ops}.",
            "advice": (
                ""
                if severity == "info"
                else LIBRARY_READS
                if cause == "item" and _reads_all_in_libraries(profile)
                else _own_reads(rows, str(cause)) + _advice(rows, str(cause))
            ),
        }
        if cause == "item" and (seconds := read_seconds(profile)) > 0:
            finding["seconds"] = seconds  # the account's sync_wait: the waits and idle gaps
        findings.append(finding)
    return findings


def _ran(op: str, rows: pd.DataFrame) -> str:
    """``op ×N``, with where it ran when its reads were placed (``8 at
    transformers/masking_utils.py:255 (sdpa_mask) from cell line 3; 1 on cell line 4``)."""
    text = f"{op} ×{int(rows['count'].sum())}"
    if "read_at" not in rows.columns or rows["read_at"].isna().all():
        return text
    places = []
    for read_at, cell_line, count in zip(
        rows["read_at"], rows["cell_line"], rows["count"], strict=True
    ):
        known_line = not pd.isna(cell_line)
        if pd.isna(read_at):
            places.append(f"{count} unplaced")
        elif cell_place(str(read_at), cell_line) != str(read_at):  # in the cell itself
            places.append(f"{count} on cell line {cell_line}")
        else:
            places.append(
                f"{count} at {read_at}" + (f" from cell line {cell_line}" if known_line else "")
            )
    return f"{text} ({'; '.join(places)})"


def _own_reads(rows: pd.DataFrame, cause: str) -> str:
    """``The reads are yours, on cell line 6. `` where the cell's own
    code read the values, else nothing."""
    if cause != "item" or "read_at" not in rows.columns:
        return ""
    lines = sorted(
        {
            int(line)
            for place, line in zip(rows["read_at"], rows["cell_line"], strict=True)
            if not pd.isna(place) and cell_place(str(place), line) != str(place)
        }
    )
    if not lines:
        return ""
    where = ", ".join(str(line) for line in lines)
    return f"The reads are yours, on cell line {where}. "


def _advice(rows, cause: str) -> str:
    """The rows' own advice (each runtime writes its own), else the cause's."""
    given = [str(a) for a in rows["advice"].dropna().unique() if str(a)]
    return " ".join(given) if given else FALLBACK_ADVICE.get(cause, "")
