"""The self-contained HTML report of one or more profiles: it opens from disk, with no network,
in any browser that has ``DecompressionStream`` (Chrome 80, Firefox 113, Safari 16.4).

One page: for each profile its summary (the same fragment a notebook shows), its interactive
plotly charts, its environment and every captured graph in the graph viewer; then, for several
profiles, a comparison of each with the next. plotly.js (gzip-compressed) and the viewer's
JS/CSS are embedded once; chart data travels as JSON with every ``<`` escaped, graphs
gzip-compressed, each a patch of the graph most like it where that is smaller (a graph's text
is not in the page: the viewer shows each node's instruction).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from xlanb.core.profile import Profile
from xlanb.views.charts import comparison_figure, percentile_figure, timeline_figure
from xlanb.views.escape import escape
from xlanb.views.graph_viewer import graph_fragment, graph_views, json_for_script, viewer_assets
from xlanb.views.graph_viewer.html import KIND_LABELS
from xlanb.views.graph_viewer.patch import PagePayloads
from xlanb.views.graph_viewer.payload import PACKED_TYPE, packed_bytes
from xlanb.views.html import (
    STYLE,
    changes_view,
    comparison_html,
    labelled_entries,
    profile_html,
    table,
)
from xlanb.views.step_chart import step_figure
from xlanb.views.summary import title

_chart_ids = itertools.count(1)

PAGE_STYLE = """
body{margin:16px 24px;max-width:1400px}
h1{font-family:system-ui,sans-serif;font-size:20px}
h2{font-family:system-ui,sans-serif;font-size:17px;border-bottom:1px solid rgba(136,136,136,.4);
padding-bottom:4px;margin-top:28px}
.xlanb-report-chart{min-height:120px}
@media (prefers-color-scheme: dark){body{background:#111;color:#ddd}}
"""


#: plotly.js's "basic" bundle (bar, scatter, pie: what the charts use), from the npm package
#: ``plotly.js-basic-dist-min`` 4.1.1 (MIT, ``static/plotly-LICENSE.txt``): 1.2 MB where the
#: full bundle that plotly.py ships is 4.8 MB; a report carries it gzip-compressed (527 kB
#: in base64), run by :data:`_PLOTLY_LOADER`.
PLOTLY_JS = Path(__file__).parent / "static" / "plotly-basic.min.js"


@functools.cache
def _packed_plotly_js() -> str:
    packed = packed_bytes(PLOTLY_JS.read_bytes(), 9)
    return f'<script type="{PACKED_TYPE}" id="xlanb-plotly">{packed}</script>'


#: Unpacks plotly.js with the graph viewer's unpacker (the browser's DecompressionStream; the
#: viewer's script comes first on the page) and runs it: ``xlanbPlotly`` is the promise of
#: ``Plotly`` that each chart waits for (a chart says why it is not drawn where it fails).
_PLOTLY_LOADER = """<script>globalThis.xlanbPlotly = (function () {
  if (typeof DecompressionStream === "undefined") {
    var failed = Promise.reject(new Error("no DecompressionStream in this browser"));
    failed.catch(function () {});  // each chart says it; not an unhandled rejection
    return failed;
  }
  var packed = document.getElementById("xlanb-plotly").textContent;
  return globalThis.XlanbGraph.unpack(packed).then(function (source) {
    var script = document.createElement("script");
    script.textContent = source;
    document.head.appendChild(script);
    return globalThis.Plotly;
  });
})();</script>"""


def chart_html(figure: dict[str, Any]) -> str:
    """A div drawn by plotly.js from `figure` (the page's ``xlanbPlotly``: :func:`report_html`
    puts it there)."""
    element = f"xlanb-chart-{next(_chart_ids)}"
    spec = json_for_script(
        {
            "data": figure["data"],
            "layout": figure["layout"],
            "config": {"displaylogo": False, "responsive": True},
        }
    )
    return (
        f"<div class='xlanb-report-chart' id='{element}'></div>"
        f"<script type='application/json' id='{element}-spec'>{spec}</script>"
        "<script>xlanbPlotly.then(function(Plotly){var s=JSON.parse(document.getElementById("
        f"'{element}-spec').textContent);Plotly.newPlot('{element}',s.data,s.layout,"
        f"s.config);}},function(e){{document.getElementById('{element}').textContent="
        "'Chart not drawn: '+e.message;});</script>"
    )


def _environment(profile: Profile) -> str:
    rows = []
    for key, value in sorted(profile.environment.items()):
        if isinstance(value, dict):
            rows += [{"setting": f"{key}.{k}", "value": str(v)} for k, v in value.items()]
        else:
            rows.append({"setting": key, "value": str(value)})
    rows += [
        {"setting": "started_at", "value": str(profile.started_at)},
        {"setting": "backends", "value": ", ".join(profile.backends)},
    ]
    return table(pd.DataFrame(rows), ["setting", "value"])


#: Programs of at most this many nodes get a "Changes from compile N" tab in a report (2 s of
#: matching at 3,900 nodes; bigger ones say the command that shows them).
REPORT_CHANGES_NODES = 4000


def _graphs(profile: Profile, page: PagePayloads) -> str:
    """Every compiled program (each compile of a function its own), its other texts a tab
    away, and a recompile's changes from the compile before it; each payload a patch of the
    page's one most like it where that is smaller (`page`)."""
    entries = labelled_entries(profile)
    if entries.empty:
        return ""
    fragments = []
    for index, label in zip(entries["index"], entries["label"], strict=True):
        views = [
            (
                KIND_LABELS.get(kind, kind),
                graph_fragment(
                    profile.graph(int(index), kind=kind),
                    height=560,
                    title=label,
                    packed=True,
                    lazy=position > 0,
                    page=page,
                ),
            )
            for position, kind in enumerate(profile.graph_kinds(int(index)))
        ]
        changes = changes_view(profile, int(index), entries, REPORT_CHANGES_NODES, page=page)
        fragments.append(graph_views(views + ([changes] if changes else [])))
    return "".join(fragments)


def _profile_section(profile: Profile, heading: bool, page: PagePayloads) -> str:
    parts = [f"<h2>{escape(title(profile))}</h2>"] if heading else []
    # its title is the page's or the section's heading, once
    parts.append(profile_html(profile, graph_viewers=False, titled=False))
    for figure in (percentile_figure(profile), step_figure(profile), timeline_figure(profile)):
        if figure is not None:
            parts.append(chart_html(figure))
    parts.append(f"<details><summary><b>Environment</b></summary>{_environment(profile)}</details>")
    graphs = _graphs(profile, page)
    if graphs:
        parts.append(f"<h3>Graphs</h3>{graphs}")
    if profile.source:
        parts.append(
            f"<details><summary><b>Source</b></summary>"
            f"<pre>{escape(profile.source)}</pre></details>"
        )
    return "".join(parts)


def report_html(
    profiles: list[Profile], heading: str | None = None, comparisons: Sequence[Any] = ()
) -> str:
    """The report page of `profiles` (one or more), with `comparisons` of each profile with
    the next (:func:`xlanb.analysis.compare.compare`'s; :func:`xlanb.api.report.report_html`
    makes them)."""
    if not profiles:
        raise ValueError("a report needs at least one profile")
    heading = heading or (
        title(profiles[0]) if len(profiles) == 1 else f"xlanb report: {len(profiles)} profiles"
    )
    page = PagePayloads()
    sections = [
        _profile_section(profile, heading=len(profiles) > 1, page=page) for profile in profiles
    ]
    if comparisons:
        sections.append("<h2>Comparison</h2>")
        for comparison in comparisons:
            sections.append(comparison_html(comparison))
            sections.append(chart_html(comparison_figure(comparison)))
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{escape(heading)}</title>"
        f"<style>{STYLE}{PAGE_STYLE}</style>"
        f"{viewer_assets()}{_packed_plotly_js()}{_PLOTLY_LOADER}</head>"
        f"<body><h1>{escape(heading)}</h1>{''.join(sections)}</body></html>"
    )
