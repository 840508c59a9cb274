"""Multi-process runs: ``xlanb.ranks.record`` in each process, ``load_ranks`` in the notebook.

A real two-process JAX run over ``jax.distributed`` (localhost, CPU, gloo collectives), ranks
started by one launcher (the run id from the launching process), a rank that dies while
writing, bad files in the directory, ranks of two runs, and the skew findings on rank files
made from a real captured profile. The PyTorch/XLA run (torchrun) is in
``tests/xla/test_ranks_xla.py``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

from tests.support.helpers import clean_env, free_port, packed_graphs
from xlanb.analysis import findings as diagnose
from xlanb.analysis.ranks import outliers
from xlanb.core.profile import FRAME_NAMES, Profile
from xlanb.core.units import format_seconds
from xlanb.formats.profile_json import load_profile
from xlanb.ranks import (
    RankFileWarning,
    RankIdentity,
    RanksError,
    is_ranks_dir,
    load_ranks,
    rank_table,
    record,
    save_rank,
)
from xlanb.views.html import profile_html

WORKERS = Path(__file__).parent.parent / "workers"
FIXTURE = Path(__file__).parent.parent / "data" / "torch_xla" / "live.xlanb.json"


def identity(rank: int, world_size: int = 4, run_id: str = "run-a", **fields) -> RankIdentity:
    return RankIdentity(
        run_id=run_id,
        rank=rank,
        world_size=world_size,
        host="node-1",
        pid=1000 + rank,
        device="xla:0 (CPU)",
        **fields,
    )


def rank_copy(rank: int, scale_execute: float = 1.0) -> Profile:
    """The real captured torch_xla profile of tests/data, as one rank of a run."""
    profile = load_profile(FIXTURE)
    profile.executions["seconds"] = 0.02 * scale_execute / len(profile.executions)
    return profile


# -- a real jax.distributed run ---------------------------------------------------------------
@pytest.fixture(scope="module")
def jax_run(tmp_path_factory) -> Path:
    if importlib.util.find_spec("jax") is None:  # the workers import it, not this process
        pytest.skip("JAX is not installed")
    directory = tmp_path_factory.mktemp("jax-ranks")
    port = str(free_port())
    env = clean_env(JAX_PLATFORMS="cpu")
    workers = [
        subprocess.Popen(
            [sys.executable, str(WORKERS / "jax_ranks.py"), str(directory), port, str(process)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for process in (0, 1)
    ]
    for worker in workers:
        try:
            output, _ = worker.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            for other in workers:
                other.kill()
            raise
        assert worker.returncode == 0, output
    return directory


def test_jax_ranks_merge_into_one_profile_with_a_rank_column(jax_run):
    prof = load_ranks(jax_run)
    for name in FRAME_NAMES:
        frame = getattr(prof, name)
        assert list(frame.columns)[0] == "rank", name
    info = prof.environment["ranks"]
    assert info["world_size"] == 2 and info["present"] == [0, 1] and info["missing"] == []
    assert info["run_id_source"] == "jax.distributed"
    ranks = {row["rank"]: row for row in info["per_rank"]}
    assert ranks[0]["pid"] != ranks[1]["pid"]
    assert all(row["device"].startswith("cpu") for row in ranks.values())
    stamped = [
        json.loads(path.read_text())["meta"]["environment"]["rank"]
        for path in sorted(jax_run.glob("*.xlanb.json"))
    ]
    assert [s["rank"] for s in stamped] == [0, 1]
    assert stamped[0]["run_id"] == stamped[1]["run_id"] == info["run_id"]
    assert {s["rank_source"] for s in stamped} == {"jax.distributed"}

    compiles = prof.compiles[~prof.compiles["eager"].eq(True)]
    per_rank = compiles.groupby("rank")["graph"].apply(list).to_dict()
    assert sorted(per_rank[0]) == ["jit(global_sum)", "jit(step)"]
    assert sorted(per_rank[1]) == ["jit(global_sum)", "jit(step)", "jit(step)"]
    table = rank_table(prof).set_index("rank")
    assert table.loc[0, "executions"] == table.loc[1, "executions"] == 6
    # The cross-process sum is one all-reduce in the compiled program, run once per rank.
    assert table.loc[0, "collective_ops"] == table.loc[1, "collective_ops"] == 1


def test_jax_ranks_findings_name_the_divergent_rank_and_shapes(jax_run):
    prof = load_ranks(jax_run)
    findings = prof.findings.set_index("title")
    compile_skew = findings.loc["rank 1 compiled more graphs than the other ranks (3 vs 2)"]
    assert compile_skew["rank"] == 1
    assert "different input types: f32[16,4] -> f32[24,4]" in compile_skew["detail"]
    divergent = findings.loc["1 graph differs between ranks (divergent programs)"]
    assert "jit(step)" in divergent["detail"]
    assert "(f32[4,4], f32[8,4]) on rank 0" in divergent["detail"]
    assert "(f32[4,4], f32[16,4]) on rank 1" in divergent["detail"]
    assert "(f32[4,4], f32[24,4]) on rank 1" in divergent["detail"]
    page = profile_html(prof)
    assert "Ranks (2 of 2)" in page
    # each rank's variant of jit(step) has a viewer, once
    texts = [
        "\n".join(graph["nodes"]["text"])
        for graph in packed_graphs(page)
        if "diff" not in graph["nodes"]  # not a recompile's "Changes" tab
    ]
    step = [text for text in texts if "parameter(1)" in text]
    assert len(step) >= 3, texts
    assert sum("f32[24,4]{1,0} parameter(1)" in text for text in step) == 1
    # rank 1's compile count is the highlighted cell of the per-rank table
    row = page.split("<tr><td>1</td>", 1)[1].split("</tr>", 1)[0]
    assert "<td class='xlanb-out'>3</td>" in row


# -- the launcher rule, a crashed rank, bad files, two runs ----------------------------------
RANK_SCRIPT = """
import sys
from xlanb.ranks import record
with record(sys.argv[1], name="plain", backend=[]) as prof:
    pass
"""


def _start_rank(
    directory: Path, rank: int, world: int, via_shell: bool = False
) -> subprocess.Popen:
    command = [sys.executable, "-c", RANK_SCRIPT, str(directory)]
    if via_shell:  # another launcher: the shell stays the parent
        command = ["/bin/sh", "-c", " ".join(f"'{part}'" for part in command) + "; exit $?"]
    return subprocess.Popen(command, env=clean_env(RANK=str(rank), WORLD_SIZE=str(world)))


def test_ranks_of_one_launch_share_the_launchers_run_id_and_another_launch_is_refused(tmp_path):
    for worker in [_start_rank(tmp_path, rank, 3) for rank in (0, 1)]:
        assert worker.wait(timeout=60) == 0
    prof = load_ranks(tmp_path)
    info = prof.environment["ranks"]
    assert info["run_id_source"] == "launcher" and f"ppid{os.getpid()}" in info["run_id"]
    assert info["present"] == [0, 1] and info["missing"] == [2]
    assert "rank 2 of 3 wrote no profile" in list(prof.findings["title"])

    assert _start_rank(tmp_path, 2, 3, via_shell=True).wait(timeout=60) == 0
    with pytest.raises(RanksError) as refused:
        load_ranks(tmp_path)
    message = str(refused.value)
    assert "mixes ranks of 2 runs" in message and "run_id=" in message
    assert f"'{info['run_id']}' (ranks 0-1" in message and "plain.rank00002" in message
    assert load_ranks(tmp_path, run_id=info["run_id"]).environment["ranks"]["present"] == [0, 1]


def test_a_rank_that_dies_while_writing_leaves_no_partial_profile(tmp_path):
    save_rank(rank_copy(0), tmp_path, identity=identity(0, world_size=2))
    dying = (
        "import os, sys\nfrom xlanb.ranks import record\n"
        "os.fsync = lambda fd: os._exit(3)  # killed after writing, before the rename\n"
        "with record(sys.argv[1], name='live', backend=[], rank=1, world_size=2,"
        " run_id='run-a'):\n    pass\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", dying, str(tmp_path)], env=clean_env(), timeout=60
    )
    assert result.returncode == 3
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == [
        "live.rank00000.xlanb.json"
    ]
    with pytest.warns(
        RankFileWarning,
        match=r"\.live\.rank00001\.xlanb\.json\..*\.tmp: a "
        "partial write",
    ):
        prof = load_ranks(tmp_path)
    assert prof.environment["ranks"]["missing"] == [1]
    assert set(prof.compiles["rank"]) == {0}


def test_corrupt_and_foreign_files_are_named_in_a_warning_and_skipped(tmp_path):
    for rank in range(3):
        save_rank(rank_copy(rank), tmp_path, identity=identity(rank, world_size=3))
    (tmp_path / "live.rank00003.xlanb.json").write_text('{"format": "xlanb-profile", "ver')
    (tmp_path / "notes.txt").write_text("not a profile")
    (tmp_path / "trace.json").write_text(json.dumps({"traceEvents": []}))
    load_profile(FIXTURE).save(tmp_path / "single.xlanb.json")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prof = load_ranks(tmp_path)
    skipped = {
        Path(str(w.message).split("skipped ", 1)[1].split(":", 1)[0]).name: str(w.message)
        for w in caught
        if issubclass(w.category, RankFileWarning)
    }
    assert set(skipped) == {
        "live.rank00003.xlanb.json",
        "notes.txt",
        "trace.json",
        "single.xlanb.json",
    }
    assert "not JSON" in skipped["live.rank00003.xlanb.json"]
    assert "without a rank" in skipped["single.xlanb.json"]
    assert prof.environment["ranks"]["present"] == [0, 1, 2]
    assert is_ranks_dir(tmp_path) and not is_ranks_dir(FIXTURE.parent)


def test_ranks_of_another_name_or_the_same_rank_twice_are_refused(tmp_path):
    save_rank(rank_copy(0), tmp_path, identity=identity(0, world_size=2))
    other = rank_copy(1)
    other.name = "eval"
    save_rank(other, tmp_path, identity=identity(1, world_size=2))
    with pytest.raises(RanksError, match=r"2 names .*'eval': ranks 1.*pass name="):
        load_ranks(tmp_path)
    assert load_ranks(tmp_path, name="eval").environment["ranks"]["present"] == [1]
    copy = tmp_path / "copy.rank00000.xlanb.json"
    copy.write_text((tmp_path / "live.rank00000.xlanb.json").read_text())
    with pytest.raises(RanksError, match="rank 0 of run 'run-a' appears twice"):
        load_ranks(tmp_path, name="live")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RanksError, match="holds no rank profile"):
        load_ranks(empty)


# -- findings and display on rank files made from a real profile --------------------------
def test_execute_time_outlier_and_missing_and_failed_ranks(tmp_path):
    for rank in range(8):
        profile = rank_copy(rank, scale_execute=3.0 if rank == 5 else 1.0)
        if rank == 2:
            profile.failed, profile.error = True, "RuntimeError: NaN loss"
        save_rank(profile, tmp_path, identity=identity(rank, world_size=9))
    prof = load_ranks(tmp_path)
    table = rank_table(prof)
    assert outliers(table) == {"execute_seconds": [5]}
    findings = prof.findings
    assert list(findings["severity"])[0] == "error"
    titles = list(findings["title"])
    assert "rank 2's profiled block raised: RuntimeError: NaN loss" in titles
    assert "rank 8 of 9 wrote no profile" in titles
    assert (
        "rank 5's execute time is an outlier: 60.0 ms, 3.0x the other ranks' median (20.0 ms)"
    ) in titles
    # each rank's own finding appears once, with its ranks
    shared = findings[findings["title"].str.startswith("ranks 0-7: ")]
    assert len(shared) == 1 and pd.isna(shared["rank"].iloc[0])
    assert prof.failed and prof.error == "rank 2: RuntimeError: NaN loss"
    assert prof.wall_seconds == pytest.approx(load_profile(FIXTURE).wall_seconds)


def test_rank_rules_do_nothing_for_one_process_or_identical_ranks(tmp_path):
    single = load_profile(FIXTURE)
    assert all(rule(single) == [] for rule in diagnose.RANK_RULES)
    assert set(diagnose.RANK_RULES) <= set(diagnose.RULES)
    for rank in range(4):
        save_rank(rank_copy(rank), tmp_path, identity=identity(rank))
    prof = load_ranks(tmp_path)
    assert list(prof.findings["title"]) == [f"ranks 0-3: {t}" for t in single.findings["title"]]
    assert outliers(rank_table(prof)) == {}
    assert "Ranks (4 of 4)" in profile_html(prof)
    assert "xlanb-out" not in profile_html(prof).split("Ranks (4 of 4)")[1].split("</table>")[0]
    assert "Ranks (" not in profile_html(single)


def test_rank_view_escapes_every_value(tmp_path):
    evil = "<img src=x onerror=alert(1)>"
    for rank in range(2):
        save_rank(
            rank_copy(rank),
            tmp_path,
            identity=RankIdentity(
                run_id=evil, rank=rank, world_size=2, host=evil, pid=1, device=evil
            ),
        )
    page = profile_html(load_ranks(tmp_path))
    assert evil not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


def test_torch_distributed_collectives_are_counted_and_timed(tmp_path):
    torch = pytest.importorskip("torch")
    import torch.distributed as dist

    original = dist.all_reduce
    store = dist.HashStore()
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        with record(tmp_path, name="dist", backend=[], run_id="solo") as prof:
            for _ in range(3):
                dist.all_reduce(torch.ones(4))
            dist.barrier()
    finally:
        dist.destroy_process_group()
    assert dist.all_reduce is original
    counters = prof.counters.set_index("name")
    assert counters.loc["dist.all_reduce", "delta"] == 3
    assert counters.loc["dist.barrier", "category"] == "collective"
    metric = prof.metrics.set_index("name").loc["CollectiveTime"]
    assert metric["count"] == 4 and metric["unit"] == "s" and metric["total"] > 0
    stamped = json.loads((tmp_path / "dist.rank00000.xlanb.json").read_text())
    assert stamped["meta"]["environment"]["rank"]["run_id"] == "solo"
    assert rank_table(load_ranks(tmp_path))["collective_ops"].tolist() == [4]


def test_merged_ranks_rules_see_the_timed_collectives(tmp_path):
    """record() adds the timed torch.distributed calls before the Profile is derived and
    written, so the merged run's rules over them see each rank's collectives."""
    torch = pytest.importorskip("torch")
    import torch.distributed as dist

    recorded = tmp_path / "recorded"
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        with record(recorded, name="dist", backend=[], run_id="solo") as prof:
            dist.all_reduce(torch.ones(4))
    finally:
        dist.destroy_process_group()
    waited = prof.metrics.set_index("name").loc["CollectiveTime", "total"]
    merged = tmp_path / "merged"
    for rank in range(4):
        copy = Profile.from_dict(prof.to_dict())
        if rank:  # the other ranks waited 10 s for rank 0 in their collectives
            timed = copy.metrics["name"] == "CollectiveTime"
            copy.metrics.loc[timed, "total"] = 10.0
        save_rank(copy, merged, identity=identity(rank, run_id="solo"))
    titles = list(load_ranks(merged).findings["title"])
    assert [t for t in titles if "straggler" in t] == [
        f"rank 0 is the straggler: the other ranks waited {format_seconds(10.0)} (median) in "
        "collectives, "
        f"rank 0 {format_seconds(waited)}"
    ]
