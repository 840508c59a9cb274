"""Durations and sizes as people read them."""

from __future__ import annotations

import math
from typing import Any


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


def percent(share: float) -> str:
    """A share of the wall as people read it: ``75%``, and ``<1%`` rather than ``0%``."""
    if 0 < share < 0.005:
        return "<1%"
    return f"{share * 100:.0f}%"


def finite_number(value: Any) -> float | None:
    """`value` as a finite float, or None (missing, NaN, infinite or not a number)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def event_span(time: Any, seconds: Any) -> tuple[float, float] | None:
    """(start, duration) in seconds of an event that ended at `time` and took `seconds`, or
    None when either is unknown."""
    end, duration = finite_number(time), finite_number(seconds)
    if end is None or duration is None:
        return None
    return end - duration, duration
