"""Building a Profile from what an offline file holds: frames from rows or columns, findings
from :mod:`xlanb.diagnose` plus the offline rules, and the provenance in ``environment``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pandas as pd

from xlanb.profile import FRAME_COLUMNS, Profile, empty_frame, make_frame


def frame_from_columns(name: str, columns: dict[str, Sequence[Any]]) -> pd.DataFrame:
    """Frame `name` from equally long columns (much faster than row dicts for big frames);
    missing documented columns are filled with missing values."""
    lengths = {len(values) for values in columns.values()}
    if not lengths or lengths == {0}:
        frame = empty_frame(name)
        for column in columns:
            if column not in frame.columns:
                frame[column] = pd.Series(dtype=object)
        return frame
    (length,) = lengths
    template = empty_frame(name)
    data: dict[str, Any] = {}
    for column in FRAME_COLUMNS[name]:
        if column in columns:
            data[column] = columns[column]
        else:
            data[column] = pd.Series([None] * length, dtype=template[column].dtype)
    for column, values in columns.items():
        if column not in data:
            data[column] = values
    return pd.DataFrame(data)


def new_profile(path: str | os.PathLike, backend: str, file_format: str, **extra: Any) -> Profile:
    """An empty Profile for the offline file `path` read as `file_format`."""
    return Profile(name=os.path.basename(os.path.normpath(os.fspath(path))) or os.fspath(path),
                   backends=[backend] if backend else [],
                   environment={"source": os.fspath(path), "format": file_format, **extra})


def finish(profile: Profile, offline_findings: list[dict[str, Any]]) -> Profile:
    """Fill ``findings``: the live rules of :mod:`xlanb.diagnose` plus the offline ones, most
    severe first."""
    from xlanb.diagnose import SEVERITY_ORDER, findings_frame

    live = findings_frame(profile).to_dict("records")
    rows = live + offline_findings
    rows.sort(key=lambda f: SEVERITY_ORDER.get(f["severity"], 9))
    profile.findings = make_frame("findings", rows)
    return profile
