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
    reason="torch_xla 2.8 aborts the process on out of memory (a fatal check in "
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
