"""What torch_xla workloads read wrong (issue 28), on the real runtime (CPU) in a shell."""

from __future__ import annotations

import pytest

pytest.importorskip("torch_xla")

SETUP = """
import torch, torch_xla
dev = torch_xla.device()
"""


@pytest.fixture(scope="module", autouse=True)
def xla_runtime(shell):
    assert shell.run_cell(SETUP).success


def test_live_tensors_of_unknown_bytes_show_a_dash(run, shell):
    """torch_xla on the CPU counts its live tensors but keeps no allocator bytes: the memory
    line says "-" for them (it said "0 B", a measurement nobody made)."""
    run(
        "%%xla_profile -q --var prof\n"
        "sl_kept = [torch.ones(3, 5, device=dev) * i for i in range(15)]\ntorch_xla.sync()"
    )
    prof = shell.user_ns["prof"]
    live = prof.live_arrays.set_index("snapshot")
    assert live["bytes"].isna().all()
    added = int(live.loc["after", "count"]) - int(live.loc["before", "count"])
    assert added >= 15
    html = prof._repr_html_()
    before, after = int(live.loc["before", "count"]), int(live.loc["after", "count"])
    assert f"live device tensors: {before:,} (-) before, {after:,} (-) after" in html
    assert "(0 B)" not in html


def test_a_fallback_run_again_by_backward_is_shown_on_both_lines(run, shell):
    """`y[y > 0]` runs `aten::nonzero` in the forward pass and again in `loss.backward()`:
    the runtime counts both; each line gets its own (all were on the forward line)."""
    run("sl_w = torch.randn(16, device=dev, requires_grad=True)\ntorch_xla.sync()")
    run(
        "%%xla_profile -q --var prof\nfor _ in range(3):\n    y = sl_w * 2\n"
        "    loss = y[y > 0].sum()\n    loss.backward()\n    torch_xla.sync()"
    )
    prof = shell.user_ns["prof"]
    rows = prof.fallbacks[prof.fallbacks["op"] == "aten::nonzero"]
    assert rows[["count", "cell_line"]].to_dict("records") == [
        {"count": 3, "cell_line": 4},
        {"count": 3, "cell_line": 5},
    ]
    text = repr(prof)
    assert "line 4: loss = y[y > 0].sum()" in text and "line 5: loss.backward()" in text
    import torch

    assert torch.autograd.backward.__module__ == "torch.autograd"  # given back
