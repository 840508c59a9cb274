"""The HTML report opened from disk in Chromium with every non-file request aborted: nothing
requested, no page error, charts and graphs drawn; and its size with a 2,000-node graph."""

from __future__ import annotations

import pytest

import xlanb
from tests.support.browser import browser_page
from tests.support.helpers import deep_mlp_profile


@pytest.fixture(scope="module")
def deep_jax_profile():
    return deep_mlp_profile("deep <mlp>", 3)


def test_report_opens_offline_with_charts_and_graph(deep_jax_profile, tmp_path):
    path = tmp_path / "report.html"
    deep_jax_profile.to_html(path)
    size_mb = path.stat().st_size / 2**20
    nodes = int(deep_jax_profile.graphs["nodes"].max())
    assert nodes >= 2000
    assert size_mb <= 6, f"{size_mb:.1f} MB with a {nodes}-node graph"
    with browser_page() as (page, blocked):
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(path.as_uri())
        page.wait_for_selector(".xlanb-report-chart .main-svg", timeout=30_000)
        page.wait_for_selector(".xlanb-graph[data-ready='true']", timeout=30_000)
        assert page.locator(".xlanb-report-chart .main-svg").count() >= 1
        assert "deep <mlp>" in page.title()  # escaped in the source, shown as text
        page.screenshot(path=str(tmp_path / "report.png"), full_page=False)
    assert blocked == [] and errors == []


def test_report_says_why_charts_are_not_drawn_without_decompression(deep_jax_profile, tmp_path):
    """plotly.js travels gzip-compressed: a browser without DecompressionStream gets a line in
    each chart's place, as the viewer's in each graph's, and no page error."""
    path = tmp_path / "report.html"
    deep_jax_profile.to_html(path)
    with browser_page() as (page, blocked):
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.add_init_script("delete globalThis.DecompressionStream;")
        page.goto(path.as_uri())
        page.wait_for_selector(".xlanb-report-chart:has-text('Chart not drawn')", timeout=30_000)
        notes = page.locator(".xlanb-report-chart").all_inner_texts()
        page.wait_for_selector(".xlanb-graph[data-error]", timeout=30_000)
        graph_error = page.locator(".xlanb-graph[data-error]").first.get_attribute("data-error")
    assert "DecompressionStream" in str(graph_error)
    assert notes and all(
        note == "Chart not drawn: no DecompressionStream in this browser" for note in notes
    )
    assert blocked == [] and errors == []


def test_magic_writes_the_report(lazy_runtime, tmp_path):
    path = tmp_path / "cell <1>.html"
    result = lazy_runtime.run_cell(
        f"%%xla_profile -q -o '{path}'\n"
        "kept = torch.ones(4, 29, device=dev).sum()\n"
        "torch._lazy.mark_step()"
    )
    assert result.success
    assert "Plotly.newPlot(" in path.read_text()


def test_report_of_several_profiles_has_a_comparison(lazy_runtime, tmp_path):
    import torch
    import torch._lazy

    profiles = []
    for size in (3, 5):
        with xlanb.profile(backend="torch_lazy", name=f"size-{size}") as prof:
            kept = torch.ones(size, 7, device="lazy").sum()
            torch._lazy.mark_step()
        profiles.append(prof)
    from xlanb.api.report import write_report

    path = write_report(profiles, tmp_path / "both.html")
    text = path.read_text()
    assert "<h2>Comparison</h2>" in text and "size-3 → size-5" in text
    assert text.count("<script>!function") <= 1  # plotly.js once
    with browser_page() as (page, blocked):
        page.goto(path.as_uri())
        page.wait_for_selector(".xlanb-report-chart .main-svg", timeout=30_000)
        assert page.locator("h2").count() == 3
    assert blocked == []
    del kept


@pytest.fixture(scope="module")
def recompiled_transformer():
    """bench/cell_output.py's "jax-compiles" cell: a 12-layer transformer step (d=256)
    compiled for 4 sequence lengths, 5 steps each."""
    import jax
    import jax.numpy as jnp

    layers, width, heads = 12, 256, 4

    def layer(p, x):
        b, t, _ = x.shape
        q, k, v = ((x @ p[n]).reshape(b, t, heads, width // heads) for n in "qkv")
        a = jax.nn.softmax(jnp.einsum("bthd,bshd->bhts", q, k) / 8.0, axis=-1)
        x = jax.nn.gelu(x + jnp.einsum("bhts,bshd->bthd", a, v).reshape(b, t, width) @ p["o"])
        return x + jax.nn.relu(x @ p["w1"]) @ p["w2"]

    def model(params, x):
        for p in params:
            x = layer(p, x)
        return jnp.mean(x**2)

    d = width
    shapes = dict(q=(d, d), k=(d, d), v=(d, d), o=(d, d), w1=(d, 4 * d), w2=(4 * d, d))
    params = [
        {n: jax.random.normal(jax.random.key(0), s) * 0.02 for n, s in shapes.items()}
        for _ in range(layers)
    ]
    xs = {t: jnp.ones((4, t, d)) for t in (16, 32, 48, 64)}
    jax.block_until_ready(xs)

    @jax.jit
    def step(params, x):
        loss, g = jax.value_and_grad(model)(params, x)
        return jax.tree.map(lambda p, g: p - 1e-3 * g, params, g), loss

    with xlanb.profile(backend="jax", name="transformer") as prof:
        for t in (16, 32, 48, 64):
            for _ in range(5):
                params, loss = step(params, xs[t])
        loss.block_until_ready()
    return prof


def _drawn_graphs(profile) -> list[tuple[int, list[str], list[int] | None]]:
    """What each graph of the report should draw, in page order: its node count, node names
    and (a "Changes" tab) diff codes, from the profile itself."""
    from xlanb.graphs import diff
    from xlanb.graphs.overlay import overlay_graph
    from xlanb.views.graph_viewer.payload import DIFF_CODES
    from xlanb.views.html import labelled_entries

    entries = labelled_entries(profile)
    expected = []
    for index in entries["index"]:
        for kind in profile.graph_kinds(int(index)):
            names = [str(n) for n in profile.graph(int(index), kind=kind).nodes["name"]]
            expected.append((len(names), names, None))
        previous = profile.previous_compile(int(index), entries)
        if previous is not None:
            merged, status = overlay_graph(diff(profile.graph(previous), profile.graph(int(index))))
            names = [str(n) for n in merged.nodes["name"]]
            expected.append((len(names), names, [DIFF_CODES[s] for s in status]))
    return expected


def test_report_of_a_recompiled_transformer_is_at_most_2_mb(recompiled_transformer, tmp_path):
    """Issue #13: the report of a cell that compiles is at most 2 MB all in, and every chart,
    program and view (each compile's optimized HLO and StableHLO, each recompile's changes)
    still draws offline, node for node what the profile holds."""
    path = tmp_path / "report.html"
    recompiled_transformer.to_html(path)
    assert len(recompiled_transformer.compiles) >= 4
    size = path.stat().st_size
    assert size <= 2_000_000, f"{size:,} bytes"
    expected = _drawn_graphs(recompiled_transformer)
    assert len(expected) >= 11  # 4 compiles x 2 views, 3 changes
    with browser_page() as (page, blocked):
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(path.as_uri())
        page.wait_for_selector(".xlanb-report-chart .main-svg", timeout=30_000)
        for tab in page.locator(".xg-view-tab").all():
            tab.click()
        page.wait_for_function(
            "document.querySelectorAll('.xlanb-graph').length === "
            "document.querySelectorAll('.xlanb-graph[data-ready=true]').length",
            timeout=60_000,
        )
        drawn = page.evaluate(
            "Array.from(document.querySelectorAll('.xlanb-graph'), function (el) {"
            "  var m = el.xlanbViewer.m;"
            "  return [m.n, m.name, m.diff ? Array.from(m.diff) : null]; })"
        )
        charts = page.locator(".xlanb-report-chart").count()
        drawn_charts = page.locator(".xlanb-report-chart:has(.main-svg)").count()
    assert blocked == [] and errors == []
    assert charts >= 1 and drawn_charts == charts
    assert [tuple(d) for d in drawn] == expected
