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


def report_html(
    profiles: list[Profile], heading: str | None = None, compare_them: bool = True
) -> str:
    """The report page of `profiles` (one or more), each compared with the next when
    `compare_them`."""
    pairs = itertools.pairwise(profiles) if compare_them else ()
    comparisons = [compare(a, b) for a, b in pairs]
    return report.report_html(profiles, heading, comparisons)


def write_report(
    profiles: list[Profile],
    path: str | os.PathLike,
    heading: str | None = None,
    compare: bool = True,
) -> Path:
    """Write :func:`report_html` to `path` and return it (compared when `compare`)."""
    path = Path(path)
    write_atomically(path, report_html(profiles, heading, compare))
    return path
