"""The viewer as a two-way anywidget widget: the same scripts as the HTML, loaded as an ES
module whose ``render`` mounts the viewer on the ``data`` trait (the payload as JSON) and
reports the clicked node in ``selected``."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from xlanb.graphs.model import Graph
from xlanb.views.escape import json_visible_bidi
from xlanb.views.graph_viewer.html import graph_html, viewer_script, viewer_style
from xlanb.views.graph_viewer.payload import payload

_WIDGET_ESM = """
export default {
  render({ model, el }) {
    const XlanbGraph = globalThis.XlanbGraph;
    let viewer = null;
    const holder = document.createElement("div");
    el.appendChild(holder);
    function start() {
      if (viewer) viewer.destroy();
      holder.textContent = "";
      holder.className = "xlanb-graph";
      viewer = new XlanbGraph.Viewer(holder, JSON.parse(model.get("data")));
      holder.xlanbViewer = viewer;
      viewer.on("select", (info) => { model.set("selected", info); model.save_changes(); });
    }
    start();
    model.on("change:data", start);
    model.on("change:query", () => {
      const query = model.get("query");
      viewer.searchBox.value = query;
      if (viewer.search(query)) viewer.nextMatch();
    });
    model.on("change:focus", () => {
      const name = model.get("focus");
      if (name) viewer.selectByName(name);
    });
    return () => { if (viewer) viewer.destroy(); };
  }
};
"""


def widget_module() -> str:
    """The anywidget ES module: the viewer's scripts, then ``render({model, el})``."""
    return viewer_script() + "\n" + _WIDGET_ESM


@lru_cache(maxsize=1)
def _widget_class() -> type:
    try:
        import anywidget
        import traitlets
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the graph widget needs anywidget: `pip install anywidget` "
            "(or `pip install 'xlanb[notebook]'`); `display(graph)` shows the "
            "same viewer without it"
        ) from error

    class GraphViewer(anywidget.AnyWidget):
        """The graph viewer as a two-way widget: ``selected`` holds the node last clicked in
        the browser (a dict: name, op, shape, scope, source, attrs, text, ...); set ``query``
        to search, ``focus`` to a node name to select and show it."""

        _esm = widget_module()
        _css = viewer_style()
        data = traitlets.Unicode("").tag(sync=True)
        selected = traitlets.Dict(allow_none=True, default_value=None).tag(sync=True)
        query = traitlets.Unicode("").tag(sync=True)
        focus = traitlets.Unicode("").tag(sync=True)

        def __init__(self, graph: Graph, **options: Any) -> None:
            data = json_visible_bidi(
                json.dumps(payload(graph, **options), ensure_ascii=False, allow_nan=False)
            )
            super().__init__(data=data)
            self.graph = graph
            self._options = options

        def search(self, query: str) -> None:
            """Search in the browser (highlight matches, go to the first)."""
            self.query = query

        def _repr_mimebundle_(self, **kwargs: Any) -> Any:
            bundle = super()._repr_mimebundle_(**kwargs)
            data = bundle[0] if isinstance(bundle, tuple) else bundle
            if isinstance(data, dict):  # where widgets do not render: the plain viewer
                data.setdefault("text/html", graph_html(self.graph, **self._options))
            return bundle

    return GraphViewer


def viewer_widget(graph: Graph, **options: Any) -> Any:
    """The two-way notebook widget for ``graph`` (needs anywidget); options as
    :func:`payload`. ``widget.selected`` is the node clicked last."""
    return _widget_class()(graph, **options)
