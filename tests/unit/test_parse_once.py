"""A graph's text is parsed once: a cell's display, its report, ``prof.graph(i)`` and the trace's
source lines read the same texts again and again."""

from __future__ import annotations

import importlib
from pathlib import Path

from xlanb.capture import device_trace
from xlanb.core.profile import Profile, make_frame
from xlanb.formats.hlo_text import hlo_op_sources

graphs_parse = importlib.import_module("xlanb.graphs.parse")

DUMP = Path(__file__).parent.parent / "data" / "jax_dump"


def _hlo_text() -> str:
    return (DUMP / "module_0010.jit_step.cpu_after_optimizations.txt").read_text()


def _profile(text: str) -> Profile:
    row = {"backend": "jax", "graph": "jit(f)", "kind": "hlo_optimized", "text": text, "nodes": 3}
    return Profile(name="p", backends=["jax"], graphs=make_frame("graphs", [row]))


def test_a_graph_shown_again_is_not_parsed_again(monkeypatch):
    text = _hlo_text() + "\n"  # a text no other test parsed
    calls = []
    parse_hlo = graphs_parse._PARSERS["hlo"]
    monkeypatch.setitem(graphs_parse._PARSERS, "hlo", lambda t: calls.append(1) or parse_hlo(t))
    first, second = _profile(text), _profile(text)
    graph = first.graph(0)
    first._repr_html_()
    second.graph(0)
    assert len(calls) == 1
    # each caller gets its own Graph: naming one does not rename the other
    again = second.graph(0)
    again.name = "renamed"
    assert graph.name == "jit(f)" and first.graph(0).name == "jit(f)"
    assert len(again.nodes) == len(graph.nodes) > 0


def test_bad_text_raises_every_time():
    import pytest

    from xlanb.graphs import ParseError, parse_once

    for _ in range(2):
        with pytest.raises(ParseError):
            parse_once("HloModule broken\n\nENTRY %main {\n  %p = f32[ parameter(\n}\n", "hlo")


def test_the_sources_of_a_program_are_read_once_per_text():
    text = _hlo_text() + "\n\n"
    graphs = [{"kind": "hlo_optimized", "graph": "jit(f)", "text": text}]
    before = hlo_op_sources.cache_info()
    device_trace._programs(graphs, ("hlo_optimized",), "<cell>")
    device_trace._programs(graphs, ("hlo_optimized",), "<cell>")
    after = hlo_op_sources.cache_info()
    assert (after.misses - before.misses, after.hits - before.hits) == (1, 1)


def test_a_program_s_sources_for_its_cell_and_for_later_cells_read_its_text_once():
    """A JAX program compiled in a cell is located twice: its ops for that cell (the cell's own
    frame preferred) and for later cells that run it (the innermost frame outside libraries).
    Both come from one reading of the text."""
    from xlanb.formats import hlo_text

    text = _hlo_text() + "\n\n\n"
    before = hlo_text.parsed_ops.cache_info()
    for_cell = hlo_op_sources(text, "<cell>")
    for_later = hlo_op_sources(text, None)
    after = hlo_text.parsed_ops.cache_info()
    assert after.misses - before.misses == 1
    assert for_cell and for_later
