"""Big HLO modules: the parse triggers no cyclic garbage collection (each would scan every
object kept so far) and leaves the collector as it found it; the fast metadata path reads
the same fields as the general one where quotes, braces and attribute order get in its way;
a module grown from a recorded one (its computations repeated) parses to as many nodes,
edges and ops per copy as the recorded one; a name defined twice is the error of its second
line; instructions whose tails are read once keep their own attributes, and nothing read is
kept after the parse; op_name scope paths split by their head's split as whole paths do;
a computation's body read at once (one match over it), or in chunks with a line the match does
not read in one, parses as read line by line."""

from __future__ import annotations

import gc
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.support.helpers import ROOT
from xlanb.formats.text import key_values
from xlanb.graphs import hlo_read, parse, scopes
from xlanb.graphs.errors import ParseError
from xlanb.graphs.hlo import computations
from xlanb.graphs.hlo_read import _SIMPLE_LINES, without_possessive
from xlanb.graphs.scopes import split_op_name

DATA = Path(__file__).resolve().parent.parent / "data"
RECORDED = (
    DATA / "xla_gpu/mlp_cmdbuf/xla_dump/"
    "module_10613.jit_train_step.sm_9.0a_gpu_after_optimizations.txt"
)


def _collections_during(action: Any) -> int:
    started: list[int] = []

    def count(phase: str, _info: dict[str, int]) -> None:
        if phase == "start":
            started.append(1)

    gc.callbacks.append(count)
    try:
        action()
    finally:
        gc.callbacks.remove(count)
    return len(started)


def test_parse_runs_no_cyclic_collection_and_restores_the_collector() -> None:
    text = _grown(RECORDED.read_text(), 6)
    assert gc.isenabled()
    # One at most: the first allocation after the collector is back on may start one.
    assert _collections_during(lambda: parse(text, "hlo")) <= 1
    assert gc.isenabled()
    gc.disable()
    try:
        parse(text, "hlo")
        assert not gc.isenabled()
    finally:
        gc.enable()


MODULE = """HloModule m

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0} parameter(0), metadata={op_name="jit(f)/in{put}" QUOTED source_line=7}
  %n = f32[4]{0} negate(%p), metadata={op_name="jit(f)/neg"}, frontend_attributes={_x="1"}
  %c = f32[4]{0} cosine(%n),  metadata={op_name="jit(f)/cos" stack_frame_id=0}
  ROOT %a = f32[4]{0} add(%n, %c), sharding={replicated}, metadata={op_name="jit(f)/add"}
}
""".replace("QUOTED", 'source_file="a \\"q\\".py"')


def test_metadata_fields_and_the_other_attributes() -> None:
    nodes = parse(MODULE, "hlo").nodes.set_index("name")
    assert nodes.loc["p", "op_name"] == "jit(f)/in{put}"
    assert nodes.loc["p", "source_file"] == 'a "q".py'
    assert nodes.loc["p", "source_line"] == 7
    assert nodes.loc["n", "op_name"] == "jit(f)/neg"
    assert nodes.loc["n", "attrs"] == {"frontend_attributes": '{_x="1"}'}
    assert nodes.loc["c", "op_name"] == "jit(f)/cos"
    assert nodes.loc["c", "attrs"] == {}
    assert nodes.loc["a", "attrs"] == {"sharding": "{replicated}"}
    assert list(parse(MODULE, "hlo").edges["source"]) == ["p", "n", "n", "c"]


def _grown(text: str, copies: int) -> str:
    """The recorded module with its computations written ``copies`` times, each copy's
    names suffixed ``_k`` (the entry kept once, its copies made plain computations)."""
    header, _, body = text.partition("\n\n")
    names = set(re.findall(r"%([A-Za-z_][\w\-.]*)", body))
    pattern = re.compile(r"%([A-Za-z_][\w\-.]*)")
    parts = [header, body]
    for k in range(1, copies):

        def renamed(found: re.Match[str], suffix: str = f"_{k}") -> str:
            return f"%{found[1]}{suffix}" if found[1] in names else found[0]

        copy = pattern.sub(renamed, body)
        copy = copy.replace("ENTRY ", "")
        for key in ("calls", "to_apply", "body", "condition"):
            copy = re.sub(rf"{key}=([A-Za-z_][\w\-.]*)", rf"{key}=\1_{k}", copy)
        parts.append(copy)
    return "\n\n".join(parts)


def test_a_grown_module_scales_per_copy() -> None:
    text = RECORDED.read_text()
    one = parse(text, "hlo")
    grown = parse(_grown(text, 6), "hlo")
    assert len(grown.nodes) == 6 * len(one.nodes)
    assert len(grown.edges) == 6 * len(one.edges)
    assert (grown.nodes["op"].value_counts() == 6 * one.nodes["op"].value_counts()).all()
    assert grown.nodes["flops"].sum() >= 6 * one.nodes["flops"].sum() * (1 - 1e-12)


SHARED_TAILS = """HloModule m

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY main {
  a = f32[4] parameter(0), metadata={op_name="jit(f)/in"}
  b = f32[4] parameter(1), metadata={op_name="jit(f)/in"}
  z = f32[] constant(0)
  r1 = f32[] reduce(a, z), dimensions={0}, to_apply=add, metadata={op_name="jit(f)/sum"}
  r2 = f32[] reduce(b, z), dimensions={0}, to_apply=add, metadata={op_name="jit(f)/sum"}
  ROOT t = (f32[], f32[]) tuple(r1, r2)
}
"""


def test_instructions_with_one_tail_read_once_keep_their_own_attributes() -> None:
    nodes = parse(SHARED_TAILS, "hlo").nodes.set_index("name")
    assert nodes.loc["a", "attrs"] == {"parameter": "0"}
    assert nodes.loc["b", "attrs"] == {"parameter": "1"}
    assert nodes.loc["r1", "attrs"] == {"dimensions": "{0}", "to_apply": "add"}
    assert nodes.loc["r1", "attrs"] is not nodes.loc["r2", "attrs"]
    assert (
        list(nodes.loc[["a", "b", "r1", "r2"], "op_name"]) == ["jit(f)/in"] * 2 + ["jit(f)/sum"] * 2
    )
    read = hlo_read
    kept = (read._tail_cache, read._metadata_cache, read._rest_cache, read._rest_before_metadata)
    assert not any(kept) and not read._shapes  # nothing kept


TWICE = """HloModule twice

ENTRY main {
  a = f32[] parameter(0)
  b = f32[] negate(a)
  b = f32[] add(a, a)
  ROOT c = f32[] add(b, a)
}
"""


def test_a_name_defined_twice_is_the_error_of_its_second_line() -> None:
    with pytest.raises(ParseError, match="b is defined twice") as raised:
        parse(TWICE, "hlo")
    assert raised.value.line == 6


@pytest.mark.parametrize(
    "op_name",
    [
        "jit(step)/jvp(model)/layer_0/dot_general",
        "jit(f)/while/body/closed_call/add",
        "jit(f)/cond[branch=1]/x/y",
        "jit(f)/pjit(g/h)/mul",  # a `/` inside brackets does not split
        "jit(f)/a\\/b/c",  # an escaped `/` neither
        'jit(f)/custom["a/b"]/c',
        "a)/b/c",  # a closer without an opener
        "jit(f/x/y",  # an opener never closed
        "a//b/ c /d",
        "x/y;z/w/v",
        "plain",
        "",
    ],
)
def test_scope_paths_split_by_head_as_the_whole_path_splits(op_name: str) -> None:
    parts = split_op_name(op_name)
    expected = tuple(parts[:-1]) if len(parts) > 1 else None
    for first in ("", op_name.rsplit("/", 1)[0] + "/other"):  # the head split before or not
        scopes._scope_path.cache_clear()
        scopes._split_path.cache_clear()
        if first:
            scopes._scope_path(first)
        assert scopes._scope_path(op_name) == expected


ODD_TAILS = """HloModule odd

ENTRY main {
  a = f32[4]{0} parameter(0), metadata={op_name="jit(f)/in" stack_frame_id=3}
  b = f32[4]{0} negate(a), metadata={op_name="jit(f)/neg"}, sharding={replicated}
  c = f32[4]{0} cosine(b),metadata={op_name="jit(f)/cos"}
  d = f32[4]{0} sine(c), metadata={op_name="jit(f)/sin" source_line=4}
  e = f32[4]{0} add(b, c), dimensions={0}, metadata={op_name="jit(f)/add" stack_frame_id=1}
  f = f32[4]{0} add(b, e), dimensions={0}, metadata={op_name="jit(f)/add" stack_frame_id=1}
  g = f32[4]{0} add(e, f), dimensions={0}, metadata={op_name="jit(f)/ad\\\\d"}
  h = f32[4]{0} add(f, g), op_type="x, ", metadata={op_name="jit(f)/add"}
  i = f32[4]{0} add(g, h), op_type="x, "
  ROOT t = (f32[4]{0}, f32[4]{0}) tuple(d, i), metadata={op_name="jit(f)/out"}
}
"""

#: XLA:GPU's metadata: a scheduling_name naming the instruction, a deduplicated_name, a
#: backend_config of nested JSON after the metadata.
GPU_TAILS = """HloModule gpu

ENTRY main {
  a = f32[4]{0} parameter(0), metadata={scheduling_name="a"}
  b = f32[4]{0} negate(a), metadata={op_name="jit(f)/neg" scheduling_name="b" stack_frame_id=2}
  c = f32[4]{0} cosine(b), metadata={op_name="jit(f)/cos" scheduling_name="c"}
  d = f32[4]{0} sine(c), metadata={op_name="jit(f)/sin" deduplicated_name="x" scheduling_name="d"}
  e = f32[4]{0} add(b, c), metadata={scheduling_name="e" stack_frame_id=1}
  f = f32[4]{0} add(b, e), metadata={op_name="jit(f)/add" scheduling_name="f"},\
 backend_config={"a":{"b":["1", "2"]},"c":"{"}
  g = f32[4]{0} add(e, f), metadata={op_name="jit(f)/a\\\\dd" scheduling_name="g"}
  ROOT t = (f32[4]{0}, f32[4]{0}) tuple(d, g),\
 metadata={op_name="jit(f)/out" scheduling_name="t" stack_frame_id=4}
}
"""


def _line_by_line(text: str) -> str:
    """`text` with each computation's closing brace indented as its body's lines: they are
    then read one by one, not the body at once (same nodes and line numbers)."""
    return re.sub(r"(?m)^\}$", "  }", text)


GPU_TRANSFORMER = (
    DATA / "xla_gpu/transformer_cmdbuf/xla_dump/"
    "module_17269.jit_train_step.sm_9.0a_gpu_after_optimizations.txt"
)


@pytest.mark.parametrize("name", ["odd tails", "gpu tails", "recorded", "grown", "transformer"])
def test_bodies_read_at_once_read_as_line_by_line(name: str) -> None:
    text = {
        "odd tails": ODD_TAILS,
        "gpu tails": GPU_TAILS,
        "recorded": RECORDED.read_text(),
        "grown": _grown(RECORDED.read_text(), 3),
        "transformer": GPU_TRANSFORMER.read_text(),
    }[name]
    assert _line_by_line(text) != text
    for at_once, by_line in zip(
        _frames(parse(text, "hlo")), _frames(parse(_line_by_line(text), "hlo")), strict=True
    ):
        pd.testing.assert_frame_equal(at_once, by_line)


def _uncommon_at(text: str, line: int) -> str:
    """`text` with the instruction at 1-based `line` given a layout the body's regex does not
    read (a tile in it: read by the general path)."""
    lines = text.split("\n")
    lines[line - 1], found = re.subn(r"\]\{([\d,]*)\}", r"]{\1:T(2)}", lines[line - 1], count=1)
    assert found == 1
    return "\n".join(lines)


@pytest.mark.parametrize("chunk", [1, 5, 64])
def test_a_body_read_in_chunks_reads_as_line_by_line(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the chunks before a line the regex does not read are read at once, the rest line by line
    text = RECORDED.read_text()
    entry = text.split("\n").index(next(li for li in text.split("\n") if li.startswith("ENTRY")))
    uncommon = _uncommon_at(text, entry + 12)
    monkeypatch.setattr(hlo_read, "_CHUNK_LINES", chunk)
    for variant in (text, uncommon, _line_by_line(text)):
        for in_chunks, by_line in zip(
            _frames(parse(variant, "hlo")),
            _frames(parse(_line_by_line(variant), "hlo")),
            strict=True,
        ):
            pd.testing.assert_frame_equal(in_chunks, by_line)
    line = entry + 12
    assert hlo_read._GPU_LINES.fullmatch(text.split("\n")[line - 1])
    assert not hlo_read._GPU_LINES.fullmatch(uncommon.split("\n")[line - 1])


def test_odd_tails_keep_their_metadata_and_attributes() -> None:
    nodes = parse(ODD_TAILS, "hlo").nodes.set_index("name")
    assert nodes.loc["b", "attrs"] == {"sharding": "{replicated}"}
    assert nodes.loc["d", "source_line"] == 4
    assert nodes.loc["g", "op_name"] == "jit(f)/ad\\d"
    assert nodes.loc["h", "attrs"] == nodes.loc["i", "attrs"] == {"op_type": '"x, "'}
    assert nodes.loc["h", "op_name"] == "jit(f)/add"
    assert nodes.loc["e", "attrs"] == {"dimensions": "{0}"}
    assert nodes.loc["e", "attrs"] is not nodes.loc["f", "attrs"]


def _frames(graph: Any) -> list[pd.DataFrame]:
    return [graph.nodes, graph.edges, graph.scopes]


ELSEWHERE = """HloModule elsewhere

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, OPERAND)
}

ENTRY main {
  a = f32[] parameter(0)
  ROOT r = f32[] call(a, a), to_apply=add
}
"""


@pytest.mark.parametrize("operand", ["a", "nowhere"])
def test_an_operand_not_in_its_computation_is_the_error_of_its_line(operand: str) -> None:
    # names are unique in the module: operands are looked up among all nodes at once first
    with pytest.raises(ParseError, match=f"operand %{operand} of s is not defined") as raised:
        parse(ELSEWHERE.replace("OPERAND", operand), "hlo")
    assert raised.value.line == 6


def test_operands_by_name_in_every_computation() -> None:
    edges = parse(ELSEWHERE.replace("OPERAND", "y"), "hlo").edges
    assert edges.values.tolist() == [
        ["x", "s", 0, "data"],
        ["y", "s", 1, "data"],
        ["a", "r", 0, "data"],
        ["a", "r", 1, "data"],
        ["a", "x", 0, "param"],
        ["a", "y", 1, "param"],
        ["s", "r", 0, "root"],
    ]


def test_common_metadata_read_at_once_keeps_its_fields() -> None:
    read = {
        name: metadata
        for computation in computations(ODD_TAILS)
        for name, metadata in zip(computation.names, computation.metadata, strict=True)
    }
    assert read["f"] == {"op_name": "jit(f)/add", "stack_frame_id": "1"}
    assert read["h"] == {"op_name": "jit(f)/add"}
    assert read["g"] == {"op_name": "jit(f)/ad\\d"}


def test_gpu_metadata_read_at_once_keeps_its_fields() -> None:
    read = {
        name: (metadata, attrs)
        for computation in computations(GPU_TAILS)
        for name, metadata, attrs in zip(
            computation.names, computation.metadata, computation.attrs, strict=True
        )
    }
    assert read["a"] == ({"scheduling_name": "a"}, {"parameter": "0"})
    assert read["b"][0] == {"op_name": "jit(f)/neg", "scheduling_name": "b", "stack_frame_id": "2"}
    assert read["d"][0] == {
        "op_name": "jit(f)/sin",
        "deduplicated_name": "x",
        "scheduling_name": "d",
    }
    assert read["e"][0] == {"scheduling_name": "e", "stack_frame_id": "1"}
    assert read["f"] == (
        {"op_name": "jit(f)/add", "scheduling_name": "f"},
        {"backend_config": '{"a":{"b":["1", "2"]},"c":"{"}'},
    )
    assert read["g"][0] == {"op_name": "jit(f)/a\\dd", "scheduling_name": "g"}


def test_nested_attribute_values_read_by_regex_as_by_splitting() -> None:
    """XLA:GPU's backend_config JSON (braces and quotes inside braces) is read by one regex:
    the same attributes as splitting the tail at its top-level commas."""
    tails = [
        rest + other
        for *_head, rest, _body, other in hlo_read._GPU_LINES.findall(GPU_TRANSFORMER.read_text())
        if "backend_config={" in rest + other
    ]
    assert len(tails) > 200
    for tail in tails:
        without = hlo_read._metadata(tail)[1].strip().lstrip(",").strip()
        found = hlo_read._ATTRIBUTES.findall(without)
        assert sum(len(whole) for whole, _key, _value in found) == len(without), without
        assert hlo_read._attributes(without) == key_values(without)


def test_the_body_regex_reads_the_same_without_possessive_quantifiers():
    """Python 3.10 compiles the body regex without its possessive quantifiers: the same
    matches on real modules (JAX's on XLA:CPU, XLA:GPU's dump)."""
    plains = {
        pattern: re.compile(without_possessive(pattern.pattern), re.MULTILINE)
        for pattern in (_SIMPLE_LINES, hlo_read._GPU_LINES)
    }
    assert all("*+" not in plain.pattern and "++" not in plain.pattern for plain in plains.values())
    data = ROOT / "tests" / "data"
    paths = sorted((data / "jax_hlo").glob("*.txt"))
    paths += sorted(
        (data / "xla_gpu" / "transformer_cmdbuf" / "xla_dump").glob("*optimizations.txt")
    )
    texts = [path.read_text() for path in paths]
    assert len(texts) >= 3
    for text in texts:
        for pattern, plain in plains.items():
            found = pattern.findall(text)
            assert found and plain.findall(text) == found
