"""Donated buffers JAX could not use (touch point 14).

While capturing, the ``warnings`` global of ``jax._src.interpreters.mlir`` is a proxy whose
``warn`` notes the program and the unused donated arguments (read from the locals of
``lower_jaxpr_to_module``), then warns one stack level up, so the user's warning comes once,
from JAX's own line, under the user's filters.
"""

from __future__ import annotations

import functools
import math
import sys
import warnings
from typing import Any

from xlanb.capture.backends.jax.events import (
    UnusedDonation,
)
from xlanb.capture.backends.jax.hooks.checks import Check, _attribute, _outside_range
from xlanb.capture.backends.jax.state import STATE, Restore

DONATION_WARNING = "Some donated buffers were not usable"


@functools.cache
def lowering_module() -> Check:
    """Touch point 14: ``jax._src.interpreters.mlir``, whose ``warnings`` global is proxied."""
    if outside := _outside_range():
        return outside
    module, why = _attribute("jax._src.interpreters", "mlir")
    if why is None and getattr(module, "warnings", None) is not warnings:
        why = "jax._src.interpreters.mlir.warnings is not the warnings module"
    if why is not None:
        return Check(note=f"jax: no finding for unused donations ({why}).")
    return Check(module)


class _LoweringWarnings:
    """Stands for the ``warnings`` module in ``jax._src.interpreters.mlir`` while capturing:
    notes the donations JAX could not use, and warns exactly as JAX would have."""

    def __getattr__(self, name: str) -> Any:
        return getattr(warnings, name)

    def warn(self, message, category=None, stacklevel=1, *args, **kwargs):
        if STATE.listening and DONATION_WARNING in str(message):
            try:
                _note_unused_donation(sys._getframe(1))
            except Exception:  # never let the profiler break a lowering
                pass
        return warnings.warn(message, category, stacklevel + 1, *args, **kwargs)


def _note_unused_donation(frame) -> None:
    names = frame.f_locals
    donated, avals = names.get("donated_args"), names.get("sharded_in_avals")
    if donated is None or avals is None:
        return
    arguments = []
    for position, (aval, unused) in enumerate(zip(avals, donated, strict=False)):
        if unused:
            text = str(aval)  # float32[1000,250], as JAX's warning writes it
            size = math.prod(aval.shape) * aval.dtype.itemsize
            arguments.append((position, text, float(size)))
    if arguments:
        STATE.append_event(UnusedDonation(str(names.get("module_name", "")), tuple(arguments)))


_LOWERING_WARNINGS = _LoweringWarnings()


def _donation_on(restore: Restore, notes: list[str]) -> None:
    check = lowering_module()
    if check.note:
        notes.append(check.note)
        return
    restore.lowering_warnings = check.found.warnings
    check.found.warnings = _LOWERING_WARNINGS


def _donation_off(restore: Restore) -> None:
    if restore.lowering_warnings is not None:
        module = lowering_module().found
        if module.warnings is _LOWERING_WARNINGS:
            module.warnings = restore.lowering_warnings
        restore.lowering_warnings = None
