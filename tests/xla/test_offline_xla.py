"""Offline inputs written by the real PyTorch/XLA runtime (2.9, and 2.7 in make test-compat-xla;
PJRT_DEVICE=CPU).

One subprocess per module runs a small workload with XLA_METRICS_FILE, PT_XLA_DEBUG_LEVEL=2 /
PT_XLA_DEBUG_FILE and --xla_dump_to set, writes ``metrics_report()`` and saves a live
``xlanb.profile`` capture; the tests read those files as a user would, with ``xlanb.load``.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import xlanb
from xlanb.core.errors import TruncatedRecordWarning
from xlanb.offline import step_table

pytest.importorskip("torch_xla")

#: The workload. Lines are referred to by the markers in the comments (see `line_of`).
WORKLOAD = """\
import os, shutil, sys
import torch, torch_xla
import torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met
out = sys.argv[1]
# torch_xla 2.7 appends to XLA_METRICS_FILE at xm.mark_step() only, 2.8 on at sync() too
old = tuple(int(n) for n in torch_xla.__version__.split(".")[:2]) < (2, 8)
end_step = xm.mark_step if old else torch_xla.sync
dev = torch_xla.device()
torch.manual_seed(0)
w = torch.randn(7, 3, device=dev)
end_step()
big = torch.zeros(256, 1024, device=dev) + 1
end_step()  # MARK big
for batch in [8, 8, 16, 16, 32, 8, 8, 8, 8, 8]:
    loss = (torch.randn(batch, 7).to(dev) @ w).sum()
    end_step()  # MARK loop
x = torch.randn(10, device=dev)
value = (x * 2).sum().item()  # MARK item
kept = x[x > 0]  # MARK mask
with open(os.path.join(out, "report.txt"), "w") as handle:
    handle.write(met.metrics_report())
shutil.copy(os.environ["XLA_METRICS_FILE"], os.path.join(out, "metrics.txt"))
from xlanb.capture import switches
shutil.copy(switches.value("PT_XLA_DEBUG_FILE"), os.path.join(out, "debug.txt"))
shutil.copytree(os.path.join(out, "dump_live"), os.path.join(out, "dump"))

import xlanb
with xlanb.profile(backend="torch_xla", name="live") as prof:
    for _ in range(3):
        (torch.randn(4, 7).to(dev) @ w).sum()
        torch_xla.sync()
    (torch.randn(4, 7).to(dev) @ w).sum().cpu()
prof.save(os.path.join(out, "live.xlanb.json"))
"""
SYNCS_RECORDED = 12  # end_step() calls before the files are copied
STEPS_WITH_COMPILES = [0, 1, 2, 4, 6]  # init, big, then batch 8, 16, 32


def line_of(marker: str) -> int:
    return next(n for n, line in enumerate(WORKLOAD.splitlines(), 1) if f"MARK {marker}" in line)


def run_workload(out: Path) -> Path:
    """Run the workload with the runtime's file switches pointing into `out`."""
    script = out / "workload.py"
    script.write_text(WORKLOAD)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("XLA_", "PT_XLA_", "XLANB_"))
    }
    env.update(
        PJRT_DEVICE="CPU",
        XLA_METRICS_FILE=str(out / "metrics_live.txt"),
        PT_XLA_DEBUG_LEVEL="2",
        PT_XLA_DEBUG_FILE=str(out / "debug_live.txt"),
        XLA_FLAGS=f"--xla_dump_to={out / 'dump_live'} --xla_dump_hlo_as_text",
    )
    result = subprocess.run(
        [sys.executable, str(script), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return script


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("xla_offline")
    run_workload(out)
    return out


def test_metrics_file_gives_every_step_and_when_recompilation_stopped(files):
    prof = xlanb.load(files / "metrics.txt")
    assert prof.backends == ["torch_xla"]
    assert prof.environment["format"] == "xla_metrics_file"
    assert sorted(prof.steps["step"].unique()) == list(range(SYNCS_RECORDED))
    table = step_table(prof)
    assert list(table["step"]) == list(range(SYNCS_RECORDED))
    assert list(table.index[table["compiles"] > 0]) == STEPS_WITH_COMPILES
    assert table["executions"].sum() >= SYNCS_RECORDED - 1
    assert len(prof.compiles) == table["compiles"].sum() == len(STEPS_WITH_COMPILES)
    # the runtime can write a record between counting a compile and adding its time (seen on
    # a loaded machine): a step's compile may read 0 s, its time in a later step; all of it is
    # the file's last CompileTime total
    from torch_xla.debug.metrics_compare_utils import parse_metrics_report

    last = (files / "metrics.txt").read_text().split("[MetricsData; step=")[-1].split("\n", 1)[1]
    assert prof.compiles["seconds"].ge(0).all()
    assert math.isclose(
        prof.compiles["seconds"].sum(),
        parse_metrics_report(last)["CompileTime__Accumulator_sec"],
        rel_tol=1e-9,
    )
    finding = prof.findings[prof.findings["title"].str.startswith("Recompilation stopped")]
    assert list(finding["title"]) == ["Recompilation stopped at step 6"]


def test_metrics_file_values_match_torch_xlas_own_parser(files):
    from torch_xla.debug.metrics_compare_utils import parse_metrics_report

    prof = xlanb.load(files / "metrics.txt")
    records = (files / "metrics.txt").read_text().split("[MetricsData; step=")[1:]
    steps = prof.steps
    for number, record in enumerate(records):
        theirs = parse_metrics_report(record.split("\n", 1)[1])
        ours = steps[steps["step"] == number]
        values = {
            (str(n), str(f)): v
            for n, f, v in zip(ours["name"], ours["field"], ours["value"], strict=True)
        }
        for key, value in theirs.items():
            name, _, field = key.partition("__")
            if field == "Value":
                assert values[(name, "value")] == value
            elif field == "TotalSamples":
                assert values[(name, "count")] == value
            elif field == "Accumulator_sec":
                assert math.isclose(values[(name, "total")], value, rel_tol=1e-9)


def test_truncated_metrics_file_warns_and_keeps_complete_records(files, tmp_path):
    text = (files / "metrics.txt").read_text()
    cut = tmp_path / "metrics.txt"
    cut.write_text(text[: text.rindex("Counter:") + 12])  # the writer died mid-record
    with pytest.warns(TruncatedRecordWarning, match="last record is incomplete"):
        prof = xlanb.load(cut)
    assert sorted(prof.steps["step"].unique()) == list(range(SYNCS_RECORDED - 1))


def test_metrics_report_counters_fallbacks_and_percentiles(files):
    from torch_xla.debug.metrics_compare_utils import parse_metrics_report

    prof = xlanb.load(files / "report.txt")
    assert prof.backends == ["torch_xla"] and prof.environment["format"] == "metrics_report"
    theirs = parse_metrics_report((files / "report.txt").read_text())
    compile_time = prof.metrics.set_index("name").loc["CompileTime"]
    assert compile_time["count"] == theirs["CompileTime__TotalSamples"] == len(prof.compiles)
    assert math.isclose(compile_time["total"], theirs["CompileTime__Accumulator_sec"])
    assert math.isclose(compile_time["p50"], theirs["CompileTime__Percentile_50_sec"])
    assert math.isclose(prof.summary()["compile_seconds"], compile_time["total"])
    counters = prof.counters.set_index("name")
    assert (counters["delta"] == counters["total"]).all()
    assert counters.loc["MarkStep", "total"] == theirs["MarkStep__Value"]
    causes = dict(zip(prof.fallbacks["op"], prof.fallbacks["cause"], strict=True))
    assert causes["aten::nonzero"] == "dynamic_shape"
    assert causes["aten::_local_scalar_dense"] == "item"
    assert prof.findings["title"].str.contains("data-dependent output shapes").any()


def test_debug_file_compiles_with_causes_sizes_and_lines(files):
    prof = xlanb.load(files / "debug.txt")
    report = xlanb.load(files / "report.txt").metrics.set_index("name")
    compiles = prof.compiles
    assert len(compiles) == report.loc["CompileTime", "count"]
    assert len(prof.executions) == report.loc["ExecuteTime", "count"]
    assert compiles["graph"].str.fullmatch(r"[0-9a-f]{16,32}").all()  # no leading zeros
    assert compiles["computation_hash"].str.fullmatch(r"[0-9a-f]+").all()
    script = str(files / "workload.py")
    big = compiles[compiles["location"] == f"{script}:{line_of('big')}"]
    assert len(big) == 1
    assert big["output_bytes"].iloc[0] == pytest.approx(256 * 1024 * 4, rel=0.01)
    forced = compiles[compiles["cause"].str.startswith("forced sync")]
    assert f"{script}:{line_of('item')}" in set(forced["location"])
    assert forced["trigger"].str.contains("access tensor value").all()
    assert len(compiles[compiles["location"] == f"{script}:{line_of('loop')}"]) == 3
    assert prof.findings["title"].str.contains("forced sync").any()
    assert prof.findings["title"].str.contains("3 different graphs compiled from").any()


def test_truncated_debug_file_warns_and_keeps_complete_blocks(files, tmp_path):
    text = (files / "debug.txt").read_text()
    cut = tmp_path / "debug.txt"
    cut.write_text(text[: text.rindex("Graph Hash")])
    with pytest.warns(TruncatedRecordWarning):
        prof = xlanb.load(cut)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        whole = xlanb.load(files / "debug.txt")
    assert len(prof.executions) == len(whole.executions) - 1


def test_dump_directory_graphs_memory_and_shape_changes(files):
    prof = xlanb.load(files / "dump")
    report = xlanb.load(files / "report.txt").metrics.set_index("name")
    assert prof.backends == ["torch_xla"] and prof.environment["producer"] == "torch_xla"
    graphs = prof.graphs
    assert (graphs["kind"] == "hlo").sum() == report.loc["CompileTime", "count"]
    assert (graphs["kind"] == "hlo_optimized").sum() == (graphs["kind"] == "hlo").sum()
    assert graphs["nodes"].gt(0).all()
    optimized = graphs[graphs["kind"] == "hlo_optimized"]
    assert optimized["memory_bytes"].gt(0).all()
    assert optimized["memory_report"].str.contains("Total bytes").all()
    causes = list(prof.compiles["cause"])
    assert "new shape: f32[8,7] -> f32[16,7]" in causes
    assert "new shape: f32[16,7] -> f32[32,7]" in causes
    assert prof.findings["title"].str.contains("recompilation").any()


def test_saved_live_profile_becomes_a_chrome_trace(files, tmp_path):
    prof = xlanb.load(files / "live.xlanb.json")
    trace = prof.to_chrome_trace(tmp_path / "trace.json")
    assert json.loads((tmp_path / "trace.json").read_text()) == trace
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    assert names == {"torch_xla"}
    executions = prof.executions[(prof.executions["count"] == 1) & prof.executions["time"].notna()]
    assert sum(e["cat"] == "execute" for e in events) == len(executions) >= 2
    transfers = [e for e in events if e["cat"] == "transfer"]
    assert {e["name"] for e in transfers} >= {"TransferFromDeviceTime"}
    first = executions.iloc[0]
    event = min((e for e in events if e["cat"] == "execute"), key=lambda e: e["ts"])
    assert event["dur"] == pytest.approx(first["seconds"] * 1e6, abs=0.01)
    assert event["ts"] >= 0 and all(e["ts"] >= 0 for e in events)


def test_cli_run_profiles_a_torch_xla_script(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import sys\nimport torch, torch_xla\ndev = torch_xla.device()\n"
        "w = torch.randn(5, 5, device=dev)\n"
        "for n in (2, 4):\n"
        "    (torch.randn(n, 5).to(dev) @ w).sum()\n"
        "    torch_xla.sync()\n"
        "sys.exit(int(sys.argv[1]))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XLA_", "PT_XLA_"))}
    env["PJRT_DEVICE"] = "CPU"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "xlanb",
            "run",
            "-o",
            "r.html",
            "--save",
            "p.json",
            str(script),
            "5",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 5, result.stderr[-3000:]
    prof = xlanb.load(tmp_path / "p.json")
    assert prof.backends == ["torch_xla"] and prof.failed
    assert set(prof.compiles["cell_line"].dropna()) == {7}
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")


if __name__ == "__main__":  # regenerate tests/data/torch_xla (see tests/data/README.md)
    import tempfile

    target = Path(__file__).resolve().parents[1] / "data" / "torch_xla"
    scratch = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp())
    scratch.mkdir(parents=True, exist_ok=True)
    run_workload(scratch)
    shutil.rmtree(target, ignore_errors=True)
    (target / "dump").mkdir(parents=True)
    for name in ("metrics.txt", "debug.txt", "report.txt", "live.xlanb.json"):
        shutil.copy(scratch / name, target / name)
    for path in sorted((scratch / "dump").iterdir()):  # the small text files only
        if (
            path.suffix == ".txt"
            and path.stat().st_size < 8000
            or path.name.endswith("debug_options")
        ):
            shutil.copy(path, target / "dump" / path.name)
