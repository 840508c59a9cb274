"""Analysis: frames computed from a Profile's captured frames (findings, cell-line attribution,
comparisons, per-rank tables). Nothing here touches a live runtime.

:func:`derive` makes every derived frame of a Profile, whatever its source (a live capture, a
file or trace folder read by :mod:`xlanb.offline`, rank files merged), once; the API layer
calls it, views only read what it made."""

from __future__ import annotations

from typing import Any

import pandas as pd

from xlanb.analysis.attribution import attribute_fallbacks
from xlanb.analysis.breakdown import breakdown_frame
from xlanb.analysis.findings import RANK_RULES, by_cost, finding_rows
from xlanb.analysis.ranks import is_multi_rank
from xlanb.analysis.rates import with_rates
from xlanb.analysis.roofline import with_op_rates
from xlanb.analysis.shown import shown
from xlanb.analysis.step_times import step_frame
from xlanb.core.profile import Profile
from xlanb.core.schema import make_frame, rank_findings_frame

__all__ = ["derive"]


def derive(profile: Profile, *, attribute_lines: bool = False, keep_shown: bool = True) -> Profile:
    """Fill every frame derived from `profile`'s captured ones: the cell lines of fallbacks
    (`attribute_lines`: the code ran in a cell or script whose source the Profile holds), the
    breakdown, the steps, the programs' and ops' rates and the findings. The findings a source
    alone can give (a file's, each rank's of a merge), already in ``findings``, are kept
    beside the general rules', most costly first. Deriving a derived Profile again (a saved
    one) gives the same frames.

    A Profile merged from rank files keeps each rank's frames (derived when it was captured)
    and gains the rules over the ranks. What the views show from several frames is kept too
    (``Profile.shown``), unless `keep_shown` is False (a capture not displayed at its end:
    ``Profile.shown`` computes it when first asked)."""
    if is_multi_rank(profile):
        _with_rank_findings(profile)
        profile.keep_shown(shown(profile))
        return profile
    if attribute_lines:
        profile.fallbacks = attribute_fallbacks(
            profile.fallbacks, profile.compiles, profile.source, profile.executions
        )
    profile.breakdown = breakdown_frame(profile)
    profile.step_times = step_frame(profile)
    profile.executions = with_rates(profile)
    profile.ops = with_op_rates(
        profile.ops, profile.graphs, profile.environment, _program_runs(profile.spans)
    )
    general = finding_rows(profile)
    rows = general + _source_findings(profile, general)
    profile.findings = make_frame("findings", by_cost(rows, profile.wall_seconds))
    if keep_shown:
        profile.keep_shown(shown(profile))
    return profile


def _program_runs(spans: pd.DataFrame) -> dict[int, int]:
    """module id -> traced runs: the ``device`` spans that name their program."""
    if spans.empty or "module_id" not in spans.columns:
        return {}
    runs: dict[int, int] = {}  # counted in plain Python: value_counts cost more than this
    for lane, module in zip(spans["lane"].tolist(), spans["module_id"].tolist(), strict=True):
        if lane == "device" and not pd.isna(module):
            runs[int(module)] = runs.get(int(module), 0) + 1
    return runs


def _with_rank_findings(profile: Profile) -> Profile:
    """The rank rules added to a Profile merged from rank files, most severe first."""
    rules = [row for rule in RANK_RULES for row in rule(profile)]
    profile.findings = rank_findings_frame(rules + _source_findings(profile, rules))
    return profile


def _source_findings(profile: Profile, derived: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of ``findings`` that the rules did not just make again (those of a file or of
    each rank; none in a capture not derived yet)."""
    if profile.findings.empty:
        return []
    made = {(row["severity"], row["title"], row["detail"]) for row in derived}
    return [
        row
        for row in profile.findings.to_dict("records")
        if (row["severity"], row["title"], row["detail"]) not in made
    ]
