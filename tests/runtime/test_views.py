"""The notebook view of real captured profiles: summary HTML, plotly charts and their SVG
twins, and what a profiled cell sends to the front end."""

from __future__ import annotations

import base64
import gzip
import re

import numpy as np
import pytest
from IPython.utils.capture import capture_output

from xlanb.views.charts import time_unit
from xlanb.views.html import profile_html
from xlanb.views.notebook import PLOTLY_MIME


@pytest.fixture(scope="module")
def loop_profile(lazy_runtime):
    shell = lazy_runtime
    # the cell rebinds these names: a JAX array an earlier test left in one (`out`) would be
    # freed during the cell, its live arrays changed (a "live jax" lane)
    for name in ("wv", "step", "batch", "out"):
        shell.user_ns.pop(name, None)
    result = shell.run_cell("""%%xla_profile -q --var view_prof
wv = torch.randn(8, 8, device=dev)
torch._lazy.mark_step()
for step in range(40):
    batch = 4 if step < 30 else 6
    out = (torch.randn(batch, 8).to(dev) @ wv).relu().sum()
    torch._lazy.mark_step()
print(out.item() > -1)
""")
    assert result.success
    return shell.user_ns["view_prof"]


def test_readable_time_units():
    assert time_unit(2.5) == ("s", 1.0)
    assert time_unit(0.004) == ("ms", 1e3)
    assert time_unit(3e-6) == ("µs", 1e6)


def test_percentile_chart_of_sync_times_marks_p50_p90_p99(loop_profile):
    charts = {chart.title: chart for chart in loop_profile.charts()}
    figure = charts["percentiles"].to_plotly()  # plotly validates the figure
    line, markers = figure.data[0], figure.data[1]
    assert line.name == "SyncTime" and list(line.x) == list(range(1, 100))
    assert list(markers.x) == [50, 90, 99]
    # the loop's steady steps only: the warm-up steps that compiled would bend the curve
    from xlanb.views.charts import percentile_series, steady_samples

    steady = steady_samples(loop_profile, loop_profile.samples.query("metric == 'SyncTime'"))
    samples = steady["value"].to_numpy()
    phases = loop_profile.step_times["phase"]
    assert len(samples) == (phases == "steady").sum() >= 5
    assert percentile_series(loop_profile)[0]["count"] == len(samples)
    unit = figure.layout.yaxis.title.text
    factor = {"s": 1, "ms": 1e3, "µs": 1e6}[unit]
    assert markers.y[0] == pytest.approx(np.percentile(samples, 50) * factor, rel=1e-3)
    assert markers.text[2].startswith("p99 ")
    assert np.all(np.diff(line.y) >= 0)  # a percentile curve never goes down


def test_timeline_draws_the_time_account_lanes(loop_profile):
    charts = {chart.title: chart for chart in loop_profile.charts()}
    figure = charts["timeline"].to_plotly()
    lanes = {trace.name: trace for trace in figure.data}
    spans = loop_profile.spans
    # torch._lazy: each mark_step is a compile span, a device span or both (estimated); with
    # JAX imported by earlier tests, its trace adds its own (sync_wait) spans
    assert set(lanes) == set(spans[spans["seconds"] > 0]["lane"]) >= {"compile", "device"}
    compiled = (spans["lane"] == "compile").sum()
    assert len(lanes["compile"].x) == compiled >= 1
    assert len(lanes["device"].x) == (spans["lane"] == "device").sum() >= 31 - compiled
    graphs = spans[spans["lane"] == "device"]["graph"].dropna()
    assert set(lanes["device"].y) == {f"device {g[:16]}" for g in graphs}
    starts = np.array(lanes["device"].base)
    assert (starts >= 0).all() and (starts <= loop_profile.wall_seconds * 1e3 + 1).all()
    # the tooltip shows the exact duration, not the drawn (minimum-width) bar
    exact = [d[1] for d in lanes["device"].customdata]
    assert "lasts %{customdata[1]" in lanes["device"].hovertemplate
    assert min(exact) > 0
    trace = loop_profile.to_chrome_trace()
    tracks = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert "compile" in tracks and any(t.startswith("device ") for t in tracks)


def test_chart_bundle_has_plotly_json_and_a_static_svg_twin(loop_profile):
    bundle = loop_profile.charts()[0]._repr_mimebundle_()
    assert set(bundle) == {PLOTLY_MIME, "text/html", "text/plain"}
    assert bundle[PLOTLY_MIME]["data"][0]["type"] == "scatter"
    svg = bundle["text/html"]
    assert svg.count("<polyline") == 1 and "p50 " in svg and "SyncTime" in svg


def test_profiled_cell_sends_summary_then_charts(lazy_runtime):
    # 4 steps: a compiling mark_step's run has no device span when its compile time cannot be
    # split off (no earlier cached run, or one slower than it), and the chart needs 3 runs
    # as a notebook shows them (a terminal's shell shows text alone: charts' text alone)
    formatter = lazy_runtime.display_formatter
    active_types, formatter.active_types = formatter.active_types, formatter.format_types
    try:
        with capture_output() as shown:
            lazy_runtime.run_cell(
                "%%xla_profile\nfor i in range(4):\n"
                "    k = torch.ones(3, 5, device=dev).sum()\n"
                "    torch._lazy.mark_step()"
            )
    finally:
        formatter.active_types = active_types
    kinds = [next(iter(o.data)) if len(o.data) == 1 else sorted(o.data) for o in shown.outputs]
    assert len(shown.outputs) == 4  # summary, percentiles, steps, timeline
    assert all(PLOTLY_MIME in output.data for output in shown.outputs[1:]), kinds


def test_summary_html_sections(loop_profile):
    fragment = profile_html(loop_profile)
    assert "<details open><summary>Compiles (" in fragment
    for section in ("Executions by graph", "Counters", "Metrics", "Graph viewer"):
        assert f"<summary>{section} (" in fragment
    # the graphs travel packed, their text never: a notebook stays small
    text = loop_profile.graphs["text"].iloc[0]
    assert text.splitlines()[1] not in fragment and 'type="application/json"' not in fragment
    assert 'type="application/x-xlanb-gzip-base64"' in fragment
    assert "xlanb-sortable" in fragment and "xlanb-bad" in fragment
    assert "<code style='white-space:pre'>print(out.item() &gt; -1)</code>" in fragment


def test_report_embeds_plotly_once_and_every_graph(loop_profile):
    text = loop_profile.to_html()
    assert text.count("Plotly.newPlot(") == 3  # percentiles, steps and timeline
    # the basic bundle, embedded once, gzip-compressed (1.2 MB -> 527 kB in base64)
    packed = re.findall(r'<script type="[^"]+" id="xlanb-plotly">([^<]*)</script>', text)
    assert len(packed) == 1 and text.count("xlanb-plotly") == 2  # the bundle and its loader
    bundle = gzip.decompress(base64.b64decode(packed[0])).decode()
    assert bundle.startswith("/**") and "plotly.js (basic - minified) v" in bundle[:200]
    assert len(text) < 0.7e6, len(text)  # the full bundle alone was 4.8 MB, the basic one 1.2
    # a viewer per compile and per text of it, and a recompile's changes
    programs = range(len(loop_profile.graph_entries()))
    views = sum(len(loop_profile.graph_kinds(i)) for i in programs)
    changes = sum(loop_profile.previous_compile(i) is not None for i in programs)
    assert text.count('class="xlanb-graph"') == views + changes
    assert text.count(">Changes from ") == changes


def _timed_profile(values, metric="ExecuteTime"):
    from xlanb.core.profile import Profile
    from xlanb.core.schema import make_frame

    profile = Profile(name="timed", backends=["torch_xla"], started_at=1.7e9, wall_seconds=5.0)
    profile.metrics = make_frame(
        "metrics",
        [{"backend": "torch_xla", "name": metric, "unit": "s", "count": len(values)}],
    )
    profile.samples = make_frame(
        "samples",
        [
            {"backend": "torch_xla", "metric": metric, "time": 1.7e9 + i, "value": v}
            for i, v in enumerate(values)
        ],
    )
    return profile


def test_percentile_units_come_from_the_largest_value():
    """27 short calls and 3 long compiles: the unit was chosen from the median (µs), so the
    long ones read "800k µs"."""
    from xlanb.views.charts import percentile_figure

    figure = percentile_figure(_timed_profile([50e-6] * 27 + [0.8] * 3))
    assert figure["layout"]["yaxis"]["title"]["text"] == "ms"
    assert max(figure["data"][0]["y"]) == pytest.approx(800)


def test_a_few_samples_are_dots_not_a_percentile_curve():
    from xlanb.views.charts import percentile_figure

    figure = percentile_figure(_timed_profile([0.010, 0.012, 0.011, 0.030, 0.009]))
    assert [trace["mode"] for trace in figure["data"]] == ["markers"]  # no curve, no p99 mark
    assert len(figure["data"][0]["y"]) == 5
    assert "too few for percentiles" in figure["layout"]["annotations"][0]["text"]
    assert figure["layout"]["xaxis"]["title"]["text"] == "rank (%)"


def test_xlanbs_own_metrics_say_what_they_measure():
    from xlanb.views.charts import percentile_figure

    figure = percentile_figure(_timed_profile([0.001] * 25, metric="DispatchTime"))
    assert "host time of each jitted call" in figure["layout"]["annotations"][0]["text"]
