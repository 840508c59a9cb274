"""The graph viewer's geometry in headless Chromium (Debian's, offline), on a small MLP's
training step compiled by JAX: the details panel leaves the graph most of the canvas, Fit keeps
labels legible, and a side-by-side diff opens with each graph's width in view."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import xlanb
from tests.support.browser import CHROMIUM, browser_page
from xlanb import graphs
from xlanb.views.graph_viewer import graph_page

jax = pytest.importorskip("jax")
jnp = jax.numpy
assert os.path.exists(CHROMIUM), f"needs {CHROMIUM} (make setup installs Debian's chromium)"

VIEWER = "document.querySelectorAll('.xlanb-graph')[{which}].xlanbViewer"
# The label font is 11 px in graph units; Fit never draws it under 8.8 px (render.js, LEGIBLE).
LEGIBLE_PX = 8.8


def mse(w1, w2, x, y):
    h = jax.nn.relu(x @ w1)
    return ((h @ w2 - y) ** 2).mean()


def sgd_step(w1, w2, x, y):
    g1, g2 = jax.grad(mse, argnums=(0, 1))(w1, w2, x, y)
    return w1 - 0.1 * g1, w2 - 0.1 * g2


def training_step(batch: int) -> graphs.Graph:
    arrays = (jnp.ones((8, 16)), jnp.ones((16, 1)), jnp.ones((batch, 8)), jnp.ones((batch, 1)))
    return graphs.parse(jax.jit(sgd_step).lower(*arrays).compile().as_text())


@pytest.fixture(scope="module")
def page():
    with browser_page(width=900, height=900) as (page, blocked):
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        yield page
        assert not blocked, f"the viewer tried the network: {blocked}"
        assert not errors, errors


def open_html(page, tmp_path: Path, html: str, viewers: int = 1) -> None:
    path = tmp_path / "viewer.html"
    path.write_text(html, "utf-8")
    page.goto(path.as_uri())
    page.wait_for_function(
        f"document.querySelectorAll('.xlanb-graph[data-ready=true]').length === {viewers}",
        timeout=60_000,
    )


def view(page, which: int = 0) -> dict:
    """The viewer's zoom, offsets, canvas size and the size of its laid-out graph."""
    return page.evaluate(
        f"() => {{ const v = {VIEWER.format(which=which)}; return {{k: v.k, tx: v.tx, ty: v.ty,"
        " width: v.width, height: v.height, w: v.st.width, h: v.st.height}; }"
    )


def width_in_view(v: dict) -> bool:
    return v["tx"] >= 0 and v["tx"] + v["w"] * v["k"] <= v["width"] + 0.5


def whole_in_view(v: dict) -> bool:
    return width_in_view(v) and v["ty"] >= 0 and v["ty"] + v["h"] * v["k"] <= v["height"] + 0.5


def test_the_details_panel_takes_a_quarter_of_the_canvas_and_folds(page, tmp_path):
    """It took min(360 px, 46%) of the canvas's width, the full height."""
    graph = training_step(32)
    open_html(page, tmp_path, graph_page(graph, height=420))
    dot = graph.nodes[graph.nodes["op"] == "dot"].iloc[0]["name"]
    page.evaluate(
        f"name => {{ const v = {VIEWER.format(which=0)}; v.select(v.m.name.indexOf(name),"
        " {reveal: true}); }",
        dot,
    )
    panel = page.locator("[data-role=details]")
    canvas = page.locator(".xlanb-graph canvas").bounding_box()
    box = panel.bounding_box()
    assert canvas is not None and box is not None
    assert box["width"] <= canvas["width"] / 4 + 1, (box, canvas)
    page.click("[data-action=fold-details]")
    folded = panel.bounding_box()
    assert folded is not None and folded["height"] <= 40, folded
    assert panel.locator("[data-field=label]").is_visible()
    assert not panel.locator("[data-field=op]").is_visible()
    page.click("[data-action=fold-details]")
    assert panel.locator("[data-field=op]").is_visible()


def test_fit_keeps_labels_legible_and_shift_f_shows_the_whole_graph(page, tmp_path):
    """In a 420 px viewer, Fit zoomed the training step out to labels of 5.8 px."""
    graph = training_step(32)
    open_html(page, tmp_path, graph_page(graph, height=420))
    page.click("[data-action=fit]")
    fitted = view(page)
    assert fitted["k"] * 11 >= LEGIBLE_PX, fitted
    assert width_in_view(fitted), fitted
    assert fitted["ty"] >= 0, fitted  # the top of the graph is in view
    page.locator(".xlanb-graph canvas").focus()
    page.keyboard.press("Shift+F")
    assert whole_in_view(view(page)), view(page)


def test_a_side_by_side_diff_opens_with_each_graphs_width_in_view(page, tmp_path):
    """Each half of a 900 px page opened the graph at 11 px labels, centred and wider than its
    canvas: cut off on both sides."""
    result = graphs.diff(training_step(32), training_step(64))
    open_html(page, tmp_path, "<!DOCTYPE html><meta charset=utf-8><body>" + result.html(), 2)
    for which in (0, 1):
        opened = view(page, which)
        assert width_in_view(opened), (which, opened)
        assert opened["ty"] >= 0 and opened["k"] * 11 >= LEGIBLE_PX, (which, opened)


H100_TRANSFORMER = Path(__file__).resolve().parents[1] / "data" / "xla_gpu" / "transformer_cmdbuf"


def test_fit_of_a_graph_wider_than_its_view_shows_where_the_graph_starts(page, tmp_path):
    """The H100 transformer step's overview (its trace's program) is a narrow column of the
    model's scopes over a row of 78 outputs, 9 views wide: Fit showed its left edge, an empty
    corner over the first outputs."""
    open_html(page, tmp_path, xlanb.load(H100_TRANSFORMER).to_html())
    page.click("[data-action=fit]")
    fitted = view(page)
    assert fitted["w"] * fitted["k"] > 3 * fitted["width"], fitted  # far wider than its view
    assert fitted["k"] * 11 >= LEGIBLE_PX and fitted["ty"] >= 0, fitted
    row = page.evaluate(f"() => {VIEWER.format(which=0)}.topRow()")
    assert fitted["tx"] + row["lo"] * fitted["k"] >= 0, (row, fitted)
    assert fitted["tx"] + row["hi"] * fitted["k"] <= fitted["width"], (row, fitted)
    # in view: scopes of the model (jvp(attention), ...), not only the outputs under them
    scopes = page.evaluate(
        f"() => {{ const v = {VIEWER.format(which=0)}, st = v.st; let seen = 0;"
        " for (let i = 0; i < st.cx.length; i++) { const x = v.tx + st.cx[i] * v.k;"
        " if (x > 0 && x < v.width && st.kind[i] === 1) seen++; } return seen; }"
    )
    assert scopes >= 4, scopes
