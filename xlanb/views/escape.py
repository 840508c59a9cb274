"""Text from the user's program (function, graph and file names, notes, causes) made safe for
HTML: escaped, and its bidirectional control characters shown as ``\\u202e``-style escapes, so
a U+202E in a function name can never reverse the text around it on the page."""

from __future__ import annotations

import html
import math
from typing import Any

import pandas as pd

#: Unicode's explicit bidirectional formatting characters (embeddings, overrides, isolates,
#: marks).
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_VISIBLE = str.maketrans({c: f"\\u{ord(c):04x}" for c in BIDI_CONTROLS})
#: In JSON text: the control becomes an escaped backslash and the code, i.e. the same
#: visible ``\u202e`` once the JSON is parsed.
_VISIBLE_IN_JSON = str.maketrans({c: f"\\\\u{ord(c):04x}" for c in BIDI_CONTROLS})


def visible_bidi(text: str) -> str:
    """`text` with its bidirectional controls written out as ``\\u202e``."""
    return text.translate(_VISIBLE)


def escape(value: Any) -> str:
    """``html.escape(str(value))`` with the bidirectional controls written out."""
    return html.escape(str(value).translate(_VISIBLE))


def json_visible_bidi(json_text: str) -> str:
    """JSON text whose strings' bidirectional controls (written raw, ``ensure_ascii=False``)
    decode to visible ``\\u202e`` text."""
    if json_text.isascii() or not any(control in json_text for control in BIDI_CONTROLS):
        return json_text
    return json_text.translate(_VISIBLE_IN_JSON)


def cell(value: Any) -> str:
    """One escaped table cell value ('' for missing)."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return escape(str(value))
