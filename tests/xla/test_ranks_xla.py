"""A real two-process data-parallel run on PyTorch/XLA 2.9 (``PJRT_DEVICE=CPU``), started by
torchrun as a user would, each rank recorded with ``xlanb.ranks.record``; merged here with
``load_ranks``. Rank 1 reads the loss with ``.item()`` every step (see
``tests/workers/torch_xla_ranks.py``)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.helpers import clean_env, free_port
from xlanb.core.profile import FRAME_NAMES
from xlanb.ranks import load_ranks, rank_table
from xlanb.views.html import profile_html

# Only the workers import torch_xla: importing it here, at collection, would start it before
# the shell fixture of the other tests loads xlanb (their debug switches would be off).
if importlib.util.find_spec("torch_xla") is None:
    pytest.skip("torch_xla is not installed", allow_module_level=True)

WORKER = Path(__file__).parent.parent / "workers" / "torch_xla_ranks.py"
STEPS = 4


@pytest.fixture(scope="module")
def torchrun_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("torch-xla-ranks")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc-per-node",
            "2",
            "--master-port",
            str(free_port()),
            str(WORKER),
            str(directory),
        ],
        env=clean_env(PJRT_DEVICE="CPU"),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return directory


def test_each_rank_writes_its_profile_stamped_with_rank_and_run(torchrun_dir):
    files = sorted(torchrun_dir.iterdir())
    assert [f.name for f in files] == ["train.rank00000.xlanb.json", "train.rank00001.xlanb.json"]
    stamps = [json.loads(f.read_text())["meta"]["environment"]["rank"] for f in files]
    assert [s["rank"] for s in stamps] == [0, 1] and {s["world_size"] for s in stamps} == {2}
    # PJRT on the CPU: each process's runtime is a world of one device; torch.distributed
    # (gloo, started by torchrun) knows the ranks and carries the shared run id.
    assert {s["runtime_world_size"] for s in stamps} == {1}
    assert {s["rank_source"] for s in stamps} == {"torch.distributed"}
    assert {s["run_id_source"] for s in stamps} == {"torch.distributed"}
    assert stamps[0]["run_id"] == stamps[1]["run_id"]
    assert [s["local_rank"] for s in stamps] == [0, 1]
    assert {s["device"] for s in stamps} == {"xla:0 (CPU)"}


def test_merged_frames_show_what_each_rank_did(torchrun_dir):
    prof = load_ranks(torchrun_dir)
    assert all(list(getattr(prof, name).columns)[0] == "rank" for name in FRAME_NAMES)
    compiles = prof.compiles
    shared = set(compiles.loc[compiles["rank"] == 0, "graph"]) & set(
        compiles.loc[compiles["rank"] == 1, "graph"]
    )
    assert len(shared) == 2  # the same step graphs, with the same hash on both ranks
    forced = compiles[compiles["cause"].str.startswith("forced sync")]
    item_line = next(
        number
        for number, line in enumerate(WORKER.read_text().splitlines(), 1)
        if "loss.item()" in line
    )
    assert list(forced["rank"]) == [1]
    assert forced["location"].iloc[0] == f"{WORKER}:{item_line}"
    fallbacks = prof.fallbacks.set_index(["rank", "op"])
    assert fallbacks.loc[(1, "aten::_local_scalar_dense"), "count"] == STEPS
    assert 0 not in set(prof.fallbacks["rank"])
    table = rank_table(prof).set_index("rank")
    assert list(table["collective_ops"]) == [STEPS, STEPS]  # dist.all_reduce, timed
    assert (table["collective_seconds"] > 0).all() and (table["transfers"] > 0).all()
    assert table.loc[1, "executions"] > table.loc[0, "executions"]


def test_skew_findings_name_rank_one(torchrun_dir):
    prof = load_ranks(torchrun_dir)
    findings = prof.findings.set_index("title")
    compile_skew = findings.loc["rank 1 compiled more graphs than the other ranks (3 vs 2)"]
    assert "forced sync" in compile_skew["detail"] and compile_skew["rank"] == 1
    fallback_skew = findings.loc["rank 1 left the device more often than the other ranks (4 vs 0)"]
    assert "aten::_local_scalar_dense ×4" in fallback_skew["detail"]
    divergent = findings.loc["1 graph differs between ranks (divergent programs)"]
    forced_graph = prof.compiles.loc[prof.compiles["cause"].str.startswith("forced"), "graph"]
    assert f"{forced_graph.iloc[0][:12]}… (forced sync" in divergent["detail"]
    assert divergent["detail"].endswith("only on rank 1.")
    reads = [t for t in findings.index if t.startswith("rank 1: 4 values read back to the host")]
    assert len(reads) == 1 and findings.loc[reads[0], "severity"] == "warning"
    page = profile_html(prof)
    assert "Ranks (2 of 2)" in page and "<td class='xlanb-out'>4</td>" in page
