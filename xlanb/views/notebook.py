"""What a profiled cell displays: the Profile's HTML/text summary, then its charts as plotly
figures, each with a static SVG twin for front ends without plotly.js. A front end that shows
text alone (IPython in a terminal) gets the text alone: nothing else is built for it."""

from __future__ import annotations

import copy
from typing import Any

from xlanb.core.gc_pause import no_cyclic_gc
from xlanb.core.profile import Profile
from xlanb.views.charts import percentile_figure, timeline_figure
from xlanb.views.step_chart import step_figure
from xlanb.views.svg import figure_svg

PLOTLY_MIME = "application/vnd.plotly.v1+json"


class Chart:
    """A plotly figure that displays as an interactive chart where plotly's renderer is
    installed (JupyterLab, Notebook 7, VS Code) and as static SVG elsewhere."""

    def __init__(self, title: str, figure: dict[str, Any]) -> None:
        self.title = title
        self.figure = figure

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, Any]:
        bundle: dict[str, Any] = {}
        if wanted(PLOTLY_MIME, include, exclude):
            figure = copy.copy(self.figure)
            figure["config"] = {"displaylogo": False, "responsive": True}
            bundle[PLOTLY_MIME] = figure
        if wanted("text/html", include, exclude):
            bundle["text/html"] = (
                f"<div class='xlanb-chart' data-chart='{self.title}'>"
                f"{figure_svg(self.figure)}</div>"
            )
        bundle["text/plain"] = f"<xlanb chart: {self.title}>"
        return bundle

    def to_plotly(self):
        """The figure as a ``plotly.graph_objects.Figure`` (validated by plotly)."""
        import plotly.graph_objects as go

        return go.Figure(self.figure)


def wanted(mime: str, include: Any, exclude: Any) -> bool:
    """Whether a display asked for with `include` / `exclude` shows `mime`."""
    return not (include and mime not in include) and not (exclude and mime in exclude)


def text_only() -> bool:
    """Whether the running IPython shell shows text alone (a terminal: its display formatter
    has no active HTML formatter); False outside IPython."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    formatter = getattr(get_ipython(), "display_formatter", None)
    return formatter is not None and "text/html" not in formatter.active_types


def charts(profile: Profile) -> list[Chart]:
    """The percentile chart of every timed metric, the step-time chart of a loop, and the
    compile/execute timeline."""
    made = []
    percentiles = percentile_figure(profile)
    if percentiles is not None:
        made.append(Chart("percentiles", percentiles))
    steps = step_figure(profile)
    if steps is not None:
        made.append(Chart("steps", steps))
    timeline = timeline_figure(profile)
    if timeline is not None:
        made.append(Chart("timeline", timeline))
    return made


def display_profile(profile: Profile) -> None:
    """Show a profile under the cell: its summary, then its charts."""
    from IPython.display import display

    with no_cyclic_gc():  # the HTML, text and charts allocate per row, and make no cycles
        display(profile)
        display_charts(profile)


def display_charts(profile: Profile) -> None:
    """Display the profile's charts: in a front end that shows text alone, their text alone
    (no figure JSON, no SVG twin built)."""
    from IPython.display import display

    rich_only = [PLOTLY_MIME, "text/html"] if text_only() else None
    for chart in charts(profile):
        display(chart, exclude=rich_only)
