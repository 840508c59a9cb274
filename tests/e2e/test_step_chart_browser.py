"""The step-time chart in the HTML report, drawn by plotly.js in Chromium offline: one bar per
step, stacked by the time account's buckets, the segments of a step summing to its time, and
the warm-up step apart from the steady ones."""

from __future__ import annotations

import pytest

import xlanb
from tests.support.browser import browser_page
from tests.support.helpers import deep_mlp_profile

STEPS = 12

#: The step chart's traces as drawn: per trace its phase, bucket, bars (x, y) and drawn points.
DRAWN_STEP_TRACES = """() => {
  const charts = [...document.querySelectorAll('.xlanb-report-chart')].filter(
    (div) => div.layout && div.layout.barmode === 'stack');
  return charts.map((div) => div.data.map((trace, index) => ({
    phase: trace.meta, bucket: trace.name, x: trace.x, y: trace.y,
    points: div.querySelectorAll('.barlayer .trace.bars')[index].querySelectorAll('.point').length,
    unit: div.layout[trace.yaxis === 'y2' ? 'yaxis2' : 'yaxis'].title.text,
  })));
}"""


@pytest.fixture(scope="module")
def loop_profile():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def step(w, x):
        return w - 0.01 * jax.grad(lambda w: ((x @ w) ** 2).sum())(w)

    w, x = jnp.ones((32, 32)), jnp.ones((8, 32))
    with xlanb.profile(backend="jax", name="loop <b>") as prof:
        for _ in range(STEPS):
            w = step(w, x)
        w.block_until_ready()
    return prof


def test_report_step_chart_has_a_stacked_bar_per_step(loop_profile, tmp_path):
    steps = loop_profile.step_times
    assert len(steps) == STEPS and (steps["phase"] == "warm-up").sum() >= 1
    path = tmp_path / "report.html"
    loop_profile.to_html(path)
    with browser_page() as (page, blocked):
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(path.as_uri())
        page.wait_for_selector(".xlanb-report-chart .main-svg", timeout=30_000)
        page.wait_for_function("document.querySelectorAll('.barlayer .trace.bars').length > 0")
        charts = page.evaluate(DRAWN_STEP_TRACES)
    assert blocked == [] and errors == []
    assert len(charts) == 1
    traces = charts[0]
    factor = {"s": 1.0, "ms": 1e3, "µs": 1e6}
    for phase, rows in steps.groupby("phase"):
        drawn = [t for t in traces if t["phase"] == phase]
        assert drawn, phase
        # one bar per step of the phase in every bucket's trace, each drawn
        for trace in drawn:
            assert trace["x"] == [str(s) for s in rows["step"]]
            assert trace["points"] == len(rows)
        totals = [sum(t["y"][i] for t in drawn) for i in range(len(rows))]
        scale = factor[drawn[0]["unit"]]
        assert totals == pytest.approx((rows["seconds"] * scale).tolist(), abs=1e-5 * len(drawn))
    # the warm-up steps on their own axis, left of the steady ones
    assert {t["phase"] for t in traces} == {"warm-up", "steady"}


#: Boxes of the timeline's x-axis title and of its memory lane's plot area, in page pixels.
TIMELINE_BOXES = """() => {
  const div = [...document.querySelectorAll('.xlanb-report-chart')].find(
    (d) => d.layout && d.layout.yaxis2 && String(d.layout.yaxis2.title.text).startsWith('memory'));
  const box = (element) => { const r = element.getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; };
  return {title: box(div.querySelector('.g-xtitle')),
          lane: box(div.querySelector('.draglayer .xy2 .nsewdrag'))};
}"""


def test_timeline_time_axis_title_is_below_the_memory_lane(loop_profile, tmp_path):
    path = tmp_path / "report.html"
    loop_profile.to_html(path)
    with browser_page() as (page, _blocked):
        page.goto(path.as_uri())
        page.wait_for_selector(".xlanb-report-chart .main-svg", timeout=30_000)
        page.wait_for_function("document.querySelectorAll('.g-xtitle text').length > 0")
        boxes = page.evaluate(TIMELINE_BOXES)
    assert boxes["title"]["top"] >= boxes["lane"]["bottom"], boxes


@pytest.fixture(scope="module")
def recompiled_profile():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def total(a, b, c, d):
        return a.sum() + b.sum() + c.sum() + d.sum()

    with xlanb.profile(backend="jax", name="recompiled") as prof:
        for rows in (3, 4, 5):
            arrays = [jnp.ones((rows, columns)) for columns in (7, 9, 2, 5)]
            total(*arrays).block_until_ready()
    return prof


def test_compiles_table_cause_keeps_to_two_lines_and_diff_shows(recompiled_profile):
    from xlanb.views.html import profile_html

    causes = recompiled_profile.compiles["cause"].astype(str)
    longest = max(causes, key=len)
    assert len(longest) > 80  # a shape change of four inputs
    with browser_page(width=1000, height=900) as (page, _blocked):
        page.set_content(
            f"<!DOCTYPE html><html><body>{profile_html(recompiled_profile)}</body></html>"
        )
        page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
        boxes = page.evaluate(
            """() => { const table = [...document.querySelectorAll('table')].find((t) =>
              [...t.querySelectorAll('th')].some((th) => th.textContent === 'cause'));
              const heads = [...table.querySelectorAll('th')].map((th) => th.textContent);
              const column = heads.indexOf('cause');
              const cells = [...table.tBodies[0].rows].map((row) => row.cells[column]);
              const diffs = [...table.tBodies[0].rows].map((row) =>
                row.cells[heads.indexOf('diff')]).filter((c) => c.textContent);
              const lines = (c) => { const range = document.createRange();
                range.selectNodeContents(c);
                return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size; };
              return {heights: cells.map(lines), diff_lines: diffs.map(lines),
                titles: cells.map((c) => c.title || c.querySelector('[title]')?.title || ''),
                heads: heads}; }"""
        )
    assert "diff" in boxes["heads"]
    assert max(boxes["heights"]) <= 2, boxes  # lines of text in each cause cell
    assert boxes["diff_lines"] and max(boxes["diff_lines"]) == 1, boxes  # a whole command
    assert longest in boxes["titles"]  # the whole cause in its tooltip


@pytest.fixture(scope="module")
def deep_profile():
    return deep_mlp_profile("deep", 4)


#: Zooms the timeline to [lo, hi] and counts the op bars drawn wholly inside the plot area.
ZOOM_TO_RUN = """async ([lo, hi]) => {
  const div = [...document.querySelectorAll('.xlanb-report-chart')].find(
    (d) => d.data && d.data.some((t) => t.name === 'op'));
  if (!div) return -1;
  await window.Plotly_relayout(div, lo, hi);
  const plot = div.querySelector('.draglayer .xy .nsewdrag').getBoundingClientRect();
  const index = div.data.findIndex((t) => t.name === 'op');
  const points = div.querySelectorAll('.barlayer .trace.bars')[index].querySelectorAll('path');
  return [...points].filter((p) => { const r = p.getBoundingClientRect();
    return r.width > 0 && r.left >= plot.left - 0.5 && r.right <= plot.right + 0.5; }).length;
}"""


def test_timeline_zooms_to_the_ops_of_one_run(deep_profile, tmp_path):
    from xlanb.views.charts import last_run_ops, time_unit

    spans = deep_profile.spans
    # the last traced run (the runs after the trace's window are estimated: no ops)
    device = spans[(spans["lane"] == "device") & ~spans["estimated"]].sort_values("start")
    run_start = float(device["start"].iloc[-1]) - deep_profile.started_at
    run_end = run_start + float(device["seconds"].iloc[-1])
    held = spans[spans["lane"] == "op"]
    held_start = held["start"].to_numpy() - deep_profile.started_at
    held_end = held_start + held["seconds"].to_numpy()
    in_run = int(((held_start >= run_start) & (held_end <= run_end)).sum())
    assert in_run > 300  # more than a row's merged bars: each op, not a merge of them
    assert len(last_run_ops(deep_profile)) == in_run
    path = tmp_path / "report.html"
    deep_profile.to_html(path)
    extent = max(float(held_end.max()), deep_profile.wall_seconds)
    _unit, factor = time_unit(extent)
    with browser_page() as (page, _blocked):
        page.goto(path.as_uri())
        page.wait_for_selector(".xlanb-report-chart .main-svg", timeout=30_000)
        page.wait_for_function(
            "[...document.querySelectorAll('.xlanb-report-chart')].some((d) => d.data && "
            "d.data.some((t) => t.name === 'op') && d.querySelector('.barlayer'))"
        )
        page.evaluate(
            "() => { window.Plotly_relayout = (div, lo, hi) => xlanbPlotly.then((P) => "
            "P.relayout(div, {'xaxis.range': [lo, hi]})); }"
        )
        drawn = page.evaluate(ZOOM_TO_RUN, [run_start * factor, run_end * factor])
    assert drawn == in_run
