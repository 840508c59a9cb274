"""Findings about device memory: a cell that keeps more of it every time it runs, donated
buffers a program could not reuse, a cell that ran out of it."""

from __future__ import annotations

import statistics
from typing import Any

import pandas as pd

from xlanb.analysis.findings.common import Finding, _lines
from xlanb.core.frame_memo import FrameMemo
from xlanb.core.profile import Profile
from xlanb.core.units import format_bytes
from xlanb.core.words import bytes_on_each_device, counted
from xlanb.formats.oom_text import out_of_memory

#: A cell whose live device memory grew in this many profiled runs in a row (this one the
#: last) keeps memory it no longer needs.
LEAK_RUNS = 2
#: Growth per run from which that is a warning; less (a list of loss scalars) is information.
LEAK_WARNING_BYTES = 1_000_000


#: The snapshots of the last few live_arrays frames read: three rules ask of the same frame.
_SNAPSHOTS: FrameMemo[dict[str, list[tuple[Any, Any]]]] = FrameMemo(8)


def snapshots(live: pd.DataFrame, backend: str) -> dict[str, list[tuple[Any, Any]]]:
    """snapshot -> (count, bytes) of each of `backend`'s rows of `live`, in order: one pass
    over the frame's columns, for the rules that read a few rows of it (kept per frame and
    backend: read-only)."""
    return _SNAPSHOTS.get((live,), backend, lambda: _read_snapshots(live, backend))


def _read_snapshots(live: pd.DataFrame, backend: str) -> dict[str, list[tuple[Any, Any]]]:
    found: dict[str, list[tuple[Any, Any]]] = {}
    for row_backend, snapshot, count, size in zip(
        live["backend"].tolist(),
        live["snapshot"].tolist(),
        live["count"].tolist(),
        live["bytes"].tolist(),
        strict=True,
    ):
        if row_backend == backend:
            found.setdefault(snapshot, []).append((count, size))
    return found


def growing_runs(live: pd.DataFrame, backend: str) -> list[tuple[int, float]]:
    """(arrays, bytes) grown by each of the last runs of the cell in a row that grew live
    device memory, this run the last; [] when this run did not grow it."""
    found = snapshots(live, backend)
    if "before" not in found or "after" not in found:
        return []
    (before_count, before_bytes), (after_count, after_bytes) = found["before"][0], found["after"][0]
    runs = [(int(count), float(size)) for count, size in found.get("earlier run", [])]
    runs.append((int(after_count - before_count), float(after_bytes - before_bytes)))
    grown: list[tuple[int, float]] = []
    for count, size in reversed(runs):
        if count <= 0 or not size > 0:
            break
        grown.insert(0, (count, size))
    return grown


#: Groups of arrays a cell kept that a finding lists (largest first).
KEPT_GROUPS = 6


def kept_groups(live: pd.DataFrame, backend: str) -> str:
    """`float32[256,256] ×5, float32[] ×5` and `… and 3 more groups` of `backend`'s ``left
    alive`` rows of `live` (largest first)."""
    left = [
        (shape, count)
        for row_backend, snapshot, shape, count in zip(
            live["backend"].tolist(),
            live["snapshot"].tolist(),
            live["shape"].tolist(),
            live["count"].tolist(),
            strict=True,
        )
        if row_backend == backend and snapshot == "left alive" and count > 0
    ]
    listed = ", ".join(f"{shape} ×{count}" for shape, count in left[:KEPT_GROUPS])
    more = len(left) - KEPT_GROUPS
    return listed + (f" and {counted(more, 'more group')}" if more > 0 else "")


def memory_leak_across_cells(profile: Profile) -> list[Finding]:
    """The same cell kept more live device memory on each of its last profiled runs (results
    appended to a list, a cache that only grows): a warning. A cell that grows once (it
    initialises parameters) and then replaces what it made is not one."""
    live = profile.live_arrays
    if live.empty or "earlier run" not in live["snapshot"].tolist():
        return []
    findings = []
    for backend in dict.fromkeys(live["backend"].astype(str)):
        runs = growing_runs(live, backend)
        if len(runs) < LEAK_RUNS:
            continue
        # the first growing run may also have made what a cell makes once (its state)
        per_run = statistics.median(size for _count, size in runs[1:])
        arrays = sum(count for count, _size in runs)
        kept = kept_groups(live, backend)
        findings.append(
            {
                "severity": "warning" if per_run >= LEAK_WARNING_BYTES else "info",
                "title": f"{profile.name} keeps {format_bytes(per_run)} more live device "
                f"memory every run (its last {counted(len(runs), 'run')})",
                "detail": f"{counted(arrays, 'array')} "
                f"({format_bytes(sum(size for _count, size in runs))}) kept by these runs and "
                f"still alive. This run kept: {kept or '-'}. Run by run it will run out of "
                "device memory: results appended to a list, or a cache that only grows, keep "
                "every step's arrays on the device.",
                "advice": "Keep host values (float(loss), jax.device_get(x)) instead of device "
                "arrays, keep only the latest result, or clear the list (del, .clear()) "
                "when you no longer need it.",
            }
        )
    return findings


def unused_donation(profile: Profile) -> list[Finding]:
    """Arguments donated (``donate_argnums``) that the program could not reuse for an output:
    their memory is not saved, and a step meant to update its state in place holds two
    copies of it."""
    compiles = profile.compiles
    if "not_donated_bytes" not in compiles.columns:
        return []
    findings = []
    for row in compiles[compiles["not_donated_bytes"] > 0].itertuples():
        where = _lines(compiles.loc[[row.Index]])
        findings.append(
            {
                "severity": "warning",
                "title": f"{row.graph}: {format_bytes(float(row.not_donated_bytes))} donated "
                f"but not reused{where}",
                "detail": f"Donated arguments that no output of {row.graph} could take over: "
                f"{row.not_donated}. JAX keeps them (the arrays stay usable) and the program "
                "allocates its outputs anew, so this donation saves nothing (JAX warned: "
                '"Some donated buffers were not usable").',
                "advice": "A donated buffer is reused only by an output of the same shape and "
                "dtype (and sharding): return the updated value of what you donate (the new "
                "train state for the old one), or leave the argument out of donate_argnums.",
            }
        )
    return findings


#: Programs whose static needs the out-of-memory finding lists (largest peak first).
OOM_PROGRAMS = 3


def out_of_memory_failure(profile: Profile) -> list[Finding]:
    """The cell ran out of memory: what it asked for, what was alive (largest first, and
    what held it), the static needs of the programs compiled in the cell, the limit."""
    if not profile.failed:
        return []
    oom = out_of_memory(profile.error)
    if oom is None:
        return []
    asked = oom.requested_bytes
    title = f"{profile.name} ran out of memory"
    if asked == asked:
        title += f" allocating {format_bytes(asked)}"
    details = [f"The cell raised {profile.error.splitlines()[0][:300].rstrip('.')}"]
    live = profile.live_arrays
    alive = live[live["snapshot"] == "at failure"] if not live.empty else live
    failed = live[live["snapshot"] == "failed result"] if not live.empty else live
    if not failed.empty:
        details.append("Arrays whose program failed (never allocated): " + _groups(failed))
    if not alive.empty:
        groups = _groups(alive.head(5))
        details.append(
            f"Alive at the failure: {format_bytes(float(alive['bytes'].sum()))} in "
            f"{counted(int(alive['count'].sum()), 'array')}, largest first: " + groups
        )
    needs = _static_needs(profile.compiles)
    if needs:
        details.append("Programs compiled in the cell, by peak memory: " + "; ".join(needs))
    environment = profile.environment
    limit = environment.get("memory_limit_bytes")
    if isinstance(limit, int | float) and limit == limit:
        used = environment.get("memory_in_use_bytes", float("nan"))
        details.append(
            f"Limit: {format_bytes(float(limit))} ({environment.get('memory_limit', '')})"
            + (f", {format_bytes(float(used))} in use after the failure" if used == used else "")
        )
    return [
        {
            "severity": "error",
            "seconds": profile.wall_seconds,  # the cell's time, all of it lost to the failure
            "title": title,
            "detail": ". ".join(details) + ".",
            "advice": "Free what earlier cells keep (del, .clear(); results kept as host "
            "values, not device arrays); use a smaller batch (or micro-batches with gradient "
            "accumulation); donate the inputs a step replaces (donate_argnums) so outputs "
            "reuse their memory; rematerialise activations instead of keeping them "
            "(jax.checkpoint, torch_xla's checkpoint); shard large arrays over several "
            "devices.",
        }
    ]


def _groups(rows: pd.DataFrame) -> str:
    """`float32[64,1024] ×2 (536.9 MB, held by kept[...]; made before this cell)`; ..."""
    return "; ".join(
        f"{row.shape} ×{row.count} ({format_bytes(float(row.bytes))}"
        + (f", {row.origin}" if isinstance(getattr(row, "origin", None), str) else "")
        + ")"
        for row in rows.itertuples()
    )


def _static_needs(compiles: pd.DataFrame) -> list[str]:
    """`jit(f) peak 1.1 GB (inputs ..., outputs ..., temporaries ...)` of the programs
    compiled in the cell, the largest peak first."""
    if compiles.empty or "peak_bytes" not in compiles.columns:
        return []
    rows = compiles[compiles["peak_bytes"] > 0].sort_values("peak_bytes", ascending=False)
    rows = rows.drop_duplicates("graph").head(OOM_PROGRAMS)
    parts = []
    for row in rows.itertuples():
        sizes = [
            f"{label} {format_bytes(float(getattr(row, column)))}"
            for label, column in (
                ("inputs", "input_bytes"),
                ("outputs", "output_bytes"),
                ("temporaries", "intermediate_bytes"),
                ("aliased", "aliased_bytes"),
            )
            if column in compiles.columns and getattr(row, column) == getattr(row, column)
        ]
        peak = bytes_on_each_device(float(row.peak_bytes), getattr(row, "devices", None))
        parts.append(f"{row.graph} peak {peak} ({', '.join(sizes)})")
    return parts


def tensors_kept_across_cells(profile: Profile) -> list[Finding]:
    """:func:`memory_leak_across_cells` for a runtime that counts its live tensors but cannot
    say their bytes (torch_xla on the CPU: ``bytes`` NaN): the same cell kept more live
    tensors on each of its last profiled runs."""
    live = profile.live_arrays
    if live.empty or "earlier run" not in live["snapshot"].tolist():
        return []
    findings = []
    for backend in dict.fromkeys(live["backend"].astype(str)):
        found = snapshots(live, backend)
        if "before" not in found or "after" not in found:
            continue
        (before_count, before_bytes), (after_count, after_bytes) = (
            found["before"][0],
            found["after"][0],
        )
        if pd.notna(before_bytes) or pd.notna(after_bytes):
            continue  # bytes known: memory_leak_across_cells says it
        runs = [int(count) for count, _size in found.get("earlier run", [])]
        runs.append(int(after_count - before_count))
        grown = 0
        for count in reversed(runs):
            if count <= 0:
                break
            grown += 1
        if grown < LEAK_RUNS:
            continue
        kept = runs[-grown:]
        findings.append(
            {
                "severity": "warning",
                "title": f"{profile.name} keeps "
                f"{counted(round(sum(kept) / grown), 'more live device tensor')} every run "
                f"(its last {counted(grown, 'run')})",
                "detail": f"{counted(sum(kept), 'tensor')} kept by these runs and still alive "
                "(the runtime counts its tensors; on this device it cannot say their bytes). "
                "Run by run it will run out of device memory: results appended to a list, or "
                "a cache that only grows, keep every step's tensors on the device.",
                "advice": "Keep host values (loss.item(), t.cpu()) instead of device tensors, "
                "keep only the latest result, or clear the list (del, .clear()) when you no "
                "longer need it.",
            }
        )
    return findings
