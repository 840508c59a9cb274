"""Roofline on XLA:GPU from the H100 recordings (JAX 0.11.2): the programs' FLOPs counted from
the optimized HLO where `cost_analysis()` misses the cuBLAS calls, the data-sheet peak of the
device kind, and each op's achieved rate from its measured seconds (the trace without command
buffers, where every kernel names its instruction)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from xlanb.analysis.peaks import PEAKS, part_of, peak_for
from xlanb.analysis.rates import with_rates
from xlanb.analysis.roofline import device_peak, op_rates, with_op_rates
from xlanb.core.profile import Profile
from xlanb.core.schema import make_frame
from xlanb.graphs.hlo_cost import matmul_flops, program_cost

DATA = Path(__file__).resolve().parent.parent / "data" / "xla_gpu_dump" / "mlp"
FIRST = DATA.parent.parent / "xla_gpu" / "mlp_first15" / "xla_dump"
MLP = (FIRST / "module_12603.jit_train_step.sm_9.0a_gpu_after_optimizations.txt").read_text()
META = json.loads((DATA / "meta.json").read_text())
TRUTH = json.loads((DATA / "steady5_truth_nocmdbuf.json").read_text())
H100 = META["device_kind"]  # "NVIDIA H100 80GB HBM3"
GPU = {"jax_platform": "gpu", "device_kind": H100}


def test_device_kinds_find_their_data_sheet_rows():
    assert part_of(H100) == "H100 SXM"
    assert peak_for(H100, "bf16") == (989.4e12, 3.35e12)
    assert peak_for(H100, "f32") == (494.7e12, 3.35e12)  # XLA's default precision: TF32
    assert peak_for("NVIDIA H100 PCIe", "bf16") == (756e12, 2.0e12)
    assert peak_for("NVIDIA A100-SXM4-80GB", "bf16") == (312e12, 2.039e12)
    assert peak_for("TPU v5 lite", "bf16") == (197e12, 0.819e12)
    assert peak_for("TPU v5", "f32") == (459e12, 2.765e12)
    assert peak_for("NVIDIA L40S", "bf16") is None and peak_for("cpu", "f32") is None
    assert all(bandwidth > 0 and rates for bandwidth, rates in PEAKS.values())
    measured = {"peak_flops_per_second": 2.0, "peak_bytes_per_second": 1.0}
    assert device_peak({**measured, "device_kind": "NVIDIA L40S"}, "f32") == (2.0, 1.0)


def _profile(seconds: float, count: int) -> Profile:
    costs = {
        "flops": META["cost_analysis"]["flops"],
        "bytes_accessed": META["cost_analysis"]["bytes accessed"],
    }
    graphs = make_frame(
        "graphs",
        [
            {"backend": "jax", "graph": "jit(train_step)", "kind": kind, "text": text, **costs}
            for kind, text in (("stablehlo", "module @jit_train_step {}"), ("hlo_optimized", MLP))
        ],
    )
    executions = make_frame(
        "executions",
        [{"backend": "jax", "graph": "jit(train_step)", "seconds": seconds, "count": count}],
    )
    return Profile(backends=["jax"], environment=dict(GPU), graphs=graphs, executions=executions)


def test_a_gpu_programs_rate_counts_its_cublas_matmuls():
    """cost_analysis says 1.03e9 flops a step; the HLO counts 7.39e11 (the matmuls alone
    7.375e11): the rate and the bound use the count, against the H100's TF32 peak."""
    seconds, count = TRUTH["gpu_busy_seconds"], 5
    row = with_rates(_profile(seconds, count)).iloc[0]
    counted = program_cost(MLP)
    assert row["flops_per_second"] == counted.flops * count / seconds
    assert row["bytes_per_second"] == counted.bytes * count / seconds
    assert counted.flops >= matmul_flops(MLP) > 700 * META["cost_analysis"]["flops"]
    assert row["bound"] == "compute"  # 205 flops/byte against the peak's 148


def test_a_cpu_programs_rate_keeps_its_cost_analysis():
    profile = _profile(TRUTH["gpu_busy_seconds"], 5)
    profile.environment = {"jax_platform": "cpu"}
    row = with_rates(profile).iloc[0]
    assert row["flops_per_second"] == META["cost_analysis"]["flops"] * 5 / TRUTH["gpu_busy_seconds"]


def _ops() -> pd.DataFrame:
    """The mlp's per-instruction device seconds of 5 steady steps (no command buffers)."""
    rows = [
        {"backend": "jax", "graph": "jit(train_step)", "op": op, "count": 5, "seconds": seconds}
        for op, _kernels, seconds in TRUTH["per_hlo_op"]
    ]
    return make_frame("ops", rows)


def test_each_op_gets_its_flops_bytes_rate_and_bound():
    ops = op_rates(_ops(), MLP, peak_for(H100, "f32"))
    matmul = ops.set_index("op").loc["cublas-lt-matmul.1"]
    seconds = dict((op, s) for op, _, s in TRUTH["per_hlo_op"])["cublas-lt-matmul.1"]
    assert matmul["flops"] == 2 * 2048 * 2048 * 4096
    assert matmul["flops_per_second"] == matmul["flops"] * 5 / seconds
    assert matmul["bound"] == "compute"
    update = ops.set_index("op").loc["wrapped_subtract.1"]  # w - lr * grad: elementwise
    assert update["bound"] == "memory"
    # every instruction the trace timed is one the module counts
    assert ops["flops"].notna().all() and ops["bound"].notna().all()


def test_profile_ops_get_rates_from_the_programs_optimized_hlo():
    profile = _profile(TRUTH["gpu_busy_seconds"], 5)
    ops = with_op_rates(_ops(), profile.graphs, profile.environment)
    assert list(ops.index) == list(_ops().index)
    assert (ops["bound"] == "compute").sum() == 14  # the 14 cuBLAS matmuls, and nothing else
    unknown = make_frame("ops", [{"backend": "jax", "graph": "jit(other)", "op": "dot.1"}])
    assert with_op_rates(unknown, profile.graphs, profile.environment).equals(unknown)
