"""The viewer as HTML: its scripts and styles inlined (no network), one fragment per graph, a
whole page, a parse error with the text, a diff of two graphs."""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from xlanb.core.gc_pause import no_cyclic_gc
from xlanb.graphs.errors import ParseError
from xlanb.graphs.model import Graph
from xlanb.graphs.overlay import overlay_graph
from xlanb.graphs.parse import parse_once
from xlanb.views.escape import escape
from xlanb.views.graph_viewer.patch import PagePayloads, payload_patch, worth_patching
from xlanb.views.graph_viewer.payload import (
    BIG_NODES,
    DIFF_CODES,
    PACKED_TYPE,
    binary_payload,
    graph_title,
    json_for_script,
    packed_bytes,
    packed_for_script,
    payload,
)

if TYPE_CHECKING:
    from xlanb.graphs.diff import GraphDiff

STATIC = Path(__file__).parent / "static"
#: The viewer's scripts, in the order they run (each builds on the ones before it).
SCRIPTS = ("model.js", "layout.js", "render.js", "ui.js")
STYLE = "viewer.css"
_ids = itertools.count(1)


# -- assets -------------------------------------------------------------------------------
@cache
def _asset(name: str) -> str:
    return (STATIC / name).read_text(encoding="utf-8")


def viewer_script() -> str:
    """The viewer's JavaScript (:data:`SCRIPTS` in order), as one classic script."""
    return "\n".join(_asset(name) for name in SCRIPTS)


def viewer_style() -> str:
    """The viewer's CSS."""
    return _asset(STYLE)


def viewer_assets(packed: bool = False) -> str:
    """``<style>`` and ``<script>`` of the viewer: include once per page, before or after the
    fragments (each fragment mounts itself once the script has run). `packed`: the script
    gzip-compressed (80 kB to 29 kB, for a cell's output), unpacked and run by a small loader
    unless this version of the viewer is already on the page."""
    style = f"<style data-xlanb-graph>\n{viewer_style()}</style>\n"
    if packed:
        return (
            f'{style}<script type="{PACKED_TYPE}" data-xlanb-viewer="{viewer_version()}">'
            f"{_packed_script()}</script>\n<script>{_LOADER % viewer_version()}</script>\n"
        )
    return (
        f"{style}<script data-xlanb-graph>\n{viewer_script()}\n"
        "globalThis.XlanbGraph.mountAll();\n</script>\n"
    )


@cache
def viewer_version() -> str:
    """The viewer's ``VERSION`` (model.js): pages holding two versions run both."""
    found = re.search(r'var VERSION = "([^"]+)"', _asset("model.js"))
    assert found is not None, "model.js declares its VERSION"
    return found.group(1)


@cache
def _packed_script() -> str:
    source = viewer_script() + "\nglobalThis.XlanbGraph.mountAll();\n"
    return packed_bytes(source.encode("utf-8"), 9)


#: Runs the packed viewer script of its version (%s) once per page, then mounts the graphs.
_LOADER = """(function (g) {
  var version = "%s";
  var ns = g.XlanbGraph;
  if (ns && ns.version === version && ns.complete) { ns.mountAll(); return; }
  var found = document.querySelectorAll("script[data-xlanb-viewer='" + version + "']");
  if (!found.length || typeof DecompressionStream === "undefined") return;
  var binary = atob(found[found.length - 1].textContent.trim());
  var bytes = new Uint8Array(binary.length);
  for (var i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  new Response(stream).text().then(function (source) {
    var now = g.XlanbGraph;
    if (now && now.version === version && now.complete) { now.mountAll(); return; }
    var script = document.createElement("script");
    script.textContent = source;
    document.head.appendChild(script);
  });
})(globalThis);"""


# -- fragments and pages ------------------------------------------------------------------
def graph_fragment(
    graph: Graph | str,
    *,
    height: int = 520,
    title: str | None = None,
    fallback_ops: Iterable[str] = (),
    color_by: str | None = None,
    cost: Mapping[str, float] | pd.Series | None = None,
    cost_label: str = "cost",
    group: str | None = None,
    diff_status: list[int] | None = None,
    peers: list[int] | None = None,
    summary: str | None = None,
    measured: pd.DataFrame | None = None,
    packed: bool | None = None,
    lazy: bool = False,
    page: PagePayloads | None = None,
) -> str:
    """One graph's viewer element (needs :func:`viewer_assets` once on the page); `packed`:
    its payload gzip-compressed (a notebook's outputs and a report stay small; None: only a
    graph of over :data:`BIG_NODES` nodes, whose number columns then travel as binary); `lazy`: the
    viewer starts only when shown (a view of :func:`graph_views` not yet chosen); `page` (with
    `packed`): the payloads already on the page, this one sent as a patch of the one most like
    it where that is at most half its size (:mod:`.patch`).

    ``graph`` may be text, parsed here; text (or a Graph) that could not be parsed shows the
    parse error and the text instead. ``fallback_ops`` marks more ops as CPU fallbacks (e.g.
    ``prof.fallbacks["op"]``); ``color_by``: ``"flops"``, ``"bytes"``, with ``cost`` (a
    mapping node id/name -> number) ``"custom"``, with measured device time (``measured``, a
    profile's ``ops`` rows, else ``graph.measured``) ``"time"``: see :func:`.payload.payload`."""
    if isinstance(graph, str):
        text = graph
        try:
            graph = parse_once(text)
        except ParseError as error:
            return unparsed_html(text, error)
    if graph.error is not None:
        return unparsed_html(graph.text, graph.error, graph.kind)
    build = functools.partial(
        payload,
        graph,
        title=title,
        height=height,
        fallback_ops=fallback_ops,
        color_by=color_by,
        cost=cost,
        cost_label=cost_label,
        diff_status=diff_status,
        peers=peers,
        summary=summary,
        measured=measured,
    )
    element_id = f"xlanb-graph-{next(_ids)}"
    big = len(graph.nodes) > BIG_NODES
    if packed is None:
        packed = big
    with no_cyclic_gc():  # the payload allocates per node and makes no cycles
        if not packed:
            data_script = f'<script type="application/json">{json_for_script(build())}</script>'
        elif page is None and big:
            sent = packed_bytes(binary_payload(build(arrays=True)), level=1)
            data_script = f'<script type="{PACKED_TYPE}" data-format="binary">{sent}</script>'
        elif page is None:
            data_script = f'<script type="{PACKED_TYPE}">{packed_for_script(build())}</script>'
        else:
            data_script = _page_script(page, f"{element_id}-data", graph, build)
    group_attr = f' data-diff-group="{escape(group)}"' if group else ""
    group_attr += ' data-lazy="true"' if lazy else ""
    note = (
        f"{escape(graph_title(graph))}: {len(graph.nodes):,} nodes, {len(graph.edges):,} "
        "edges. The interactive viewer needs JavaScript: in JupyterLab, trust the notebook "
        "(File > Trust Notebook, or jupyter trust NOTEBOOK.ipynb) and run the cell again"
    )
    return (
        f'<div class="xlanb-graph" id="{element_id}" data-kind="{escape(graph.kind)}"'
        f'{group_attr}><div class="xg-static">{note}</div>{data_script}</div>'
        "<script>globalThis.XlanbGraph&&globalThis.XlanbGraph.mountAll();</script>\n"
    )


def _page_script(
    page: PagePayloads, script_id: str, graph: Graph, build: Callable[..., dict[str, Any]]
) -> str:
    """The packed payload's script, a patch of the page's payload most like it where that is
    worth it (:mod:`.patch`)."""
    base = page.base_for(graph.kind, len(graph.nodes))
    data = build(start_strings=base[1]["strings"]) if base else build()
    sent: dict[str, Any] = data
    attributes = f' id="{script_id}"'
    if base is not None:
        patch = payload_patch(data, base[1])
        if worth_patching(patch, data):
            sent, attributes = patch, f'{attributes} data-base="{base[0]}"'
        else:
            data = sent = build()  # not like its base after all: a string table of its own
    page.add(script_id, graph.kind, len(graph.nodes), data)
    return f'<script type="{PACKED_TYPE}"{attributes}>{packed_for_script(sent)}</script>'


#: What each kind of graph text is called on a view's tab.
KIND_LABELS = {
    "hlo_optimized": "Optimized HLO",
    "hlo": "HLO",
    "stablehlo": "StableHLO",
    "ir": "IR",
    "dot": "DOT",
}


def graph_views(views: list[tuple[str, str]]) -> str:
    """Several views of one program (e.g. its optimized HLO and its StableHLO), one at a time,
    with a tab per view: `views` are (tab label, fragment) pairs, the first shown; the others'
    fragments should be made with ``lazy=True`` (or be a note: a view too large to embed)."""
    if len(views) == 1:
        return views[0][1]
    tabs = "".join(
        f'<button type="button" class="xg-view-tab" data-view="{index}" '
        f'aria-selected="{"true" if index == 0 else "false"}">{escape(label)}</button>'
        for index, (label, _) in enumerate(views)
    )
    panes = "".join(
        f'<div class="xg-view" data-view="{index}"{" hidden" if index else ""}>{fragment}</div>'
        for index, (_, fragment) in enumerate(views)
    )
    return (
        '<div class="xlanb-graph-views"><div class="xg-view-tabs" role="tablist">'
        f"{tabs}</div>{panes}</div>"
    )


def graph_html(graph: Graph | str, **options: Any) -> str:
    """A graph's viewer as one self-contained HTML fragment (JS/CSS inline, no network).
    Options as :func:`graph_fragment`."""
    return viewer_assets() + graph_fragment(graph, **options)


def graph_page(graph: Graph | str, *, page_title: str | None = None, **options: Any) -> str:
    """A whole HTML document showing the viewer full-window."""
    name = page_title or (graph.name if isinstance(graph, Graph) else "graph")
    options.setdefault("height", 760)
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{escape(name or 'graph')} - xlanb</title>"
        "<style>body{margin:8px;}</style></head><body>\n"
        f"{graph_html(graph, **options)}</body></html>\n"
    )


def unparsed_html(text: str, error: ParseError | Exception, kind: str = "") -> str:
    """What a graph that could not be parsed shows: the error (naming the line) and the text."""
    shown = text if len(text) <= 200_000 else text[:200_000] + "\n…"
    return (
        f'<div class="xlanb-graph-unparsed" data-error="{escape(str(error))}">'
        f"<b>Could not draw this {escape(kind or 'graph')}:</b> "
        f"{escape(str(error))}<pre>{escape(shown)}</pre></div>"
        f"<style>{viewer_style()}</style>\n"
    )


def _diff_line(result: GraphDiff) -> str:
    counts = result.counts()
    return (
        f"{result.summary} — {counts['changed']} changed, {counts['added']} added, "
        f"{counts['removed']} removed, {counts['same']} same"
    )


def overlay_fragment(result: GraphDiff, *, title: str | None = None, **options: Any) -> str:
    """Graph b with a's removed nodes drawn in, every node marked same / changed / added /
    removed, as one viewer fragment (needs :func:`viewer_assets`; options as
    :func:`graph_fragment`)."""
    merged, status = overlay_graph(result)
    return graph_fragment(
        merged,
        diff_status=[DIFF_CODES[s] for s in status],
        summary=_diff_line(result),
        title=title if title is not None else f"{result.a.name} -> {result.b.name}",
        **options,
    )


def diff_html(
    result: GraphDiff, *, mode: str = "side-by-side", height: int = 520, **options: Any
) -> str:
    """Two graphs with their differences marked: ``side-by-side`` (clicking a node selects its
    match in the other graph) or ``overlay`` (graph b with a's removed nodes drawn in)."""
    line = _diff_line(result)
    if mode == "overlay":
        return viewer_assets() + overlay_fragment(result, height=height, **options)
    if mode != "side-by-side":
        raise ValueError(f"mode is 'side-by-side' or 'overlay', not {mode!r}")
    rows = result.nodes
    a_index = {node_id: i for i, node_id in enumerate(result.a.nodes["id"])}
    b_index = {node_id: i for i, node_id in enumerate(result.b.nodes["id"])}
    same = DIFF_CODES["same"]
    a_status = [same] * len(a_index)
    b_status = [same] * len(b_index)
    a_peer = [-1] * len(a_index)
    b_peer = [-1] * len(b_index)
    for status, a_id, b_id in zip(rows["status"], rows["a"], rows["b"], strict=True):
        if a_id:
            a_status[a_index[a_id]] = DIFF_CODES[status]
        if b_id:
            b_status[b_index[b_id]] = DIFF_CODES[status]
        if a_id and b_id:
            a_peer[a_index[a_id]] = b_index[b_id]
            b_peer[b_index[b_id]] = a_index[a_id]
    group = f"diff-{next(_ids)}"
    left = graph_fragment(
        result.a,
        height=height,
        group=group,
        diff_status=a_status,
        peers=a_peer,
        title=f"a: {result.a.name}",
        **options,
    )
    right = graph_fragment(
        result.b,
        height=height,
        group=group,
        diff_status=b_status,
        peers=b_peer,
        title=f"b: {result.b.name}",
        **options,
    )
    return (
        viewer_assets() + f'<div class="xlanb-graph-diff-summary" data-role="diff-summary">'
        f'{escape(line)}</div><div class="xlanb-graph-pair">{left}{right}</div>\n'
    )
