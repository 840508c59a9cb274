"""The PyTorch/XLA example notebook, executed through the xlanb kernel in this environment."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.browser import browser_page
from tests.support.helpers import execute_notebook_file, outputs_of, profile_texts
from xlanb.capture import versions

#: The compile cause the runtime writes for a user's sync (torch_xla 2.7 calls it mark_step).
SYNC_TRIGGER = (
    "user torch_xla.sync"
    if versions.parse_version(versions.installed_version("torch_xla") or "0") >= (2, 8)
    else "user mark_step"
)

NOTEBOOKS = Path(__file__).parent.parent.parent / "notebooks"


def test_torch_xla_notebook_recompiles_reads_values_then_the_fix(xlanb_kernel, tmp_path):
    notebook = execute_notebook_file(NOTEBOOKS / "02_torch_xla.ipynb", xlanb_kernel, tmp_path)
    profiles = profile_texts(notebook)
    first, fixed = profiles["first"], profiles["fixed"]
    assert "compiles: 4 " in first and "| syncs: 8 | CPU fallbacks: 0" in first
    # findings state their cost first: "[warning] 2.1 s (40% of the cell): 3 recompilation..."
    assert re.search(
        r"\[warning\] [^\n]*of the cell\): 3 recompilations from changing "
        r"input shapes \(cell line 9\)",
        first,
    ), first
    assert "new shape: f32[32,16] -> f32[24,16], f32[32,1] -> f32[24,1]" in first
    assert (
        "aten::_local_scalar_dense ×8 (sync: value read back) line 10: if loss.item() > 10:"
        in first
    )
    # one shape, one graph: a single compile (it compiled twice, a step-to-step counter's)
    assert "compiles: 1 " in fixed and "| syncs: 1 | CPU fallbacks: 0" in fixed
    assert "[warning]" not in fixed and "[error]" not in fixed
    assert "line 13: if loss.item() > 10:" in fixed
    comparison = outputs_of(notebook.cells[-1], "text/plain")
    assert re.search(r"\nfixed is (faster|slower) than first: wall ", comparison), comparison
    assert_compiles_table_fits(outputs_of(notebook.cells[4], "text/html"), tmp_path)
    assert "gone     3 recompilations from changing input shapes (cell line 9)" in comparison
    assert "changed  1 value read back to the host (syncs) (cell line 13) (8 → 1)" in comparison


def test_offline_notebook_reads_the_job_files_and_writes_a_report(xlanb_kernel, tmp_path):
    notebook = execute_notebook_file(NOTEBOOKS / "04_offline.ipynb", xlanb_kernel, tmp_path)
    metrics = profile_texts(notebook)["metrics.txt"]
    assert "compiles: 2 " in metrics
    # One execution per step; the last step's may finish after its report was written.
    assert "executions: 12 " in metrics or "executions: 11 " in metrics
    assert "[info] Recompilation stopped at step 6" in metrics
    steps = outputs_of(notebook.cells[5], "text/plain")
    assert steps.splitlines()[7].split()[:2] == ["6", "1"]  # step 6 compiled once
    causes = outputs_of(notebook.cells[7], "text/plain")
    assert causes.count(SYNC_TRIGGER) == 2 and "train_job.py:16" in causes
    # the two files of one run are one profile, not a comparison of two runs
    report = (tmp_path / "offline-report.html").read_text()
    assert "<h2>Comparison</h2>" not in report and "Recompilation stopped at step 6" in report
    run = profile_texts(notebook)["metrics.txt + debug.txt"]
    assert "compiles: 2 (" in run and "[info] Recompilation stopped at step 6" in run


#: The compiles table's geometry: each header's right edge, its container's, and the lines of
#: text in the cause and diff cells.
COMPILES_TABLE = """() => {
  const table = [...document.querySelectorAll('table')].find((t) =>
    [...t.querySelectorAll('th')].some((th) => th.textContent === 'cause'));
  const heads = [...table.querySelectorAll('th')].map((th) => th.textContent);
  const lines = (c) => { const range = document.createRange(); range.selectNodeContents(c);
    return new Set([...range.getClientRects()].map((r) => Math.round(r.top))).size; };
  const column = (name) => [...table.tBodies[0].rows].map((r) => r.cells[heads.indexOf(name)]);
  return {heads, right: Object.fromEntries([...table.querySelectorAll('th')].map((th) =>
      [th.textContent, th.getBoundingClientRect().right])),
    box: document.getElementById('output').getBoundingClientRect().right,
    cause: column('cause').map(lines), diff: column('diff').filter((c) => c.textContent).map(lines),
    graph: column('graph').map(lines)};
}"""


def assert_compiles_table_fits(cell_html: str, tmp_path: Path) -> None:
    """In an 860 px output (a JupyterLab notebook's), the compiles table's diff column is in
    view and its causes, hashes and diff commands take one line each (the cause wrapped to 5
    lines and the diff column was cut off)."""
    page_path = tmp_path / "first-cell.html"
    page_path.write_text(
        "<!DOCTYPE html><meta charset=utf-8><body><div id=output style='width:860px'>"
        + cell_html
        + "</div>",
        "utf-8",
    )
    with browser_page(width=1000, height=900) as (page, _blocked):
        page.goto(page_path.as_uri())
        page.evaluate("document.querySelectorAll('details').forEach((d) => { d.open = true; })")
        table = page.evaluate(COMPILES_TABLE)
    assert "diff" in table["heads"] and table["diff"], table
    assert table["right"]["diff"] <= table["box"], table
    assert max(table["cause"] + table["diff"] + table["graph"]) == 1, table
