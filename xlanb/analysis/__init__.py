"""Analysis: frames computed from a Profile's captured frames (findings, cell-line attribution,
comparisons, per-rank tables). Nothing here touches a live runtime."""

from __future__ import annotations

from typing import Any

from xlanb.analysis.attribution import attribute_fallbacks
from xlanb.analysis.breakdown import breakdown_frame
from xlanb.analysis.findings import RANK_RULES, by_cost, findings_frame
from xlanb.analysis.rates import with_rates
from xlanb.analysis.roofline import with_op_rates
from xlanb.analysis.step_times import step_frame
from xlanb.core.profile import Profile
from xlanb.core.schema import make_frame, rank_findings_frame


def finish(profile: Profile, *, attribute_lines: bool = False) -> Profile:
    """Fill what is derived from a captured Profile: cell lines of fallbacks (when the code
    ran in a cell or script whose source the Profile holds) and the findings."""
    if attribute_lines:
        profile.fallbacks = attribute_fallbacks(
            profile.fallbacks, profile.compiles, profile.source, profile.executions
        )
    profile.breakdown = breakdown_frame(profile)
    profile.step_times = step_frame(profile)
    profile.executions = with_rates(profile)
    profile.ops = with_op_rates(profile.ops, profile.graphs, profile.environment)
    profile.findings = findings_frame(profile)
    return profile


def finish_capture(profile: Profile, options: Any) -> None:
    """:func:`finish` for a live capture (the recorder's `finish` callable)."""
    finish(profile, attribute_lines=bool(getattr(options, "cell_filename", None)))


def finish_offline(profile: Profile) -> Profile:
    """The general rules added to a Profile read from runtime files (whose ``findings`` hold the
    rules only a file can give), most severe first."""
    rows = findings_frame(profile).to_dict("records") + profile.findings.to_dict("records")
    profile.findings = make_frame("findings", by_cost(rows, profile.wall_seconds))
    return profile


def finish_ranks(profile: Profile) -> Profile:
    """The rank rules added to a Profile merged from rank files (whose ``findings`` hold the
    per-file findings of the merge), most severe first."""
    rows = [row for rule in RANK_RULES for row in rule(profile)]
    profile.findings = rank_findings_frame(rows + profile.findings.to_dict("records"))
    return profile
