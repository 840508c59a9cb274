"""What a read of a device value costs beyond its wait: the device left idle after it.

A read (``float(loss)``, ``.item()``, ``block_until_ready``) blocks the host until the program
that makes the value has run; only then does the host go on and dispatch the next program, so
the device sits idle from the end of that run until the next one starts. The trace shows the
host's wait (``CommonPjRtBuffer::Await``, a ``sync_wait`` span) and the runs (``device``
spans): each idle gap between two runs with such a wait in it, or in the run before it, is
the read's, and the time account counts it as ``sync_wait``.

Pure numpy over ``(start, end)`` intervals in seconds on one clock.
"""

from __future__ import annotations

import numpy as np

from xlanb.analysis.time_account import merge_intervals

__all__ = ["READ_WAITS", "read_gaps"]

#: The trace's ``sync_wait`` spans of a host blocked on a value (a read or
#: ``block_until_ready``); the waits for buffer holds at dispatch are not reads.
READ_WAITS = ("CommonPjRtBuffer::Await", "TfrtCpuBuffer::Await")  # the latter: jaxlib 0.6


def read_gaps(device: np.ndarray, waits: np.ndarray) -> np.ndarray:
    """The device's idle gaps that follow a read, as an ``(n, 2)`` array.

    `device`: the runs' ``(start, end)`` intervals; `waits`: the reads' waits. A gap is
    ``[end of run i, start of run i + 1]`` (runs merged where they overlap) when a wait starts
    at or after run i's start and before run i + 1's: the host waited on run i's value (or on
    an earlier one) and dispatched the next run only after. No gap follows the last run.
    """
    runs = np.asarray(merge_intervals(device), dtype=np.float64).reshape(-1, 2)
    wait_starts = np.asarray(waits, dtype=np.float64).reshape(-1, 2)[:, 0]
    if len(runs) < 2 or not len(wait_starts):
        return np.empty((0, 2))
    before = np.searchsorted(runs[:, 0], wait_starts, side="right") - 1
    before = np.unique(before[(before >= 0) & (before < len(runs) - 1)])
    return np.column_stack([runs[before, 1], runs[before + 1, 0]])
