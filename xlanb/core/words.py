"""Counts as people write them: ``1 compile``, ``2 compiles``, ``on each of 8 devices``."""

from __future__ import annotations

import math
import shlex
from typing import Any

from xlanb.core.units import format_bytes


def counted(count: int | float, noun: str, plural: str | None = None) -> str:
    """``1 compile``, ``0 compiles``, ``3 values``: `count` and `noun` in agreement (``plural``
    when the noun does not just take an s)."""
    number = int(count)
    word = noun if number == 1 else (plural or f"{noun}s")
    return f"{number} {word}"


def magic_command(*words: object) -> str:
    """``%xla_profile`` with `words` quoted as a shell would need them: a profile named
    ``my run`` is ``%xla_profile diff 'my run' 2``, which the magic reads back as two words."""
    return " ".join(["%xla_profile", *(shlex.quote(str(word)) for word in words)])


def on_each_device(devices: Any) -> str:
    """`` on each of 8 devices`` where a figure is one device's of several; ``""`` for one
    device or an unknown count (None, NaN, NA)."""
    try:
        number = float(devices)
    except (TypeError, ValueError):
        return ""
    return f" on each of {int(number)} devices" if not math.isnan(number) and number > 1 else ""


def bytes_on_each_device(size: float, devices: Any) -> str:
    """`size` as :func:`format_bytes` writes it, `` on each of 8 devices`` after it where it
    is one device's of several (``-`` when the size is unknown)."""
    text = format_bytes(size)
    return text if text == "-" else text + on_each_device(devices)
