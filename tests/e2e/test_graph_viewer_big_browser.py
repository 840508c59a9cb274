"""A big graph's binary payload through the viewer in headless Chromium (Debian's, offline):
the Model the page builds from it holds what the same graph's JSON payload gives, node for
node, and the details panel shows a node's attributes and instruction. Recorded XLA:GPU
transformer HLO; the threshold is lowered so that it counts as big."""

from __future__ import annotations

import importlib
import os
import re
from pathlib import Path

import pytest

from tests.support.browser import CHROMIUM, checked_page
from xlanb.graphs import parse
from xlanb.views.graph_viewer import graph_page

html = importlib.import_module("xlanb.views.graph_viewer.html")
payload_module = importlib.import_module("xlanb.views.graph_viewer.payload")

DATA = Path(__file__).resolve().parent.parent / "data"
TRANSFORMER = next((DATA / "xla_gpu_dump" / "transformer").glob("*_optimizations.txt"))
# The browser is part of `make setup`: without it these tests fail, they do not skip.
assert os.path.exists(CHROMIUM), f"needs {CHROMIUM} (make setup installs Debian's chromium)"

#: The Model's columns, as names and numbers (string indexes read through the strings).
MODEL = """() => {
  const m = document.querySelector('.xlanb-graph').xlanbViewer.m, s = m.data.strings;
  const out = {n: m.n, S: m.S, E: m.E, sLabel: m.sLabel, sKind: m.sKind};
  for (const k of ["name", "label", "op", "shape", "opName", "file", "func"]) out[k] = m[k];
  for (const k of ["line", "order", "flags", "cat", "scope", "sParent", "sAnchor", "sSize",
                   "eSrc", "eDst", "eKind"]) out[k] = Array.from(m[k]);
  out.attrs = Array.from({length: m.n}, (_, v) => Array.from(m.attrsOf(v), (i) => s[i]));
  out.flops = m.cost.flops; out.bytes = m.cost.bytes;
  out.inputs = m.inputs; out.users = m.users;
  out.text = Array.from({length: m.n}, (_, v) => m.textOf(v));
  return out;
}"""


@pytest.fixture(scope="module")
def page():
    with checked_page() as (page, _blocked, _errors):
        yield page


def _open(page, path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    page.goto(path.as_uri())
    page.wait_for_selector(".xlanb-graph[data-ready=true]", timeout=60_000)


def test_a_binary_payload_gives_the_model_its_json_gives(page, tmp_path, monkeypatch):
    graph = parse(TRANSFORMER.read_text(), "hlo")
    nodes = len(graph.nodes)
    monkeypatch.setattr(html, "BIG_NODES", nodes - 1)
    monkeypatch.setattr(payload_module, "BIG_NODES", nodes - 1)
    binary_page = graph_page(graph)
    assert re.search(r'<script type="[^"]+" data-format="binary">', binary_page)
    _open(page, tmp_path / "binary.html", binary_page)
    from_binary = page.evaluate(MODEL)
    json_page = graph_page(graph, packed=False)
    assert '<script type="application/json">' in json_page
    _open(page, tmp_path / "json.html", json_page)
    from_json = page.evaluate(MODEL)
    assert from_binary["n"] == nodes and from_binary["E"] == len(graph.edges)
    for key, column in from_json.items():
        assert from_binary[key] == column, key
    with_attrs = next(v for v, attrs in enumerate(from_json["attrs"]) if len(attrs) >= 4)
    _open(page, tmp_path / "binary.html", binary_page)
    page.evaluate(
        "v => document.querySelector('.xlanb-graph').xlanbViewer.select(v, {reveal: true})",
        with_attrs,
    )
    table = page.locator("[data-role=attrs]").inner_text()
    pairs = from_json["attrs"][with_attrs]
    for key, value in zip(pairs[::2], pairs[1::2], strict=True):
        assert key in table and value.split("\n")[0][:40] in table
    text = page.locator("[data-field=text]").inner_text()
    assert text == from_json["text"][with_attrs]
