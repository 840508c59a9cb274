"""Calls of ``torch.distributed`` collectives during a ``record()`` block, and the time each
call held the host: for a blocking collective, the time this rank waited for the others.

For the block only, the collective functions of the ``torch.distributed`` namespace
(``dist.all_reduce``, ``dist.barrier``, ...) are replaced by timing wrappers; they are put back
when the block ends. Not seen: collectives called through a name bound before the block
(``from torch.distributed import all_reduce``), DDP's C++ reducer, and PyTorch/XLA's
``xm.all_reduce`` (that one is in the runtime's counters as ``xla::all_reduce``). With
``async_op=True`` the time is the launch only.

Rows (backend ``torch.distributed``): a ``counters`` row ``dist.<op>`` (category
``collective``) per op called, a ``metrics`` row and ``samples`` named ``CollectiveTime``.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from xlanb.formats.counters import metric_row

BACKEND = "torch.distributed"
METRIC = "CollectiveTime"
OPS = (
    "all_reduce",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "all_to_all",
    "all_to_all_single",
    "broadcast",
    "broadcast_object_list",
    "reduce",
    "gather",
    "scatter",
    "barrier",
    "send",
    "recv",
    "monitored_barrier",
)
#: Samples kept per block (the newest), as torch_xla keeps its newest 1,024.
MAX_SAMPLES = 1024


@dataclass(eq=False)
class _CollectivesState:
    """This module's mutable state, one instance (:data:`_STATE`)."""

    #: Collectives counted in this process so far, by op (the counters' ``total``).
    totals: Counter[str] = field(default_factory=Counter)
    #: Per thread: whether a timed collective is running (one made of others counts once).
    depth: threading.local = field(default_factory=threading.local)


_STATE = _CollectivesState()


class CollectiveProbe:
    """Times ``torch.distributed`` collectives between :meth:`start` and :meth:`stop`."""

    def __init__(self) -> None:
        self._originals: dict[str, Any] = {}
        self._calls: list[tuple[str, float, float]] = []  # (op, wall start, seconds)
        self._lock = threading.Lock()

    def start(self) -> None:
        dist = sys.modules.get("torch.distributed")
        if dist is None or not getattr(dist, "is_available", lambda: False)():
            return
        for op in OPS:
            original = getattr(dist, op, None)
            if callable(original):
                self._originals[op] = original
                setattr(dist, op, self._timed(op, original))

    def stop(self) -> dict[str, list[dict[str, Any]]]:
        """Put the originals back; the rows for the block by frame name."""
        dist = sys.modules.get("torch.distributed")
        for op, original in self._originals.items():
            if (
                dist is not None
                and getattr(getattr(dist, op, None), "__xlanb_original__", None) is original
            ):
                setattr(dist, op, original)
        self._originals.clear()
        with self._lock:
            calls, self._calls = self._calls, []
        return _rows(calls)

    def _timed(self, op: str, original: Any) -> Any:
        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if getattr(_STATE.depth, "value", 0):  # a collective made of collectives counts once
                return original(*args, **kwargs)
            _STATE.depth.value = 1
            wall, started = time.time(), time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                seconds = time.perf_counter() - started
                _STATE.depth.value = 0
                with self._lock:
                    self._calls.append((op, wall, seconds))

        timed.__xlanb_original__ = original  # type: ignore[attr-defined]
        return timed


def _rows(calls: list[tuple[str, float, float]]) -> dict[str, list[dict[str, Any]]]:
    if not calls:
        return {}
    counts = Counter(op for op, _, _ in calls)
    counters = []
    for op, count in counts.most_common():
        _STATE.totals[op] += count
        counters.append(
            {
                "backend": BACKEND,
                "name": f"dist.{op}",
                "category": "collective",
                "delta": int(count),
                "total": int(_STATE.totals[op]),
            }
        )
    seconds = [s for _, _, s in calls]
    kept = calls[-MAX_SAMPLES:]
    return {
        "counters": counters,
        "metrics": [
            metric_row(BACKEND, METRIC, "s", len(calls), sum(seconds), [s for _, _, s in kept])
        ],
        "samples": [
            {"backend": BACKEND, "metric": METRIC, "time": wall, "value": s} for _, wall, s in kept
        ],
    }
