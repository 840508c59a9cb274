"""FLOPs and bytes counted from optimized HLO (XLA:GPU dumps of JAX 0.11.2 on an H100, where
`cost_analysis()` leaves out the cuBLAS calls). The expected counts come from the models'
shapes, not from the code under test."""

from __future__ import annotations

import json
from pathlib import Path

from xlanb.graphs import hlo
from xlanb.graphs.hlo_cost import matmul_dtype, matmul_flops, op_costs, program_cost

DATA = Path(__file__).resolve().parent.parent / "data" / "xla_gpu_dump"
FIRST = DATA.parent / "xla_gpu" / "mlp_first15" / "xla_dump"
MLP = FIRST / "module_12603.jit_train_step.sm_9.0a_gpu_after_optimizations.txt"
MLP_HALF = FIRST / "module_146222.jit_train_step.sm_9.0a_gpu_after_optimizations.txt"
TRANSFORMER = DATA / "transformer/module_17932.jit_train_step.sm_9.0a_gpu_after_optimizations.txt"


def _mlp_matmul_flops(batch: int) -> int:
    """The MLP 2048-4096x4-1000: 5 forward products, 5 weight gradients, 4 input gradients
    (the first layer's input needs none), 2*M*N*K each."""
    layers = [(2048, 4096), (4096, 4096), (4096, 4096), (4096, 4096), (4096, 1000)]
    forward = sum(2 * batch * k * n for k, n in layers)
    return 2 * forward + sum(2 * batch * k * n for k, n in layers[1:])


def _transformer_matmul_flops() -> int:
    """4 decoder layers (d 512, 8 heads of 64, MLP 2048), 16 x 256 tokens, vocabulary 8192:
    forward products (qkv, output, MLP in and out, attention scores and values, logits), and
    twice as many for the backward pass."""
    tokens, d, heads, seq, batch = 16 * 256, 512, 8, 256, 16
    per_token = 2 * (d * 3 * d + d * d + 2 * d * 2048)
    attention = 2 * 2 * batch * heads * seq * seq * (d // heads)
    forward = 4 * (tokens * per_token + attention) + 2 * tokens * d * 8192
    return 3 * forward


def test_the_mlp_steps_matmuls_are_counted_where_cost_analysis_misses_them():
    text = MLP.read_text()
    assert matmul_flops(text) == _mlp_matmul_flops(2048)
    assert matmul_flops(MLP_HALF.read_text()) == _mlp_matmul_flops(1024)
    gemms = [name for name in op_costs(text) if "cublas" in name or "custom-call" in name]
    assert len(gemms) == 14
    assert all(op_costs(text)[name].flops > 0 for name in gemms)
    meta = json.loads((DATA / "mlp/meta.json").read_text())
    total = program_cost(text)
    assert total.flops >= matmul_flops(text) > 700 * meta["cost_analysis"]["flops"]
    assert matmul_dtype(text) == "f32"


def test_a_gemms_bytes_are_its_operands_and_product_without_the_workspace():
    """cublas-lt-matmul.1 = x f32[2048,2048] @ w f32[2048,4096] + b f32[4096]."""
    cost = op_costs(MLP.read_text())["cublas-lt-matmul.1"]
    assert cost.flops == 2 * 2048 * 2048 * 4096
    assert cost.bytes == 4 * (2048 * 2048 + 2048 * 4096 + 4096 + 2048 * 4096)
    assert op_costs(MLP.read_text())["x.1"] == (0.0, 0.0)  # a parameter launches nothing


def test_triton_gemm_fusions_count_the_dot_they_fuse():
    text = TRANSFORMER.read_text()
    assert matmul_flops(text) == _transformer_matmul_flops()
    assert matmul_dtype(text) == "bf16"
    scores = op_costs(text)["gemm_fusion_dot.141"]  # f32[128,256,256]: q @ k, then * 0.125
    assert scores.flops == 2 * 128 * 256 * 256 * 64 + 128 * 256 * 256
    # fusions' own instructions are not ops of their own: the program counts each once
    assert "dot.182" not in op_costs(text)


def test_the_graph_of_a_gpu_dump_parses_and_costs_its_cublas_calls():
    """The dump writes `%cublas-lt-matmul.1#0` for element 0 of a tuple result."""
    graph = hlo.parse(MLP.read_text())
    assert graph.node("cublas-lt-matmul.1")["flops"] == 2 * 2048 * 2048 * 4096
    assert graph.node("loop_multiply_fusion")["flops"] > 0


def test_a_modules_read_runs_no_cyclic_collection():
    # the objects read per instruction make no cycles; in a process holding JAX or torch,
    # each collection they triggered scanned every object kept so far
    import gc

    from xlanb.graphs.hlo_cost import module_facts

    text = TRANSFORMER.read_text() + "\n\n"  # not cached by another test
    started: list[str] = []

    def count(phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            started.append(phase)

    assert gc.isenabled()
    gc.callbacks.append(count)
    try:
        facts = module_facts(text)
    finally:
        gc.callbacks.remove(count)
    assert len(started) <= 1  # the first allocation after the pause may start one
    assert gc.isenabled()
    assert len(facts.instructions) > 3000 and len(facts.costs) > 600


def test_a_shared_read_serves_only_the_thread_that_shares_it(monkeypatch):
    # another thread's parse of the same text would set the shared instructions' node
    # indexes under the worker's own parse
    import threading

    text = MLP.read_text() + "\n\n\n\n"
    reads: list[str] = []
    read_once = hlo._read_once

    def counted(read_text: str):
        reads.append(threading.current_thread().name)
        return read_once(read_text)

    monkeypatch.setattr(hlo, "_read_once", counted)
    with hlo.sharing_reads(text):
        first = hlo.computations(text)
        assert hlo.computations(text) is first
        other = threading.Thread(target=hlo.computations, args=(text,), name="other")
        other.start()
        other.join()
    assert hlo.computations(text) is not first  # dropped after the block
    assert reads == [threading.current_thread().name, "other", threading.current_thread().name]
