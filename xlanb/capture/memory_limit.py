"""How much memory the process had when it ran out: read only after an out-of-memory error.

On the CPU the device memory is the host's: its limit is the process's address-space limit
(``RLIMIT_AS``) when one is set, else the memory the kernel says is available. Device clients
that keep allocator statistics (GPU, TPU) are read by their backend instead.
"""

from __future__ import annotations

import resource
from typing import Any


def host_memory() -> dict[str, Any]:
    """``memory_limit_bytes``, what that limit is (``memory_limit``) and
    ``memory_in_use_bytes`` of this process; {} where the system does not say."""
    try:
        soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
        status = _proc_fields("/proc/self/status")
        if soft != resource.RLIM_INFINITY:
            return {
                "memory_limit": "process address space (RLIMIT_AS)",
                "memory_limit_bytes": float(soft),
                "memory_in_use_bytes": status.get("VmSize", float("nan")),
            }
        available = _proc_fields("/proc/meminfo").get("MemAvailable")
        if available is None:
            return {}
        return {
            "memory_limit": "host memory available (MemAvailable) plus this process's",
            "memory_limit_bytes": available + status.get("VmRSS", 0.0),
            "memory_in_use_bytes": status.get("VmRSS", float("nan")),
        }
    except (OSError, ValueError):
        return {}


def _proc_fields(path: str) -> dict[str, float]:
    """``Name: N kB`` lines of a /proc file, in bytes."""
    fields = {}
    with open(path) as handle:
        for line in handle:
            name, _, value = line.partition(":")
            words = value.split()
            if len(words) == 2 and words[1] == "kB" and words[0].isdigit():
                fields[name] = float(words[0]) * 1024
    return fields
