"""Offline inputs: files the runtimes write, read into a Profile without running anything.

``xlanb.load(path)`` detects the format from the content (:mod:`xlanb.offline.detect`) and
hands it to one module per format:

- :mod:`~xlanb.offline.saved`: a Profile saved with ``prof.save()``;
- :mod:`~xlanb.offline.report`: one ``metrics_report()`` text (PyTorch/XLA or torch._lazy);
- :mod:`~xlanb.offline.metrics_file`: an ``XLA_METRICS_FILE`` (one report per step);
- :mod:`~xlanb.offline.debug_file`: a ``PT_XLA_DEBUG_FILE`` (compile/execution analyses);
- :mod:`~xlanb.offline.xla_dump`: an ``--xla_dump_to`` directory, or one HLO module file;
- :mod:`~xlanb.offline.xprof`: a profiler trace (``.xplane.pb`` in a folder), a dump beside it.

A file in none of these formats raises :class:`xlanb.FormatError` naming its first line
that does not fit; an incomplete last record gives a ``TruncatedRecordWarning``.
"""

from __future__ import annotations

import os

from xlanb.core.errors import FormatError
from xlanb.core.profile import Profile
from xlanb.offline import detect as formats
from xlanb.offline.debug_file import load_debug_file
from xlanb.offline.metrics_file import load_metrics_file, step_table
from xlanb.offline.report import load_report
from xlanb.offline.saved import load_saved
from xlanb.offline.xla_dump import load_dump_dir, load_hlo_module
from xlanb.offline.xprof import FORMAT, has_trace, load_trace_dir

__all__ = ["from_text", "load", "read", "step_table"]


def load(path: str | os.PathLike, dump: str | os.PathLike | None = None) -> Profile:
    """Read any supported offline input at `path` into a Profile of what it holds (findings:
    only the ones a file alone can give); :func:`xlanb.load` adds the derived frames
    (:func:`xlanb.analysis.derive`: breakdown, steps, rates, the general rules)."""
    return read(path, dump)[0]


def read(path: str | os.PathLike, dump: str | os.PathLike | None = None) -> tuple[Profile, str]:
    """The Profile of the input at `path` and the format it was read as (one of
    :mod:`xlanb.offline.detect`'s names); `dump` names the XLA dump of a trace."""
    if os.path.exists(path) and not (os.path.isdir(path) or os.path.isfile(path)):
        # a FIFO would block the read forever and /dev/zero never ends
        raise FormatError(path, 0, "not a regular file or directory (a FIFO, device or socket?)")
    if os.fspath(path).endswith(".xplane.pb") or (os.path.isdir(path) and has_trace(path)):
        return load_trace_dir(path, dump), FORMAT
    if os.path.isdir(path):
        return load_dump_dir(path), formats.XLA_DUMP
    text = formats.read_text(path)
    return from_text(text, path), formats.detect_text(text, path)


def from_text(text: str, path: str | os.PathLike = "<text>") -> Profile:
    """Read a file's `text` (`path` names it in errors and in the Profile)."""
    kind = formats.detect_text(text, path)
    if kind == formats.SAVED_PROFILE:
        return load_saved(text, path)
    if kind == formats.METRICS_FILE:
        return load_metrics_file(text, path)
    if kind == formats.METRICS_REPORT:
        return load_report(text, path)
    if kind == formats.DEBUG_FILE:
        return load_debug_file(text, path)
    return load_hlo_module(text, path)
