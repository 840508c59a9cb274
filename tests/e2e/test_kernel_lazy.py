"""%%xla_profile in a real Jupyter kernel (nbclient), on torch._lazy."""

from __future__ import annotations

import json

import nbformat
from nbclient import NotebookClient

from tests.support.helpers import outputs_of, run_notebook


def test_profiled_cell_in_a_real_kernel_shows_summary_and_fallback():
    notebook = run_notebook(
        [
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
        ]
    )
    profiled = notebook.cells[2]
    html = outputs_of(profiled, "text/html")
    assert "<b>compiles</b> 3" in html
    assert "aten::_local_scalar_dense" in html and "xlanb-bad" in html
    # The fallback row shows the cell line that triggered it, with its code.
    assert "<td>5</td><td><code style='white-space:pre'>print((y * 2).item())</code></td>" in html
    result = json.loads(outputs_of(notebook.cells[3], "text/plain").strip())
    assert result["compiles"][0] == "new graph"
    assert result["compiles"][1] == "new shape: Float[8,4] -> Float[16,4]"
    assert result["compiles"][2].startswith("forced sync")
    assert result["lines"] == [4, 4, 5]  # the editor's numbering, %%xla_profile is line 1
    assert result["fallbacks"] == ["aten::_local_scalar_dense"]


class _RecordingClient(NotebookClient):
    """Keeps every display update the kernel sends (nbclient folds them into the output)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.updates: list[dict] = []

    def process_message(self, msg, cell, cell_index):
        if msg["msg_type"] == "update_display_data":
            self.updates.append(msg["content"]["data"])
        return super().process_message(msg, cell, cell_index)


def test_live_view_updates_while_the_cell_runs_then_becomes_the_summary():
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell(source)
        for source in [
            "%load_ext xlanb",
            "import time, torch, torch._lazy, torch._lazy.ts_backend\n"
            "torch._lazy.ts_backend.init()",
            "%%xla_profile --live\n"
            "for i in range(30):\n"
            "    t = torch.ones(3, device='lazy').sum()\n"
            "    torch._lazy.mark_step()\n"
            "    time.sleep(0.07)\n"
            "print('from the cell')\n"
            "t.nonzero()",
        ]
    ]
    client = _RecordingClient(notebook, timeout=120, kernel_name="python3")
    client.execute()
    live_updates = [
        update["text/html"]
        for update in client.updates
        if "xlanb live" in update.get("text/html", "")
    ]
    assert len(live_updates) >= 2
    assert "<b>executions</b> 0" not in live_updates[-1]  # progress was seen mid-cell
    assert client.updates[-1]["text/html"] == ""  # the live line is emptied at the end
    # then, as without --live: the cell's own output, the summary, the charts, in that order
    outputs = notebook.cells[2].outputs
    assert outputs[1]["output_type"] == "stream" and outputs[1]["text"] == "from the cell\n"
    summary = outputs[2]["data"]["text/html"]
    assert "<b>executions</b> 30 (" in summary and "<b>dynamic shapes</b> 1" in summary
    assert any("application/vnd.plotly.v1+json" in o.get("data", {}) for o in outputs[3:])


SOAK_PROBE = (
    "import os, resource, json, xlanb\n"
    "from xlanb.capture import workdir\n"
    "size = sum(os.path.getsize(os.path.join(r, n))\n"
    "           for r, _, ns in os.walk(workdir.path()) for n in ns)\n"
    "rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
    "print(json.dumps({'rss_kb': rss, 'workdir_bytes': size, 'history': len(xlanb.history())}))"
)


def test_500_auto_profiled_cells_keep_memory_and_files_bounded():
    """Auto-profiling every cell of a long session: the history stays at its bound, the
    workdir stays small and the kernel's peak RSS stops growing (measured between cell 150
    and cell 500, after the history filled up)."""
    step = (
        "soak.append((torch.ones(6, 6, device='lazy') * len(soak)).sum())\n"
        "torch._lazy.mark_step()\n"
        "soak = soak[-3:]"
    )
    cells = [
        "%load_ext xlanb",
        "import torch, torch._lazy, torch._lazy.ts_backend\n"
        "torch._lazy.ts_backend.init()\nsoak = []",
        "%xla_profile on",
        *([step] * 150),
        SOAK_PROBE,
        *([step] * 350),
        SOAK_PROBE,
    ]
    notebook = run_notebook(cells, timeout=600)
    probes = [c for c in notebook.cells if c.source == SOAK_PROBE]
    first, last = (json.loads(outputs_of(c, "text/plain").strip().splitlines()[-1]) for c in probes)
    assert first["history"] == last["history"] == 100
    assert last["workdir_bytes"] < 200_000, last
    assert last["rss_kb"] - first["rss_kb"] < 40_000, (first, last)
