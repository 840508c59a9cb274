"""Values computed from a Profile's frames, kept while those frames stay the same: the end of a
cell asks the same questions of the same frames from several places (the display's HTML and
text, the findings, the viewer), and a frame is not hashable. A kept value is returned as it
is: callers treat it, like the frames, as read-only.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

import pandas as pd

Value = TypeVar("Value")


class FrameMemo(Generic[Value]):
    """The last `size` values of one computation, each under its frames (the same objects,
    of the same lengths: a replaced or grown frame is read again) and a hashable `key`."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self._kept: dict[
            tuple[tuple[int, ...], Hashable],
            tuple[tuple[weakref.ref, ...], tuple[int, ...], Value],
        ] = {}
        self._lock = threading.Lock()

    def get(
        self, frames: tuple[pd.DataFrame, ...], key: Hashable, make: Callable[[], Value]
    ) -> Value:
        """The value kept for `frames` and `key`, else `make()`, kept."""
        ids = (tuple(id(frame) for frame in frames), key)
        lengths = tuple(len(frame) for frame in frames)
        with self._lock:
            kept = self._kept.get(ids)
        if (
            kept is not None
            and kept[1] == lengths
            and all(ref() is frame for ref, frame in zip(kept[0], frames, strict=True))
        ):
            return kept[2]
        value = make()
        with self._lock:
            self._kept.pop(ids, None)
            self._kept[ids] = (tuple(weakref.ref(frame) for frame in frames), lengths, value)
            while len(self._kept) > self.size:
                del self._kept[next(iter(self._kept))]
        return value
