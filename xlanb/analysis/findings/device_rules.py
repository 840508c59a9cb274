"""Findings read off the device's own ops (any runtime whose trace has per-op times): time the
device spent waiting for async copies and collectives to finish."""

from __future__ import annotations

from xlanb.analysis.findings.common import Finding
from xlanb.core.profile import Profile
from xlanb.core.units import format_seconds, percent
from xlanb.graphs.ops import ASYNC_HALF

#: Waits under this share of the device's op time are left out.
EXPOSED_SHARE = 0.10

_COPIES = {"copy"}
_ADVICE = {
    "copies": "The copies started by `copy-start` take longer than the compute XLA placed "
    "between the start and the done, so the device idles until they land (host offload, "
    "prefetch): move fewer or smaller buffers per step (an offloading `jax.checkpoint` policy "
    "that saves less), or give the copies more compute to hide behind (a larger batch per "
    "step); the bytes each moves are in `prof.ops['bytes']`.",
    "collectives": "The communication is not hidden behind compute, so the device idles "
    "until it lands: let XLA overlap it (its latency-hiding scheduler), make it smaller "
    "(shard to gather less, reduce in bf16), or give it more compute to hide behind per step.",
}


def exposed_async_waits(profile: Profile) -> list[Finding]:
    """Ops that wait for an async copy or collective (``*-done``) holding at least
    :data:`EXPOSED_SHARE` of a program's op time: the device idled for them."""
    ops = profile.ops
    if ops.empty or "op" not in ops.columns:
        return []
    if not any("-done" in str(op) for op in ops["op"].tolist()):  # most cells: before pandas
        return []
    findings = []
    for graph, rows in ops.groupby("graph", sort=False):
        total = float(rows["seconds"].sum())
        waits: dict[str, list[tuple[str, float]]] = {}
        for op, seconds in zip(rows["op"].astype(str), rows["seconds"].astype(float), strict=True):
            found = ASYNC_HALF.match(op)  # the done half: where the program waits
            if found is not None and found["half"] == "done" and seconds > 0:
                kind = "copies" if found["kind"] in _COPIES else "collectives"
                waits.setdefault(kind, []).append((op, seconds))
        for kind, found_waits in waits.items():
            seconds = sum(s for _, s in found_waits)
            if not total or seconds < EXPOSED_SHARE * total:
                continue
            names = [op for op, _ in sorted(found_waits, key=lambda pair: -pair[1])]
            shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
            findings.append(
                {
                    "severity": "warning",
                    "title": f"{graph} waits for its async {kind}: {format_seconds(seconds)}, "
                    f"{percent(seconds / total)} of its op time",
                    "detail": f"{shown}: the program blocks there until what the matching "
                    f"start launched has finished ({format_seconds(seconds)} of "
                    f"{format_seconds(total)} of {graph}'s op time).",
                    "advice": _ADVICE[kind],
                    "seconds": seconds,
                }
            )
    return findings
