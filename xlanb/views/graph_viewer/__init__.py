"""The interactive IR/HLO graph viewer as self-contained HTML (and an anywidget widget).

- :func:`graph_html`: one graph, its JS/CSS inline (what ``display(graph)`` shows);
- :func:`viewer_assets` + :func:`graph_fragment`: the JS/CSS once, then one fragment per
  graph, for pages that embed several graphs;
- :func:`graph_views`: a program's views (optimized HLO, StableHLO), a tab each;
- :func:`graph_page`: a whole HTML document;
- :func:`diff_html`: two graphs side by side, or overlaid, with the changes marked
  (:func:`overlay_fragment`: the overlay as one fragment);
- :func:`viewer_widget`: the two-way notebook widget (``widget.selected``: the clicked node).

The modules: :mod:`.payload` (the JSON the JavaScript reads: its contract, field by field),
:mod:`.html` (fragments and pages), :mod:`.widget` (the widget), and ``static/``: the viewer's
scripts, inlined in this order: ``model.js`` (the payload decoded, scopes, search),
``layout.js`` (the layered layout and the scene of open scopes), ``render.js`` (the canvas),
``ui.js`` (toolbar, details panel, events, mounting), and ``viewer.css``.

The data travels as JSON inside ``<script type="application/json">`` with ``</`` written as
``<\\/``; every name is drawn with canvas ``fillText`` or put in the page with ``textContent``,
so names holding ``<script>`` or quotes stay text. Nothing is loaded from the network.

``payload`` here is the function :func:`.payload.payload`, not its module: import the module's
other names from ``xlanb.views.graph_viewer.payload``.
"""

from __future__ import annotations

from xlanb.views.graph_viewer.html import (
    SCRIPTS,
    STATIC,
    diff_html,
    graph_fragment,
    graph_html,
    graph_page,
    graph_views,
    overlay_fragment,
    unparsed_html,
    viewer_assets,
    viewer_script,
    viewer_style,
)
from xlanb.views.graph_viewer.payload import (
    json_for_script,
    node_category,
    node_label,
    payload,
)
from xlanb.views.graph_viewer.widget import viewer_widget, widget_module

__all__ = [
    "SCRIPTS",
    "STATIC",
    "diff_html",
    "graph_fragment",
    "graph_views",
    "graph_html",
    "graph_page",
    "json_for_script",
    "node_category",
    "node_label",
    "overlay_fragment",
    "payload",
    "unparsed_html",
    "viewer_assets",
    "viewer_script",
    "viewer_style",
    "viewer_widget",
    "widget_module",
]
