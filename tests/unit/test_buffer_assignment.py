"""Temporaries read from the buffer assignments XLA dumped (recorded fixtures: JAX's dump of a
jitted step, torch_xla's default dump of a random-number graph)."""

from __future__ import annotations

from pathlib import Path

from xlanb.formats.buffer_assignment import Temporary, temporaries_from_proto, temporaries_from_text

DATA = Path(__file__).resolve().parent.parent / "data"


def test_the_temporaries_are_the_buffers_of_temporary_allocations_only():
    """jit_step: the parameters x and w, the output and three thread-local scalars are not
    temporaries; the dot's result in the preallocated temp is."""
    text = (
        DATA / "jax_dump/module_0006.jit_step.cpu_after_optimizations-buffer-assignment.txt"
    ).read_text()
    assert temporaries_from_text(text) == [Temporary("dot_general.1", "", "f32[4,2]", 32)]


def test_temporaries_come_largest_first_and_not_from_the_used_values_listing():
    text = (
        DATA / "torch_xla/dump/module_0000.SyncTensorsGraph.61."
        "cpu_after_optimizations-buffer-assignment.txt"
    ).read_text()
    assert temporaries_from_text(text) == [
        Temporary("bitcast_concatenate_fusion", "", "u32[6,4]", 96),
        Temporary("convert_convert_fusion", "", "u32[]", 4),
    ]
    assert temporaries_from_text(text, limit=1) == temporaries_from_text(text)[:1]


def test_no_temporaries_in_what_does_not_parse():
    assert temporaries_from_text("") == []
    assert temporaries_from_proto(b"\xff\xff", b"") == []


def test_a_dump_directorys_profile_has_each_programs_temporaries_with_their_source():
    """`xlanb report DIR` of JAX's dump: jit_step's temporaries, located by the optimized
    module's metadata (the workload's line 4)."""
    from xlanb.offline.xla_dump import load_dump_dir

    temps = load_dump_dir(DATA / "jax_dump").temporaries
    step = temps[(temps["graph"] == "jit_step") & (temps["op"] == "dot_general.1")].iloc[0]
    assert (step["shape"], step["bytes"]) == ("f32[4,2]", 32.0)
    assert step["source_file"].endswith("jax_workload.py") and step["source_line"] == 4


# -- XLA:GPU (JAX 0.11.2 on an H100: the dump of tests/data/xla_gpu/mlp_first15) -------------
GPU_MLP = DATA / "xla_gpu/mlp_first15/xla_dump"
#: `compiled.as_text()` of the full batch (the steady trace's module, under its dump name)
GPU_MLP_COMPILED = (
    DATA
    / "xla_gpu/mlp_cmdbuf/xla_dump/module_10613.jit_train_step.sm_9.0a_gpu_after_optimizations.txt"
)
GPU_MLP_MODULE = 12603  # the full-batch train step (x: f32[2048,2048])


def _report_chunks(text: str) -> list[tuple[float, set[str]]]:
    """(size in bytes, shapes) of each chunk of the first block of a memory-usage report: the
    preallocated temp buffer, by offset (``256.00MiB( 68%); 32.00MiB; 33554432; 2; f32[..]``)."""
    units = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
    chunks = []
    for line in text.split("\n\n")[0].splitlines():
        parts = [part.strip() for part in line.split(";")]
        if len(parts) != 5 or not parts[2].isdigit():
            continue
        number = parts[1].rstrip("BKMGi")
        unit = parts[1][len(number) :]
        shapes = {shape.split("×")[-1] for shape in parts[4].split(", ")}
        chunks.append((float(number) * units[unit], shapes))
    return chunks


def test_gpu_temporaries_name_their_instruction_and_are_chunks_of_the_memory_report():
    """XLA:GPU names a tuple buffer `cublas-lt-matmul.1{0}`: the temporary is the instruction
    (so the optimized module locates it); each of the 5 largest fits a chunk of XLA's own
    memory-usage report that holds its shape, and the largest is the report's largest."""
    from xlanb.formats.buffer_assignment import temporaries_from_dump

    found = temporaries_from_dump(GPU_MLP, GPU_MLP_MODULE)
    hlo = next(GPU_MLP.glob(f"module_{GPU_MLP_MODULE}.*gpu_after_optimizations.txt")).read_text()
    assert [t.op for t in found] == [
        "copy.2",
        "cublas-lt-matmul.1",
        "loop_multiply_fusion",
        "cublas-lt-matmul.0",
        "loop_multiply_fusion.2",
    ]
    assert all(f"%{t.op} = " in hlo for t in found)
    chunks = _report_chunks(
        next(GPU_MLP.glob(f"module_{GPU_MLP_MODULE}.*-memory-usage-report.txt")).read_text()
    )
    for temporary in found:
        assert any(
            size >= temporary.bytes and temporary.shape in shapes for size, shapes in chunks
        ), temporary
    largest = max(chunks, key=lambda chunk: chunk[0])
    assert (found[0].bytes, found[0].shape in largest[1]) == (largest[0], True)
    assert temporaries_from_dump(GPU_MLP, 1) == []
    assert temporaries_from_dump(GPU_MLP / "missing", GPU_MLP_MODULE) == []


def test_gpu_dump_file_names_keep_the_module_name():
    from xlanb.formats.xla_dump_names import dump_file_name

    found = dump_file_name(
        "module_12603.jit_train_step.sm_9.0a_gpu_after_optimizations-buffer-assignment.txt"
    )
    assert found is not None
    assert (found.module_id, found.module, found.stage, found.report) == (
        12603,
        "jit_train_step",
        "sm_9.0a_gpu_after_optimizations",
        "buffer-assignment",
    )
    torch_xla = dump_file_name("module_0000.SyncTensorsGraph.61.cpu_after_optimizations.txt")
    assert torch_xla is not None and torch_xla.module == "SyncTensorsGraph.61"


def test_a_gpu_dump_folders_temporaries_have_source_lines():
    """`xlanb report DIR` of the GPU dump: the program is `jit_train_step` (not
    `jit_train_step.sm_9`), and a cuBLAS call's temporary has its line in the recording."""
    from xlanb.offline.xla_dump import load_dump_dir

    temps = load_dump_dir(GPU_MLP).temporaries
    assert set(temps["graph"]) == {"jit_train_step"}
    matmul = temps[temps["op"] == "cublas-lt-matmul.1"].iloc[0]
    assert matmul["source_line"] == 71


def test_a_program_without_a_module_id_finds_its_dumped_module_by_its_header():
    """JAX 0.11 on GPU may hand over no module proto: `compiled.as_text()` of the full-batch
    step finds module 12603 by name and entry layout, not the half-batch 146222."""
    from xlanb.formats.buffer_assignment import dump_module_id, dumped_temporaries

    compiled_text = GPU_MLP_COMPILED.read_text()
    assert dump_module_id(GPU_MLP, compiled_text) == GPU_MLP_MODULE
    assert dumped_temporaries(GPU_MLP, None, compiled_text)[0] == Temporary(
        "copy.2", "", "f32[4096,4096]", 67108864
    )
    assert dumped_temporaries(GPU_MLP, 146222, compiled_text)[0].op == "custom-call.0"
    assert dump_module_id(DATA / "jax_dump", compiled_text) is None
