"""The graph viewer in headless Chromium (Debian's, offline: any request that is not file:,
data: or blob: is aborted and recorded): what a person sees after searching, clicking,
expanding; escaping; the side-by-side diff; the notebook widget's front end; a profiled cell's
measured device time colouring its optimized HLO (light and dark)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.browser import CHROMIUM, checked_page
from xlanb import graphs
from xlanb.views.graph_viewer import graph_page, widget_module

jax = pytest.importorskip("jax")
jnp = jax.numpy
# The browser is part of `make setup`: without it these tests fail, they do not skip.
assert os.path.exists(CHROMIUM), f"needs {CHROMIUM} (make setup installs Debian's chromium)"


def mlp_step(w1, w2, x):
    with jax.named_scope("layer1"):
        h = jax.nn.relu(x @ w1)
    with jax.named_scope("layer2"):
        y = jnp.tanh(h @ w2)
    jax.debug.print("mean {}", y.mean())  # the host callback
    return (y**2).sum()


@pytest.fixture(scope="module")
def page():
    with checked_page() as found:
        yield found


@pytest.fixture(scope="module")
def graph() -> graphs.Graph:
    compiled = (
        jax.jit(jax.grad(mlp_step, argnums=(0, 1)))
        .lower(jnp.ones((6, 16)), jnp.ones((16, 4)), jnp.ones((8, 6)))
        .compile()
    )
    return graphs.parse(compiled.as_text())


def open_page(page, tmp_path: Path, html: str, name: str = "graph.html") -> None:
    path = tmp_path / name
    path.write_text(html, encoding="utf-8")
    page.goto(path.as_uri())
    page.wait_for_selector(".xlanb-graph[data-ready=true]", timeout=60_000)


def node_index(page, name: str, which: int = 0) -> int:
    return page.evaluate(
        "([name, which]) => document.querySelectorAll('.xlanb-graph')[which]"
        ".xlanbViewer.m.name.indexOf(name)",
        [name, which],
    )


def screen_point(page, index: int, which: int = 0) -> dict:
    return page.evaluate(
        "([i, which]) => document.querySelectorAll('.xlanb-graph')[which]"
        ".xlanbViewer.screenPoint(i)",
        [index, which],
    )


def show(page, index: int) -> dict:
    """Expand what hides node `index`, centre it, clear the selection; its screen point."""
    page.evaluate(
        """i => {
      const v = document.querySelector('.xlanb-graph').xlanbViewer;
      v.reveal(i); v.centerOn(v.st.rep[i], 1); v.select(-1);
    }""",
        index,
    )
    point = screen_point(page, index)
    assert point["self"]
    return point


def field(page, name: str, which: int = 0) -> str:
    locator = page.locator(".xlanb-graph").nth(which).locator(f"[data-field='{name}']")
    return locator.inner_text()


def visible_nodes(page, which: int = 0) -> int:
    return int(page.locator(".xlanb-graph").nth(which).get_attribute("data-visible-nodes"))


def test_search_click_expand(page, graph, tmp_path):
    page, _blocked, _errors = page
    open_page(page, tmp_path, graph_page(graph))
    total = len(graph.nodes)
    status = page.locator("[data-role=status]").inner_text()
    shown = visible_nodes(page)
    assert f"of {total:,} nodes shown" in status and 0 < shown < total  # fusions start closed

    # search an op: the first match is selected, revealed and its details shown
    page.fill(".xg-search", "dot")
    page.press(".xg-search", "Enter")
    matches = graph.find("dot")
    assert page.locator("[data-role=match-count]").inner_text() == f"1/{len(matches)}"
    assert field(page, "op") in set(matches["op"])
    page.press(".xg-search", "Enter")
    assert page.locator("[data-role=match-count]").inner_text() == f"2/{len(matches)}"

    # click the host callback: red box, details with its source line and text
    callback = graph.nodes[graph.nodes["fallback"]].iloc[0]
    index = node_index(page, callback["name"])
    point = show(page, index)
    assert page.locator("[data-role=details]").is_hidden()
    page.mouse.click(point["x"], point["y"])
    assert field(page, "name") == callback["name"]
    assert field(page, "op") == "custom-call"
    assert field(page, "source") == f"{__file__}:{callback['source_line']} (mlp_step)"
    assert "xla_ffi_python_cpu_callback" in field(page, "text")
    assert "CPU fallback" in page.locator(".xg-warn").inner_text()
    inputs = page.locator("[data-role=inputs] a").all_inner_texts()
    assert inputs and set(inputs) <= set(graph.nodes["name"])
    pixel = page.evaluate(
        """i => {
      const v = document.querySelector('.xlanb-graph').xlanbViewer, st = v.st, item = st.rep[i];
      const x = (v.tx + (st.cx[item] - st.w[item] / 2 + 4) * v.k) * v.ratio;
      const y = (v.ty + st.cy[item] * v.k) * v.ratio;
      return Array.from(v.ctx.getImageData(Math.round(x), Math.round(y), 1, 1).data);
    }""",
        index,
    )
    assert pixel[0] > 200 and pixel[1] < 90 and pixel[2] < 90, pixel  # red

    # expand a fusion by double-clicking it: its fused instructions are drawn
    fusion = graph.scopes[graph.scopes["kind"] == "fusion"].sort_values("nodes").iloc[-1]
    anchor = node_index(page, graph.node(fusion["node"])["name"])
    show(page, anchor)
    member = graph.nodes[graph.nodes["scope"] == fusion["id"]].iloc[-1]
    assert not screen_point(page, node_index(page, member["name"]))["self"]
    before = visible_nodes(page)
    point = screen_point(page, anchor)
    page.mouse.dblclick(point["x"], point["y"])
    assert visible_nodes(page) == before + fusion["nodes"]
    assert screen_point(page, node_index(page, member["name"]))["self"]
    page.screenshot(path=str(tmp_path / "graph_viewer.png"))
    print("screenshot:", tmp_path / "graph_viewer.png")

    # colour by FLOPs: the legend turns into a scale
    page.select_option(".xg-color", "flops")
    assert "flops (log)" in page.locator("[data-role=legend]").inner_text()
    page.select_option(".xg-color", "")

    # expand all, then collapse all
    page.click("[data-action=expand-all]")
    assert visible_nodes(page) == total
    page.click("[data-action=collapse-all]")
    assert visible_nodes(page) < shown


def test_names_with_markup_stay_text(page, tmp_path):
    page, _blocked, _errors = page
    nasty = '</script><script>window.__owned=1</script>"&<b>x'
    dot = (
        'digraph G { a [label="' + nasty.replace('"', '\\"') + '\\nf32[2]"]; '
        'b [label="add"]; a -> b; }'
    )
    open_page(page, tmp_path, graph_page(graphs.parse(dot), title=nasty), "nasty.html")
    assert page.evaluate("window.__owned") is None
    assert page.locator(".xg-title").inner_text() == nasty
    page.evaluate("document.querySelector('.xlanb-graph').xlanbViewer.select(0)")
    assert field(page, "name") == nasty


def test_side_by_side_diff_selects_the_matching_node(page, tmp_path):
    page, _blocked, _errors = page

    def step(x):
        return jnp.tanh(x @ x.T).sum(axis=0)

    before = graphs.parse(jax.jit(step).lower(jnp.ones((8, 4))).compile().as_text())
    after = graphs.parse(jax.jit(step).lower(jnp.ones((16, 4))).compile().as_text())
    result = graphs.diff(before, after)
    path = tmp_path / "diff.html"
    path.write_text("<!DOCTYPE html><meta charset=utf-8><body>" + result.html(), "utf-8")
    page.goto(path.as_uri())
    page.wait_for_function(
        "document.querySelectorAll('.xlanb-graph[data-ready=true]').length === 2"
    )
    assert "changed shape" in page.locator("[data-role=diff-summary]").inner_text()
    assert (
        "changed" in page.locator(".xlanb-graph").nth(0).locator("[data-role=legend]").inner_text()
    )
    dot = before.nodes[before.nodes["op"] == "dot"].iloc[0]
    page.evaluate(
        "i => document.querySelectorAll('.xlanb-graph')[0].xlanbViewer.select(i, {reveal: true})",
        node_index(page, dot["name"]),
    )
    assert field(page, "shape", 0) == dot["shape"]
    assert field(page, "op", 1) == "dot"
    assert field(page, "shape", 1) != dot["shape"]
    assert page.locator(".xlanb-graph").nth(1).locator(".xg-diff").inner_text() == "changed"

    # overlay: one graph, the exp() added in b marked as added
    widened = graphs.parse(jax.jit(lambda x: jnp.exp(step(x))).lower(jnp.ones((8, 4))).as_text())
    plain = graphs.parse(jax.jit(step).lower(jnp.ones((8, 4))).as_text())
    path.write_text(
        "<!DOCTYPE html><meta charset=utf-8><body>"
        + graphs.diff(plain, widened).html(mode="overlay"),
        "utf-8",
    )
    page.goto(path.as_uri())
    page.wait_for_selector(".xlanb-graph[data-ready=true]")
    index = node_index(
        page, widened.nodes[widened.nodes["op"] == "stablehlo.exponential"].iloc[0]["name"]
    )
    page.evaluate(
        "i => document.querySelector('.xlanb-graph').xlanbViewer.select(i, {reveal: true})", index
    )
    assert page.locator(".xg-diff").inner_text() == "added"
    assert "1 ops added" in page.locator("[data-role=summary]").inner_text()


def test_widget_front_end_reports_the_clicked_node(page, graph, tmp_path):
    page, _blocked, _errors = page
    from xlanb.views.graph_viewer import payload

    (tmp_path / "widget.html").write_text(
        "<!DOCTYPE html><meta charset=utf-8><div id=out style='width:900px'></div>", "utf-8"
    )
    page.goto((tmp_path / "widget.html").as_uri())
    page.evaluate(
        """async ([source, data]) => {
      const url = URL.createObjectURL(new Blob([source], {type: "text/javascript"}));
      const widget = (await import(url)).default;
      const values = {data, selected: null, query: "", focus: ""}, handlers = {};
      window.model = {
        get: k => values[k], set: (k, v) => { values[k] = v; },
        on: (name, cb) => { handlers[name] = cb; }, save_changes: () => { window.saved = true; },
        values, handlers,
      };
      widget.render({model: window.model, el: document.getElementById("out")});
    }""",
        [widget_module(), json.dumps(payload(graph))],
    )
    page.wait_for_selector(".xlanb-graph[data-ready=true]")
    dot = graph.nodes[graph.nodes["op"] == "dot"].iloc[0]
    point = show(page, node_index(page, dot["name"]))
    assert page.evaluate("window.model.values.selected") is None
    page.mouse.click(point["x"], point["y"])
    selected = page.evaluate("window.model.values.selected")
    assert page.evaluate("window.saved") is True
    assert selected["name"] == dot["name"] and selected["shape"] == dot["shape"]
    assert selected["source_line"] == dot["source_line"]
    page.evaluate("window.model.values.query = 'tanh'; window.model.handlers['change:query']()")
    assert page.locator("[data-role=match-count]").inner_text().startswith("1/")


ARTIFACTS = Path(__file__).parents[2] / "out" / "test-artifacts"

HOT_CELL = """%%xla_profile -b jax -q --var gv_prof
@jax.jit
def gv_hot(x):
    y = jnp.sort(x)
    z = jnp.tanh(x[:64]) * 2 + 1
    return y[:16].sum() + z.sum() + x[0] * 3
for _ in range(3):
    gv_hot(gv_long).block_until_ready()
"""


def item_pixel(page, index: int) -> list[int]:
    """The colour inside the box that shows node `index`, left of its label (drawn now)."""
    return page.evaluate(
        """i => {
      const v = document.querySelector('.xlanb-graph').xlanbViewer, st = v.st, item = st.rep[i];
      v.draw();
      const x = (v.tx + (st.cx[item] - st.w[item] / 2 + 4) * v.k) * v.ratio;
      const y = (v.ty + st.cy[item] * v.k) * v.ratio;
      return Array.from(v.ctx.getImageData(Math.round(x), Math.round(y), 1, 1).data);
    }""",
        index,
    )


def luminance(rgb: list[int]) -> float:
    return 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]


def test_measured_device_time_colours_the_sort_hottest(page, run, shell, tmp_path):
    page, _blocked, _errors = page
    run("import jax, jax.numpy as jnp\ngv_long = jax.random.normal(jax.random.key(2), (1 << 21,))")
    run(HOT_CELL)
    prof = shell.user_ns["gv_prof"]
    top = prof.ops.sort_values("seconds", ascending=False).iloc[0]
    assert top["op"].startswith("sort") and top["graph"] == "jit(gv_hot)", prof.ops
    # the viewer opens on the optimized HLO, the text whose instructions the trace names
    graph = prof.graph("jit(gv_hot)")
    optimized = prof.graphs.loc[prof.graphs["kind"] == "hlo_optimized", "text"].iloc[0]
    assert graph.text == optimized and graph.measured is not None
    sort = graph.nodes[graph.nodes["op"] == "sort"].iloc[0]

    path = tmp_path / "profile.html"
    path.write_text("<!DOCTYPE html><meta charset=utf-8><body>" + prof._repr_html_(), "utf-8")
    page.goto(path.as_uri())
    page.click("summary:has-text('Graph viewer')")
    page.wait_for_selector(".xlanb-graph[data-ready=true]", timeout=60_000)
    viewer = page.locator(".xlanb-graph").first
    assert viewer.get_attribute("data-kind") == "hlo"
    # device time is the colouring it opens with, its legend a scale of seconds
    assert page.locator(".xg-color").input_value() == "time"
    legend = page.locator("[data-role=legend]").inner_text()
    assert "device time (log)" in legend and "ops measured" in legend

    # "Hottest" selects the sort, with its measured time, runs and cell line
    page.click("[data-action=hottest]")
    index = node_index(page, sort["name"])
    assert page.evaluate("document.querySelector('.xlanb-graph').xlanbViewer.selected") == index
    assert field(page, "name") == sort["name"] and field(page, "op") == "sort"
    seconds = page.evaluate("s => XlanbGraph.fmtSeconds(s)", float(top["seconds"]))
    assert field(page, "device-time").startswith(seconds + " (")
    assert "% of device time" in field(page, "device-time")
    assert field(page, "runs").startswith(f"{int(top['count'])} \u00d7 ")
    assert field(page, "cell-line") == f"{int(top['cell_line'])}: y = jnp.sort(x)"
    # the cell's file (IPython's <ipython-input-...>) reads as the notebook cell it is
    assert field(page, "source") == f"notebook cell, line {int(sort['source_line'])} (gv_hot)"
    assert field(page, "hot-rank").startswith("#1 of ")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    viewer.screenshot(path=str(ARTIFACTS / "graph-viewer-device-time.png"))

    # drawn darkest of the measured boxes: the hot end of the ramp
    measured = prof.ops.loc[prof.ops["graph"] == "jit(gv_hot)", "op"]
    others = [node_index(page, op) for op in measured if op != top["op"]]
    others = [other for other in others if other >= 0]
    assert others, measured
    show(page, index)
    hot = item_pixel(page, index)
    for other in others:
        show(page, other)
        assert luminance(item_pixel(page, other)) > luminance(hot) + 60, (other, hot)

    # the report on a dark page: the dark theme, where hot is brightest
    page.emulate_media(color_scheme="dark")
    try:
        prof.to_html(tmp_path / "report.html")
        page.goto((tmp_path / "report.html").as_uri())
        page.wait_for_selector(".xlanb-graph[data-ready=true]", timeout=60_000)
        assert "xg-dark" in (page.locator(".xlanb-graph").first.get_attribute("class") or "")
        page.click("[data-action=hottest]")
        assert field(page, "cell-line") == f"{int(top['cell_line'])}: y = jnp.sort(x)"
        page.locator(".xlanb-graph").first.screenshot(
            path=str(ARTIFACTS / "graph-viewer-device-time-dark.png")
        )
        show(page, index)
        hot = item_pixel(page, index)
        for other in others:
            show(page, other)
            assert luminance(item_pixel(page, other)) < luminance(hot) - 60, (other, hot)
    finally:
        page.emulate_media(color_scheme="light")


def transformer_step(params, x):
    for layer in params:
        with jax.named_scope("attention"):
            q, k, v = (x @ layer[n] for n in ("q", "k", "v"))
            x = x + jax.nn.softmax(q @ k.T / 4.0, axis=-1) @ v
        with jax.named_scope("mlp"):
            x = x + jax.nn.gelu(x @ layer["w1"]) @ layer["w2"]
    return (x**2).mean()


def test_a_big_graph_opens_readable_and_the_legend_covers_nothing(page, tmp_path):
    """A 4-layer transformer's backward pass (hundreds of instructions) opens with labels at
    11 px or more (it opened at 6.6 px, a thin ribbon), the legend sits outside the canvas
    (it covered the bottom row of nodes), and Shift+F shows the whole graph inside the canvas."""
    page, _blocked, _errors = page
    shapes = {"q": (16, 16), "k": (16, 16), "v": (16, 16), "w1": (16, 64), "w2": (64, 16)}
    params = [{n: jnp.ones(s) for n, s in shapes.items()} for _ in range(4)]
    text = jax.jit(jax.grad(transformer_step)).lower(params, jnp.ones((8, 16))).as_text()
    big = graphs.parse(text)
    assert len(big.nodes) > 300
    open_page(page, tmp_path, graph_page(big, height=520), name="big.html")
    viewer = "document.querySelector('.xlanb-graph').xlanbViewer"
    assert page.evaluate(f"{viewer}.k") * 11 >= 11  # labels are drawn at 11 px times the zoom
    canvas = page.locator(".xlanb-graph canvas").first.bounding_box()
    legend = page.locator("[data-role=legend]").first.bounding_box()
    assert legend is not None and canvas is not None
    overlaps = (
        legend["x"] < canvas["x"] + canvas["width"]
        and canvas["x"] < legend["x"] + legend["width"]
        and legend["y"] < canvas["y"] + canvas["height"]
        and canvas["y"] < legend["y"] + legend["height"]
    )
    assert not overlaps, (legend, canvas)
    page.click("[data-action=fit]")
    assert page.evaluate(f"{viewer}.k") * 11 >= 8.8  # Fit keeps labels legible
    page.locator(".xlanb-graph canvas").first.focus()
    page.keyboard.press("Shift+F")  # the whole graph
    inside = page.evaluate(
        f"""() => {{ const v = {viewer};
        return v.tx >= 0 && v.ty >= 0 && v.tx + v.st.width * v.k <= v.width + 0.5
            && v.ty + v.st.height * v.k <= v.height + 0.5; }}"""
    )
    assert inside, page.evaluate(
        f"() => {{ const v = {viewer}; "
        "return [v.tx, v.ty, v.st.width, v.st.height, v.k, v.width, v.height]; }"
    )


def open_cell_output_then_report(page, prof, stem):
    """Open `prof`'s cell output (its graph viewer section opened), then its report, in
    `page`, each once its first viewer has started; yields the page's kind."""
    for kind in ("cell", "report"):
        path = stem.with_name(f"{stem.name}-{kind}.html")
        if kind == "report":
            prof.to_html(path)
        else:
            body = "<!DOCTYPE html><meta charset=utf-8><body>" + prof._repr_html_()
            path.write_text(body, "utf-8")
        page.goto(path.as_uri())
        if kind == "cell":
            page.click("summary:has-text('Graph viewer')")
        page.wait_for_selector(".xlanb-graph[data-ready=true]", timeout=60_000)
        yield kind


def test_a_programs_stablehlo_is_one_click_away(page, run, shell, tmp_path):
    """A JAX program opens on its optimized HLO, with its StableHLO a tab away (in the cell's
    output and in the report); the StableHLO viewer starts only when its tab is chosen."""
    page, _blocked, _errors = page
    run("""%%xla_profile --var tabs_prof
import jax, jax.numpy as jnp
tabs_step = jax.jit(lambda w, x: jnp.tanh(x @ w).sum())
tabs_step(jnp.ones((8, 8)), jnp.ones((4, 8))).block_until_ready()
""")
    prof = shell.user_ns["tabs_prof"]
    assert prof.graph_kinds(0) == ["hlo_optimized", "stablehlo"]
    stable_ops = set(prof.graph(0, kind="stablehlo").nodes["op"])
    for _ in open_cell_output_then_report(page, prof, tmp_path / "tabs"):
        tabs = page.locator(".xg-view-tab")
        assert tabs.all_inner_texts() == ["Optimized HLO", "StableHLO"]
        stable = page.locator(".xg-view[data-view='1'] .xlanb-graph")
        assert stable.get_attribute("data-ready") is None  # not started while hidden
        tabs.nth(1).click()
        page.wait_for_selector(".xg-view[data-view='1'] .xlanb-graph[data-ready=true]")
        assert stable.get_attribute("data-kind") == "stablehlo"
        assert page.locator(".xg-view[data-view='0']").is_hidden()
        assert tabs.nth(1).get_attribute("aria-selected") == "true"
        drawn = page.evaluate(
            "() => document.querySelector(\".xg-view[data-view='1'] .xlanb-graph\")"
            ".xlanbViewer.m.op"
        )
        assert stable_ops <= set(drawn), (stable_ops, drawn)
        tabs.nth(0).click()
        assert page.locator(".xg-view[data-view='0']").is_visible()


def test_a_recompiles_changes_are_one_click_away(page, run, shell, tmp_path):
    """A function recompiled for a new shape: its viewer has a "Changes from compile N" tab
    (the overlay diff against the compile before it), started when chosen, in the cell's
    output and in the report (it was a command to type: %xla_profile diff)."""
    page, _blocked, errors = page
    run("""%%xla_profile --var changes_prof
import jax, jax.numpy as jnp
changes_step = jax.jit(lambda w, x: jnp.tanh(x @ w).sum())
for rows in (4, 6):
    changes_step(jnp.ones((8, 8)), jnp.ones((rows, 8))).block_until_ready()
""")
    prof = shell.user_ns["changes_prof"]
    entries = prof.graph_entries()
    first, second = entries.loc[entries["graph"] == "jit(<lambda>)", "compile"].tolist()
    for _ in open_cell_output_then_report(page, prof, tmp_path / "changes"):
        tab = page.locator(f".xg-view-tab:has-text('Changes from compile {first}')")
        assert tab.count() == 1, page.locator(".xg-view-tab").all_inner_texts()
        tab.click()
        views = page.locator(".xlanb-graph-views").filter(has=tab)
        viewer = views.locator(".xg-view:not([hidden]) .xlanb-graph")
        viewer.wait_for(state="visible")
        page.wait_for_function(
            "(el) => el.dataset.ready === 'true'", arg=viewer.element_handle(), timeout=60_000
        )
        assert f"(compile {second})" in viewer.inner_text()
        summary = viewer.locator("[data-role=summary]").inner_text()
        assert "changed" in summary and "0 added, 0 removed" in summary, summary
        changed = page.evaluate(
            "(el) => Array.from(el.xlanbViewer.m.diff).filter((code) => code === 3).length",
            viewer.element_handle(),
        )
        assert changed > 0
    assert not errors, errors
