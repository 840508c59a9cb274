"""HLO text (``HloModule ...``): torch_xla's ``_get_xla_tensors_hlo``, JAX's
``compile().as_text()``, and the ``*.txt`` modules of any ``--xla_dump_to`` directory (JAX,
PyTorch/XLA, TensorFlow).

Called computations become scopes: a fusion's fused computation, a call's or while's body and
condition, a conditional's branches nest under the instruction that calls them (collapsed they
show as that instruction). Computations used from several places (reducers, shared bodies) go
to one "called computations" group. Inside every computation but a fusion, instructions are
grouped by their ``op_name`` path.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import itertools
import operator
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from xlanb.formats.jax_text import StackTables
from xlanb.graphs.adjacency import Adjacent
from xlanb.graphs.errors import ParseError
from xlanb.graphs.hlo_read import (
    KIND,
    NESTING_KEYS,
    Computation,
    clear_caches,
    read_lines,
)
from xlanb.graphs.model import Graph, GraphBuilder
from xlanb.graphs.scopes import group_by_op_name

_NESTING_TO_APPLY = ("call", "async-start", "custom-call")
_SCOPE_KINDS = {
    "fusion": "fusion",
    "while": "while",
    "conditional": "conditional",
    "call": "call",
    "async-start": "call",
    "custom-call": "call",
}


def looks_like(text: str) -> bool:
    """True for HLO module text."""
    head = text.lstrip()[:4000]
    return head.startswith("HloModule") or bool(
        re.search(r"^(ENTRY\s+)?%?[\w.\-]+ \(.*\) -> .*\{\s*$", head, re.MULTILINE)
        and re.search(r"^\s+(ROOT\s+)?%?[\w.\-]+ = \S+", head, re.MULTILINE)
    )


def parse(text: str) -> Graph:
    """Parse HLO text (one or more ``HloModule`` blocks) into a :class:`Graph`."""
    modules, computations, tables = _read(text)
    builder = GraphBuilder(KIND, text)
    neighbours = _add_nodes(builder, modules, computations, tables)
    _assign_scopes(builder, modules, computations, neighbours)
    name = modules[0][0] if modules else (computations[-1].name if computations else "")
    return builder.build(name)


# -- reading ------------------------------------------------------------------------------
def computations(text: str) -> list[Computation]:
    """The computations of HLO text, each with its instructions (name, op, shape, operands,
    attrs) as read, without building a graph: for :mod:`xlanb.graphs.hlo_cost`, which keeps
    what it draws from them, not them."""
    return _read(text)[1]


_Read = tuple[list[tuple[str, int]], list[Computation], StackTables]
#: Reads shared while :func:`sharing_reads` runs: text -> (the thread sharing it, its read, or
#: None before the first).
_SHARED_READS: dict[str, tuple[int, _Read | None]] = {}


@contextlib.contextmanager
def sharing_reads(text: str) -> Iterator[None]:
    """Within the block, :func:`parse` and :func:`computations` of `text` on this thread share
    one read of it (the read-ahead worker asks for a program's costs and then its graph); the
    read is dropped after the block. Parsing sets each instruction's node index, which
    :func:`computations`' users do not read; another thread reads the text anew."""
    _SHARED_READS[text] = (threading.get_ident(), None)
    try:
        yield
    finally:
        _SHARED_READS.pop(text, None)


def _read(text: str) -> _Read:
    shared = _SHARED_READS.get(text)
    if shared is None or shared[0] != threading.get_ident():
        return _read_once(text)
    found = shared[1]
    if found is None:
        found = _read_once(text)
        _SHARED_READS[text] = (shared[0], found)
    return found


def _read_once(text: str) -> _Read:
    try:
        return read_lines(text)
    finally:
        clear_caches()


# -- nodes and edges ----------------------------------------------------------------------
def _add_nodes(
    builder: GraphBuilder,
    modules: list[tuple[str, int]],
    computations: list[Computation],
    tables: StackTables,
) -> _Neighbours:
    """Nodes and edges; returns each node's operand nodes and user nodes (data edges)."""
    by_name: dict[str, int] | None = None
    if any(c.names for c in computations):
        columns = _node_columns(computations, tables)
        names = columns["name"]
        unique = len(modules) <= 1 and len(set(names)) == len(names)
        columns["id"] = names if unique else _node_ids(modules, computations, names)
        start = builder.add_nodes(columns)
        for computation in computations:
            computation.first_node = start
            start += len(computation.names)
        if unique:
            by_name = builder.index  # each node's id is its name
    return _add_edges(builder, computations, by_name)


def _node_columns(computations: list[Computation], tables: StackTables) -> dict[str, list[Any]]:
    """The instructions' node columns but ``id``, each made in one pass."""
    innermost = functools.lru_cache(maxsize=None)(tables.innermost)
    chain = itertools.chain.from_iterable
    metadata = list(chain(c.metadata for c in computations))
    keys = list(map(id, metadata))
    distinct = dict(zip(keys, metadata, strict=True))  # equal texts share one dict
    origins = {key: _source(meta, innermost) for key, meta in distinct.items()}
    op_names, files, lines, functions = zip(*map(origins.__getitem__, keys), strict=True)
    return {
        "name": list(chain(c.names for c in computations)),
        "op": list(chain(c.ops for c in computations)),
        "shape": list(chain(c.shapes for c in computations)),
        "op_name": list(op_names),
        "source_file": list(files),
        "source_line": list(lines),
        "source_function": list(functions),
        "attrs": list(chain(c.attrs for c in computations)),
        "text": list(chain(c.texts for c in computations)),
        "line": list(chain(c.lines for c in computations)),
        "output": list(chain(c.roots for c in computations)),
    }


class _Edges:
    """Edges by column (node indexes of their ends), in the order they are added."""

    def __init__(self) -> None:
        self.sources: list[int] = []
        self.targets: list[int] = []
        self.operands: list[int] = []
        self.kinds: list[str] = []

    def add_data(self, sources: list[int], targets: list[int], operands: list[int]) -> None:
        self.sources += sources
        self.targets += targets
        self.operands += operands
        self.kinds += ["data"] * len(sources)

    def add_control(self, source: int, target: int) -> None:
        self.sources.append(source)
        self.targets.append(target)
        self.operands.append(-1)
        self.kinds.append("control")


def _add_edges(
    builder: GraphBuilder, computations: list[Computation], by_name: dict[str, int] | None
) -> _Neighbours:
    """Data and control edges; each node's operand nodes and user nodes (data edges).
    `by_name`: each node by its name, where names are unique."""
    edges = _Edges()
    if by_name is not None and not any(any(c.control) for c in computations):
        at_once = _data_edges_at_once(computations, by_name)
        if at_once is not None:
            return _add_data_edges(builder, *at_once)
    for computation in computations:
        first = computation.first_node
        nodes = dict(zip(computation.names, itertools.count(first)))
        if any(computation.control):
            _add_edges_in_turn(computation, nodes, edges)
            continue
        operands = computation.operands
        names = list(itertools.chain.from_iterable(operands))
        if not names:
            continue
        try:
            sources = list(map(nodes.__getitem__, names))
        except KeyError:
            for position in range(len(operands)):
                _operand_nodes(computation, position, nodes)
            raise
        counts = np.fromiter(map(len, operands), dtype=np.int64, count=len(operands))
        targets = np.repeat(np.arange(first, first + len(operands), dtype=np.int64), counts)
        starts = np.cumsum(counts) - counts
        positions = np.arange(len(names), dtype=np.int64) - np.repeat(starts, counts)
        edges.add_data(sources, targets.tolist(), positions.tolist())
    builder.add_resolved_edges(edges.sources, edges.targets, edges.operands, edges.kinds)
    return _neighbours(edges, builder.node_count)


def _add_data_edges(
    builder: GraphBuilder, sources: np.ndarray, targets: np.ndarray, positions: np.ndarray
) -> _Neighbours:
    """Add the data edges of node indexes `sources` -> `targets`; the neighbours they make."""
    builder.add_resolved_edges(
        sources.tolist(), targets.tolist(), positions.tolist(), ["data"] * len(sources)
    )
    count = builder.node_count
    return Adjacent(targets, sources, count), Adjacent(sources, targets, count)


def _data_edges_at_once(
    computations: list[Computation], by_name: dict[str, int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The data edges of all computations (sources, targets, operand positions), each operand
    looked up by its name among all nodes; None where one is not in its user's computation
    (each computation is then read on its own)."""
    operands = list(itertools.chain.from_iterable(c.operands for c in computations))
    names = list(itertools.chain.from_iterable(operands))
    if not names:
        return _NO_EDGES, _NO_EDGES, _NO_EDGES
    try:
        found = operator.itemgetter(*names)(by_name)  # all at once (one name: not a tuple)
    except KeyError:
        return None
    sources = np.array(found if len(names) > 1 else [found], dtype=np.int64)
    start, count = computations[0].first_node, len(operands)
    sizes = np.fromiter((len(c.names) for c in computations), dtype=np.int64)
    owners = np.repeat(np.arange(len(computations), dtype=np.int64), sizes)
    counts = np.fromiter(map(len, operands), dtype=np.int64, count=count)
    targets = np.repeat(np.arange(start, start + count, dtype=np.int64), counts)
    inside = sources - start
    if (inside < 0).any() or (inside >= count).any():
        return None
    if (owners[inside] != owners[targets - start]).any():
        return None
    positions = np.arange(len(names), dtype=np.int64) - np.repeat(
        np.cumsum(counts) - counts, counts
    )
    return sources, targets, positions


_NO_EDGES = np.zeros(0, dtype=np.int64)


def _add_edges_in_turn(computation: Computation, nodes: dict[str, int], edges: _Edges) -> None:
    """:func:`_add_edges` of a computation with control edges: each instruction's data edges,
    then its control edges."""
    first = computation.first_node
    for position, (operands, control) in enumerate(
        zip(computation.operands, computation.control, strict=True)
    ):
        node = first + position
        if operands:
            sources = _operand_nodes(computation, position, nodes)
            edges.add_data(sources, [node] * len(sources), list(range(len(sources))))
        for predecessor in control:
            if predecessor in nodes:
                edges.add_control(nodes[predecessor], node)


#: Each node's operand nodes and user nodes (along data edges).
_Neighbours = tuple[Adjacent, Adjacent]


def _neighbours(edges: _Edges, count: int) -> _Neighbours:
    sources = np.array(edges.sources, dtype=np.int64)
    targets = np.array(edges.targets, dtype=np.int64)
    if "control" in edges.kinds:
        data = np.array(edges.kinds, dtype=object) == "data"
        sources, targets = sources[data], targets[data]
    return Adjacent(targets, sources, count), Adjacent(sources, targets, count)


def _operand_nodes(computation: Computation, position: int, nodes: dict[str, int]) -> list[int]:
    """The nodes of the operands of `computation`'s instruction at `position`."""
    try:
        return [nodes[operand] for operand in computation.operands[position]]
    except KeyError as missing:
        raise ParseError(
            KIND,
            computation.lines[position],
            f"operand %{missing.args[0]} of {computation.names[position]} is not defined in "
            f"computation {computation.name}",
            computation.texts[position],
        ) from None


def _node_ids(
    modules: list[tuple[str, int]], computations: list[Computation], names: list[str]
) -> list[str]:
    """Each instruction's node id (``names``: the instructions' names, in text order): the
    name, prefixed by its computation's where the name is not unique in its module, and by
    its module's when the text holds several."""
    counts = collections.Counter((c.module, name) for c in computations for name in c.names)
    ids: list[str] = []
    for computation in computations:
        module = computation.module
        prefix = f"{modules[module][0]}/" if len(modules) > 1 else ""
        ids += [
            prefix + (f"{computation.name}/{name}" if counts[(module, name)] > 1 else name)
            for name in computation.names
        ]
    return ids


def _source(
    meta: dict[str, str], innermost: Callable[[int], tuple[str, int | None, str]]
) -> tuple[str, str, int | None, str]:
    """(op_name, source file, line, function) that metadata names."""
    if not meta:
        return "", "", None, ""
    frame = meta.get("stack_frame_id", "")
    if len(meta) == 2 and "op_name" in meta and frame.isdigit():  # JAX's common metadata
        return meta["op_name"], *innermost(int(frame))
    file, line, function = meta.get("source_file", ""), None, ""
    source_line = meta.get("source_line", "")
    if source_line.isdigit():
        line = int(source_line)
    if not file and meta.get("stack_frame_id", "").isdigit():
        file, line, function = innermost(int(meta["stack_frame_id"]))
    return meta.get("op_name", ""), file, line, function


# -- scopes -------------------------------------------------------------------------------
def _assign_scopes(
    builder: GraphBuilder,
    modules: list[tuple[str, int]],
    computations: list[Computation],
    neighbours: _Neighbours,
) -> None:
    by_name: dict[tuple[int, str], Computation] = {(c.module, c.name): c for c in computations}
    uses: dict[int, list[tuple[int, str]]] = {}  # callee -> (calling node, attribute)
    for computation in computations:
        calls_of = computation.calls
        for position in [p for p, calls in enumerate(calls_of) if calls]:
            for key, called in calls_of[position]:
                callee = by_name.get((computation.module, called))
                if callee is None:
                    raise ParseError(
                        KIND,
                        computation.lines[position],
                        f"{key}={called}: no computation named {called}",
                        computation.texts[position],
                    )
                uses.setdefault(id(callee), []).append((computation.first_node + position, key))
    ops = builder.columns["op"]
    nested: dict[int, list[tuple[str, Computation]]] = {}  # instruction node -> callees
    nested_ids: set[int] = set()
    for computation in computations:
        found = uses.get(id(computation), [])
        if len(found) != 1:
            continue
        node, key = found[0]
        if key in NESTING_KEYS or (key == "to_apply" and ops[node] in _NESTING_TO_APPLY):
            nested.setdefault(node, []).append((key, computation))
            nested_ids.add(id(computation))
    operands, users = neighbours
    placer = _Placer(builder, nested, operands, users)
    for module_index in range(max(len(modules), 1)):
        in_module = [c for c in computations if c.module == module_index]
        if not in_module:
            continue
        base = ""
        if len(modules) > 1:
            base = builder.add_scope(
                modules[module_index][0], label=modules[module_index][0], kind="module"
            )
        entry = next((c for c in in_module if c.entry), in_module[-1])
        placer.place(entry, base, group=True)
        others = [c for c in in_module if c is not entry and id(c) not in nested_ids]
        if others:
            group = builder.add_scope(
                f"{base}/called computations" if base else "called computations",
                parent=base,
                label="called computations",
                kind="group",
            )
            for computation in others:
                scope = builder.add_scope(
                    f"{group}/{computation.name}",
                    parent=group,
                    label=computation.name,
                    kind="computation",
                )
                placer.place(computation, scope, group=True)


class _Placer:
    """Puts each computation's nodes into scopes, top-down from the entry computation."""

    def __init__(
        self,
        builder: GraphBuilder,
        nested: dict[int, list[tuple[str, Computation]]],
        operands: Adjacent,
        users: Adjacent,
    ) -> None:
        self.builder = builder
        self.nested = nested
        self.operands = operands
        self.users = users

    def place(self, computation: Computation, scope: str, group: bool) -> None:
        builder = self.builder
        first = computation.first_node
        members = list(range(first, first + len(computation.names)))
        builder.columns["scope"][first : first + len(members)] = [scope] * len(members)
        if group:
            group_by_op_name(builder, members, scope, self.operands, self.users)
        nested = self.nested
        for node in filter(nested.__contains__, members):
            if nested[node]:
                self._nest(node, nested[node])

    def _nest(self, caller: int, callees: list[tuple[str, Computation]]) -> None:
        """Scopes for the computations the node `caller` calls."""
        builder = self.builder
        parent = builder.columns["scope"][caller]
        name, op = builder.columns["name"][caller], builder.columns["op"][caller]
        kind = _SCOPE_KINDS.get(op, "call")
        anchored = builder.add_scope(
            f"{parent}/{name}" if parent else name,
            parent=parent,
            label=name,
            kind=kind,
            node=builder.columns["id"][caller],
        )
        branches = [c for k, c in callees if k == "branch_computations"]
        for key, callee in callees:
            scope = anchored
            if len(callees) > 1:
                label = key if key != "branch_computations" else f"branch {branches.index(callee)}"
                scope = builder.add_scope(
                    f"{anchored}/{label}",
                    parent=anchored,
                    label=f"{label}: {callee.name}",
                    kind="computation",
                )
            self.place(callee, scope, group=op != "fusion")
            self._bind(caller, key, callee, branches)

    def _bind(
        self, caller: int, key: str, callee: Computation, branches: list[Computation]
    ) -> None:
        """Edges from the caller's operands to the callee's parameters, and from the callee's
        root back to the caller."""
        builder = self.builder
        ids = builder.columns["id"]
        caller_id = ids[caller]
        operand_ids = [ids[i] for i in self.operands.get(caller, [])]
        if key in ("body", "condition"):
            pairs = [(0, 0)]
        elif key == "branch_computations":
            pairs = [(branches.index(callee) + 1, 0)]
        elif key == "true_computation":
            pairs = [(1, 0)]
        elif key == "false_computation":
            pairs = [(2, 0)]
        else:
            pairs = [(i, i) for i in range(len(operand_ids))]
        for operand, number in pairs:
            parameter = callee.parameter(number)
            if parameter is not None and operand < len(operand_ids):
                builder.add_edge(
                    operand_ids[operand], ids[callee.first_node + parameter], operand, "param"
                )
        root = callee.root()
        if root is not None:
            builder.add_edge(ids[callee.first_node + root], caller_id, 0, "root")
