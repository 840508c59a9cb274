"""``xlanb.profile``: a capture made into a Profile by :func:`xlanb.analysis.derive`."""

from __future__ import annotations

from typing import Any

from xlanb.analysis import derive
from xlanb.capture.recorder import Recorder
from xlanb.core.profile import Profile


def derive_capture(profile: Profile, options: Any) -> None:
    """:func:`xlanb.analysis.derive` of a live capture (the recorder's `finish` callable): the
    cell lines of fallbacks where the code ran in a cell or script; what the views show from
    several frames is kept where the profile is displayed now (else computed when first
    shown)."""
    derive(
        profile,
        attribute_lines=bool(getattr(options, "cell_filename", None)),
        keep_shown=bool(getattr(options, "shown", True)),
    )


class profile(Recorder):
    """Profile the code in a ``with`` block; the yielded Profile is filled when the block ends.

    >>> with xlanb.profile(backend="auto", name="train") as prof:
    ...     train_step()
    >>> prof.compiles

    `backend` is ``"auto"`` (every runtime the process has imported when the block starts), a
    backend name (``torch_xla``, ``torch_lazy``, ``jax``) or a list of names; `graphs=False`
    skips graph capture; `trace=False` skips the XLA profiler's device trace (JAX, torch_xla),
    leaving the time account to the runtime's counters. The trace covers the block's first
    `trace_runs` program runs (default 50, at most 10 s; per-op times come from those runs,
    later runs are accounted from the runtime's samples); ``trace_runs=None`` traces the
    whole block.
    An exception in the block marks the Profile as failed and propagates unchanged.
    """

    #: What makes a capture a profile: findings, attribution, the time account.
    finish_profile = staticmethod(derive_capture)
