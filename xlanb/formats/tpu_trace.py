"""The lines of a TPU chip's plane in an XSpace, as XProf names them, read into the events'
columns of :mod:`xlanb.formats.xspace`: each op event's name, program and run; and what each
op's metadata says of it (source line, FLOPs, bytes)."""

from __future__ import annotations

import math
import re
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from xlanb.formats.xplane_metadata import by_id, stat_value

#: The planes of TPU chips. Their lines, as XProf names them: ``XLA Modules`` (one event per
#: program run, named ``MODULE(PROGRAM_ID)``, with its ``run_id``), ``XLA Ops`` (one event per
#: HLO op run, named by the instruction's text, its name the ``display_name``, its program the
#: metadata's ``program_id``), ``Async XLA Ops`` (an async copy from its start to its done,
#: overlapping the ops run meanwhile: not an op's own time) and ``XLA TraceMe``.
TPU_PLANE = "/device:TPU:"
TPU_MODULES_LINE = "XLA Modules"
TPU_OPS_LINE = "XLA Ops"
#: A TPU program run's event name: its HLO module, then its program id in brackets.
_TPU_RUN_NAME = re.compile(r"(.*)\((\d+)\)$")
#: The lines of a TPU plane whose events' stats are read (the others hold no op's own time).
TPU_STAT_LINES = frozenset((TPU_MODULES_LINE, TPU_OPS_LINE))


def tpu_op_name(metadata: Any) -> str:
    """The HLO op a TPU op event's metadata names: its ``display_name``, else the name its
    instruction text (``%name = shape op(...)``) assigns."""
    if metadata.display_name:
        return str(metadata.display_name)
    return str(metadata.name).split(" = ", 1)[0].strip().lstrip("%")


def place_tpu_ops(frame: pd.DataFrame) -> None:
    """Give each TPU op event the HLO module, program id and ``run_id`` of the program run
    holding it on its chip (the ``XLA Modules`` event it starts in), and each run event its
    module and program id (read off its name); in place. A run's ``run_id`` becomes its
    number among its program's runs on its chip (from 1): the runtime numbers each chip's runs
    of all programs in turn, so the same launch had another id on each chip."""
    planes = frame["plane"].to_numpy(dtype=object)
    lines = frame["line"].to_numpy(dtype=object)
    names = frame["name"].to_numpy(dtype=object)
    starts = frame["start_ns"].to_numpy(dtype=np.int64)
    ends = starts + frame["duration_ns"].to_numpy(dtype=float)
    is_op = frame["hlo_op"].notna().to_numpy(dtype=bool)
    modules = frame["hlo_module"].to_numpy(dtype=object).copy()
    programs = frame["program_id"].array.copy()
    runs = frame["run_id"].array.copy()
    for plane in dict.fromkeys(planes.tolist()):
        if not str(plane).startswith(TPU_PLANE):
            continue
        on_plane = planes == plane
        run_events = np.flatnonzero(on_plane & (lines == TPU_MODULES_LINE))
        run_events = run_events[np.argsort(starts[run_events], kind="stable")]
        counts: dict[str, int] = {}
        for position in run_events.tolist():
            name = str(names[position])
            found = _TPU_RUN_NAME.match(name)
            if found is not None:
                modules[position] = found[1]
                programs[position] = int64_of(int(found[2]))
            runs[position] = counts[name] = counts.get(name, 0) + 1
        ops = np.flatnonzero(on_plane & is_op)
        holder = np.searchsorted(starts[run_events], starts[ops], side="right") - 1
        inside = holder >= 0
        inside[inside] &= starts[ops[inside]] < ends[run_events[holder[inside]]]
        ops, holder = ops[inside], run_events[holder[inside]]
        modules[ops] = modules[holder]
        runs[ops] = runs[holder]
        unknown = programs[ops].isna()
        programs[ops[unknown]] = programs[holder[unknown]]
    frame["hlo_module"] = modules
    frame["program_id"] = programs
    frame["run_id"] = runs


def int64_of(value: int) -> int:
    """An unsigned 64-bit stat (a TPU program id) as the signed int64 of the same bits; any
    other integer as it is."""
    return value - (1 << 64) if 1 << 63 <= value < 1 << 64 else value


class OpFacts(NamedTuple):
    """What a TPU op's metadata says of it: the Python line it came from (``source``, None
    where the compiler made it), and the FLOPs and bytes of one run (NaN where not said)."""

    source_file: str | None
    source_line: int | None
    flops: float
    bytes: float


def op_facts(space: Any) -> dict[tuple[int, str], OpFacts]:
    """(program id, HLO op) -> :class:`OpFacts` of each op a TPU plane's metadata describes
    (``source`` ``path/to/file.py:38``, ``flops``, ``bytes_accessed``)."""
    found: dict[tuple[int, str], OpFacts] = {}
    for plane in space.planes:
        if not plane.name.startswith(TPU_PLANE):
            continue
        stat_names = {key: stat.name for key, stat in by_id(plane.stat_metadata).items()}
        for metadata in by_id(plane.event_metadata).values():
            stats = {
                stat_names.get(stat.metadata_id): stat_value(stat, stat_names)
                for stat in metadata.stats
            }
            if not isinstance(stats.get("program_id"), int):
                continue
            file, _, line = str(stats.get("source") or "").rpartition(":")
            found[int64_of(stats["program_id"]), tpu_op_name(metadata)] = OpFacts(
                file if file and line.isdigit() else None,
                int(line) if file and line.isdigit() else None,
                _number(stats.get("flops")),
                _number(stats.get("bytes_accessed")),
            )
    return found


def _number(value: Any) -> float:
    """A count stat's value (NaN where absent or not a number)."""
    return float(value) if isinstance(value, int | float) else math.nan
