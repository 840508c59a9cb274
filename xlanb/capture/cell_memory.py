"""Session memory of how much live device memory each profiled cell kept, run after run.

A cell that keeps more device memory every time it runs (results appended to a list, a cache
that only grows) is a leak across cells; one run cannot tell it from a cell that initialises
parameters once. So the recorder remembers, per cell source and backend, the growth of each
profiled run (from the ``live_arrays`` ``before``/``after`` rows), and adds the earlier runs'
growth to the next profile of the same cell as ``earlier run`` rows. The findings then read
the profile alone. Cells run without profiling are not seen.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from xlanb.capture.backends.base import Capture

#: Earlier runs remembered per cell (and given to its next profile).
RUNS_KEPT = 5
#: Cells remembered (the least recently profiled forgotten first).
CELLS_KEPT = 256


@dataclass(eq=False)
class _CellMemoryState:
    """This module's mutable state, one instance (:data:`_STATE`)."""

    #: (backend, cell hash) -> the (arrays, bytes) each earlier run grew by, newest last.
    runs: OrderedDict[tuple[str, str], deque[tuple[int, float]]] = field(
        default_factory=OrderedDict
    )


_STATE = _CellMemoryState()


def clear() -> None:
    """Forget every cell's earlier runs."""
    _STATE.runs.clear()


def _growth(rows: list[dict[str, Any]]) -> tuple[str, int, float] | None:
    """(backend, arrays, bytes) the capture's live memory grew by, if it measured both ends
    (bytes NaN where the runtime counts its arrays but cannot say their bytes: torch_xla on
    the CPU)."""
    ends = {row["snapshot"]: row for row in rows if row.get("snapshot") in ("before", "after")}
    if set(ends) != {"before", "after"}:
        return None
    before, after = ends["before"], ends["after"]
    grown = float(after["bytes"]) - float(before["bytes"])
    return str(after["backend"]), int(after["count"]) - int(before["count"]), grown


def remember(source: str, captures: list[tuple[str, Capture]]) -> None:
    """Add to each (backend name, capture) the ``earlier run`` rows (the growth of the earlier
    profiled runs of the same cell, oldest first) and remember this run's growth. A capture
    whose live memory did not change has no ``live_arrays`` rows: that run grew by nothing."""
    if source.startswith("%%"):  # the same code profiled with other options is the same cell
        source = source.partition("\n")[2]
    if not source.strip():
        return  # a `with xlanb.profile()` block has no cell to recognise again
    cell = hashlib.sha1(source.encode("utf-8", "replace")).hexdigest()
    for backend, capture in captures:
        rows = capture.rows.get("live_arrays", [])
        measured = _growth(rows)
        key = (backend, cell)
        runs = _STATE.runs.setdefault(key, deque(maxlen=RUNS_KEPT))
        _STATE.runs.move_to_end(key)
        if rows:
            for count, size in runs:
                row = {"backend": backend, "snapshot": "earlier run", "shape": ""}
                capture.add("live_arrays", {**row, "count": count, "bytes": size})
        runs.append(measured[1:] if measured is not None else (0, 0.0))
    while len(_STATE.runs) > CELLS_KEPT:
        _STATE.runs.popitem(last=False)
