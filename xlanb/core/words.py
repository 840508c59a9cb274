"""Counts as people write them: ``1 compile``, ``2 compiles``."""

from __future__ import annotations

import shlex


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
