"""One ``analysis.derive`` for every source: a GPU trace folder read with ``xlanb.load`` gets
the frames of a live capture (roofline per op and per program included, from the H100
recordings of ``tests/data/xla_gpu``), and deriving it again gives the same frames (a live
capture's reload: ``tests/runtime/test_jax.py``)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

import xlanb
from xlanb.analysis import derive
from xlanb.analysis.peaks import peak_for
from xlanb.core.profile import Profile
from xlanb.formats.xspace import read_xspace
from xlanb.graphs.hlo_cost import matmul_flops, program_cost

GPU = Path(__file__).resolve().parent.parent / "data" / "xla_gpu"
DERIVED = ("breakdown", "step_times", "executions", "ops", "findings", "fallbacks")


@pytest.fixture(scope="module")
def mlp() -> Profile:
    return xlanb.load(GPU / "mlp_cmdbuf")


def _hlo(case: str) -> str:
    (path,) = (GPU / case / "xla_dump").glob("*gpu_after_optimizations.txt")
    return path.read_text()


def test_a_loaded_gpu_trace_names_its_device(mlp):
    assert mlp.environment["device_kind"] == "NVIDIA H100 80GB HBM3"
    assert mlp.environment["compute_capability"] == "9.0"
    assert mlp.environment["device_cores"] == 132


def test_a_loaded_gpu_trace_has_each_ops_flops_rate_and_bound(mlp):
    ops = mlp.ops
    matmuls = ops[ops["category"] == "matmul"]
    # every matrix product of the step is a traced op: their FLOPs are the HLO's count
    assert matmuls["flops"].sum() == matmul_flops(_hlo("mlp_cmdbuf"))
    assert len(matmuls) == 14 and (matmuls["count"] == 5).all()  # 5 runs of each
    # achieved: the op's FLOPs in all its traced runs over its measured seconds
    expected = matmuls["flops"] * matmuls["count"] / matmuls["seconds"]
    pd.testing.assert_series_equal(matmuls["flops_per_second"], expected, check_names=False)
    # 2048^3 products in f32 (TF32 on the tensor cores): far above the H100's ridge point
    flop_peak, byte_peak = peak_for("NVIDIA H100 80GB HBM3", "f32")
    assert (matmuls["flops"] / matmuls["bytes"] > flop_peak / byte_peak).all()
    assert set(matmuls["bound"]) == {"compute"}
    costed = ops.dropna(subset=["flops"])
    assert len(costed) == len(ops) and costed["bound"].isin(["compute", "memory"]).all()


def test_a_loaded_gpu_trace_has_each_runs_rate_and_bound(mlp):
    runs = mlp.executions
    cost = program_cost(_hlo("mlp_cmdbuf"))
    assert len(runs) == 5 and set(runs["bound"]) == {"compute"}
    pd.testing.assert_series_equal(
        runs["flops_per_second"], cost.flops * runs["count"] / runs["seconds"], check_names=False
    )
    pd.testing.assert_series_equal(
        runs["bytes_per_second"], cost.bytes * runs["count"] / runs["seconds"], check_names=False
    )


def test_a_loaded_trace_folder_is_named_after_it_and_its_compiles_are_timed_by_the_trace():
    first = xlanb.load(GPU / "mlp_first15")
    assert first.name == "mlp_first15"
    events = read_xspace(GPU / "mlp_first15" / "first15.xplane.pb", markers=False).events
    compiles = events[events["name"] == "PjRtCApiClient::CompileAndLoad(jit_train_step)"]
    compiles = compiles.sort_values("start_ns")
    # the full batch's program (module 12603) compiled first, the half batch's after it
    timed = first.compiles.sort_values("module_id")
    assert list(timed["module_id"]) == [12603, 146222]
    assert list(timed["seconds"]) == list(compiles["duration_ns"] / 1e9)
    assert list(timed["time"]) == list((compiles["start_ns"] + compiles["duration_ns"]) / 1e9)
    # a steady trace holds no compile: its compile time is unknown
    steady = xlanb.load(GPU / "mlp_cmdbuf" / "steady5.xplane.pb", dump=GPU / "mlp_cmdbuf/xla_dump")
    assert steady.name == "steady5" and steady.compiles["seconds"].isna().all()


def test_derive_of_a_loaded_trace_gives_its_frames_again(mlp):
    again = derive(Profile.from_dict(mlp.to_dict()))
    for name in DERIVED:
        pd.testing.assert_frame_equal(getattr(again, name), getattr(mlp, name))
    assert not math.isnan(again.executions["flops_per_second"].iloc[0])


def test_each_traced_run_is_rated_with_the_program_that_ran():
    # the first cell ran jit(train_step) compiled for the full batch 12 times, then for the
    # half batch 3 times: each run's FLOPs are its own program's
    first = xlanb.load(GPU / "mlp_first15")
    runs = first.executions
    assert list(runs["module_id"]) == [12603] * 12 + [146222] * 3
    for module_id, group in runs.groupby("module_id"):
        (path,) = (GPU / "mlp_first15" / "xla_dump").glob(
            f"module_{module_id}.*gpu_after_optimizations.txt"
        )
        flops = program_cost(path.read_text()).flops
        pd.testing.assert_series_equal(
            group["flops_per_second"], flops / group["seconds"], check_names=False
        )
    assert set(runs["bound"]) == {"compute"}


def test_ops_of_a_function_compiled_for_two_shapes_count_each_programs_flops():
    # rows of jit(train_step) add up both programs' runs where an op came from the same line:
    # over all matrix products, the FLOPs are 12 full-batch and 3 half-batch steps'
    first = xlanb.load(GPU / "mlp_first15")
    matmuls = first.ops[first.ops["category"] == "matmul"]
    dump = GPU / "mlp_first15" / "xla_dump"
    full, half = (
        matmul_flops(next(dump.glob(f"module_{module}.*gpu_after_optimizations.txt")).read_text())
        for module in (12603, 146222)
    )
    assert (matmuls["flops"] * matmuls["count"]).sum() == pytest.approx(12 * full + 3 * half)
    assert set(matmuls["bound"]) == {"compute"}
    flop_peak, _ = peak_for(first.environment["device_kind"], "f32")
    assert (matmuls["flops_per_second"] < flop_peak).all()
