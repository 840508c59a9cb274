"""The PyTorch/XLA example notebook, executed through the xlanb kernel in this environment."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import execute_notebook_file, outputs_of, profile_texts

NOTEBOOKS = Path(__file__).parent.parent.parent / "notebooks"


def test_torch_xla_notebook_recompiles_reads_values_then_the_fix(xlanb_kernel, tmp_path):
    notebook = execute_notebook_file(NOTEBOOKS / "02_torch_xla.ipynb", xlanb_kernel,
                                     tmp_path)
    profiles = profile_texts(notebook)
    first, fixed = profiles["first"], profiles["fixed"]
    assert "compiles: 4 " in first and "fallback ops: 8" in first
    assert "[warning] 3 recompilation(s) from changing input shapes (cell line 9)" in first
    assert "new shape: f32[32,16] -> f32[24,16], f32[32,1] -> f32[24,1]" in first
    assert "aten::_local_scalar_dense ×8 (item) line 10: if loss.item() > 10:" in first
    assert "compiles: 2 " in fixed and "fallback ops: 1" in fixed
    assert "line 15: print(\"steps that diverged:\", int(diverged.item()))" in fixed
    comparison = outputs_of(notebook.cells[-1], "text/plain")
    assert "3 recompilation(s) from changing input shapes (cell line 9)   gone" in comparison
