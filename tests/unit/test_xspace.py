"""xlanb.formats.xspace: the XSpace (*.xplane.pb) reader, on recorded fixtures (no runtime).

Fixtures: tests/data/xspace/ (recorded by tests/data/xspace/make_xspace.py); each .json holds the
Python-side time.time_ns() marks taken around every step of the traced workload.
"""

from __future__ import annotations

import gzip
import json
import os
import random
from pathlib import Path

import pandas as pd
import pytest

from xlanb.formats import xspace as X

DATA = Path(__file__).resolve().parents[1] / "data" / "xspace"
JAX_PB = DATA / "jax_sort.xplane.pb"
XLA_PB = DATA / "torch_xla_mlp.xplane.pb"


def _marks(pb: Path) -> dict:
    return json.loads(pb.with_name(pb.name.replace(".xplane.pb", ".json")).read_text())


@pytest.fixture(scope="module")
def jax_space() -> X.XSpaceEvents:
    return X.read_xspace(JAX_PB)


@pytest.fixture(scope="module")
def xla_space() -> X.XSpaceEvents:
    return X.read_xspace(XLA_PB)


# --------------------------------------------------------------------------- recorded fixtures


def test_fixtures_are_small():
    for pb in (JAX_PB, XLA_PB):
        assert 0 < pb.stat().st_size < 200_000


@pytest.mark.parametrize("pb", [JAX_PB, XLA_PB], ids=["jax", "torch_xla"])
def test_columns_and_types(pb):
    xs = X.read_xspace(pb)
    ev = xs.events
    assert tuple(ev.columns) == X.EVENT_COLUMNS
    assert ev["start_ns"].dtype == "int64" and ev["duration_ns"].dtype == "float64"
    assert str(ev["program_id"].dtype) == "Int64" and str(ev["run_id"].dtype) == "Int64"
    assert len(ev) > 100
    assert "/host:CPU" in xs.planes
    assert xs.hostnames and not xs.errors
    assert set(ev["kind"]) <= {"op", *X.SPAN_KINDS}
    # missing stats are NA, never the string "None"
    assert ev.loc[ev["name"] == "ThreadpoolListener::Record", "hlo_op"].isna().all()
    assert not (ev["hlo_op"] == "None").any()


@pytest.mark.parametrize("pb", [JAX_PB, XLA_PB], ids=["jax", "torch_xla"])
def test_epoch_times_inside_the_traced_window(pb):
    xs = X.read_xspace(pb)
    marks = _marks(pb)
    assert xs.normalized  # both runtimes write times relative to profile_start_time
    assert marks["before_start_ns"] <= xs.profile_start_ns < marks["steps"][0][0]
    assert xs.profile_start_ns < xs.profile_stop_ns <= marks["after_stop_ns"]
    ev = xs.events
    end = ev["start_ns"] + ev["duration_ns"]
    assert ev["start_ns"].min() >= marks["before_start_ns"]
    assert end.max() <= marks["after_stop_ns"]


def test_jax_top_op_is_the_sort(jax_space):
    ops = jax_space.op_events()
    totals = ops.groupby("hlo_op")["duration_ns"].sum().sort_values(ascending=False)
    assert totals.index[0].startswith("sort")
    assert totals.iloc[0] > 0.5 * totals.sum()


@pytest.mark.parametrize("pb", [JAX_PB, XLA_PB], ids=["jax", "torch_xla"])
def test_every_op_has_module_and_program(pb):
    ops = X.read_xspace(pb).op_events()
    assert len(ops) >= 5 * 4
    assert ops["hlo_module"].notna().all()
    assert ops["program_id"].notna().all()
    assert (ops["kind"] == "op").all()
    assert not ops["name"].str.startswith("end: ").any()


def test_jax_ops_identify_module_and_runs(jax_space):
    ops = jax_space.op_events()
    assert set(ops["hlo_module"]) == {"jit_step"}
    assert ops["program_id"].nunique() == 1
    assert ops["run_id"].notna().all()
    assert ops["run_id"].nunique() == 5  # 5 calls of the jitted step


def test_jax_clock_alignment_with_python_marks(jax_space):
    """time.time_ns() taken before each call precedes its dispatch by microseconds, and each
    run's thunks lie inside that call's window: trace times are epoch ns."""
    marks = _marks(JAX_PB)["steps"]
    ev = jax_space.events
    dispatch = ev.loc[ev["name"] == "PjitFunction(step)", "start_ns"]
    for a, b in marks:
        inside = dispatch[(dispatch >= a) & (dispatch <= b)]
        assert len(inside) == 2  # the dispatch span is nested twice
        assert 0 <= inside.min() - a < 1_000_000  # < 1 ms after the Python mark
    ops = jax_space.op_events()
    runs = ops.groupby("run_id").agg(start=("start_ns", "min"), end=("start_ns", "max"))
    runs = runs.sort_values("start")
    assert len(runs) == len(marks)
    for (a, b), (_, run) in zip(marks, runs.iterrows(), strict=True):
        assert a <= run["start"] and run["end"] <= b


def test_torch_xla_clock_alignment_with_python_marks(xla_space):
    info = _marks(XLA_PB)
    steps = info["steps"]
    ev = xla_space.events
    markers = ev.loc[ev["name"] == "StepMarker", "start_ns"].sort_values().tolist()
    assert len(markers) == len(steps)
    for (a, b), t in zip(steps, markers, strict=True):
        assert a <= t <= b
    # execution is asynchronous: launched after its step began, before the next step ends
    launches = ev.loc[ev["name"] == "PjRtComputationClient::ExecuteComputation", "start_ns"]
    launches = launches.sort_values().tolist()
    assert len(launches) == len(steps)
    limits = [s[1] for s in steps[1:]] + [info["after_item_ns"]]
    for (a, _), t, limit in zip(steps, launches, limits, strict=True):
        assert a <= t <= limit
    ops = xla_space.op_events()
    assert ops["hlo_module"].str.startswith("SyncTensorsGraph").all()
    assert ops["run_id"].isna().all()  # torch_xla 2.9 thunks carry no run_id
    assert (ops["start_ns"] >= steps[0][0]).all()
    assert (ops["start_ns"] + ops["duration_ns"] <= info["after_item_ns"]).all()


def test_jax_host_spans(jax_space):
    spans = jax_space.host_spans()
    assert spans["hlo_op"].isna().all()
    assert not (spans["kind"] == "marker").any()
    by_kind = spans.groupby("kind")["name"].agg(set)
    assert {"backend_compile_and_load", "PjRtCpuClient::Compile"} <= by_kind["compile"]
    assert "CommonPjRtLoadedExecutable::ExecuteHelperOnSingleDevice" in by_kind["execute"]
    assert "CommonPjRtBuffer::Await" in by_kind["sync_wait"]
    assert "PjitFunction(step)" in by_kind["trace"]
    compile_only = jax_space.host_spans(["compile"])
    assert set(compile_only["kind"]) == {"compile"}
    markers = jax_space.host_spans(include_markers=True)
    assert len(markers) > len(spans) and (markers["kind"] == "marker").any()


def test_torch_xla_host_spans(xla_space):
    by_kind = xla_space.host_spans().groupby("kind")["name"].agg(set)
    assert {"XLAGraphExecutor::Compile", "PjRtComputationClient::Compile"} <= by_kind["compile"]
    assert "PjRtComputationClient::ExecuteComputation" in by_kind["execute"]
    assert "PjRtComputationClient::TransferFromDevice" in by_kind["transfer"]  # loss.item()
    assert "TensorCollectionBarrier" in by_kind["sync_wait"]
    assert "StepMarker" in by_kind["trace"]


def test_parse_bytes_equals_read_file():
    a = X.read_xspace(XLA_PB).events
    b = X.parse_xspace(XLA_PB.read_bytes()).events
    pd.testing.assert_frame_equal(a, b)


# ------------------------------------------------------------------------------------ errors


def test_missing_file_names_it(tmp_path):
    path = tmp_path / "nope.xplane.pb"
    with pytest.raises(X.XSpaceError, match="nope.xplane.pb") as info:
        X.read_xspace(path)
    assert isinstance(info.value, FileNotFoundError)
    assert info.value.path == str(path)


def test_empty_file_is_an_error_not_an_empty_trace(tmp_path):
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(b"")
    with pytest.raises(X.XSpaceError, match=r"host\.xplane\.pb.*0 bytes.*2 GB"):
        X.read_xspace(path)


@pytest.mark.parametrize(
    "payload",
    [
        b"hello, this is not a protobuf\n" * 10,
        bytes(random.Random(0).getrandbits(8) for _ in range(4096)),
        b"\xff" * 64,
    ],
    ids=["text", "random", "ff"],
)
def test_garbage_names_the_file(tmp_path, payload):
    path = tmp_path / "garbage.xplane.pb"
    path.write_bytes(payload)
    with pytest.raises(X.XSpaceError, match="garbage.xplane.pb"):
        X.read_xspace(path)


def test_gzip_json_is_rejected_with_a_hint(tmp_path):
    path = tmp_path / "vm.trace.json.gz"
    path.write_bytes(gzip.compress(b'{"traceEvents": []}'))
    with pytest.raises(X.XSpaceError, match=r"vm\.trace\.json\.gz.*gzip"):
        X.read_xspace(path)


def test_truncated_fixture_is_an_error(tmp_path):
    data = JAX_PB.read_bytes()
    path = tmp_path / "cut.xplane.pb"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(X.XSpaceError, match="cut.xplane.pb"):
        X.read_xspace(path)


# ------------------------------------------------------------------------------- find files


def test_find_xspace_files_newest_run(tmp_path):
    assert X.find_xspace_files(tmp_path) == []
    old = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    new = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_05"
    for d in (old, new):
        d.mkdir(parents=True)
    (old / "a.xplane.pb").write_bytes(JAX_PB.read_bytes())
    (new / "b.xplane.pb").write_bytes(XLA_PB.read_bytes())
    (new / "a.xplane.pb").write_bytes(XLA_PB.read_bytes())
    (new / "b.trace.json.gz").write_bytes(b"")
    os.utime(old / "a.xplane.pb", ns=(1_000_000_000, 1_000_000_000))
    found = X.find_xspace_files(tmp_path)
    assert found == [new / "a.xplane.pb", new / "b.xplane.pb"]
    assert X.find_xspace_files(new / "b.xplane.pb") == [new / "b.xplane.pb"]
    # a directory reads its newest run's first file
    assert X.read_xspace(tmp_path).path == str(new / "a.xplane.pb")
    (tmp_path / "empty").mkdir()
    with pytest.raises(X.XSpaceNotFoundError, match=r"empty: no \*\.xplane\.pb"):
        X.read_xspace(tmp_path / "empty")


# ----------------------------------------------------------------- constructed XSpace (exact)


def _synthetic() -> bytes:
    space = X.XSpace()
    space.hostnames.append("h")
    env = space.planes.add(name="Task Environment")
    env.stat_metadata[1].name = "profile_start_time"
    env.stats.add(metadata_id=1, uint64_value=1_700_000_000_000_000_000)

    host = space.planes.add(name="/host:CPU")
    for sid, name in (
        (1, "hlo_op"),
        (2, "hlo_module"),
        (3, "program_id"),
        (4, "run_id"),
        (5, "fusion.1"),
        (6, "jit_f"),
    ):
        host.stat_metadata[sid].id = sid
        host.stat_metadata[sid].name = name
    host.event_metadata[10].name = "fusion.1"
    host.event_metadata[11].name = "Wait for usage holds"
    host.event_metadata[12].display_name = "only display"
    # metadata-level stats: hlo_module and program_id shared by every event of this metadata
    md = host.event_metadata[13]
    md.name = "copy.2"
    md.stats.add(metadata_id=2, str_value="jit_g")
    md.stats.add(metadata_id=3, int64_value=7)
    line = host.lines.add(id=1, name="worker", timestamp_ns=1_000)  # relative: normalized
    ev = line.events.add(metadata_id=10, offset_ps=2_500_000, duration_ps=1_500_500)
    ev.stats.add(metadata_id=1, ref_value=5)
    ev.stats.add(metadata_id=2, ref_value=6)
    ev.stats.add(metadata_id=3, uint64_value=3)
    ev.stats.add(metadata_id=4, int64_value=99)
    line.events.add(metadata_id=11, offset_ps=5_000_000, duration_ps=1_000)
    line.events.add(metadata_id=12, offset_ps=6_000_000, duration_ps=0)
    ev = line.events.add(metadata_id=13, offset_ps=7_000_000, duration_ps=2_000)
    ev.stats.add(metadata_id=1, str_value="copy.2")
    ev.stats.add(metadata_id=3, int64_value=8)  # the event's stat wins over the metadata's
    line.events.add(metadata_id=11, num_occurrences=4, duration_ps=9)  # aggregated: skipped
    line.events.add(metadata_id=99, offset_ps=8_000_000, duration_ps=1)  # unknown metadata

    gpu = space.planes.add(name="/device:GPU:0")
    gpu.stat_metadata[1].name = "hlo_op"
    gpu.event_metadata[1].name = "kernel_a"
    absolute = gpu.lines.add(id=2, name="Stream #7", timestamp_ns=1_700_000_000_000_500_000)
    ev = absolute.events.add(metadata_id=1, offset_ps=1_000, duration_ps=4_000_000)
    ev.stats.add(metadata_id=1, str_value="dot.3")
    gpu.lines.add(id=3, name="empty line")
    return space.SerializeToString()


def test_synthetic_exact_values():
    xs = X.parse_xspace(_synthetic(), source="synthetic")
    t0 = 1_700_000_000_000_000_000
    assert xs.profile_start_ns == t0 and xs.profile_stop_ns is None and xs.normalized
    ev = xs.events
    assert ev["name"].tolist() == [
        "fusion.1",
        "Wait for usage holds",
        "only display",
        "copy.2",
        "99",
        "kernel_a",
    ]
    assert ev["plane"].tolist() == ["/host:CPU"] * 5 + ["/device:GPU:0"]
    assert ev["line"].tolist() == ["worker"] * 5 + ["Stream #7"]
    assert ev["start_ns"].tolist() == [
        t0 + 1_000 + 2_500,
        t0 + 6_000,
        t0 + 7_000,
        t0 + 8_000,
        t0 + 9_000,
        t0 + 500_000 + 1,
    ]
    assert ev["duration_ns"].tolist() == [1_500.5, 1.0, 0.0, 2.0, 0.001, 4_000.0]
    assert ev["hlo_op"].tolist()[:1] == ["fusion.1"]  # ref_value -> stat metadata name
    assert ev["hlo_module"].iloc[0] == "jit_f"
    assert ev["program_id"].iloc[0] == 3 and ev["run_id"].iloc[0] == 99
    row = ev.iloc[3]  # event stats + metadata stats
    assert (row["hlo_op"], row["hlo_module"], row["program_id"]) == ("copy.2", "jit_g", 8)
    assert pd.isna(row["run_id"])
    assert ev["hlo_op"].isna().tolist() == [False, True, True, False, True, False]
    assert ev["kind"].tolist() == ["op", "sync_wait", "other", "op", "other", "op"]
    assert xs.op_events()["hlo_op"].tolist() == ["fusion.1", "copy.2", "dot.3"]
    assert xs.host_spans()["name"].tolist() == ["Wait for usage holds", "only display", "99"]
    assert xs.plane_stats["Task Environment"] == {"profile_start_time": t0}


def test_no_task_environment_keeps_line_times():
    space = X.XSpace()
    plane = space.planes.add(name="/host:CPU")
    plane.event_metadata[1].name = "x"
    plane.lines.add(name="l", timestamp_ns=123).events.add(metadata_id=1, offset_ps=7_000)
    xs = X.parse_xspace(space.SerializeToString())
    assert not xs.normalized and xs.profile_start_ns is None
    assert xs.events["start_ns"].tolist() == [130]


def test_trace_without_events_is_an_empty_table():
    # what torch_xla writes for a start/stop with nothing run in between
    space = X.XSpace()
    space.planes.add(name="/host:CPU")
    env = space.planes.add(name="Task Environment")
    env.stat_metadata[1].name = "profile_start_time"
    env.stats.add(metadata_id=1, uint64_value=5)
    xs = X.parse_xspace(space.SerializeToString())
    assert xs.events.empty and tuple(xs.events.columns) == X.EVENT_COLUMNS
    assert xs.op_events().empty and xs.host_spans().empty and xs.profile_start_ns == 5


def test_space_without_planes_is_an_error():
    space = X.XSpace()
    space.hostnames.append("h")
    with pytest.raises(X.XSpaceError, match="mine.*no planes"):
        X.parse_xspace(space.SerializeToString(), source="mine")


@pytest.mark.parametrize(
    "name, kind",
    [
        ("CommonPjRtLoadedExecutable::ExecuteHelperOnSingleDevice", "execute"),
        ("PjRtComputationClient::ExecuteComputation", "execute"),
        ("ThunkExecutor::Execute", "execute"),
        ("Transpose::Execute", "other"),
        ("ThunkExecutor::Execute (wait for completion)", "sync_wait"),
        ("Wait for donation holds", "sync_wait"),
        ("TensorCollectionBarrier", "sync_wait"),
        ("PjRtComputationClient::TransferToDevice", "transfer"),
        ("D2H Dispatch", "transfer"),
        ("backend_compile_and_load", "compile"),
        ("XLAGraphExecutor::Compile", "compile"),
        ("PjitFunction(step)", "trace"),
        ("SyncTensorsGraphInternal", "trace"),
        ("end: sort.0", "marker"),
        ("ThreadpoolListener::Record", "marker"),
        ("dce", "other"),
    ],
)
def test_classify_span(name, kind):
    assert X.classify_span(name) == kind


# ------------------------------------------------------------- cross-check with JAX's reader


def test_matches_jax_profile_data(jax_space):
    jax_profiler = pytest.importorskip("jax.profiler")
    ref = jax_profiler.ProfileData.from_file(str(JAX_PB))
    expected = []
    for plane in ref.planes:
        for line in plane.lines:
            for event in line.events:
                stats = dict(event.stats)
                expected.append(
                    (
                        plane.name,
                        line.name,
                        event.name,
                        round(event.start_ns),
                        round(event.duration_ns * 1000),
                        stats.get("hlo_op"),
                        stats.get("hlo_module"),
                        stats.get("run_id"),
                    )
                )
    ev = jax_space.events
    start = jax_space.profile_start_ns
    ours = [
        (
            r.plane,
            r.line,
            r.name,
            int(r.start_ns - start),
            round(r.duration_ns * 1000),
            None if pd.isna(r.hlo_op) else r.hlo_op,
            None if pd.isna(r.hlo_module) else r.hlo_module,
            None if pd.isna(r.run_id) else int(r.run_id),
        )
        for r in ev.itertuples()
    ]
    assert len(ours) == len(expected) > 100
    assert sorted(ours, key=repr) == sorted(expected, key=repr)


@pytest.mark.parametrize("pb", [JAX_PB, XLA_PB], ids=["jax", "torch_xla"])
def test_cpu_traces_have_no_memory_events(pb):
    """XLA:CPU records no allocator events: the memory frame is empty, with its columns (the
    reader of GPU/TPU allocators' MemoryAllocation events has no real trace to check here)."""
    memory = X.read_xspace(pb).memory
    assert memory.empty and tuple(memory.columns) == X.MEMORY_COLUMNS
