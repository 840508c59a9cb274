"""Roofline on XLA:GPU from the H100 recordings (JAX 0.11.2, tests/data/xla_gpu*): each
program's FLOPs as XLA:GPU's cost_analysis() counts them, as xlanb counts them from the
optimized HLO, and its matrix products alone; the steady mlp step's achieved rate against the
H100's data sheet; the five slowest ops of that step (the trace without command buffers)
with their achieved FLOP/s, bytes/s and bound; and, as a check of the counter, the same mlp
step compiled here for XLA:CPU (whose cost analysis counts every op) counted both ways. No
device needed: it reads recorded files and compiles (does not run) one program on the CPU.

    .venv/bin/python bench/gpu_roofline.py
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import results

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "xla_gpu_dump"
#: Each case's dump: the mlp's is its first cell's (full and half batch).
DUMPS = {
    "mlp": DATA.parent / "xla_gpu" / "mlp_first15" / "xla_dump",
    "transformer": DATA / "transformer",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    results.add_check_option(parser)
    parser.parse_args()

    from xlanb.analysis.peaks import peak_for
    from xlanb.analysis.roofline import bound_of, op_rates
    from xlanb.core.schema import make_frame
    from xlanb.graphs.hlo_cost import matmul_dtype, matmul_flops, program_cost

    figures: dict[str, float | str] = {}
    for case in ("mlp", "transformer"):
        meta = json.loads((DATA / case / "meta.json").read_text())
        text = _full_batch_module(DUMPS[case])
        counted = program_cost(text)
        figures[f"{case}: cost_analysis flops"] = meta["cost_analysis"]["flops"]
        figures[f"{case}: HLO-counted flops"] = counted.flops
        figures[f"{case}: matmul flops"] = matmul_flops(text)
        figures[f"{case}: HLO-counted bytes"] = counted.bytes
        figures[f"{case}: matmul dtype"] = matmul_dtype(text)

    meta = json.loads((DATA / "mlp" / "meta.json").read_text())
    truth = json.loads((DATA / "mlp" / "steady5_truth_nocmdbuf.json").read_text())
    text = _full_batch_module(DUMPS["mlp"])
    peak = peak_for(meta["device_kind"], matmul_dtype(text))
    assert peak is not None
    step = program_cost(text)
    seconds = truth["gpu_busy_seconds"]
    figures["mlp: steady step TFLOP/s (5 steps, GPU busy time)"] = step.flops * 5 / seconds / 1e12
    figures["mlp: share of the H100's TF32 peak"] = step.flops * 5 / seconds / peak[0]
    figures["mlp: step bound"] = bound_of(step.flops, step.bytes, peak) or ""
    rows = [
        {"backend": "jax", "graph": "jit(train_step)", "op": op, "count": 5, "seconds": s}
        for op, _kernels, s in truth["per_hlo_op"]
    ]
    ops = op_rates(make_frame("ops", rows), text, peak).nlargest(5, "seconds")
    for row in ops.itertuples():
        figures[f"mlp op {row.op}: TFLOP/s, GB/s, bound"] = (
            f"{row.flops_per_second / 1e12:.0f}, {row.bytes_per_second / 1e9:.0f}, {row.bound}"
        )
    figures.update(_loaded_trace(peak))
    figures.update(_cpu_check(program_cost))
    for name, value in figures.items():
        print(f"{name}: {value:.4g}" if isinstance(value, float) else f"{name}: {value}")
    results.write("gpu_roofline", figures)
    return results.check([], False)


def _loaded_trace(peak: tuple[float, float]) -> dict[str, float | str]:
    """What ``xlanb.load`` of the steady mlp trace folder (command buffers on) derives: each
    run's achieved FLOP/s (its device span) and the range over its matrix-product ops."""
    import xlanb

    loaded = xlanb.load(DATA.parent / "xla_gpu" / "mlp_cmdbuf")
    runs = loaded.executions["flops_per_second"]
    matmuls = loaded.ops[loaded.ops["category"] == "matmul"]
    rates = matmuls["flops_per_second"] / 1e12
    return {
        "loaded mlp_cmdbuf: device_kind": loaded.environment.get("device_kind", ""),
        "loaded mlp_cmdbuf: run TFLOP/s, median of 5": float(runs.median()) / 1e12,
        "loaded mlp_cmdbuf: run share of TF32 peak": float(runs.median()) / peak[0],
        "loaded mlp_cmdbuf: run bound": "/".join(sorted(set(loaded.executions["bound"]))),
        "loaded mlp_cmdbuf: matmul ops TFLOP/s": f"{rates.min():.0f}-{rates.max():.0f}",
        "loaded mlp_cmdbuf: matmul ops bound": "/".join(sorted(set(matmuls["bound"]))),
    }


def _cpu_check(program_cost) -> dict[str, float]:
    """The recordings' mlp train step (2048-4096x4-1000, batch 2048, f32, GELU, softmax
    cross-entropy, SGD) compiled for XLA:CPU: its cost analysis against the HLO count."""
    import jax
    import jax.numpy as jnp
    from gpu_check import MLP_SIZES as sizes
    from gpu_check import mlp_train_step as train_step

    shape = jax.ShapeDtypeStruct
    params = [
        (shape((a, b), jnp.float32), shape((b,), jnp.float32))
        for a, b in zip(sizes[:-1], sizes[1:], strict=True)
    ]
    data = (shape((2048, 2048), jnp.float32), shape((2048, 1000), jnp.float32))
    compiled = jax.jit(train_step).lower(params, *data).compile()
    analysis = compiled.cost_analysis()
    analysis = analysis[0] if isinstance(analysis, list | tuple) else analysis
    counted = program_cost(compiled.as_text())
    return {
        "XLA:CPU mlp: cost_analysis flops": float(analysis["flops"]),
        "XLA:CPU mlp: HLO-counted flops": counted.flops,
        "XLA:CPU mlp: counted / cost_analysis": counted.flops / float(analysis["flops"]),
        "XLA:CPU mlp: cost_analysis bytes accessed": float(analysis["bytes accessed"]),
        "XLA:CPU mlp: HLO-counted bytes": counted.bytes,
    }


def _full_batch_module(folder: Path) -> str:
    """The optimized module of the case's first (full-batch) compile: the lowest module id."""
    modules = sorted(
        folder.glob("module_*gpu_after_optimizations.txt"),
        key=lambda path: int(path.name.split(".")[0].removeprefix("module_")),
    )
    return modules[0].read_text()


if __name__ == "__main__":
    raise SystemExit(main())
