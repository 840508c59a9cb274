"""Files one run wrote, read as one Profile: ``xlanb report metrics.txt debug.txt dump/``.

A run setting ``XLA_METRICS_FILE``, ``PT_XLA_DEBUG_FILE`` and ``--xla_dump_to`` leaves one file
of each format: inputs of different formats are one run, two of one format two runs.

Each frame comes from the input that knows it best:

- ``compiles``: the debug file (cause, trigger, location and graph of each compile), its
  ``seconds`` from the metrics file in order (which may end before the run did) and the
  report's total less those shared by the rest (see :func:`_timed`); else the metrics file
  (per step), the report, the dump;
- ``executions``, ``counters``, ``metrics``, ``fallbacks``: the report (written last), else the
  metrics file's last record; executions from the debug file (by graph) when neither has them;
- ``steps`` and ``samples``: the metrics file; ``graphs``: the dump.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from xlanb.core.profile import Profile
from xlanb.offline import detect

#: Which input each frame comes from, best first.
_SOURCES = {
    "compiles": (detect.DEBUG_FILE, detect.METRICS_FILE, detect.METRICS_REPORT, detect.XLA_DUMP),
    "executions": (detect.METRICS_REPORT, detect.METRICS_FILE, detect.DEBUG_FILE),
    "counters": (detect.METRICS_REPORT, detect.METRICS_FILE),
    "metrics": (detect.METRICS_REPORT, detect.METRICS_FILE),
    "fallbacks": (detect.METRICS_REPORT, detect.METRICS_FILE),
    "steps": (detect.METRICS_FILE,),
    "samples": (detect.METRICS_FILE,),
    "graphs": (detect.XLA_DUMP, detect.HLO_MODULE),
}
#: Formats that are part of a run (a saved Profile is a run of its own).
RUN_FORMATS = {file_format for formats in _SOURCES.values() for file_format in formats}


def is_one_run(formats: list[str]) -> bool:
    """Whether inputs of these formats are one run's files: more than one, all runtime files,
    no format twice."""
    return len(formats) > 1 and set(formats) <= RUN_FORMATS and len(set(formats)) == len(formats)


def merge_run_files(inputs: list[tuple[Profile, str]]) -> Profile:
    """One Profile of a run's files (`inputs`: each Profile with the format it was read as)."""
    by_format = {file_format: profile for profile, file_format in inputs}
    merged = Profile(
        name=" + ".join(str(profile.name) for profile, _ in inputs),
        backends=list(dict.fromkeys(b for profile, _ in inputs for b in profile.backends)),
        environment={
            "format": "one_run",
            "sources": [str(profile.environment.get("source", "")) for profile, _ in inputs],
        },
    )
    for frame, formats in _SOURCES.items():
        for file_format in formats:
            profile = by_format.get(file_format)
            if profile is not None and not getattr(profile, frame).empty:
                setattr(merged, frame, getattr(profile, frame).copy())
                break
    merged.compiles = _timed(merged.compiles, by_format)
    merged.findings = pd.concat(
        [p.findings for p, _ in inputs if not p.findings.empty] or [merged.findings],
        ignore_index=True,
    ).drop_duplicates(subset=["title"])
    merged.notes = [note for profile, _ in inputs for note in profile.notes]
    return merged


def _timed(compiles: pd.DataFrame, by_format: dict[str, Profile]) -> pd.DataFrame:
    """`compiles` with ``seconds`` where it has none: both the metrics file and the debug file
    list compiles in the order they happened, and the metrics file may end before the run
    did, so its times go to the first compiles; a report's total for the whole run, less
    those, is shared by the rest (``seconds_estimated``)."""
    if compiles.empty or compiles["seconds"].notna().any():
        return compiles
    seconds = np.full(len(compiles), np.nan)
    estimated = np.zeros(len(compiles), dtype=bool)
    steps = by_format.get(detect.METRICS_FILE)
    if steps is not None and 0 < len(steps.compiles) <= len(compiles):
        known = steps.compiles["seconds"].to_numpy(dtype=float)
        seconds[: len(known)] = known
        if "seconds_estimated" in steps.compiles:
            marks = steps.compiles["seconds_estimated"].fillna(False).to_numpy(dtype=bool)
            estimated[: len(known)] = marks
    report = by_format.get(detect.METRICS_REPORT)
    unknown = np.isnan(seconds)
    if report is not None and len(report.compiles) == len(compiles) and unknown.any():
        total = float(report.compiles["seconds"].sum())
        rest = total - float(np.nansum(seconds))
        if rest >= 0:
            seconds[unknown] = rest / int(unknown.sum())
            estimated[unknown] = True
    if np.isnan(seconds).all():
        return compiles
    return compiles.assign(seconds=seconds, seconds_estimated=estimated)
