"""The top-level entry points of multi-process runs: xlanb.record, xlanb.load(dir) and
`xlanb run --ranks-dir`."""

from __future__ import annotations

import os
import subprocess
import sys

import xlanb


def test_record_then_load_the_directory(lazy_runtime, tmp_path):
    import torch
    import torch._lazy

    for rank in (0, 1):
        with xlanb.record(
            tmp_path, name="api", backend="torch_lazy", rank=rank, world_size=2, run_id="api-test"
        ):
            kept = torch.ones(2, 31 + rank, device="lazy").sum()
            torch._lazy.mark_step()
    merged = xlanb.load(tmp_path)
    assert list(merged.compiles.columns)[0] == "rank"
    assert sorted(merged.executions["rank"].unique()) == [0, 1]
    del kept


def test_xlanb_run_writes_one_rank_file_per_process(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(
        "import torch, torch._lazy, torch._lazy.ts_backend\n"
        "torch._lazy.ts_backend.init()\n"
        "t = torch.ones(3, device='lazy') * 2\n"
        "torch._lazy.mark_step()\n"
    )
    ranks = tmp_path / "ranks"
    for rank in (0, 1):
        env = {**os.environ, "RANK": str(rank), "WORLD_SIZE": "2", "XLANB_RUN_ID": "cli-run"}
        subprocess.run(
            [
                sys.executable,
                "-m",
                "xlanb",
                "run",
                "--progress-every",
                "0",
                "--ranks-dir",
                str(ranks),
                "-o",
                str(tmp_path / f"r{rank}.html"),
                str(script),
            ],
            env=env,
            check=True,
            capture_output=True,
        )
    merged = xlanb.load(ranks)
    assert sorted(merged.counters["rank"].unique()) == [0, 1]
    assert merged.environment["ranks"]["run_id"] == "cli-run"
