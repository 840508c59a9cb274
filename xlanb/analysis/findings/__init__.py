"""Findings: the "why is this cell slow" list, derived from a Profile's frames only.

Each rule is a function ``(profile) -> list of finding rows``; the advice follows the PyTorch/XLA
performance caveats (static shapes, no ``.item()`` in the loop, no data-dependent shapes).
The rules live in ``torch_rules`` (PyTorch/XLA), ``jax_rules`` (JAX) and ``rank_rules``
(multi-process runs); helpers they share are in ``common``.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from xlanb.analysis.findings.common import Finding
from xlanb.analysis.findings.device_rules import exposed_async_waits
from xlanb.analysis.findings.jax_rules import (
    EAGER_COMPILES,
    HOT_CALLS,
    jax_eager_compiles,
    jax_host_callbacks,
    jax_host_transfers,
    jax_memory_growth,
    jax_recompilation,
)
from xlanb.analysis.findings.memory_rules import (
    memory_leak_across_cells,
    out_of_memory_failure,
    tensors_kept_across_cells,
    unused_donation,
)
from xlanb.analysis.findings.rank_rules import (
    DIVERGENT_SHOWN,
    rank_divergent_programs,
    rank_health,
    rank_skew,
)
from xlanb.analysis.findings.torch_rules import cpu_fallbacks, forced_syncs, recompilation
from xlanb.core.profile import Profile, make_frame
from xlanb.core.words import counted

__all__ = [
    "DIVERGENT_SHOWN",
    "EAGER_COMPILES",
    "HOT_CALLS",
    "MINOR_SHARE",
    "RANK_RULES",
    "RULES",
    "SEVERITY_ORDER",
    "Finding",
    "by_cost",
    "compile_budget_error",
    "cpu_fallbacks",
    "exposed_async_waits",
    "finding_rows",
    "findings_frame",
    "forced_syncs",
    "jax_eager_compiles",
    "jax_host_callbacks",
    "jax_host_transfers",
    "jax_memory_growth",
    "jax_recompilation",
    "memory_leak_across_cells",
    "out_of_memory_failure",
    "rank_divergent_programs",
    "rank_health",
    "rank_skew",
    "recompilation",
    "tensors_kept_across_cells",
    "unused_donation",
]

from xlanb.core.errors import CompileBudgetExceeded
from xlanb.core.schema import SEVERITY_ORDER

#: The rules for multi-process runs (also in :data:`RULES`; they do nothing for one process).
RANK_RULES: list[Callable[[Profile], list[Finding]]] = [
    rank_health,
    rank_skew,
    rank_divergent_programs,
]

RULES: list[Callable[[Profile], list[Finding]]] = [
    out_of_memory_failure,
    cpu_fallbacks,
    recompilation,
    forced_syncs,
    jax_recompilation,
    jax_host_callbacks,
    jax_host_transfers,
    jax_eager_compiles,
    jax_memory_growth,
    exposed_async_waits,
    memory_leak_across_cells,
    tensors_kept_across_cells,
    unused_donation,
    *RANK_RULES,
]


def finding_rows(profile: Profile) -> list[Finding]:
    """Every rule's findings as rows, the costliest first (``seconds`` each accounts for and
    its ``share`` of the wall time, where a rule can tell), then by severity."""
    rows = [finding for rule in RULES for finding in rule(profile)]
    return by_cost(rows, profile.wall_seconds)


def findings_frame(profile: Profile) -> pd.DataFrame:
    """:func:`finding_rows` as the ``findings`` frame."""
    return make_frame("findings", finding_rows(profile))


#: A finding costing less than this share of the wall ranks below every error.
MINOR_SHARE = 0.01


def by_cost(rows: list[Finding], wall_seconds: float) -> list[Finding]:
    """`rows` with ``share`` filled from ``seconds``, ordered by cost, then severity; an error
    never ranks below a finding of less than :data:`MINOR_SHARE` of the wall (or of unknown
    cost): a CPU fallback says nothing of its seconds but outranks a recompile of 8 ms."""
    for row in rows:
        seconds = row.get("seconds")
        if seconds is not None and seconds == seconds and wall_seconds:
            row["share"] = min(float(seconds) / wall_seconds, 1.0)

    def cost(row: Finding) -> float:
        seconds = row.get("seconds")
        return float(seconds) if seconds is not None and seconds == seconds else 0.0

    def minor(row: Finding) -> bool:
        share = row.get("share")
        if row["severity"] == "error":
            return False
        return share is None or share != share or float(share) < MINOR_SHARE

    return sorted(rows, key=lambda f: (minor(f), -cost(f), SEVERITY_ORDER.get(f["severity"], 9)))


def compile_budget_error(profile: Profile, limit: int):
    """The :class:`xlanb.CompileBudgetExceeded` to raise when `profile` compiled more than
    `limit` graphs (JAX's eager single-op compiles are not counted), else None. The caller
    raises it, so the user's traceback ends there, not in xlanb's rules."""
    compiles = profile.compiles
    if "eager" in compiles.columns:
        compiles = compiles[compiles["eager"] != True]  # noqa: E712 - NaN means not eager
    if len(compiles) <= limit:
        return None
    shown = []
    for row in compiles.head(10).itertuples():
        where = f" at cell line {row.cell_line}" if not pd.isna(row.cell_line) else ""
        shown.append(f"  {row.backend} {row.graph}{where}: {row.cause}")
    more = f"\n  ... and {len(compiles) - 10} more" if len(compiles) > 10 else ""
    return CompileBudgetExceeded(
        f"{profile.name} compiled {counted(len(compiles), 'graph')}, more than --max-compiles "
        f"{limit}:\n" + "\n".join(shown) + more,
        len(compiles),
        limit,
    )
