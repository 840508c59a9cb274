"""The cyclic garbage collector paused around work that allocates an object or more per item
and makes no reference cycles (a graph's parse, a metrics file's parse, a viewer's payload):
in a process holding many objects (torch or JAX imported), the collections those allocations
trigger, each scanning every object kept so far, cost more than the work itself."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def no_cyclic_gc() -> Iterator[None]:
    """The cyclic garbage collector off while the block runs (left as it was found)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
