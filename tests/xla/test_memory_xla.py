"""torch_xla on the CPU running out of memory, in a real IPython shell in a child process whose
address space is limited (tests/workers/out_of_memory.py): the machine is never at risk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from xlanb.capture import versions

pytest.importorskip("torch_xla")

WORKER = Path(__file__).parent.parent / "workers" / "out_of_memory.py"


@pytest.mark.xfail(
    versions.parse_version(versions.installed_version("torch_xla") or "0") < (2, 9),
    strict=True,
    reason="torch_xla 2.7 and 2.8 abort the process on out of memory (a fatal check in "
    "PjRtComputationClient::TransferFromDevice): there is no Python error to keep",
)
def test_torch_xla_out_of_memory_keeps_a_failed_profile_with_the_programs_needs():
    """torch_xla 2.9 runs a graph asynchronously: `torch_xla.sync()` returns, and the next
    read of a value raises RuntimeError "Error dispatching computation: Error preparing
    computation: Out of memory allocating N bytes." The user's exception propagates unchanged,
    the profile is failed, and an error finding gives the bytes asked for, the static needs
    of the programs compiled in the cell and the limit. torch_xla on the CPU lists no live
    tensors (its memory info is UNIMPLEMENTED), so none are shown."""
    cells = [
        "import torch, torch_xla\nd = torch_xla.device()\n"
        "kept = [torch.ones(64, 1024, 1024, device=d) + i for i in range(2)]\ntorch_xla.sync()",
        "%%xla_profile -b torch_xla -q --var prof\n"
        "try:\n"
        "    big = torch.cat([torch.ones(32, 1024, 1024, device=d)] * 32) * 2\n"  # 4 GiB
        "    torch_xla.sync()\n"
        "    print(float(big[0, 0, 0]))\n"
        "except Exception as error:\n"
        "    caught = error\n"
        "    raise\n",
    ]
    completed = subprocess.run(
        [sys.executable, str(WORKER)],
        input=json.dumps([[cell, False] for cell in cells]),
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PJRT_DEVICE": "CPU"},
    )
    assert "@@RESULT@@" in completed.stdout, completed.stderr[-3000:]
    out = json.loads(completed.stdout.split("@@RESULT@@")[-1])
    result = out["results"][-1]
    assert result["error"].startswith("RuntimeError: ")
    assert "Out of memory allocating 4294967296 bytes" in result["error"]
    assert result["same_object"] and not any("xlanb" in f for f in result["frames"])
    assert out["failed"] and out["error"] == result["error"]
    finding = out["findings"][0]  # the failure comes first: it cost the whole cell
    assert finding["severity"] == "error"
    assert finding["title"].endswith("ran out of memory allocating 4.29 GB")
    assert "outputs 4.29 GB" in finding["detail"]  # the program's Post Compilation Analysis
    assert "RLIMIT_AS" in finding["detail"]


SETUP = "import torch, torch_xla\nimport torch_xla.debug.metrics as met\ndev = torch_xla.device()"


@pytest.fixture(scope="module")
def xla_shell(shell):
    assert shell.run_cell(SETUP).success
    return shell


def live_tensors(shell) -> int:
    shell.run_cell(
        "xm_live = met.counter_value('CreateXlaTensor') - met.counter_value('DestroyXlaTensor')"
    )
    return int(shell.user_ns["xm_live"])


def test_torch_xla_largest_temporaries_come_from_its_dump(run, xla_shell):
    """The default dump's buffer assignment: the graph's temporaries (a matmul result feeding
    the next op) with their HLO op, shape and size, none of them the graph's inputs or
    outputs; the HTML lists them."""
    run("xm_a = torch.ones(96, 80, device=dev)\ntorch_xla.sync()\nxm_b = None")
    run(
        "%%xla_profile -b torch_xla -q --var prof\n"
        "xm_b = torch.tanh(xm_a @ xm_a.T).sum(0) + (torch.sin(xm_a) @ xm_a.T).sum(1)\n"
        "torch_xla.sync()"
    )
    prof = xla_shell.user_ns["prof"]
    temps = prof.temporaries
    assert not temps.empty, prof.graphs[["graph", "kind"]]
    assert set(temps["backend"]) == {"torch_xla"}
    assert set(temps["graph"]) <= set(prof.compiles["graph"])
    assert temps["bytes"].max() == 96 * 96 * 4  # a [96, 96] product, never the [96] output
    assert "f32[96,96]" in set(temps["shape"])
    assert temps["bytes"].sum() >= temps["bytes"].max()
    assert "Largest temporaries" in prof._repr_html_()


def test_torch_xla_live_tensors_before_and_after_the_cell(run, xla_shell):
    """Tensors kept in a list: the live XLA tensor count before and after the cell as the
    runtime's counters say; bytes unknown on the CPU (NaN, shown as "-", never a guess)."""
    run("xm_kept = []")
    before = live_tensors(xla_shell)
    run(
        "%%xla_profile -b torch_xla -q --var prof\n"
        "for i in range(4):\n    xm_kept.append(torch.ones(32, 32, device=dev) * i)\n"
        "torch_xla.sync()"
    )
    after = live_tensors(xla_shell)
    live = xla_shell.user_ns["prof"].live_arrays.set_index("snapshot")
    assert live.loc["before", "count"] == before
    assert live.loc["after", "count"] == after == before + 4
    assert live["bytes"].isna().all()
    assert "live device tensors: " in xla_shell.user_ns["prof"]._repr_html_()
    run("xm_kept.clear()")


def test_torch_xla_a_cell_that_keeps_more_tensors_each_run_is_a_warning(run, xla_shell):
    cell = (
        "%%xla_profile -b torch_xla -q --var prof\n"
        "for i in range(3):\n    xm_losses.append(torch.ones(16, 16, device=dev) * i)\n"
        "torch_xla.sync()"
    )
    run("xm_losses = []")
    run(cell)
    assert not xla_shell.user_ns["prof"].findings["title"].str.contains("every run").any()
    run(cell)
    prof = xla_shell.user_ns["prof"]
    leak = prof.findings[prof.findings["title"].str.contains("every run")]
    assert len(leak) == 1, prof.findings
    assert "keeps 3 more live device tensors every run (its last 2 runs)" in leak.iloc[0]["title"]
    assert "loss.item()" in leak.iloc[0]["advice"]
    run("xm_losses.clear()")


def test_torch_xla_runs_of_a_graph_compiled_in_an_earlier_cell_keep_its_peak(run, xla_shell):
    """A graph compiled in one profiled cell and run again in the next: its runs there carry
    the compiled peak (inputs + outputs + intermediates - aliased of its Post Compilation
    Analysis), as the compiles row of the first cell says."""
    cell = (
        "%%xla_profile -b torch_xla -q --var prof\n"
        "xm_p = torch.ones(48, 40, device=dev)\n"
        "xm_q = (xm_p @ xm_p.T).relu().sum()\n"
        "torch_xla.sync()"
    )
    run(cell)
    compiles = xla_shell.user_ns["prof"].compiles
    assert len(compiles) >= 1 and compiles["peak_bytes"].notna().all(), compiles
    peaks = dict(zip(compiles["graph"], compiles["peak_bytes"], strict=True))
    run(cell)
    prof = xla_shell.user_ns["prof"]
    assert prof.compiles.empty
    runs = prof.executions.dropna(subset=["graph"])
    assert not runs.empty and set(runs["graph"]) <= set(peaks), prof.executions
    assert [peaks[g] for g in runs["graph"]] == list(runs["peak_bytes"])
