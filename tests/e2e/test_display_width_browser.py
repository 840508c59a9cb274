"""A profiled cell's HTML in a notebook-wide page (900 px) in Chromium: a table wider than
the output (the top ops' nine columns) scrolls within itself, so the page never scrolls
sideways and the headline above it stays in view."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.browser import browser_page
from xlanb.core.profile import Profile

DATA = Path(__file__).resolve().parents[1] / "data" / "display"


@pytest.mark.parametrize(("case", "wide"), [("flax_cnn", True), ("torch_lazy", False)])
def test_wide_tables_scroll_inside_a_notebook_wide_page(case, wide, tmp_path):
    profile = Profile.from_dict(json.loads((DATA / f"{case}.xlanb.json").read_text()))
    path = tmp_path / "cell.html"
    path.write_text(f"<!doctype html><meta charset='utf-8'><body>{profile._repr_html_()}</body>")
    with browser_page(width=900, height=900) as (page, blocked):
        page.goto(path.as_uri())
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        widths = page.evaluate(
            """() => ({
                page: document.documentElement.scrollWidth,
                view: document.documentElement.clientWidth,
                tables: [...document.querySelectorAll('table.xlanb-table')].map(t => t.scrollWidth),
            })"""
        )
    assert blocked == []
    assert (max(widths["tables"]) > widths["view"]) == wide  # JAX's top ops: nine columns
    assert widths["page"] <= widths["view"], widths
