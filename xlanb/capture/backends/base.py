"""The small protocol every backend module (a module, not a class) follows. It provides:

- ``NAME`` (``"torch_xla"``), ``INSTALL_HINT`` (one sentence saying how to install it);
- ``is_installed()``: the runtime can be imported (checked without importing it);
- ``is_imported()``: the user's process has imported it (``auto`` picks these);
- ``has_started()``: too late to set the debug switches it reads at start-up;
- ``debug_switches(workdir, deep)``: the environment variables it reads at start-up, with
  values; `deep` adds the costly ones (source lines in every op's metadata: ``--deep``);
- ``begin(options)`` -> token: snapshot before the user's code;
- ``end(token, options)`` -> :class:`Capture`: the frames for what happened in between;
- optionally ``peek(token)`` -> :class:`Progress`: running totals (``--live``);
- optionally ``between_cells()``: read what the runtime wrote outside captures (cells run
  without profiling) into the backend's session memory, before xlanb empties its files.
"""

from __future__ import annotations

import linecache
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pandas as pd

from xlanb.capture.device_trace import WINDOW_RUNS
from xlanb.formats.counters import fallback_cause
from xlanb.formats.python_frames import frame_location, place_name, read_place


@dataclass
class CaptureOptions:
    """What the recorder asks of every backend for one capture."""

    graphs: bool = True
    #: Filename the cell was compiled under; frames in it are mapped to cell lines.
    cell_filename: str | None = None
    #: Added to line numbers in the cell (1 when a ``%%`` magic line precedes the code).
    cell_line_offset: int = 0
    #: IPython's file name of each notebook cell run so far -> its execution count (In[n]).
    cell_numbers: Mapping[str, int] = field(default_factory=dict)
    #: Run the XLA profiler's device trace (JAX, torch_xla) for per-op device times.
    device_trace: bool = True
    #: Stop the device trace after this many program runs (None: trace the whole capture).
    trace_runs: int | None = WINDOW_RUNS
    #: The code captured (a cell's source): a window is sized from the last trace of the same
    #: code (:func:`xlanb.capture.device_trace.window_limit`).
    source: str = ""
    #: A cell run again may reuse its last trace instead of tracing (JAX:
    #: :mod:`xlanb.capture.backends.jax.reuse`); off where the user sized the window.
    reuse_trace: bool = True
    #: The profile is displayed when the capture ends (``%%xla_profile`` without ``-q``): the
    #: JAX backend parses the texts of the cell's first program ahead, for the graph viewer.
    shown: bool = False
    #: The exception the user's code raised, set by the recorder while the backends end (and
    #: dropped after: it holds the failing frames): what was alive at an out-of-memory error.
    error: BaseException | None = None


@dataclass
class Capture:
    """One backend's rows for one capture, by frame name, plus notes for the user."""

    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    #: Frames built already, each from its name's ``rows`` exactly as they are (a kept
    #: trace's ``ops`` reused): the recorder takes a copy instead of building it again.
    frames: dict[str, pd.DataFrame] = field(default_factory=dict)

    def add(self, frame: str, row: dict[str, Any]) -> None:
        self.rows.setdefault(frame, []).append(row)


@dataclass
class Progress:
    """Running totals of a capture in progress (``fallbacks``: CPU fallbacks, ops without a
    lowering; ``syncs``: values read back and ops with data-dependent shapes)."""

    compiles: int = 0
    executions: int = 0
    fallbacks: int = 0
    syncs: int = 0

    def __add__(self, other: Progress) -> Progress:
        return Progress(
            self.compiles + other.compiles,
            self.executions + other.executions,
            self.fallbacks + other.fallbacks,
            self.syncs + other.syncs,
        )


def fallback_progress(before: dict[str, int], after: dict[str, int]) -> tuple[int, int]:
    """(CPU fallbacks, syncs) among the ``aten::`` ops counted between two counter snapshots
    (see :func:`xlanb.formats.counters.fallback_cause`)."""
    fallbacks = syncs = 0
    for name, value in after.items():
        if name.startswith("aten::"):
            ran = value - before.get(name, 0)
            if fallback_cause(name) == "missing_lowering":
                fallbacks += ran
            else:
                syncs += ran
    return fallbacks, syncs


class Backend(Protocol):
    """A backend module (see the module docstring), as the registry and the recorder hold it:
    modules satisfy this protocol structurally. ``peek`` is optional, so it is looked up with
    ``getattr`` rather than declared here."""

    NAME: str
    INSTALL_HINT: str
    #: What is lost when the runtime started before its debug switches were set.
    LATE_LOSS: str

    def is_installed(self) -> bool: ...
    def is_imported(self) -> bool: ...
    def has_started(self) -> bool: ...
    def debug_switches(self, workdir: str, deep: bool = False) -> dict[str, str]: ...
    def begin(self, options: CaptureOptions) -> Any: ...
    def end(self, token: Any, options: CaptureOptions) -> Capture: ...


def history_location(frames: Sequence[tuple[str, str, int]]) -> str | None:
    """Where a compile's graph is remembered for the session: its innermost frame outside the
    installed libraries (the sync in a ``train_step`` defined in one cell and called from
    others is one place, whichever cell calls it)."""
    return frame_location(frames)["location"]


def location_fields(
    frames: Sequence[tuple[str, str, int]], options: CaptureOptions
) -> dict[str, Any]:
    """``location`` (file:line) and ``cell_line`` (as the editor numbers it, or None) of the
    frame to blame, for this capture's cell."""
    return frame_location(frames, options.cell_filename, options.cell_line_offset)


def read_place_of(frames: Sequence[tuple[str, str, int]], options: CaptureOptions) -> str | None:
    """:func:`~xlanb.formats.python_frames.read_place` of `frames`, cells named as cells."""
    return read_place(frames, options.cell_filename, options.cell_line_offset, options.cell_numbers)


def _place(filename: str, line: int, options: CaptureOptions) -> str:
    """:func:`~xlanb.formats.python_frames.place_name` for this capture's cell."""
    return place_name(
        filename, line, options.cell_filename, options.cell_line_offset, options.cell_numbers
    )


def name_op_places(ops: list[dict[str, Any]], options: CaptureOptions) -> None:
    """Give each ``ops`` row located by its HLO metadata its ``source`` (``cell line 4``,
    ``In[3] line 4``, ``model.py:12``) and ``code`` (the text of that line, read now: a cell's
    lines are gone once the kernel is)."""
    for op in ops:
        place = op_place(op, options)
        if place is not None:
            op["source"], op["code"] = place


def op_place(op: Mapping[str, Any], options: CaptureOptions) -> tuple[str, str] | None:
    """The ``source`` and ``code`` :func:`name_op_places` gives the ``ops`` row `op`; None
    where its HLO metadata locates it nowhere."""
    filename, line = op.get("source_file"), op.get("source_line")
    if not filename or line is None:
        return None
    return _place(filename, line, options), linecache.getline(filename, line).strip()


def program_names(
    options: CaptureOptions, graph_places: Mapping[str, tuple[str, str, int]]
) -> dict[str, str]:
    """A readable name of each graph in `graph_places` (graph -> function, file, line of the
    user's code that cut it, in compile order; torch_xla's graph id is a hash):
    ``train_step at In[1] line 11``, graphs cut at one place numbered in compile order from
    the second (``#2``)."""
    names: dict[str, str] = {}
    cut_at: Counter[tuple[str, str, int]] = Counter()
    for graph, place in graph_places.items():  # in compile order
        function, filename, line = place
        where = _place(filename, line, options)
        name = where if function == "<module>" else f"{function} at {where}"
        cut_at[place] += 1
        names[graph] = name if cut_at[place] == 1 else f"{name} #{cut_at[place]}"
    return names


def name_programs(
    ops: list[dict[str, Any]],
    capture: Capture,
    options: CaptureOptions,
    graph_places: Mapping[str, tuple[str, str, int]],
) -> None:
    """Give each op its ``program`` (:func:`program_names`), and, where its HLO metadata has
    no line of the cell, ``cell_line``: the cell's line that ran its graph."""
    cell_lines = {
        row["graph"]: row["cell_line"]
        for row in (*capture.rows.get("compiles", []), *capture.rows.get("executions", []))
        if row.get("graph") and row.get("cell_line") is not None
    }
    names = program_names(options, graph_places)
    for op in ops:
        if op["graph"] in names:
            op["program"] = names[op["graph"]]
        if op.get("cell_line") is None:
            op["cell_line"] = cell_lines.get(op["graph"])
