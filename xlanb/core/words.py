"""Counts as people write them: ``1 compile``, ``2 compiles``."""

from __future__ import annotations


def counted(count: int | float, noun: str, plural: str | None = None) -> str:
    """``1 compile``, ``0 compiles``, ``3 values``: `count` and `noun` in agreement (``plural``
    when the noun does not just take an s)."""
    number = int(count)
    word = noun if number == 1 else (plural or f"{noun}s")
    return f"{number} {word}"
