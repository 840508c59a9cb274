"""Format detection and the one ``parse`` entry point."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import replace

import xlanb.graphs.dot as dot
import xlanb.graphs.hlo as hlo
import xlanb.graphs.ir as ir
import xlanb.graphs.stablehlo as stablehlo
import xlanb.graphs.torchscript as torchscript
from xlanb.core.gc_pause import no_cyclic_gc
from xlanb.graphs.errors import ParseError
from xlanb.graphs.model import Graph

_PARSERS: dict[str, Callable[[str], Graph]] = {
    "hlo": hlo.parse,
    "stablehlo": stablehlo.parse,
    "ir": ir.parse,
    "torchscript": torchscript.parse,
    "dot": dot.parse,
}
#: Accepted ``kind`` values; the Profile's ``graphs`` kinds map onto them.
KINDS = tuple(_PARSERS)
_ALIASES = {
    "hlo_optimized": "hlo",
    "hlo_text": "hlo",
    "mlir": "stablehlo",
    "mhlo": "stablehlo",
    "lazy_ir": "ir",
    "xla_ir": "ir",
    "text": "ir",
    "backend": "torchscript",
}


def detect_kind(text: str) -> str:
    """The format of ``text`` (one of :data:`KINDS`); :class:`ParseError` when none fits."""
    for kind, looks_like in (
        ("hlo", hlo.looks_like),
        ("dot", dot.looks_like),
        ("torchscript", torchscript.looks_like),
        ("ir", ir.looks_like),
        ("stablehlo", stablehlo.looks_like),
    ):
        if looks_like(text):
            return kind
    first = next((line for line in text.splitlines() if line.strip()), "")
    raise ParseError(
        "graph", 1 if first else 0, "not HLO, StableHLO, IR, TorchScript or DOT text", first
    )


def parse(text: str, kind: str | None = None) -> Graph:
    """Parse IR/HLO/DOT ``text`` into a :class:`Graph`; ``kind`` is detected when omitted.

    Raises :class:`ParseError` (a ``ValueError``) naming the line that does not parse."""
    if not isinstance(text, str):
        raise TypeError(f"parse() takes the graph's text, not {type(text).__name__}")
    kind = _ALIASES.get(kind, kind) if kind else detect_kind(text)
    if kind not in _PARSERS:
        raise ValueError(f"unknown graph kind {kind!r}; one of {', '.join(KINDS)}")
    with no_cyclic_gc():
        return _PARSERS[kind](text)


#: Parsed graphs kept by :func:`parse_once` (the newest first out of the way last): a cell's
#: display, its report, ``prof.graph(i)`` and ``%xla_profile diff`` read the same texts.
PARSED_KEPT = 16
_parsed: OrderedDict[tuple[str, str | None], Graph | ParseError] = OrderedDict()
_parsed_lock = threading.Lock()


def parse_once(text: str, kind: str | None = None) -> Graph:
    """:func:`parse`, once per text: a text parsed again (the same ``kind``) gives a copy of
    the Graph parsed before (its frames shared: treat them as read-only; ``name`` and
    ``measured`` are the copy's own), or raises the same :class:`ParseError`. The last
    :data:`PARSED_KEPT` texts are kept."""
    key = (text, kind)
    with _parsed_lock:
        found = _parsed.get(key)
        if found is not None:
            _parsed.move_to_end(key)
    if found is None:
        try:
            found = parse(text, kind)
        except ParseError as error:
            found = error
        with _parsed_lock:
            _parsed[key] = found
            while len(_parsed) > PARSED_KEPT:
                _parsed.popitem(last=False)
    if isinstance(found, ParseError):
        raise found
    return replace(found)
