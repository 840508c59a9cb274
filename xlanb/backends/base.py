"""The small protocol every backend module follows, and helpers the PyTorch backends share.

A backend is a module, not a class. It provides:

- ``NAME`` (``"torch_xla"``), ``INSTALL_HINT`` (one sentence saying how to install it);
- ``is_installed()``: the runtime can be imported (checked without importing it);
- ``is_imported()``: the user's process has imported it (``auto`` picks these);
- ``has_started()``: too late to set the debug switches it reads at start-up;
- ``debug_switches(workdir)``: the environment variables it reads at start-up, with values;
- ``begin(options)`` -> token: snapshot before the user's code;
- ``end(token, options)`` -> :class:`Capture`: the frames for what happened in between;
- optionally ``peek(token)`` -> :class:`Progress`: cheap running totals while the cell runs
  (read from another thread by ``--live``).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np


@dataclass
class CaptureOptions:
    """What the recorder asks of every backend for one capture."""

    graphs: bool = True
    #: Filename the cell was compiled under; frames in it are mapped to cell lines.
    cell_filename: str | None = None
    #: Added to line numbers in the cell (1 when a ``%%`` magic line precedes the code).
    cell_line_offset: int = 0


@dataclass
class Capture:
    """One backend's rows for one capture, by frame name, plus notes for the user."""

    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)

    def add(self, frame: str, row: dict[str, Any]) -> None:
        self.rows.setdefault(frame, []).append(row)


@dataclass
class Progress:
    """Running totals of a capture in progress."""

    compiles: int = 0
    executions: int = 0
    fallbacks: int = 0

    def __add__(self, other: Progress) -> Progress:
        return Progress(self.compiles + other.compiles, self.executions + other.executions,
                        self.fallbacks + other.fallbacks)


def fallback_progress(before: dict[str, int], after: dict[str, int]) -> int:
    """How many ``aten::`` fallback ops ran between two counter snapshots."""
    return sum(value - before.get(name, 0) for name, value in after.items()
               if name.startswith("aten::"))


class Backend(Protocol):
    NAME: str
    INSTALL_HINT: str

    def is_installed(self) -> bool: ...
    def is_imported(self) -> bool: ...
    def has_started(self) -> bool: ...
    def debug_switches(self, workdir: str) -> dict[str, str]: ...
    def begin(self, options: CaptureOptions) -> Any: ...
    def end(self, token: Any, options: CaptureOptions) -> Capture: ...


# -- counters ------------------------------------------------------------------------------
_COMPILE_COUNTERS = {"CachedCompile", "UncachedCompile", "CreateCompileHandles"}
_EXECUTE_COUNTERS = {"ExecuteComputation", "MarkStep", "ExecuteReplicated", "ExecuteParallel"}
_TRANSFER_COUNTERS = {"xla::_to_cpu", "lazy::_to_copy", "lazy::_copy_from", "xla::_copy_from",
                      "TransferToServer", "TransferFromServer"}


def counter_category(name: str) -> str:
    """The category of a runtime counter (one of ``COUNTER_CATEGORIES``)."""
    if name.startswith("aten::"):
        return "fallback"
    if name in _COMPILE_COUNTERS:
        return "compile"
    if name in _EXECUTE_COUNTERS:
        return "execute"
    if name in _TRANSFER_COUNTERS or "Transfer" in name:
        return "transfer"
    if name.startswith(("xla::", "lazy::")):
        return "lowered_op"
    if "Tensor" in name:
        return "tensor"
    return "other"


def counter_rows(backend: str, before: dict[str, int], after: dict[str, int]
                 ) -> list[dict[str, Any]]:
    """One row per counter that changed between two snapshots (deltas, never a reset)."""
    rows = []
    for name, total in after.items():
        delta = total - before.get(name, 0)
        if delta:
            rows.append({"backend": backend, "name": name, "category": counter_category(name),
                         "delta": int(delta), "total": int(total)})
    rows.sort(key=lambda r: (r["category"], -r["delta"], r["name"]))
    return rows


# -- graphs ---------------------------------------------------------------------------------
_HLO_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+ = ")


def count_hlo_instructions(text: str) -> int:
    """Instructions in an HLO module text (every computation, fused ones included)."""
    return sum(1 for line in text.splitlines() if _HLO_INSTRUCTION.match(line))


# -- fallbacks -----------------------------------------------------------------------------
_DYNAMIC_SHAPE_OPS = {"nonzero", "masked_select", "_unique2", "unique", "unique_dim",
                      "unique_consecutive", "index.Tensor", "masked_scatter", "argwhere",
                      "index_put_", "_unique"}

FALLBACK_ADVICE = {
    "item": "Keep values as tensors: compare and branch with torch.where instead of .item(), "
            "and log scalars every N steps (or with a step closure) rather than every step.",
    "dynamic_shape": "The output shape depends on the data, so the graph is cut and the op runs "
                     "on the CPU. Use fixed-shape forms: torch.where(mask, x, 0) instead of "
                     "x[mask], multiply by the mask instead of nonzero/masked_select, pad to a "
                     "fixed size.",
    "missing_lowering": "This op has no lowering on this runtime and runs on the CPU, with a "
                        "sync and two transfers each time. Replace it with lowered ops, or "
                        "report it upstream (PyTorch/XLA: open an issue naming the op).",
}


def fallback_cause(op: str) -> str:
    """Why an ``aten::`` op fell back to the CPU: ``item``, ``dynamic_shape`` or
    ``missing_lowering``."""
    bare = op.removeprefix("aten::")
    if bare == "_local_scalar_dense":
        return "item"
    if bare in _DYNAMIC_SHAPE_OPS:
        return "dynamic_shape"
    return "missing_lowering"


def fallback_rows(backend: str, counter_delta_rows: Iterable[dict[str, Any]]
                  ) -> list[dict[str, Any]]:
    rows = []
    for row in counter_delta_rows:
        if row["category"] != "fallback":
            continue
        cause = fallback_cause(row["name"])
        rows.append({"backend": backend, "op": row["name"], "count": row["delta"],
                     "cause": cause, "advice": FALLBACK_ADVICE[cause]})
    rows.sort(key=lambda r: -r["count"])
    return rows


# -- metrics -------------------------------------------------------------------------------
def metric_row(backend: str, name: str, unit: str, count: int, total: float,
               values: Sequence[float]) -> dict[str, Any]:
    """A ``metrics`` row: count and total from the runtime's own accumulators (exact even when
    the sample buffer dropped old samples), percentiles from the samples in the cell."""
    if len(values):
        array = np.asarray(values, dtype=float)
        p50, p90, p99 = np.percentile(array, [50, 90, 99])
        largest = float(array.max())
    else:
        p50 = p90 = p99 = largest = math.nan
    return {"backend": backend, "name": name, "unit": unit, "count": int(count),
            "total": float(total), "mean": float(total) / count if count else math.nan,
            "p50": float(p50), "p90": float(p90), "p99": float(p99), "max": largest}


# -- source locations ----------------------------------------------------------------------
_LIBRARY_MARKERS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep,
                    os.sep + "xlanb" + os.sep)


# "  train_step (/tmp/train.py:13)": how PyTorch/XLA and torch._lazy print a Python frame.
_PYTHON_FRAME = re.compile(r"^\s*(?P<function>.*?) \((?P<file>.*):(?P<line>\d+)\)\s*$")


def python_frame(line: str) -> tuple[str, str, int] | None:
    """(function, file, line) of a Python frame as the torch runtimes print it, or None."""
    match = _PYTHON_FRAME.match(line)
    return (match["function"], match["file"], int(match["line"])) if match else None


def user_frame(frames: Sequence[tuple[str, str, int]], cell_filename: str | None
               ) -> tuple[str, int] | None:
    """Pick the frame to blame from (function, file, line) frames, innermost first: the cell's
    own frame if present, else the innermost frame outside installed libraries."""
    if cell_filename:
        for _function, filename, line in frames:
            if filename == cell_filename:
                return filename, line
    for _function, filename, line in frames:
        if not any(marker in filename for marker in _LIBRARY_MARKERS):
            return filename, line
    return None


def location_fields(frames: Sequence[tuple[str, str, int]], options: CaptureOptions
                    ) -> dict[str, Any]:
    """``location`` (file:line) and ``cell_line`` (as the editor numbers it, or None)."""
    cell_filename = options.cell_filename
    picked = user_frame(frames, cell_filename)
    if picked is None:
        return {"location": None, "cell_line": None}
    filename, line = picked
    in_cell = bool(cell_filename) and filename == cell_filename
    return {"location": f"{filename}:{line}",
            "cell_line": line + options.cell_line_offset if in_cell else None}
