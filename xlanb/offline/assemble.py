"""Building a Profile from what an offline file holds: frames from rows or columns, the
findings only a file can give (:mod:`xlanb.offline.findings`), and the provenance in
``environment``. The derived frames are made above this layer (:func:`xlanb.load` calls
:func:`xlanb.analysis.derive`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import pandas as pd

from xlanb.core.profile import Profile
from xlanb.core.schema import FRAME_COLUMNS, SEVERITY_ORDER, empty_frame, make_frame


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
    return Profile(
        name=os.path.basename(os.path.normpath(os.fspath(path))) or os.fspath(path),
        backends=[backend] if backend else [],
        environment={"source": os.fspath(path), "format": file_format, **extra},
    )


def with_file_findings(profile: Profile, offline_findings: list[dict[str, Any]]) -> Profile:
    """Fill ``findings`` with the rules only offline files can give, most severe first
    (:func:`xlanb.analysis.derive` adds the general rules and the other derived frames)."""
    rows = sorted(offline_findings, key=lambda f: SEVERITY_ORDER.get(f["severity"], 9))
    profile.findings = make_frame("findings", rows)
    return profile
