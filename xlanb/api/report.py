"""The report page of several profiles: each compared with the next
(:func:`xlanb.analysis.compare.compare`), drawn by :mod:`xlanb.views.report`."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from xlanb.analysis.compare import compare
from xlanb.core.files import write_atomically
from xlanb.core.profile import Profile
from xlanb.views import report


def report_html(profiles: list[Profile], heading: str | None = None) -> str:
    """The report page of `profiles` (one or more), each compared with the next."""
    comparisons = [compare(a, b) for a, b in itertools.pairwise(profiles)]
    return report.report_html(profiles, heading, comparisons)


def write_report(
    profiles: list[Profile], path: str | os.PathLike, heading: str | None = None
) -> Path:
    """Write :func:`report_html` to `path` and return it."""
    path = Path(path)
    write_atomically(path, report_html(profiles, heading))
    return path
