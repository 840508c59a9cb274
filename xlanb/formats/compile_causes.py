"""Why a graph was compiled: compare it with the last graph compiled from the same line.

Shared by the PyTorch backends, whose runtimes say *that* they compiled and *where* (the Python
frame of the sync) but not *why*. Two graphs with the same structure and different shapes mean
the shapes changed (pad or bucket them); a different structure means the traced code changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

# Shapes as the runtimes print them: HLO `f32[8,4]{1,0}` / `f32[]`, LTC IR `Float[8,4]`.
_SHAPE = re.compile(r"\b([A-Za-z]+\d*)\[([\d,\s]*)\](?:\{[\d,]*\})?")
_NUMBER = re.compile(r"\d+")
# Debug metadata (source files and lines of each op) says where, not what: not structure.
_METADATA = re.compile(r",?\s*metadata=\{[^{}]*\}")

FORCED_SYNC = "forced sync"
NEW_GRAPH = "new graph"
CHANGED_GRAPH = "new graph (the traced code changed)"
NEW_SHAPE = "new shape"


# Lines that bring data into a graph: LTC IR `device_data()`, HLO `parameter(N)`.
_INPUT_MARKERS = ("device_data(", " parameter(")


@dataclass(frozen=True)
class GraphSignature:
    structure: str
    shapes: tuple[str, ...]
    input_shapes: tuple[str, ...]


def _shapes(text: str) -> tuple[str, ...]:
    return tuple(f"{m.group(1)}[{m.group(2).replace(' ', '')}]" for m in _SHAPE.finditer(text))


def signature(text: str) -> GraphSignature:
    inputs = "\n".join(
        line.split("=", 1)[-1].split("(", 1)[0]
        for line in text.splitlines()
        if any(marker in line for marker in _INPUT_MARKERS)
    )
    structure = _NUMBER.sub("N", _SHAPE.sub("S", _METADATA.sub("", text)))
    return GraphSignature(structure, _shapes(text), _shapes(inputs))


def shape_change(before: GraphSignature, after: GraphSignature, limit: int = 3) -> str:
    """``f32[8,4] -> f32[16,4]``: the distinct input shapes that changed (all shapes when the
    inputs kept theirs)."""
    pairs = _changed_pairs(before.input_shapes, after.input_shapes) or _changed_pairs(
        before.shapes, after.shapes
    )
    shown = ", ".join(pairs[:limit])
    return shown + (f" (+{len(pairs) - limit} more)" if len(pairs) > limit else "")


def _changed_pairs(before: tuple[str, ...], after: tuple[str, ...]) -> list[str]:
    pairs: list[str] = []
    for old, new in zip(before, after, strict=False):
        pair = f"{old} -> {new}"
        if old != new and pair not in pairs:
            pairs.append(pair)
    return pairs


class CompileHistory:
    """Remembers, per source location, the graphs compiled there, for the session's
    lifetime (the newest few per location)."""

    KEEP = 16

    def __init__(self) -> None:
        self._seen: dict[str, list[GraphSignature]] = {}

    def remember(self, location: str | None, graph_text: str) -> None:
        """Remember a graph compiled at `location` outside any capture (a cell run without
        profiling), unless one with the same signature is remembered there already."""
        if not location:
            return
        current = signature(graph_text)
        seen = self._seen.setdefault(location, [])
        if current not in seen:
            seen.append(current)
            del seen[: -self.KEEP]

    def cause(self, location: str | None, graph_text: str | None, forced: bool) -> str:
        """The cause of a compile at `location` of a graph with `graph_text`, and remember it.

        A loop's first steps often compile two different graphs (fresh inputs, then the
        previous step's outputs), so a new graph is compared with every graph remembered at
        its line, newest first: one with the same structure means only shapes changed."""
        current = signature(graph_text) if graph_text else None
        seen = self._seen.setdefault(location, []) if location else []
        same_structure = next(
            (old for old in reversed(seen) if current is not None and _same_program(old, current)),
            None,
        )
        if location and current is not None:
            seen.append(current)
            del seen[: -self.KEEP]
        if forced:
            return f"{FORCED_SYNC} (a tensor value was read before the step ended)"
        if current is None or not seen[:-1]:
            return NEW_GRAPH
        if same_structure is not None and same_structure.shapes != current.shapes:
            return f"{NEW_SHAPE}: {shape_change(same_structure, current)}"
        return CHANGED_GRAPH


def _same_program(old: GraphSignature, new: GraphSignature) -> bool:
    """The same program up to shapes: identical structure, or the same inputs and nearly
    the same instructions (a compiler lowers some ops differently for some sizes, e.g. a
    division by a power of two)."""
    if old.structure == new.structure:
        return True
    if len(old.input_shapes) != len(new.input_shapes) or old.input_shapes == new.input_shapes:
        return False
    old_lines, new_lines = old.structure.splitlines(), new.structure.splitlines()
    return SequenceMatcher(None, old_lines, new_lines, autojunk=False).quick_ratio() >= 0.95
