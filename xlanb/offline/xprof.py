"""A profiler trace copied off a GPU or TPU machine: an ``.xplane.pb`` at any depth of a folder
(TensorBoard's ``plugins/profile/RUN/HOST.xplane.pb`` included), with an XLA dump folder
beside it (``dump=`` names it; else the first folder under it holding dump files; any subset
of the dump's files, the after-optimizations HLO at least, for per-op names, categories and
source lines). It gives the captured frames of a live capture: ``ops``, ``spans`` and one
``executions`` row per traced run from the trace (device time by
:mod:`xlanb.analysis.device_time`'s rules), compiles (timed by the trace's compile events),
graphs and temporaries from the dump, memory samples, and the device's name in
``environment["device_kind"]``; :func:`xlanb.analysis.derive` makes the rest (breakdown,
steps, rates and roofline, findings). The Profile is named after the trace's folder.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from xlanb.analysis.device_time import memory_samples, rows
from xlanb.analysis.time_account import merge_intervals
from xlanb.analysis.trace_summary import passing
from xlanb.core.errors import FormatError
from xlanb.core.profile import Profile
from xlanb.core.schema import make_frame
from xlanb.formats.xspace import find_xspace_files, read_xspace
from xlanb.offline.assemble import new_profile, with_file_findings
from xlanb.offline.xla_dump import load_dump_dir

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
                "module_id": span.get("module_id"),
            }
            for span in spans
            if span["lane"] == "device"
        ],
    )
    profile.compiles = (
        _timed_compiles(profile.compiles, frame)
        if not profile.compiles.empty
        else make_frame("compiles", _trace_compiles(backend, frame))
    )
    profile.name = _folder_name(path)
    if frame["hlo_op"].isna().all():
        planes = ", ".join(sorted(set(frame["plane"].astype(str))))
        profile.notes.append(
            f"{files[0].name}: no XLA op events{f' (planes {planes})' if planes else ''}: "
            "no per-op device time. "
            "A trace of a runtime other than XLA (TensorFlow's own ops), or of a cell that "
            "ran no program?"
        )
    profile.environment["trace"] = os.fspath(files[0])
    profile.environment.update(device_environment(events.plane_stats))
    return with_file_findings(profile, profile.findings.to_dict("records"))


def _folder_name(path: str | os.PathLike) -> str:
    """The trace's folder (the file's own name less ``.xplane.pb`` for a file given alone)."""
    given = Path(path)
    if given.is_file():
        return given.name.removesuffix(".xplane.pb")
    return given.resolve().name or os.fspath(path)


#: The device plane's stats kept in ``environment``: stat name -> key (a GPU's name, a
#: TPU's ``device_type_string``).
_DEVICE_STATS = {
    "gpu_device_name": "device_kind",
    "device_type_string": "device_kind",
    "core_count": "device_cores",
}


def device_environment(plane_stats: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What the trace says of its first device: ``device_kind`` (the GPU's name, as JAX's
    ``device_kind`` gives it: ``NVIDIA H100 80GB HBM3``; a TPU's type: ``TPU v6 Lite``; whose
    data-sheet peak :mod:`xlanb.analysis.peaks` holds), ``compute_capability`` and
    ``device_cores``."""
    devices = sorted(
        name for name in plane_stats if name.startswith(("/device:GPU:", "/device:TPU:"))
    )
    if not devices:
        return {}
    stats = plane_stats[devices[0]]
    found: dict[str, Any] = {
        key: str(stats[stat]) for stat, key in _DEVICE_STATS.items() if stats.get(stat)
    }
    if "device_cores" in found:
        found["device_cores"] = int(found["device_cores"])
    major, minor = stats.get("compute_cap_major"), stats.get("compute_cap_minor")
    if major is not None and minor is not None:
        found["compute_capability"] = f"{major}.{minor}"
    return found


#: The host event of one compile of a JAX program: ``...CompileAndLoad(<HLO module name>)``.
_COMPILE_EVENT = "CompileAndLoad("


def _timed_compiles(compiles: Any, frame: Any) -> Any:
    """`compiles` (the dump's, untimed) with ``seconds`` and ``time`` (its end) from the
    trace's compile event of each program, where the trace holds one per compile of that
    module name (in order); the others stay unknown."""
    if compiles.empty or frame.empty:
        return compiles
    events = frame[passing(frame["name"], lambda name: _COMPILE_EVENT in name)]
    events = events.sort_values("start_ns", kind="stable")
    module = events["name"].astype(str).str.extract(r"CompileAndLoad\((.*)\)$")[0]
    timed = compiles.copy()
    for graph, positions in timed.groupby("graph", sort=False).indices.items():
        mine = events[module == graph]
        if len(mine) != len(positions):
            continue
        order = timed.iloc[positions].sort_values("module_id", kind="stable").index
        seconds = mine["duration_ns"].to_numpy(dtype=float) / 1e9
        ends = (mine["start_ns"].to_numpy(dtype=float) + mine["duration_ns"].to_numpy()) / 1e9
        timed.loc[order, "seconds"] = seconds
        timed.loc[order, "time"] = ends
    return timed


#: JAX's span around one compile of a program (``backend_compile`` before JAX 0.9), inside
#: the ``PjitFunction(NAME)`` span of the call that compiled it.
_JAX_COMPILES = ("backend_compile", "backend_compile_and_load")
_JAX_CALL = re.compile(r"^PjitFunction\((?P<name>.+)\)$")


def _trace_compiles(backend: str, frame: Any) -> list[dict[str, Any]]:
    """``compiles`` rows of a trace without a dump: one per JAX compile span, its program
    the module JAX names after the call holding it (``jit_NAME``); the cause unknown."""
    found = frame[frame["name"].isin(_JAX_COMPILES) & frame["hlo_op"].isna()]
    all_calls = frame[frame["name"].str.startswith("PjitFunction(")]
    rows = []
    for line, start, duration in zip(
        found["line"].tolist(),
        found["start_ns"].tolist(),
        found["duration_ns"].tolist(),
        strict=True,
    ):
        calls = all_calls[all_calls["line"] == line]
        calls = calls[
            (calls["start_ns"] <= start)
            & (calls["start_ns"] + calls["duration_ns"] >= start + duration)
        ]
        named = _JAX_CALL.match(str(calls["name"].iloc[-1])) if len(calls) else None
        rows.append(
            {
                "backend": backend,
                "graph": f"jit_{named['name']}" if named else None,
                "seconds": duration / 1e9,
                "time": (start + duration) / 1e9,
            }
        )
    return sorted(rows, key=lambda row: row["time"])


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
