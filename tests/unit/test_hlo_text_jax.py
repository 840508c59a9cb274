"""Op sources from real JAX HLO text (``tests/data/jax_hlo``, recorded on XLA:CPU by its
``record.py`` with JAX 0.10.2 and 0.12.0.1): from JAX 0.9 the metadata carries
``stack_frame_id=`` into the module's FileNames/FunctionNames/FileLocations/StackFrames tables
instead of ``source_file=``/``source_line=``; every located op is placed on the line of
``step`` that made it. No runtime."""

from __future__ import annotations

import re

import pytest

from tests.support.helpers import ROOT
from xlanb.formats.hlo_text import hlo_module_name, hlo_op_sources

HLO_DIR = ROOT / "tests" / "data" / "jax_hlo"


@pytest.mark.parametrize("version", ["0.10.2", "0.12.0.1"])
def test_ops_are_placed_through_the_stack_frame_tables(version):
    text = (HLO_DIR / f"hlo_jax_{version}.txt").read_text()
    assert "source_file=" not in text and "stack_frame_id=" in text
    sources = hlo_op_sources(text)
    located = {
        found["name"] for found in re.finditer(r"%(?P<name>[\w.\-]+) = [^\n]*stack_frame_id=", text)
    }
    assert located and located <= set(sources)
    assert {source.file.rsplit("/", 1)[-1] for source in sources.values()} == {"record.py"}
    lines = {source.line for source in sources.values()}
    assert lines == {12, 13}  # the matmul and tanh, then the square and the sum
    by_op = {source.op_name.rsplit("/", 1)[-1]: source.line for source in sources.values()}
    assert by_op["dot_general"] == 12 and by_op["tanh"] == 12
    assert by_op["reduce_sum"] == 13


@pytest.mark.parametrize(
    ("text", "name"),
    [
        (
            "HloModule jit_step, entry_computation_layout={()->f32[]}\n\nENTRY %main {\n}",
            "jit_step",
        ),
        ("// a dump's comment\nHloModule jit_f\r\n\nENTRY %main {\n}\n", "jit_f"),
        ("HloModule last_line_only", "last_line_only"),
        (
            "ENTRY %main () -> f32[] {\n  ROOT %c = f32[] constant(1), metadata={x=HloModule a}\n}",
            "",
        ),
        ("", ""),
    ],
)
def test_the_module_name_comes_from_the_first_hlomodule_line(text, name):
    assert hlo_module_name(text) == name
    lines = [line for line in text.splitlines() if line.startswith("HloModule ")]
    assert name == (lines[0].removeprefix("HloModule ").split(",", 1)[0].strip() if lines else "")
