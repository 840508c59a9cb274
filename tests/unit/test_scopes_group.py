"""Grouping by op_name: a computation's nodes in one run of the builder (the common case,
read by position) and the same nodes among others (read by membership) get the same scopes,
with one path for all nodes (no scopes) or several."""

from __future__ import annotations

import random

import numpy as np
import pytest

from xlanb.graphs.adjacency import Adjacent
from xlanb.graphs.model import GraphBuilder
from xlanb.graphs.scopes import _common, group_by_op_name

#: (op_name, operand positions) of each node of one computation.
_ONE_PATH = [
    ("reduce_sum", []),
    ("reduce_sum", []),
    ("jit(step)/jvp(layer_0)/reduce_sum", [0, 1]),
]
_SEVERAL_PATHS = [
    ("x", []),
    ("jit(step)/jvp(layer_0)/dot_general", [0]),
    ("jit(step)/jvp(layer_0)/add", [1]),
    ("", []),
    ("jit(step)/jvp(layer_1)/mul", [2, 3]),
    ("jit(step)/transpose(jvp(layer_1))/mul", [4]),
    ("jit(step)/transpose(jvp(layer_1))/neg", [5]),
    ("y", [6]),
]
_NO_PATHS = [("a", []), ("b", [0]), ("", [1])]


def _grouped(nodes: list[tuple[str, list[int]]], apart: bool) -> tuple[list[str], list]:
    """The scope of each node, and the scopes, of `nodes` grouped as one computation: in one
    run of the builder, or (`apart`) each after a node of another computation."""
    builder = GraphBuilder("hlo", "")
    members: list[int] = []
    for position, (op_name, _operands) in enumerate(nodes):
        if apart:
            builder.add_node(f"other.{position}", name=f"other.{position}", op="add", op_name="z/w")
        members.append(
            builder.add_node(f"n.{position}", name=f"n.{position}", op="add", op_name=op_name)
        )
    sources = [members[o] for _n, operands in nodes for o in operands]
    targets = [members[k] for k, (_n, operands) in enumerate(nodes) for _o in operands]
    if apart:  # an edge from outside the computation is not followed
        sources.append(0)
        targets.append(members[0])
    count = builder.node_count
    sources_array, targets_array = (
        np.array(sources, dtype=np.int64),
        np.array(targets, dtype=np.int64),
    )
    operands = Adjacent(targets_array, sources_array, count)
    users = Adjacent(sources_array, targets_array, count)
    builder.columns["scope"] = ["base"] * count
    group_by_op_name(builder, members, "base", operands, users)
    return [builder.columns["scope"][m] for m in members], builder.scopes


@pytest.mark.parametrize("nodes", [_ONE_PATH, _SEVERAL_PATHS, _NO_PATHS])
def test_a_computation_among_others_groups_as_on_its_own(nodes: list) -> None:
    assert _grouped(nodes, apart=True) == _grouped(nodes, apart=False)


def test_one_path_makes_no_scope() -> None:
    scope_of, scopes = _grouped(_ONE_PATH, apart=False)
    assert scope_of == ["base"] * 3
    assert scopes == []


def test_several_paths_make_scopes_below_the_shared_prefix() -> None:
    scope_of, scopes = _grouped(_SEVERAL_PATHS, apart=False)
    layer_0, layer_1, backward = (f"base/{part}" for part in _PARTS)
    assert [s["id"] for s in scopes] == [layer_0, layer_1, backward]
    # the node without a path joins its user's scope
    assert scope_of == [layer_0] * 3 + [layer_1] * 2 + [backward] * 3


_PARTS = ("jvp(layer_0)", "jvp(layer_1)", "transpose(jvp(layer_1))")


def _common_naive(paths: list[tuple[str, ...]]) -> tuple[str, ...]:
    prefix = paths[0] if paths else ()
    for path in paths:
        length = 0
        while length < min(len(prefix), len(path)) and prefix[length] == path[length]:
            length += 1
        prefix = prefix[:length]
    return prefix


@pytest.mark.parametrize("seed", range(20))
def test_the_common_prefix_of_the_least_and_greatest_path_is_that_of_all(seed: int) -> None:
    generator = random.Random(seed)
    parts = ["jit(f)", "jvp(a)", "b", "transpose(jvp(a))", "c/d"]
    paths = [
        tuple(generator.choice(parts) for _ in range(generator.randint(1, 4)))
        for _ in range(generator.randint(1, 6))
    ]
    if seed % 2:  # a shared head
        paths = [("jit(f)", *path) for path in paths]
    assert _common(paths) == _common_naive(paths)


def _crowded_module(op_names: list[str], chained: bool) -> str:
    """An entry computation of 40 nodes with bare op_names (one level): one parameter, 29
    ops named ``x{k}``, and one op per name of `op_names`, each fed by the parameter (or,
    `chained`, by the op before it)."""
    lines = ["HloModule crowd", "", "ENTRY main {", "  p = f32[] parameter(0)"]
    lines += [f'  x{k} = f32[] negate(p), metadata={{op_name="x{k}"}}' for k in range(29)]
    for k, op_name in enumerate(op_names):
        operand = f"f{k - 1}" if chained and k else "p"
        lines.append(f'  f{k} = f32[] negate({operand}), metadata={{op_name="{op_name}"}}')
    lines += ["  ROOT t = () tuple()", "}"]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "op_names",
    [["update"] * 10, [f"update;b/x{k}" for k in range(10)], ["update;b"] * 5 + ["update"] * 5],
)
def test_independent_ops_of_one_first_path_group_as_a_family(op_names: list[str]) -> None:
    from xlanb.graphs import parse

    graph = parse(_crowded_module(op_names, chained=False), "hlo")
    families = graph.scopes[graph.scopes["kind"] == "group"]
    assert families["label"].tolist() == ["update (10)"]
    nodes = graph.nodes.set_index("name")
    assert set(nodes.index[nodes["scope"] == families["id"].iloc[0]]) == {
        f"f{k}" for k in range(10)
    }
    chain = parse(_crowded_module(op_names, chained=True), "hlo")
    assert "update (10)" not in chain.scopes["label"].tolist()
