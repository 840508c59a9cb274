"""The example notebooks, executed through the xlanb kernel; their key numbers asserted."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.helpers import execute_notebook_file, outputs_of, profile_texts

NOTEBOOKS = Path(__file__).parents[2] / "notebooks"


def test_quickstart_finds_the_fallbacks_and_the_fix(xlanb_kernel, tmp_path):
    notebook = execute_notebook_file(NOTEBOOKS / "01_quickstart.ipynb", xlanb_kernel, tmp_path)
    # the kernel loaded xlanb before the first cell: `%load_ext xlanb` says what it found
    loaded = outputs_of(notebook.cells[1], "text/plain")
    assert loaded.startswith("xlanb ready: %%xla_profile on a cell profiles it. Runtimes: ")
    assert "already loaded" not in loaded and "LTC_SAVE_TENSORS_FILE" in loaded
    profiles = profile_texts(notebook)
    first, fixed = profiles["first"], profiles["fixed"]
    assert "compiles: 7 " in first and "| syncs: 12 | CPU fallbacks: 24" in first
    assert "aten::mse_loss ×12 (CPU fallback) line 8:" in first
    assert "aten::_local_scalar_dense ×12 (sync: value read back) line 12:" in first
    assert "[warning] 12 values read back to the host (syncs) (cell line 12)" in first
    # findings state their cost first: "[warning] 8.0 ms (1% of the cell): 1 recompilation..."
    assert re.search(
        r"\[warning\] [^\n]*of the cell\): 1 recompilation from changing "
        r"input shapes \(cell line 11\)",
        first,
    ), first
    assert "compiles: 2 " in fixed and "| syncs: 1 | CPU fallbacks: 0" in fixed
    # the one read after the loop is information: the fixed cell has no warning
    assert "[info] 1 value read back to the host (syncs) (cell line 14)" in fixed
    assert "[warning]" not in fixed and "[error]" not in fixed
    assert (tmp_path / "quickstart-report.html").stat().st_size > 1000
    assert (tmp_path / "quickstart-first.xlanb.json").exists()


def test_jax_notebook_finds_recompiles_and_numpy_inputs_then_the_fix(xlanb_kernel, tmp_path):
    notebook = execute_notebook_file(NOTEBOOKS / "03_jax.ipynb", xlanb_kernel, tmp_path)
    profiles = profile_texts(notebook)
    first, fixed = profiles["first"], profiles["fixed"]
    assert "compiles: 3 " in first and "| host-to-device transfers: 6 | CPU fallbacks: 0" in first
    assert "different input types: f32[8,16,32] -> f32[8,24,32]" in first
    assert "jit(train_step) recompiled 2 times in this cell (cell line 4)" in first
    assert "6 host inputs copied to the device on calls of jitted functions" in first
    # the fixed cell starts cold as the first did: its one compile is measured in it
    # the same 6 copies, now made explicitly (jax.device_put): no host-input finding
    assert "compiles: 1 " in fixed and "| host-to-device transfers: 6 | CPU fallbacks: 0" in fixed
    assert "host inputs copied" not in fixed
    assert "jit(train_step)" in fixed.split("compiles:\n", 1)[1]
    comparison = outputs_of(notebook.cells[-2], "text/plain")
    assert "first -> fixed" in comparison and "gone" in comparison
    assert re.search(r"\nfixed is (faster|slower) than first: wall ", comparison), comparison
    assert "jit(train_step)" in (tmp_path / "jax-first-report.html").read_text()
