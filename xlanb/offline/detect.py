"""Which offline format a path holds, decided from its content (never from its name), in order:

1. a directory: an ``--xla_dump_to`` directory if it holds ``module_*`` HLO text files;
2. a file whose first non-blank line starts with
   - ``{`` : a saved Profile (``xlanb-profile`` JSON);
   - ``[MetricsData; step=`` : an ``XLA_METRICS_FILE`` (reports appended per step);
   - ``Metric: `` or ``Counter: `` : one metrics report (PyTorch/XLA or torch._lazy);
   - ``Compilation Analysis:``, ``Execution Analysis:``, ``Post Compilation Analysis:``,
     ``Unexpected Execution Analysis:`` or ``Computation hash:`` : a ``PT_XLA_DEBUG_FILE``;
   - ``HloModule `` : one HLO module as text (a single file of an XLA dump);
3. anything else: :class:`xlanb.FormatError` naming the file and that first line.

The chosen parser then checks the whole file and names the first line that does not fit.
"""

from __future__ import annotations

import os
import warnings

from xlanb.core.errors import FormatError, NotUtf8Warning

SAVED_PROFILE = "saved_profile"
METRICS_FILE = "xla_metrics_file"
METRICS_REPORT = "metrics_report"
DEBUG_FILE = "pt_xla_debug_file"
XLA_DUMP = "xla_dump"
HLO_MODULE = "hlo_module"

_STARTS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("{",), SAVED_PROFILE),
    (("[MetricsData; step=",), METRICS_FILE),
    (("Metric: ", "Counter: "), METRICS_REPORT),
    (
        (
            "Compilation Analysis:",
            "Execution Analysis:",
            "Post Compilation Analysis:",
            "Unexpected Execution Analysis:",
            "Computation hash:",
        ),
        DEBUG_FILE,
    ),
    (("HloModule ",), HLO_MODULE),
)

EXPECTED = (
    "a saved profile (JSON), a metrics report, an XLA_METRICS_FILE, a "
    "PT_XLA_DEBUG_FILE, an HLO module or an --xla_dump_to directory"
)


def read_text(path: str | os.PathLike) -> str:
    """A file's text. Bytes that are not UTF-8 become U+FFFD, with a :class:`NotUtf8Warning`
    naming the file and the first line that holds them."""
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        warnings.warn(
            NotUtf8Warning(
                f"{os.fspath(path)}, line {line}: not UTF-8; the bad bytes were replaced by U+FFFD"
            ),
            stacklevel=2,
        )
        text = data.decode("utf-8", errors="replace")
    return text.removeprefix("\ufeff")


def detect_text(text: str, path: str | os.PathLike) -> str:
    """The format of a file's `text` (see the module docstring)."""
    start, number = 0, 1
    while start < len(text):  # only up to the first non-blank line: files can be large
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line = text[start:end].rstrip("\r")
        start = end + 1
        if not line.strip():
            number += 1
            continue
        for prefixes, name in _STARTS:
            if line.startswith(prefixes):
                return name
        raise FormatError(
            path,
            number,
            f"not a format xlanb reads (expected {EXPECTED}); the line is {line[:80]!r}",
        )
    raise FormatError(path, 1, f"empty file (expected {EXPECTED})")
