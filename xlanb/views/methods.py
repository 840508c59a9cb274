"""The display methods of the data objects (``Graph.html``, ``GraphDiff.html``, ...), registered
on :mod:`xlanb.core.seams` when this module is imported."""

from __future__ import annotations

from typing import Any

from xlanb.core.seams import provides
from xlanb.views.charts import comparison_figure
from xlanb.views.chrome_trace import chrome_trace, write_chrome_trace
from xlanb.views.compare import comparison_text
from xlanb.views.graph_viewer import diff_html, graph_html, graph_page, viewer_widget
from xlanb.views.html import comparison_html, profile_html
from xlanb.views.notebook import Chart, charts
from xlanb.views.report import report_html
from xlanb.views.summary import summary_text

provides("graph_html")(graph_html)
provides("graph_page")(graph_page)
provides("viewer_widget")(viewer_widget)
provides("diff_html")(diff_html)
provides("summary_text")(summary_text)
provides("profile_html")(profile_html)
provides("charts")(charts)
provides("report_html")(report_html)
provides("chrome_trace")(chrome_trace)
provides("write_chrome_trace")(write_chrome_trace)
provides("comparison_html")(comparison_html)
provides("comparison_text")(comparison_text)


@provides("comparison_chart")
def comparison_chart(comparison: Any) -> Chart:
    """A grouped bar chart of a comparison's headline numbers, a beside b."""
    return Chart("comparison", comparison_figure(comparison))
