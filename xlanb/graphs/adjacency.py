"""Edges grouped by one end's node, as the graph readers' stages ask for them: each node's
slice of the other ends (``values[offsets[i]:offsets[i + 1]]``), in edge order, made once
with numpy instead of a list per node."""

from __future__ import annotations

from typing import Any

import numpy as np


def grouped(keys: np.ndarray, count: int, *values: np.ndarray) -> tuple[list[int], list[list]]:
    """(offsets, each of `values` reordered) so that node ``i`` of ``count`` holds the values
    of the edges whose key is ``i`` at ``offsets[i]:offsets[i + 1]``, in their given order."""
    order = np.argsort(keys, kind="stable")
    offsets = np.searchsorted(keys[order], np.arange(count + 1)).tolist()
    return offsets, [column[order].tolist() for column in values]


class Adjacent:
    """Each node's neighbours along edges one way (`starts[e]` -> `ends[e]`): ``get`` as a
    dict's, a node's list made when asked."""

    def __init__(self, starts: np.ndarray, ends: np.ndarray, count: int) -> None:
        self._starts, (self._ends,) = grouped(starts, count, ends)

    def get(self, index: int, default: Any = None, /) -> Any:
        start, end = self._starts[index], self._starts[index + 1]
        return self._ends[start:end] if end > start else default
