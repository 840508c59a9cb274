"""What an op computes, from its instruction in a real optimized HLO text (XLA:CPU's JAX 0.10
dump in ``tests/data/jax_dump``; XLA:GPU's in ``tests/data/xla_gpu``)."""

from __future__ import annotations

from pathlib import Path

from xlanb.analysis.device_time import _what
from xlanb.analysis.op_kinds import instruction_categories

DATA = Path(__file__).resolve().parent.parent / "data"


def test_an_opaque_cpu_fusion_says_what_it_fused():
    text = (DATA / "jax_dump" / "module_0010.jit_step.cpu_after_optimizations.txt").read_text()
    assert instruction_categories(text)["ynn_fusion"] == ("matmul", "jit(step)/dot_general")
    # the trace names the thunk ``ynn_fusion.N`` or ``ynn_fusion``; its category and JAX op
    assert _what("ynn_fusion", text, gpu=False) == ("matmul", "jit(step)/dot_general")
    assert _what("tanh_reduce_fusion", text, gpu=False)[0] == "reduction"


def test_gpu_library_calls_and_fusions_by_what_they_compute():
    folder = DATA / "xla_gpu" / "transformer_nocmdbuf" / "xla_dump"
    text = next(folder.glob("*after_optimizations.txt")).read_text()
    categories = instruction_categories(text)
    kinds = {kind for kind, _ in categories.values()}
    assert {"matmul", "reduction", "elementwise", "data movement"} <= kinds
    gemms = [name for name in categories if name.startswith("gemm_fusion")]
    assert gemms and all(categories[name][0] == "matmul" for name in gemms)
    scoped = [op for _, op in categories.values() if "jvp(attention)/" in op]
    assert scoped  # jax.named_scope("attention") is in the op names


def test_categories_and_costs_read_a_text_once_and_keep_no_instruction():
    # the roofline's costs and the ops' categories of one program share one read of its
    # text (the end of a GPU cell waited for both reads of a 3,900-instruction module), and
    # the instructions read are not kept (a 350,000-instruction module's hold ~0.6 GB)
    import gc

    from xlanb.graphs import hlo, hlo_read
    from xlanb.graphs.hlo_cost import module_facts, op_costs

    folder = DATA / "xla_gpu" / "transformer_cmdbuf" / "xla_dump"
    text = next(folder.glob("*after_optimizations.txt")).read_text() + "\n"  # not cached yet
    reads: list[str] = []
    read = hlo._read

    def counted(text: str):
        reads.append(text)
        return read(text)

    hlo._read = counted
    try:
        categories = instruction_categories(text)
        costs = op_costs(text)
    finally:
        hlo._read = read
    assert len(reads) == 1
    assert module_facts.cache_info().currsize >= 1
    assert set(costs) <= set(categories)
    gc.collect()
    assert not [item for item in gc.get_objects() if isinstance(item, hlo_read.Instruction)]


def test_op_names_are_unescaped_as_the_sources_give_them():
    folder = DATA / "xla_gpu" / "transformer_cmdbuf" / "xla_dump"
    text = next(folder.glob("*after_optimizations.txt")).read_text()
    names = [op for _, op in instruction_categories(text).values()]
    assert "state[0]['layers'][1]['ln1']" in names
    assert not any("\\'" in name for name in names)
