"""%%xla_profile in a real Jupyter kernel (nbclient), on torch._lazy."""

from __future__ import annotations

import json

from tests.helpers import outputs_of, run_notebook


def test_profiled_cell_in_a_real_kernel_shows_summary_and_fallback():
    notebook = run_notebook([
        "%load_ext xlanb",
        "import torch, torch._lazy, torch._lazy.ts_backend\n"
        "torch._lazy.ts_backend.init()\n"
        "w = torch.randn(4, 4, device='lazy')\n"
        "torch._lazy.mark_step()",
        "%%xla_profile --var prof\n"
        "for batch in [8, 16]:\n"
        "    y = (torch.randn(batch, 4).to('lazy') @ w).sum()\n"
        "    torch._lazy.mark_step()\n"
        "print((y * 2).item())",
        "import json\n"
        "print(json.dumps({'compiles': list(prof.compiles['cause']),\n"
        "                  'lines': [int(v) for v in prof.compiles['cell_line'].dropna()],\n"
        "                  'fallbacks': list(prof.fallbacks['op'])}))",
    ])
    profiled = notebook.cells[2]
    html = outputs_of(profiled, "text/html")
    assert "<b>compiles</b> 3" in html
    assert "aten::_local_scalar_dense" in html and "xlanb-bad" in html
    # The fallback row shows the cell line that triggered it, with its code.
    assert "<td>5</td><td><code>print((y * 2).item())</code></td>" in html
    result = json.loads(outputs_of(notebook.cells[3], "text/plain").strip())
    assert result["compiles"][0] == "new graph"
    assert result["compiles"][1] == "new shape: Float[8,4] -> Float[16,4]"
    assert result["compiles"][2].startswith("forced sync")
    assert result["lines"] == [4, 4, 5]  # the editor's numbering, %%xla_profile is line 1
    assert result["fallbacks"] == ["aten::_local_scalar_dense"]
