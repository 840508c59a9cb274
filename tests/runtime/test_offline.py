"""``xlanb.load`` on files the runtimes write: JAX ``--xla_dump_to`` dumps and torch._lazy's
metrics report (produced here by one subprocess each), the metrics report of the PyTorch/XLA
troubleshooting guide, and the real PyTorch/XLA files of ``tests/data/torch_xla`` (see
``tests/data/README.md``); format detection errors; Chrome traces.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pandas as pd
import pytest

import xlanb
from tests.support.helpers import clean_env
from xlanb.core.errors import FormatError, TruncatedRecordWarning
from xlanb.core.profile import FRAME_COLUMNS, Profile, make_frame
from xlanb.formats import metrics_report
from xlanb.offline import from_text, step_table
from xlanb.offline import metrics_file as metrics_file_module

DATA = Path(__file__).parent.parent / "data"
XLA = DATA / "torch_xla"

JAX_WORKLOAD = """\
import jax, jax.numpy as jnp
@jax.jit
def step(x, w):
    return jnp.tanh(x @ w).sum()
for rows in (4, 8):
    step(jnp.ones((rows, 3)), jnp.ones((3, 2))).block_until_ready()
"""

LAZY_WORKLOAD = """\
import sys
import torch, torch._lazy, torch._lazy.metrics, torch._lazy.ts_backend
torch._lazy.ts_backend.init()
x = torch.randn(8, 4, device="lazy")
for _ in range(3):
    y = (x @ x.T).relu().sum()
    torch._lazy.mark_step()
value = y.item()
kept = x[x > 0]
torch._lazy.mark_step()
open(sys.argv[1], "w").write(torch._lazy.metrics.metrics_report())
"""


@pytest.fixture(scope="module")
def jax_dump(tmp_path_factory) -> Path:
    pytest.importorskip("jax")
    out = tmp_path_factory.mktemp("jax")
    (out / "workload.py").write_text(JAX_WORKLOAD)
    env = {**clean_env(), "XLA_FLAGS": f"--xla_dump_to={out / 'dump'}", "JAX_PLATFORMS": "cpu"}
    result = subprocess.run(
        [sys.executable, str(out / "workload.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return out / "dump"


@pytest.fixture(scope="module")
def lazy_report(tmp_path_factory) -> Path:
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("lazy")
    (out / "workload.py").write_text(LAZY_WORKLOAD)
    result = subprocess.run(
        [sys.executable, str(out / "workload.py"), str(out / "report.txt")],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return out / "report.txt"


# -- XLA dumps ---------------------------------------------------------------------------------
def test_jax_dump_has_each_module_before_and_after_optimization(jax_dump):
    prof = xlanb.load(jax_dump)
    assert prof.backends == ["jax"] and prof.environment["format"] == "xla_dump"
    steps = prof.graphs[prof.graphs["graph"] == "jit_step"]
    assert sorted(steps["kind"]) == ["hlo", "hlo", "hlo_optimized", "hlo_optimized"]
    assert steps["text"].str.startswith("HloModule jit_step").all()
    assert steps["nodes"].gt(3).all()
    optimized = steps[steps["kind"] == "hlo_optimized"]
    # (4,3) + (3,2) + a scalar + the (4,2) product: 48 + 24 + 4 + 32 bytes at least
    assert optimized["memory_bytes"].iloc[0] >= 108
    assert optimized["memory_report"].str.contains("Total bytes").all()
    compiles = prof.compiles[prof.compiles["graph"] == "jit_step"]
    assert list(compiles["cause"]) == ["new graph", "new shape: f32[4,3] -> f32[8,3]"]
    assert not compiles["eager"].any() and prof.compiles["eager"].any()
    titles = list(prof.findings["title"])
    assert "jit_step compiled 2 times for different shapes" in titles
    assert not any("broadcast" in t for t in titles)  # eager single ops are not findings


def test_one_hlo_module_file(jax_dump):
    path = next(jax_dump.glob("module_*.jit_step.cpu_after_optimizations.txt"))
    prof = xlanb.load(path)
    assert list(prof.graphs["kind"]) == ["hlo_optimized"]
    assert list(prof.graphs["graph"]) == ["jit_step"] and prof.backends == ["jax"]


def test_dump_with_a_broken_module_names_the_file(jax_dump, tmp_path):
    broken = tmp_path / "dump"
    shutil.copytree(jax_dump, broken)
    victim = next(broken.glob("module_*.jit_step.before_optimizations.txt"))
    victim.write_text("\n\nnot hlo\n")
    with pytest.raises(FormatError) as caught:
        xlanb.load(broken)
    assert caught.value.path == str(victim) and caught.value.line == 3


def test_torch_xla_dump_fixture_is_read_as_torch_xla():
    prof = xlanb.load(XLA / "dump")
    assert prof.backends == ["torch_xla"]
    assert "new shape: f32[8,7] -> f32[16,7]" in set(prof.compiles["cause"])


# -- metrics reports ---------------------------------------------------------------------------
def test_torch_lazy_report(lazy_report):
    prof = xlanb.load(lazy_report)
    assert prof.backends == ["torch_lazy"]
    assert prof.environment["backend_report"] == "TSBackendImpl: N/A"
    counters = prof.counters.set_index("name")
    assert counters.loc["MarkStep", "total"] == 4
    assert len(prof.compiles) == counters.loc["UncachedCompile", "total"]
    assert prof.compiles["seconds"].isna().all()  # torch._lazy does not time compiles
    assert prof.summary()["executions"] == (
        counters.loc["UncachedCompile", "total"] + counters.loc["CachedCompile", "total"]
    )
    causes = dict(zip(prof.fallbacks["op"], prof.fallbacks["cause"], strict=True))
    assert causes == {"aten::_local_scalar_dense": "item", "aten::index.Tensor": "dynamic_shape"}
    assert set(prof.metrics["name"]) >= {"DeviceLockWait", "TensorsGraphSize"}
    size = prof.metrics.set_index("name").loc["TensorsGraphSize"]
    assert size["unit"] == "count" and size["count"] == 4


def test_troubleshooting_guide_example():
    """The example of PyTorch/XLA's TROUBLESHOOTING.md (older "Counter:" accumulator line)."""
    prof = xlanb.load(DATA / "troubleshooting_report.txt")
    assert prof.backends == ["torch_xla"]
    metric = prof.metrics.set_index("name").loc["CompileTime"]
    assert metric["unit"] == "s" and metric["count"] == 202
    assert metric["total"] == pytest.approx(6 * 60 + 9.401746001)
    assert metric["p50"] == pytest.approx(1.228773e-3)
    assert metric["p99"] == pytest.approx(21.102853173)
    assert math.isnan(metric["max"])  # a report does not say
    assert metric["rate"] == pytest.approx(0.425201)
    assert len(prof.compiles) == 202
    assert prof.compiles["seconds_estimated"].all()
    assert prof.summary()["compile_seconds"] == pytest.approx(metric["total"])
    assert prof.counters.set_index("name").loc["CachedSyncTensors", "total"] == 395
    assert list(prof.fallbacks["op"]) == ["aten::nonzero"]
    assert list(prof.fallbacks["count"]) == [33]
    assert prof.findings["title"].str.contains("data-dependent output shapes").any()


def test_report_with_a_bad_line_names_it(tmp_path):
    text = (XLA / "report.txt").read_text().split("\n")
    text.insert(7, "  Median: 3ms")
    path = tmp_path / "report.txt"
    path.write_text("\n".join(text))
    with pytest.raises(FormatError) as caught:
        xlanb.load(path)
    assert caught.value.path == str(path) and caught.value.line == 8
    assert "Median" in str(caught.value)


def test_report_block_without_its_value_names_the_block(tmp_path):
    path = tmp_path / "report.txt"
    path.write_text(
        "Counter: CachedCompile\n  Value: 3\nCounter: MarkStep\nCounter: X\n  Value: 1\n"
    )
    with pytest.raises(FormatError, match="line 3: Counter 'MarkStep' has no Value line"):
        xlanb.load(path)


# -- XLA_METRICS_FILE (real PyTorch/XLA file) --------------------------------------------------
def test_metrics_file_fixture_steps_and_step_table():
    prof = xlanb.load(XLA / "metrics.txt")
    table = step_table(prof)
    assert list(table["step"]) == list(range(12))
    assert list(table.index[table["compiles"] > 0]) == [0, 1, 2, 4, 6]
    assert table["compile_seconds"].sum() == pytest.approx(prof.summary()["compile_seconds"])
    assert list(table.columns) == [
        "run",
        "step",
        "compiles",
        "compile_seconds",
        "executions",
        "execute_seconds",
        "transfers_to_device",
        "transfers_from_device",
        "uncached_compiles",
        "syncs",
        "fallback_ops",
    ]
    assert (table["syncs"] == 1).all()


def test_metrics_file_profile_round_trips_through_save(tmp_path):
    prof = xlanb.load(XLA / "metrics.txt")
    again = xlanb.load(prof.save(tmp_path / "m.xlanb.json"))
    for name in FRAME_COLUMNS:
        pd.testing.assert_frame_equal(getattr(prof, name), getattr(again, name))
    pd.testing.assert_frame_equal(step_table(prof), step_table(again))


def test_metrics_file_fast_and_strict_parsers_agree():
    text = (XLA / "metrics.txt").read_text()
    fast = metrics_report.fast_columns(text)
    strict, _ = metrics_report.strict_columns(text, "x")
    steps = metrics_file_module.steps_frame(fast)
    pd.testing.assert_frame_equal(steps, metrics_file_module.steps_frame(strict))
    # the loader's shortcut gives the same table as step_table() on any Profile
    pd.testing.assert_frame_equal(
        metrics_file_module._table_of_columns(steps, fast), step_table(Profile(steps=steps))
    )


def test_metrics_file_appended_by_two_runs_counts_runs(tmp_path):
    text = (XLA / "metrics.txt").read_text()
    path = tmp_path / "metrics.txt"
    path.write_text(text + text)
    table = step_table(xlanb.load(path))
    assert list(table["run"].unique()) == [0, 1] and len(table) == 24
    assert list(table[table["run"] == 1].index[table["compiles"][12:] > 0] - 12) == [0, 1, 2, 4, 6]


def test_metrics_file_with_a_bad_line_in_the_middle(tmp_path):
    lines = (XLA / "metrics.txt").read_text().split("\n")
    lines[40] = "garbage"
    path = tmp_path / "metrics.txt"
    path.write_text("\n".join(lines))
    with pytest.raises(FormatError) as caught:
        xlanb.load(path)
    assert caught.value.line == 41


def test_truncated_metrics_file_fixture(tmp_path):
    text = (XLA / "metrics.txt").read_text()
    path = tmp_path / "metrics.txt"
    path.write_text(text[:-200])
    with pytest.warns(TruncatedRecordWarning, match=r"metrics.txt, line \d+: the last record"):
        prof = xlanb.load(path)
    assert prof.steps["step"].max() == 10


# -- PT_XLA_DEBUG_FILE -------------------------------------------------------------------------
def test_debug_file_fixture():
    prof = xlanb.load(XLA / "debug.txt")
    assert len(prof.compiles) == 7 and prof.compiles["output_bytes"].max() == pytest.approx(
        2**20, rel=0.01
    )
    assert prof.compiles["stack"].str.contains(r"<module> \(", regex=True).all()


def test_debug_file_block_out_of_place(tmp_path):
    lines = (XLA / "debug.txt").read_text().split("\n")
    lines.insert(5, "Execution Analysis:   Graph Hash: 00")
    path = tmp_path / "debug.txt"
    path.write_text("\n".join(lines))
    with pytest.raises(FormatError, match=r"line 6: Execution Analysis line inside the block"):
        xlanb.load(path)


# -- detection and saved profiles --------------------------------------------------------------
@pytest.mark.parametrize(
    "content, line",
    [
        ("", 1),
        ("\n\n   \n", 1),
        ("hello\n", 1),
        ("\n\nMetrics: CompileTime\n", 3),
        ("[metricsdata; step=1]\n", 1),
        (b"\xff\xfe\x00junk", 1),
    ],
)
def test_other_files_raise_format_error_naming_the_line(tmp_path, content, line):
    path = tmp_path / "input.txt"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(FormatError) as caught:
        xlanb.load(path)
    assert caught.value.path == str(path) and caught.value.line == line


def test_directory_without_modules(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(FormatError, match="without XLA dump modules"):
        xlanb.load(tmp_path)


def test_saved_profile_round_trip_and_damage(tmp_path):
    prof = xlanb.load(XLA / "live.xlanb.json")
    again = xlanb.load(prof.save(tmp_path / "again.json"))
    for name in FRAME_COLUMNS:
        pd.testing.assert_frame_equal(getattr(prof, name), getattr(again, name))
    data = json.loads((tmp_path / "again.json").read_text())
    data["frames"]["compiles"]["data"]["seconds"] = ["soon"]
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(FormatError, match="bad.json"):
        xlanb.load(tmp_path / "bad.json")
    (tmp_path / "cut.json").write_text((tmp_path / "again.json").read_text()[:500])
    with pytest.raises(FormatError, match="not JSON"):
        xlanb.load(tmp_path / "cut.json")


def test_from_text_reads_without_a_file():
    prof = from_text((XLA / "report.txt").read_text(), "pasted report")
    assert prof.name == "pasted report" and not prof.counters.empty


# -- Chrome traces -----------------------------------------------------------------------------
def _synthetic() -> Profile:
    compiles = make_frame(
        "compiles",
        [  # `time` is when the event ended
            {
                "backend": "torch_xla",
                "graph": "g1",
                "cause": "new graph",
                "seconds": 0.5,
                "time": 101.0,
            },
            {
                "backend": "torch_xla",
                "graph": "g2",
                "cause": "new graph",
                "seconds": math.nan,
                "time": 102.0,
            },  # unknown duration: no event
            {
                "backend": "jax",
                "graph": "jit_f",
                "cause": "new graph",
                "seconds": 0.25,
                "time": 100.0,
            },
        ],
    )
    executions = make_frame(
        "executions",
        [
            {"backend": "torch_xla", "graph": "g1", "seconds": 0.001, "time": 101.5, "count": 1},
            {"backend": "jax", "graph": "jit_f", "seconds": 0.3, "time": 100.5, "count": 7},
        ],
    )
    samples = make_frame(
        "samples",
        [
            {"backend": "torch_xla", "metric": "TransferToDeviceTime", "time": 100.2, "value": 0.1},
            {"backend": "torch_xla", "metric": "OutboundData", "time": 100.2, "value": 64.0},
        ],
    )
    metrics = make_frame(
        "metrics",
        [
            {"backend": "torch_xla", "name": "TransferToDeviceTime", "unit": "s", "count": 1},
            {"backend": "torch_xla", "name": "OutboundData", "unit": "bytes", "count": 1},
        ],
    )
    return Profile(
        name='<synthetic & "quoted">',
        backends=["torch_xla", "jax"],
        started_at=99.0,
        compiles=compiles,
        executions=executions,
        samples=samples,
        metrics=metrics,
    )


def test_chrome_trace_places_known_events_and_skips_unknown_ones(tmp_path):
    trace = _synthetic().to_chrome_trace(tmp_path / "t.json")
    assert trace["displayTimeUnit"] == "ms"
    assert json.loads((tmp_path / "t.json").read_text()) == trace
    meta = [e for e in trace["traceEvents"] if e["ph"] == "M"]
    processes = {e["args"]["name"]: e["pid"] for e in meta if e["name"] == "process_name"}
    assert processes == {"torch_xla": 1, "jax": 2}
    threads = {(e["pid"], e["args"]["name"]) for e in meta if e["name"] == "thread_name"}
    assert threads == {(1, "graph g1"), (1, "transfers"), (2, "graph jit_f")}
    events = [
        (e["pid"], e["name"], e["ts"], e["dur"]) for e in trace["traceEvents"] if e["ph"] == "X"
    ]
    assert events == [
        (2, "compile", 0.75e6, 0.25e6),  # 100.0 - 0.25 - 99.0
        (1, "TransferToDeviceTime", 1.1e6, 0.1e6),  # 100.2 - 0.1 - 99.0
        (1, "compile", 1.5e6, 0.5e6),  # 101.0 - 0.5 - 99.0
        (1, "execute", 2.499e6, 1e3),
    ]  # 101.5 - 0.001 - 99.0
    compile_event = next(
        e for e in trace["traceEvents"] if e.get("cat") == "compile" and e["pid"] == 1
    )
    assert compile_event["args"] == {"graph": "g1", "cause": "new graph"}


def test_chrome_trace_of_an_offline_profile_has_no_invented_events():
    trace = xlanb.load(XLA / "metrics.txt").to_chrome_trace()
    assert not [e for e in trace["traceEvents"] if e["ph"] == "X"]
    json.dumps(trace, allow_nan=False)


def test_chrome_trace_of_a_real_torch_xla_capture():
    prof = xlanb.load(XLA / "live.xlanb.json")
    trace = prof.to_chrome_trace()
    json.dumps(trace, allow_nan=False)
    compiles = [e for e in trace["traceEvents"] if e.get("cat") == "compile"]
    assert len(compiles) == prof.compiles["time"].notna().sum() >= 1
    for event, (_, row) in zip(
        sorted(compiles, key=lambda e: e["args"]["graph"]),
        prof.compiles.sort_values("graph").iterrows(),
        strict=True,
    ):
        assert event["dur"] == pytest.approx(row["seconds"] * 1e6, abs=0.01)


def test_warnings_are_quiet_for_complete_files():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for path in (XLA / "metrics.txt", XLA / "debug.txt", XLA / "report.txt", XLA / "dump"):
            xlanb.load(path)


def test_metrics_file_counts_launches_when_the_runs_finish_later():
    """torch_xla writes a record at each sync and its runs finish on another thread: in this
    real file (a loaded 2-core machine) ExecuteTime stayed at 6 runs while ExecuteComputation
    counted all 12 launches. A step's executions are its launches."""
    prof = xlanb.load(XLA / "metrics_lagging.txt")
    table = step_table(prof)
    assert table["executions"].sum() == 12
    assert prof.executions["count"].sum() == 12
    assert prof.metrics.set_index("name").loc["ExecuteTime", "count"] == 6


def test_headline_gives_no_time_the_file_does_not_hold():
    """A debug file counts compiles and executions but times none: no "(0 µs)"."""
    from xlanb.views.summary import headline

    head = dict(headline(xlanb.load(XLA / "debug.txt")))
    assert head["wall"] == "-"
    assert head["compiles"] == "7" and head["executions"] == "14"


def test_metrics_file_without_the_launch_counter_counts_finished_runs(tmp_path):
    """A file whose records lack ExecuteComputation (the real file with it cut out): the
    executions are ExecuteTime's samples, as before the launch counter was read."""
    text = re.sub(
        r"Counter: ExecuteComputation\n  Value: \d+\n", "", (XLA / "metrics.txt").read_text()
    )
    assert "ExecuteComputation" not in text
    path = tmp_path / "metrics.txt"
    path.write_text(text)
    table = step_table(xlanb.load(path))
    finished = xlanb.load(XLA / "metrics.txt").metrics.set_index("name").loc["ExecuteTime", "count"]
    assert table["executions"].sum() == finished


def test_a_trace_without_xla_ops_says_so(tmp_path):
    # a real JAX trace of a cell that ran no program: an empty per-op table, and why
    import jax

    jax.profiler.start_trace(str(tmp_path))
    sum(range(1000))
    jax.profiler.stop_trace()
    prof = xlanb.load(tmp_path)
    assert prof.ops.empty
    assert any("no XLA op events" in note for note in prof.notes), prof.notes
    # a trace with op events has no such note
    assert not xlanb.load(DATA / "xla_tpu" / "v6e4_inference").notes
