"""A profiler trace copied off a GPU or TPU machine: an ``.xplane.pb`` at any depth of a folder
(TensorBoard's ``plugins/profile/RUN/HOST.xplane.pb`` included), with an XLA dump folder
beside it (``dump=`` names it; else the first folder under it holding dump files; any subset
of the dump's files, the after-optimizations HLO at least, for per-op names, categories and
source lines). It gives the frames of a live capture: ``ops``, ``spans`` and one
``executions`` row per traced run from the trace (device time by
:mod:`xlanb.analysis.device_time`'s rules), compiles, graphs and temporaries from the dump,
memory samples, the breakdown and the steps.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from xlanb.analysis.breakdown import breakdown_frame
from xlanb.analysis.device_time import memory_samples, rows
from xlanb.analysis.step_times import step_frame
from xlanb.analysis.time_account import merge_intervals
from xlanb.core.errors import FormatError
from xlanb.core.profile import Profile
from xlanb.core.schema import make_frame
from xlanb.formats.xspace import find_xspace_files, read_xspace
from xlanb.offline.assemble import finish, new_profile

FORMAT = "xprof_trace"


def has_trace(path: str | os.PathLike) -> bool:
    """Whether `path` is an ``.xplane.pb`` file or a folder holding one at any depth."""
    return bool(find_xspace_files(path))


def _dump_dir(root: Path, dump: str | os.PathLike | None) -> Path | None:
    if dump is not None:
        return Path(dump)
    if root.is_file():
        root = root.parent
    for candidate in sorted(root.rglob("*after_optimizations*.txt")):
        return candidate.parent
    return None


def load_trace_dir(path: str | os.PathLike, dump: str | os.PathLike | None = None) -> Profile:
    """The Profile of the newest trace under `path` and the XLA dump beside it."""
    files = find_xspace_files(path)
    if not files:
        raise FormatError(path, 0, "no *.xplane.pb file under this path")
    folder = _dump_dir(Path(path), dump)
    if folder is not None:
        from xlanb.offline.xla_dump import load_dump_dir

        profile = load_dump_dir(folder)
        profile.environment.update({"source": os.fspath(path), "format": FORMAT})
    else:
        profile = new_profile(path, "jax", FORMAT)
    events = read_xspace(files[0], markers=False)
    frame = events.events
    start = (events.profile_start_ns or int(frame["start_ns"].min())) / 1e9
    end = (
        events.profile_stop_ns
        or float((frame["start_ns"] + frame["duration_ns"]).max() if not frame.empty else 0)
    ) / 1e9
    backend = profile.backends[0] if profile.backends else "jax"
    graphs = profile.graphs.to_dict("records") if not profile.graphs.empty else []
    ops, spans = rows(backend, events, (start, end), graphs)
    profile.started_at, profile.wall_seconds = start, max(end - start, 0.0)
    profile.ops = make_frame("ops", ops)
    profile.spans = make_frame("spans", spans + _compile_spans(backend, frame))
    profile.samples = make_frame("samples", memory_samples(backend, events, (start, end)))
    profile.executions = make_frame(
        "executions",
        [
            {
                "backend": backend,
                "graph": span["graph"],
                "seconds": span["seconds"],
                "time": span["start"] + span["seconds"],
                "count": 1,
            }
            for span in spans
            if span["lane"] == "device"
        ],
    )
    profile.environment["trace"] = os.fspath(files[0])
    profile.breakdown = breakdown_frame(profile)
    profile.step_times = step_frame(profile)
    return finish(profile, profile.findings.to_dict("records"))


def _compile_spans(backend: str, frame: Any) -> list[dict[str, Any]]:
    """``compile`` spans: the host's compile events, overlapping ones merged."""
    compiles = frame[(frame["kind"] == "compile") & frame["hlo_op"].isna()]
    starts = compiles["start_ns"].to_numpy(dtype=float) / 1e9
    ends = starts + compiles["duration_ns"].to_numpy(dtype=float) / 1e9
    return [
        {
            "backend": backend,
            "lane": "compile",
            "name": "compile",
            "graph": None,
            "start": start,
            "seconds": end - start,
            "estimated": False,
        }
        for start, end in merge_intervals(list(zip(starts, ends, strict=True)))
    ]
