"""The xlanb kernel in the torch_xla environment: switches set before torch_xla starts, so the
first profiled cell already has compile causes and cell lines."""

from __future__ import annotations

from tests.support.helpers import outputs_of, run_notebook


def test_kernel_sets_switches_before_torch_xla_starts(xlanb_kernel):
    notebook = run_notebook(
        [
            "import os, sys\n"
            "print('torch_xla' in sys.modules, os.environ['PT_XLA_DEBUG_FILE']"
            ".startswith(os.environ['XLANB_WORKDIR']), "
            "'--xla_dump_to=' in os.environ['XLA_FLAGS'])",
            "import os\nos.environ.setdefault('PJRT_DEVICE', 'CPU')\n"
            "import torch, torch_xla\ndev = torch_xla.device()",
            "%%xla_profile --var prof\n"
            "for rows in [3, 6]:\n"
            "    y = (torch.randn(rows, 5).to(dev) * 2).sum()\n"
            "    torch_xla.sync()",
            "print(list(prof.compiles['cause']), list(prof.compiles['cell_line']))",
        ],
        kernel_name=xlanb_kernel,
    )
    assert outputs_of(notebook.cells[0], "text/plain").strip() == "False True True"
    assert outputs_of(notebook.cells[3], "text/plain").strip() == (
        "['new graph', 'new shape: f32[3,5] -> f32[6,5]'] [4, 4]"
    )
