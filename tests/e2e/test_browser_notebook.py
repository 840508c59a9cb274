"""What a person sees: a profiled notebook in real JupyterLab (headless Chromium), and its
nbconvert HTML export opened offline."""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
from nbconvert import HTMLExporter

from tests.support.browser import browser_page, jupyter_lab
from tests.support.helpers import run_notebook

ARTIFACTS = Path(__file__).parents[2] / "out" / "test-artifacts"

CELLS = [
    "%load_ext xlanb",
    "import torch, torch._lazy, torch._lazy.ts_backend\n"
    "torch._lazy.ts_backend.init()\ndev = 'lazy'",
    "%%xla_profile\n"
    "w = torch.randn(4, 4, device=dev)\n"
    "for b in [8, 8, 16]:\n"
    "    y = (torch.randn(b, 4).to(dev) @ w).sum()\n"
    "    torch._lazy.mark_step()\n"
    "err = torch.nn.functional.mse_loss(w, w.t())",
    "import jax, jax.numpy as jnp, numpy as np",
    "%%xla_profile\n"
    "@jax.jit\n"
    "def scale_sum(x):\n"
    "    return (x * 2).sum()\n"
    "scale_sum(jnp.ones((4, 4)))\n"
    "scale_sum(jnp.ones((8, 4)))\n"
    "scale_sum(np.ones((8, 4), np.float32))",
]

#: The lazy cell's CPU fallback as its table row shows it (op, count, kind, line, code).
MSE_ROW = [
    "aten::mse_loss",
    "1",
    "CPU fallback",
    "6",
    "err = torch.nn.functional.mse_loss(w, w.t())",
]

KERNEL_READY = """() => {
  const widget = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const kernel = widget && widget.sessionContext && widget.sessionContext.session
      && widget.sessionContext.session.kernel;
  return kernel && kernel.status === 'idle';
}"""


def _notebook(path: Path, cells: list[str]) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nbformat.write(notebook, path)
    return path


def _contrast(page, selector: str) -> float:
    """WCAG contrast ratio between an element's text colour and the page behind it."""
    return page.evaluate(
        """(selector) => {
      const el = document.querySelector(selector);
      const rgb = s => s.match(/[\\d.]+/g).slice(0, 3).map(Number);
      let bg = null;
      for (let node = el; node; node = node.parentElement) {
        const c = getComputedStyle(node).backgroundColor;
        const parts = c.match(/[\\d.]+/g);
        if (parts && (parts.length < 4 || Number(parts[3]) > 0.5)) { bg = rgb(c); break; }
      }
      bg = bg || [255, 255, 255];
      const lum = ([r, g, b]) => {
        const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + .055) / 1.055) ** 2.4; };
        return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
      };
      const a = lum(rgb(getComputedStyle(el).color)), b = lum(bg);
      return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    }""",
        selector,
    )


def test_jupyterlab_shows_header_fallback_line_and_chart(tmp_path):
    _notebook(tmp_path / "profiled.ipynb", CELLS)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with (
        jupyter_lab(tmp_path) as url,
        browser_page(allowed_prefixes=(url.split("?")[0], "data:", "blob:")) as (page, blocked),
    ):
        base, token = url.split("?")
        page.goto(f"{base}/lab/tree/profiled.ipynb?{token}")
        page.wait_for_function(KERNEL_READY, timeout=120_000)
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.wait_for_function(
            "document.querySelectorAll('.xlanb-head').length == 2", timeout=120_000
        )
        page.wait_for_function(
            "document.querySelectorAll('.js-plotly-plot .main-svg').length >= 4", timeout=60_000
        )
        header = page.locator(".xlanb-head").first.inner_text()
        assert "compiles 4" in header and "executions 4" in header
        fallback_ops = page.locator(".xlanb-head .xlanb-bad").first
        assert fallback_ops.inner_text() == "CPU fallbacks 1"
        assert (
            page.evaluate(
                "getComputedStyle(document.querySelector('.xlanb-head .xlanb-bad')).color"
            )
            == "rgb(214, 39, 40)"
        )
        row = page.locator("tr.xlanb-bad").first.inner_text().split("\t")
        assert row[:5] == MSE_ROW
        # The plotly chart is drawn (an SVG with the percentile curve), not just its JSON.
        assert page.locator(".js-plotly-plot .scatterlayer .trace").count() >= 2
        jax_header = page.locator(".xlanb-head").nth(1).inner_text()
        assert "compiles 5" in jax_header and "CPU fallbacks 0" in jax_header
        # a host input is not a CPU fallback: listed, not red
        assert page.locator(".xlanb").nth(1).locator("tr.xlanb-bad").count() == 0
        jax_row = page.locator("tr:has-text('argument: numpy.ndarray')").first
        jax_row = jax_row.inner_text().split("\t")
        assert jax_row[:5] == [
            "jit(scale_sum) argument: numpy.ndarray",
            "1",
            "host input",
            "7",
            "scale_sum(np.ones((8, 4), np.float32))",
        ]
        assert "jit(scale_sum) recompiled 1 time " in page.inner_text(".jp-Notebook")
        # The compiled graphs' viewer, one click away, lays itself out when opened.
        viewer_section = page.locator("details:has(> summary:has-text('Graph viewer (4)'))")
        viewer_section.first.locator("summary").click()
        page.wait_for_selector(".xlanb-graph[data-ready='true']", timeout=30_000)
        canvas_width = page.evaluate(
            "document.querySelector(\".xlanb-graph[data-ready='true']"
            ' canvas").getBoundingClientRect().width'
        )
        assert canvas_width > 300
        page.locator(".xlanb-graph[data-ready='true']").first.screenshot(
            path=str(ARTIFACTS / "jupyterlab-graph-viewer.png")
        )
        page.screenshot(path=str(ARTIFACTS / "jupyterlab-light.png"), full_page=True)
        assert page.evaluate("document.body.dataset.jpThemeLight") == "true"
        assert _contrast(page, ".xlanb-head") >= 4.5
        page.evaluate(
            "window.jupyterapp.commands.execute('apputils:change-theme', "
            "{theme: 'JupyterLab Dark'})"
        )
        page.wait_for_function("document.body.dataset.jpThemeLight === 'false'")
        page.wait_for_timeout(500)
        page.screenshot(path=str(ARTIFACTS / "jupyterlab-dark.png"), full_page=True)
        assert _contrast(page, ".xlanb-head") >= 4.5
        assert _contrast(page, ".xlanb-head .xlanb-bad") >= 3
        assert blocked == []


def test_notebook7_shows_the_same_summary_and_chart(tmp_path):
    _notebook(tmp_path / "profiled.ipynb", CELLS[:3])
    with (
        jupyter_lab(tmp_path, app="notebook") as url,
        browser_page(allowed_prefixes=(url.split("?")[0], "data:", "blob:")) as (page, blocked),
    ):
        base, token = url.split("?")
        page.goto(f"{base}/notebooks/profiled.ipynb?{token}")
        page.wait_for_function(KERNEL_READY, timeout=120_000)
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        page.wait_for_selector(".xlanb-head", timeout=120_000)
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=60_000)
        header = page.locator(".xlanb-head").first.inner_text()
        assert "compiles 4" in header and "CPU fallbacks 1" in header
        row = page.locator("tr.xlanb-bad").first.inner_text().split("\t")
        assert row[:5] == MSE_ROW
        page.screenshot(path=str(tmp_path / "notebook7.png"), full_page=True)
        if ARTIFACTS.is_dir():
            shutil.copy(tmp_path / "notebook7.png", ARTIFACTS / "notebook7.png")
        assert blocked == []


def test_nbconvert_export_shows_the_same_summary_offline(tmp_path):
    notebook = run_notebook(CELLS)
    exporter = HTMLExporter()
    body, _ = exporter.from_notebook_node(notebook)
    page_path = tmp_path / "profiled.html"
    page_path.write_text(body, encoding="utf-8")
    # The template's own script tags (require.js, MathJax) point at a CDN; ours add nothing.
    template_urls = (exporter.require_js_url, exporter.mathjax_url.split("?")[0])
    with browser_page() as (page, blocked):
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(page_path.as_uri())
        header = page.locator(".xlanb-head").first.inner_text()
        assert "compiles 4" in header and "CPU fallbacks 1" in header
        row = page.locator("tr.xlanb-bad").first.inner_text().split("\t")
        assert row[:5] == MSE_ROW
        # Charts survive as their static SVG twins (curves, or dots for a few samples).
        drawn = ".xlanb-chart svg polyline, .xlanb-chart svg circle"
        assert page.locator(drawn).count() >= 1
        page.screenshot(path=str(tmp_path / "nbconvert.png"), full_page=True)
        if ARTIFACTS.is_dir():
            shutil.copy(tmp_path / "nbconvert.png", ARTIFACTS / "nbconvert.png")
    assert [url for url in blocked if not url.startswith(template_urls)] == []
    assert not [e for e in errors if "require" not in e and "MathJax" not in e]


def test_untrusted_notebook_reads_right_and_says_how_to_trust(tmp_path):
    """A notebook executed elsewhere and opened here is untrusted: JupyterLab drops <style>
    and scripts. The header still reads as separate items, findings keep their colours, and
    the viewer says how to get the interactive version."""
    notebook = run_notebook(CELLS)
    nbformat.write(notebook, tmp_path / "untrusted.ipynb")  # not signed: untrusted
    with (
        jupyter_lab(tmp_path) as url,
        browser_page(allowed_prefixes=(url.split("?")[0], "data:", "blob:")) as (page, blocked),
    ):
        base, token = url.split("?")
        page.goto(f"{base}/lab/tree/untrusted.ipynb?{token}")
        page.wait_for_selector(".xlanb-head", timeout=120_000)
        assert page.locator(".jp-OutputArea-output style").count() == 0  # really untrusted
        # (the sanitizer keeps inline styles and classes, drops data-* attributes)
        span = ".xlanb-head span:nth-child(2)"
        margin = f'parseFloat(getComputedStyle(document.querySelector("{span}")).marginRight)'
        assert page.evaluate(margin) > 8
        header = page.locator(".xlanb-head").first.inner_text()
        assert "compiles 4" in header and "CPU fallbacks 1" in header
        bad = page.locator(".xlanb-head .xlanb-bad").first
        assert bad.evaluate("e => getComputedStyle(e).color") == "rgb(214, 39, 40)"
        finding = page.locator(".xlanb-finding").first
        assert finding.evaluate("e => getComputedStyle(e).borderLeftWidth") == "3px"
        static = page.locator(".xg-static").first.text_content()
        assert "trust the notebook" in static
        page.screenshot(path=str(tmp_path / "untrusted.png"), full_page=True)
        if ARTIFACTS.is_dir():
            shutil.copy(tmp_path / "untrusted.png", ARTIFACTS / "jupyterlab-untrusted.png")
        assert blocked == []
