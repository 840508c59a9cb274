"""Durations and sizes as people read them."""

from __future__ import annotations

import math


def time_unit(seconds: float) -> tuple[str, float]:
    """(unit, factor) that shows `seconds` with a readable magnitude: s, ms or µs."""
    if seconds >= 1:
        return "s", 1.0
    if seconds >= 1e-3:
        return "ms", 1e3
    return "µs", 1e6


_DECIMALS = {"s": 2, "ms": 1, "µs": 0}


def format_seconds(seconds: float) -> str:
    """``1.23 s``, ``45.6 ms``, ``789 µs``: a duration in a readable unit."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    unit, factor = time_unit(seconds)
    return f"{seconds * factor:.{_DECIMALS[unit]}f} {unit}"


def format_bytes(size: float) -> str:
    """``512 B``, ``1.5 kB``, ``12.3 MB``, ``2.00 GB`` (powers of 1000); ``-`` when unknown."""
    if size is None or (isinstance(size, float) and math.isnan(size)):
        return "-"
    for unit, factor in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(size) >= factor:
            value = size / factor
            return f"{value:.2f} {unit}" if value < 10 else f"{value:.1f} {unit}"
    return f"{size:.0f} B"
