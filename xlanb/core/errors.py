"""Exceptions xlanb raises to users."""

from __future__ import annotations

import os


class XlanbError(Exception):
    """Base class of xlanb's own errors."""


class BackendUnavailable(XlanbError):
    """A runtime was asked for by name but cannot be used; the message says how to install it."""


class FormatError(XlanbError, ValueError):
    """A file is not in a format xlanb reads; names the file and the first line that fails."""

    def __init__(self, path: str | os.PathLike, line: int, reason: str) -> None:
        self.path = str(path)
        self.line = line
        self.reason = reason
        super().__init__(f"{self.path}, line {line}: {reason}")


class TruncatedRecordWarning(UserWarning):
    """The last record of a file a runtime appends to (``XLA_METRICS_FILE``,
    ``PT_XLA_DEBUG_FILE``) is incomplete, usually because the process was still writing or was
    killed; every complete record before it was read."""


class NotUtf8Warning(UserWarning):
    """A file read as text holds bytes that are not UTF-8; they were replaced by U+FFFD. The
    message names the file and the first line with such bytes."""


class CompileBudgetExceeded(XlanbError):
    """A cell compiled more graphs than ``--max-compiles`` allows (a recompilation guard)."""

    def __init__(self, message: str, compiles: int, limit: int) -> None:
        self.compiles = compiles
        self.limit = limit
        super().__init__(message)

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for it: the message (the graphs and their causes), not the
        frames of xlanb's magic that raised it."""
        return [f"{type(self).__name__}: {self}"]


class SchemaError(XlanbError):
    """A frame was built with a column its schema (:data:`xlanb.core.schema.SCHEMA`) does not
    declare; raised by ``make_frame`` only when ``XLANB_STRICT_SCHEMA=1`` (the test suite)."""

    def __init__(self, frame: str, columns: list[str]) -> None:
        self.frame = frame
        self.columns = list(columns)
        super().__init__(
            f"frame {frame!r}: undeclared column{'s' if len(self.columns) > 1 else ''} "
            f"{', '.join(repr(c) for c in self.columns)}; declare "
            f"{'them' if len(self.columns) > 1 else 'it'} in xlanb/core/schema.py (SCHEMA)"
        )
