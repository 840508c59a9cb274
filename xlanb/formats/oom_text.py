"""Out-of-memory errors of the XLA runtimes, recognised from their text.

Measured here (an address-space limit, ``RLIMIT_AS``, on a child process): JAX 0.10.2 on the
CPU raises ``JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory allocating N bytes.`` from the
program that allocates, or ``JaxRuntimeError: INTERNAL: Error dispatching computation: Out of
memory allocating N bytes.`` when an input's transfer fails; torch_xla 2.9 on the CPU raises
``RuntimeError: Out of memory allocating N bytes.`` at ``torch_xla.sync()``. GPU and TPU
clients say ``RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1.20GiB``, ``Failed to
allocate request for 1.00GiB (1073741824B)`` or ``Ran out of memory in memory space hbm``.
Python's own ``MemoryError`` (host memory) counts too.
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

_MARKERS = re.compile(
    r"RESOURCE_EXHAUSTED|out of memory|Ran out of memory|Failed to allocate|^MemoryError\b",
    re.IGNORECASE | re.MULTILINE,
)
_EXACT = (
    re.compile(r"allocating (\d+) bytes"),
    re.compile(r"\((\d+)B\)"),
)
_SIZED = re.compile(r"allocate(?: request for)?\s+([\d.]+)\s*([KMGT]i?B|B)\b")
_UNITS = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
_UNITS.update({"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40})


class OutOfMemory(NamedTuple):
    """What an out-of-memory error says: the bytes of the allocation that failed (NaN when it
    does not say)."""

    requested_bytes: float


def out_of_memory(error: str | None) -> OutOfMemory | None:
    """The out-of-memory facts of an error's text (``Type: message``), None when it is not
    an out-of-memory error."""
    if not error or not _MARKERS.search(error):
        return None
    for pattern in _EXACT:
        match = pattern.search(error)
        if match:
            return OutOfMemory(float(match.group(1)))
    match = _SIZED.search(error)
    if match:
        return OutOfMemory(float(match.group(1)) * _UNITS[match.group(2)])
    return OutOfMemory(math.nan)
