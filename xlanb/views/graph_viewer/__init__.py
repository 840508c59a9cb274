r"""The interactive IR/HLO graph viewer as self-contained HTML (and an anywidget widget).

:func:`graph_html` (one graph, JS/CSS inline), :func:`viewer_assets` + :func:`graph_fragment`
(the assets once, then a fragment per graph), :func:`graph_views` (a program's views, a tab
each), :func:`graph_page` (a whole document), :func:`diff_html` and :func:`overlay_fragment`
(two graphs side by side or overlaid, changes marked), :func:`viewer_widget` (the notebook
widget; ``widget.selected``: the clicked node). Modules: :mod:`.payload` (the JSON the
JavaScript reads), :mod:`.html` (fragments and pages), :mod:`.widget`, and ``static/``
(inlined in order: ``model.js``, ``layout.js``, ``render.js``, ``ui.js``, ``viewer.css``).

The data travels as JSON in ``<script type="application/json">`` with ``</`` written as
``<\/``; names are drawn with ``fillText`` or set with ``textContent``, so they stay text.
Nothing is loaded from the network. ``payload`` here is the function
:func:`.payload.payload`; import the module's other names from its module.
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
