"""A real TPU trace written by XProf's own tests (4 TPU v6e chips, JAX, ``tests/data/xla_tpu``:
programs run on all chips, an all-reduce across them, host-offload copies): its op events read
as ops of their programs and runs, each op's time as the trace has it, against ``truth.json``
(read straight from the protobuf by ``tests/data/xla_tpu/truth.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import xlanb
from xlanb.analysis.trace_summary import Columns, summary_of
from xlanb.formats.xspace import read_xspace
from xlanb.graphs.ops import thunk_category
from xlanb.views.charts import memory_lane

DATA = Path(__file__).resolve().parent.parent / "data" / "xla_tpu"
FOLDER = DATA / "v6e4_inference"
TRUTH = json.loads((DATA / "truth.json").read_text())


@pytest.fixture(scope="module")
def events():
    return read_xspace(FOLDER / "tpu_inference_2.xplane.pb", markers=False).events


@pytest.fixture(scope="module")
def profile():
    return xlanb.load(FOLDER)


def _truth_sum(field: str) -> dict[str, float]:
    summed: dict[str, float] = {}
    for chip in TRUTH.values():
        for op, values in chip["ops"].items():
            summed[op] = summed.get(op, 0) + values[field]
    return summed


def test_each_op_event_is_an_op_of_the_program_run_holding_it(events):
    tpu = events[events["plane"].str.startswith("/device:TPU:")]
    ops = tpu[tpu["kind"] == "op"]
    # the XLA Ops lines' events, by their instruction's name; no async copy's span
    assert set(ops["line"]) == {"XLA Ops"}
    assert ops.groupby("hlo_op").size().to_dict() == _truth_sum("count")
    assert ops["hlo_module"].notna().all() and ops["program_id"].notna().all()
    assert ops["run_id"].notna().all()
    # a program's runs numbered 1..N on each chip, as many as the chip ran
    runs = tpu[tpu["line"] == "XLA Modules"]
    for (plane, module), group in runs.groupby(["plane", "hlo_module"]):
        assert sorted(group["run_id"]) == list(range(1, TRUTH[plane]["runs"][module] + 1))
    # the program ids the trace writes as unsigned 64-bit numbers, one per module
    assert ops.groupby("hlo_module")["program_id"].nunique().eq(1).all()


def test_each_op_is_one_chips_time_with_the_chips_that_ran_it(profile):
    # one row per op: the mean of the chips' own seconds (each whole: ops that end as the next
    # starts are not nested, though starts are read to the ns, durations to the ps, and epoch
    # ns lie beyond a float's precision), the most runs of it on a chip, the chips that ran it
    # and the slowest chip's seconds; all four run jit_f and the all-reduce, chip 0 alone the
    # broadcast
    rows = profile.ops.set_index("op")
    assert set(rows.index) == set(_truth_sum("seconds"))
    for op in _truth_sum("seconds"):
        chips = [chip["ops"][op] for chip in TRUTH.values() if op in chip["ops"]]
        assert rows.loc[op, "devices"] == len(chips), op
        assert rows.loc[op, "count"] == max(chip["count"] for chip in chips), op
        mean = sum(chip["seconds"] for chip in chips) / len(chips)
        assert rows.loc[op, "seconds"] == pytest.approx(mean, rel=1e-9, abs=1e-12), op
        slowest = max(chip["seconds"] for chip in chips)
        assert rows.loc[op, "max_device_seconds"] == pytest.approx(slowest, rel=1e-9, abs=1e-12)
    assert rows.loc["broadcast.2", "devices"] == 1


def test_program_runs_and_device_time_are_the_chips_own(profile):
    ops = profile.ops.set_index("op")
    chip = TRUTH["/device:TPU:1"]
    assert ops.loc["copy-done.2", "runs"] == chip["runs"]["jit_f"]
    assert ops.loc["all-reduce", "runs"] == chip["runs"]["jit__psum"]
    device = profile.breakdown.set_index("bucket").loc["device", "seconds"]
    busiest = max(chip["busy_seconds"] for chip in TRUTH.values())
    assert busiest <= device <= profile.wall_seconds
    assert profile.environment["device_kind"] == "TPU v6 Lite"


def test_ops_of_no_program_leave_no_row_and_no_failure(events):
    # the same trace's op events with no module or program id (as this reader read TPU ops
    # before it knew their lines): no op row, since none names its program, and no IndexError
    frame = events.assign(hlo_module=None, program_id=pd.array([pd.NA] * len(events), "Int64"))
    summary = summary_of(Columns.of(frame, gpu=False), 0.0, np.inf, gpu=False)
    assert summary.ops == []
    assert summary.total == pytest.approx(sum(_truth_sum("seconds").values()))


@pytest.mark.parametrize(
    ("op", "category"),
    [
        ("all-reduce", "collective"),
        ("all-reduce-start.1", "collective"),
        ("reduce-scatter.2", "collective"),
        ("all-to-all", "collective"),
        ("collective-permute-done", "collective"),
        ("reduce.3", "reduction"),
        ("copy-done.2", "copy"),
    ],
)
def test_collectives_are_not_reductions(op, category):
    assert thunk_category(op) == category


def test_ops_come_with_the_python_line_the_trace_names(profile):
    # no XLA dump beside the trace: the op metadata's `source` stat is the line
    named = {op: source for chip in TRUTH.values() for op, source in chip["sources"].items()}
    rows = profile.ops.set_index("op")
    assert len(named) >= 4
    for op, source in named.items():
        file, line = source.rsplit(":", 1)
        assert (rows.loc[op, "source_file"], rows.loc[op, "source_line"]) == (file, int(line))
    # the copies the compiler inserted name none
    assert rows.loc["copy-done.2", "source_file"] is None or pd.isna(
        rows.loc["copy-done.2", "source_file"]
    )


def test_ops_are_rated_from_the_costs_the_trace_gives(profile):
    # no HLO text: each op's FLOPs and bytes of one run are its metadata's, its rates those
    # over its measured time, its bound against the chip's data-sheet peak (TPU v6e)
    chip = TRUTH["/device:TPU:0"]
    rows = profile.ops.set_index("op")
    for op, cost in chip["costs"].items():
        assert rows.loc[op, "flops"] == cost["flops"]
        assert rows.loc[op, "bytes"] == cost["bytes_accessed"]
    fusions = rows.loc[["broadcast_add_fusion", "broadcast_add_fusion.1", "broadcast_add_fusion.2"]]
    assert (fusions["bound"] == "memory").all()
    achieved = fusions["bytes"] * fusions["count"] / fusions["seconds"]
    assert fusions["bytes_per_second"].tolist() == pytest.approx(achieved.tolist())
    # an elementwise add at most at the chip's memory bandwidth
    assert (fusions["bytes_per_second"] <= chip["peak_hbm_bytes_per_second"]).all()
    # the halves of an async copy move nothing in their own time: no rate, no bound
    halves = rows.loc[[op for op in rows.index if "-start" in op or "-done" in op]]
    assert len(halves) == 12
    assert halves["bytes_per_second"].isna().all() and halves["bound"].isna().all()


def test_waiting_for_async_copies_is_a_finding(profile):
    # jit_f's chips idle in copy-done until the host-offload copies land: most of its op time
    found = profile.findings[profile.findings["title"].str.contains("async copies")]
    assert len(found) == 1
    row = found.iloc[0]
    ops = profile.ops[profile.ops["graph"] == "jit_f"]
    waits = ops[ops["op"].str.startswith("copy-done")]
    assert row["seconds"] == pytest.approx(waits["seconds"].sum())
    assert row["title"].startswith("jit_f waits for its async copies")
    assert row["severity"] == "warning"
    # the first finding: it accounts for more of the time than any other
    assert profile.findings.index[0] == found.index[0]


def test_a_program_without_async_waits_has_no_such_finding():
    gpu = xlanb.load(DATA.parent / "xla_gpu" / "mlp_nocmdbuf")
    assert len(gpu.ops) > 10
    assert not gpu.findings["title"].str.contains("waits for its async").any()


def test_compiles_come_from_the_trace_without_a_dump(profile):
    # one per JAX compile span, named after the call that compiled it: each program the
    # chips ran, in order, and their seconds the account's compile time
    compiles = profile.compiles
    assert compiles["graph"].tolist() == [
        "jit_convert_element_type",
        "jit_broadcast_in_dim",
        "jit__psum",
        "jit_f",
    ]
    assert set(compiles["graph"]) == set(TRUTH["/device:TPU:0"]["runs"])
    compile_bucket = profile.breakdown.set_index("bucket").loc["compile", "seconds"]
    assert compiles["seconds"].sum() == pytest.approx(compile_bucket)


def test_memory_in_use_is_the_first_chips(profile):
    # the host records each chip's allocations (its `index_on_host`, no allocator name):
    # interleaved, four chips' bytes in use make no series; the samples are chip 0's
    chip = TRUTH["/device:TPU:0"]
    samples = profile.samples[profile.samples["metric"] == "DeviceMemoryInUse"]
    assert len(samples) == chip["memory_events"]
    assert samples["value"].max() == chip["most_bytes_in_use"]
    assert set(samples["device"]) == {"device 0"}
    assert chip["most_bytes_in_use"] > max(
        TRUTH[f"/device:TPU:{n}"]["most_bytes_in_use"] for n in (1, 2, 3)
    )


def test_op_spans_are_the_first_chips_events(profile):
    # each chip runs its own copy of a program's ops at the same time: the zoom's op bars are
    # chip 0's (its 1,504 op events are fewer than the spans kept: every one is there)
    chip = TRUTH["/device:TPU:0"]["ops"]
    spans = profile.spans[profile.spans["lane"] == "op"]
    assert spans.groupby("name").size().to_dict() == {op: v["count"] for op, v in chip.items()}
    # seconds as end - start in epoch seconds: within two of their ulps of the trace's own
    ulp = np.spacing(spans["start"].max())
    for op, group in spans.groupby("name"):
        assert group["seconds"].sum() == pytest.approx(
            chip[op]["seconds"], abs=2 * ulp * len(group)
        )


def test_the_memory_lane_names_the_chip_it_shows(profile):
    (in_use,) = [series for series in memory_lane(profile) if series["kind"] == "in use"]
    assert in_use["name"] == "in use jax device 0"
    assert set(in_use["text"]) == {"device 0 bytes in use"}
    assert len(in_use["y"]) == TRUTH["/device:TPU:0"]["memory_events"]


def test_the_top_ops_table_shows_a_sources_file_name_and_line(profile):
    # a narrow column cut at its end showed the path's first folders ("experimental/u...")
    path = "experimental/users/davelacey/host_offload_stress_test/host_offload_stress_test.py"
    page = profile.to_html()
    assert f"<td title='{path}:29' style=" in page
    assert ">host_offload_stress_test.py:29</td>" in page
    assert f">{path}:29</td>" not in page
