"""A torch_xla module's ops name the model's line, not the library's: the stacks its proto
holds (``--xla_dump_hlo_as_proto``) are written into its text as XLA's stack-frame tables
(recorded by ``tests/data/torch_xla_stacks/record.py`` on PyTorch/XLA 2.9, XLA:CPU)."""

from __future__ import annotations

import os

from xlanb.formats.hlo_proto import dumped_module_stacks, module_stacks, with_stack_frames
from xlanb.formats.hlo_text import count_hlo_instructions, hlo_op_sources
from xlanb.formats.jax_text import stack_tables
from xlanb.graphs import parse

HERE = os.path.join(os.path.dirname(__file__), "..", "data", "torch_xla_stacks")
TEXT = os.path.join(HERE, "step.txt")
PROTO = os.path.join(HERE, "step.hlo.pb")
RECORD = os.path.join(HERE, "record.py")


def _text() -> str:
    with open(TEXT, encoding="utf-8") as handle:
        return handle.read()


def _dots(sources: dict) -> dict:
    return {name: source for name, source in sources.items() if name.startswith("dot.")}


def test_the_text_alone_names_torchs_linear_for_the_matmuls():
    dots = _dots(hlo_op_sources(_text()))
    assert dots and all(
        source.file.endswith("torch/nn/modules/linear.py") for source in dots.values()
    )


def test_with_the_proto_the_matmuls_name_the_line_that_ran_the_model():
    stacks = dumped_module_stacks(PROTO)
    assert stacks is not None
    text = with_stack_frames(_text(), stacks)
    dots = _dots(hlo_op_sources(text))
    assert len(dots) == 2  # the two Linear layers' matmuls
    assert {(os.path.basename(s.file), s.line) for s in dots.values()} == {("record.py", 26)}
    assert {s.op_name for s in dots.values()} == {"aten__addmm"}
    # the file the cell ran is the cell's line too
    recorded = next(iter(dots.values())).file
    assert {s.cell_line for s in _dots(hlo_op_sources(text, recorded)).values()} == {26}


def test_the_tables_hold_each_ops_whole_stack_innermost_first():
    stacks = module_stacks(open(PROTO, "rb").read())
    assert stacks is not None
    text = with_stack_frames(_text(), stacks)
    tables = stack_tables(text)
    frames = tables.frames(stacks.frame_of["dot.13"])
    assert frames[0][1].endswith("torch/nn/modules/linear.py")
    assert [(function, os.path.basename(file), line) for function, file, line in frames][-2:] == [
        ("step", "record.py", 26),
        ("<module>", "record.py", 31),
    ]
    # every frame id an instruction names is in the tables
    assert set(stacks.frame_of.values()) <= set(tables.parents)


def test_the_text_keeps_its_instructions_and_parses_as_a_graph():
    original = _text()
    stacks = dumped_module_stacks(PROTO)
    assert stacks is not None
    text = with_stack_frames(original, stacks)
    assert count_hlo_instructions(text) == count_hlo_instructions(original)
    assert text.count("stack_frame_id=") == len(
        [n for n in stacks.frame_of if f"%{n} = " in original]
    )
    assert with_stack_frames(text, stacks) == text  # written once
    before, after = parse(original), parse(text)
    assert list(after.nodes["name"]) == list(before.nodes["name"])
    assert len(after.edges) == len(before.edges)


def test_a_missing_or_broken_proto_leaves_the_text_alone(tmp_path):
    assert dumped_module_stacks(str(tmp_path / "absent.hlo.pb")) is None
    broken = tmp_path / "broken.hlo.pb"
    broken.write_bytes(open(PROTO, "rb").read()[:100])
    assert dumped_module_stacks(str(broken)) is None
