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
