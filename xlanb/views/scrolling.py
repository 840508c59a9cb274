"""A wide table's box in a cell's HTML: the table scrolls sideways within the output instead
of widening the page (and the cell's whole output with it). Inline styles: an untrusted
notebook drops style elements."""

from __future__ import annotations

#: The box's opening tag; :data:`CLOSE` ends it.
OPEN = "<div style='overflow-x:auto;max-width:100%'>"
CLOSE = "</div>"


def scrolling(table_html: str) -> str:
    """`table_html` in a box that scrolls sideways where the table is wider than the output."""
    return f"{OPEN}{table_html}{CLOSE}"
