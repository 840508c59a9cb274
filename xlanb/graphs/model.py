"""The one graph model every parser produces: a :class:`Graph` of three DataFrames."""

from __future__ import annotations

import heapq
import math
import operator
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from xlanb.core.files import write_atomically
from xlanb.core.seams import implementation
from xlanb.graphs.cost import estimate, reads_attributes
from xlanb.graphs.errors import ParseError
from xlanb.graphs.ops import base_op
from xlanb.graphs.scopes import group_crowds
from xlanb.graphs.shapes import dtype_of

#: Columns of ``Graph.nodes``, in order.
NODE_COLUMNS = [
    "id",
    "name",
    "op",
    "shape",
    "dtype",
    "scope",
    "op_name",
    "source_file",
    "source_line",
    "source_function",
    "attrs",
    "text",
    "line",
    "order",
    "output",
    "fallback",
    "flops",
    "bytes",
]
#: Columns of ``Graph.edges``, in order.
EDGE_COLUMNS = ["source", "target", "operand", "kind"]
#: Columns of ``Graph.scopes``, in order.
SCOPE_COLUMNS = ["id", "parent", "label", "kind", "node", "nodes"]

_CALLBACK = re.compile(r"callback|host_compute|py_func|pure_callback", re.IGNORECASE)


def is_host_callback(op: str, attrs: dict[str, str]) -> bool:
    """A host callback or host transfer: runs Python/CPU code in the middle of the graph
    (``custom_call_target`` naming a callback, e.g. ``xla_ffi_python_cpu_callback``)."""
    target = attrs.get("custom_call_target") or attrs.get("call_target_name") or ""
    if not target and op in _PLAIN_OPS:
        return False
    if _CALLBACK.search(target) or _CALLBACK.search(op):
        return True
    if base_op(op) in ("send", "recv", "send-done", "recv-done", "infeed", "outfeed"):
        return attrs.get("is_host_transfer", "") == "true" or base_op(op) in ("infeed", "outfeed")
    return False


#: Ops that are never host callbacks or transfers without a call target (the common case).
_PLAIN_OPS = frozenset(
    ("parameter", "constant", "fusion", "add", "multiply", "subtract", "divide", "dot")
    + ("broadcast", "reshape", "bitcast", "transpose", "copy", "reduce", "convert", "tuple")
    + ("get-tuple-element", "select", "compare", "exponential", "maximum", "slice")
)


def _fallback_key(op: str) -> str:
    """``aten::nonzero``, ``aten__nonzero`` (HLO op_type) and ``nonzero`` compare equal."""
    return op.replace("__", "::").rsplit("::", 1)[-1].lower()


@dataclass
class Graph:
    """One IR/HLO/DOT graph as DataFrames (see :func:`xlanb.graphs.parse`).

    ``nodes`` (one row per instruction/op, in text order):

    - ``id``: unique key of the node in this graph (edges and scopes refer to it);
    - ``name``: the name as written (``dot.8``, ``%3``, ``%cst_0``);
    - ``op``: the operation (``dot``, ``fusion``, ``stablehlo.add``, ``aten::addmm``);
    - ``shape``: result type in HLO spelling (``f32[3,8]``, tuples ``(f32[2], s32[])``),
      layouts dropped; ``""`` when the text gives none;
    - ``dtype``: element type of the (first) result, e.g. ``f32``;
    - ``scope``: id of the innermost scope holding the node (``""``: the top level);
    - ``op_name``: the framework op path (HLO ``metadata={op_name=...}``, an MLIR ``loc`` name,
      a torch_xla IR ``scope``), e.g. ``jit(step)/jvp(model)/layer_0/dot_general``;
    - ``source_file``, ``source_line`` (nullable int), ``source_function``: where user code
      created the op, when the text says so;
    - ``attrs``: dict of the other attributes as written (``{"dimensions": "{1}"}``);
    - ``text``: the instruction's line as written; ``line``: its 1-based line number;
    - ``order``: a topological rank (operands before users; text order breaks ties);
    - ``output``: the node is a result of the graph or of its computation (``ROOT``);
    - ``fallback``: host callback / CPU fallback (shown in red);
    - ``flops``, ``bytes``: rough cost estimates from shapes (NaN when unknown).

    ``edges``: ``source``, ``target`` (node ids; data flows source -> target), ``operand``
    (position among the target's operands; -1 for control edges), ``kind``: ``data``,
    ``control``, ``param`` (a caller's operand -> the callee's parameter), ``root`` (a called
    computation's result -> its caller).

    ``scopes`` (parents before children): ``id``, ``parent`` (``""``: top level), ``label``,
    ``kind`` (``fusion``, ``call``, ``while``, ``conditional``, ``computation``, ``function``,
    ``region``, ``op_name``, ``group``, ``module``, ``cluster``, ``block``), ``node`` (the
    node that calls the scope's computation, e.g. the fusion instruction; ``""`` if none),
    ``nodes`` (nodes inside, nested scopes included).

    ``error`` is set (and the frames are empty) when the text could not be parsed; displaying
    such a graph shows the error and the text.

    ``measured`` (None unless set): measured device time of the graph's instructions, one row
    per instruction as the profiler's trace names it: ``op``, ``seconds`` (all runs), ``count``
    (runs), ``share`` (of the profile's device time) and, where known, ``source_file``,
    ``source_line``, ``cell_line`` and ``code`` (the text of that line of the profiled cell).
    :meth:`xlanb.core.profile.Profile.graph` sets it from the profile's ``ops`` frame; the
    viewer colours nodes by it.
    """

    nodes: pd.DataFrame = field(default_factory=lambda: _empty(NODE_COLUMNS))
    edges: pd.DataFrame = field(default_factory=lambda: _empty(EDGE_COLUMNS))
    scopes: pd.DataFrame = field(default_factory=lambda: _empty(SCOPE_COLUMNS))
    kind: str = ""
    name: str = ""
    text: str = field(default="", repr=False)
    error: ParseError | None = None
    measured: pd.DataFrame | None = field(default=None, repr=False)

    @classmethod
    def unparsed(cls, text: str, kind: str, error: ParseError, name: str = "") -> Graph:
        """A graph that could not be parsed: empty frames, ``error`` set, ``text`` kept."""
        return cls(kind=kind, name=name, text=text, error=error)

    def __repr__(self) -> str:
        if self.error is not None:
            return f"<Graph {self.name!r}: not parsed ({self.error})>"
        return (
            f"<Graph {self.kind} {self.name!r}: {len(self.nodes)} nodes, "
            f"{len(self.edges)} edges, {len(self.scopes)} scopes>"
        )

    def node(self, key: str) -> pd.Series:
        """The row of the node with id ``key``, else the one node named ``key``."""
        rows = self.nodes[self.nodes["id"] == key]
        if rows.empty:
            rows = self.nodes[self.nodes["name"].isin([key, "%" + key])]
        if len(rows) != 1:
            found = "no node" if rows.empty else f"{len(rows)} nodes"
            raise KeyError(f"{found} with id or name {key!r}")
        return rows.iloc[0]

    def find(self, query: str) -> pd.DataFrame:
        """Nodes whose op, name, shape, op_name or source file contains ``query`` (case
        ignored): the same matches as the viewer's search box."""
        needle = query.lower()
        mask = pd.Series(False, index=self.nodes.index)
        for column in ("name", "op", "shape", "op_name", "source_file"):
            mask |= self.nodes[column].str.lower().str.contains(needle, regex=False)
        return self.nodes[mask]

    def with_fallbacks(self, ops: Iterable[str]) -> Graph:
        """A copy with nodes whose op is one of ``ops`` (e.g. the profile's ``aten::``
        fallback ops; ``aten::nonzero`` also matches HLO op_type ``aten__nonzero``) marked as
        fallbacks, on top of the host callbacks already marked."""
        keys = {_fallback_key(op) for op in ops if op}
        if not keys or self.nodes.empty:
            return self
        nodes = self.nodes.copy()
        op_type = nodes["attrs"].map(lambda a: a.get("op_type", "") if isinstance(a, dict) else "")
        hit = nodes["op"].map(_fallback_key).isin(keys) | op_type.map(
            lambda t: bool(t) and _fallback_key(t) in keys
        )
        nodes["fallback"] = nodes["fallback"] | hit
        return replace(self, nodes=nodes)

    # -- display ---------------------------------------------------------------------------
    def html(self, **options: Any) -> str:
        """The viewer as an HTML fragment with its JS/CSS inline (see
        :func:`xlanb.views.graph_viewer.graph_html` for the options)."""
        return implementation("graph_html")(self, **options)

    def to_html(self, path: str | os.PathLike | None = None, **options: Any) -> str:
        """A self-contained HTML page of the viewer; written to ``path`` when given."""
        page = implementation("graph_page")(self, **options)
        if path is not None:
            write_atomically(path, page)
        return page

    def viewer(self, **options: Any) -> Any:
        """A two-way notebook widget (anywidget): ``viewer.selected`` holds the clicked node."""
        return implementation("viewer_widget")(self, **options)

    def _repr_html_(self) -> str:
        return self.html()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": repr(self), "text/html": self.html()}


def _empty(columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(
        {column: pd.Series(dtype=_DTYPES.get(column, "object")) for column in columns}
    )


_DTYPES = {
    "source_line": "Int64",
    "line": "int64",
    "order": "int64",
    "output": "bool",
    "fallback": "bool",
    "flops": "float64",
    "bytes": "float64",
    "operand": "int64",
    "nodes": "int64",
}


def _mark_costs(nodes: list[dict[str, Any]], operand_shapes: list[list[str]]) -> None:
    """Each node's ``fallback``, ``flops`` and ``bytes``; computed once per distinct op and
    target (fallback) and per distinct op, shape and first operand's shape (costs of the ops
    whose estimate reads no attribute)."""
    fallbacks: dict[tuple[str, str | None, str | None, str | None], bool] = {}
    costs: dict[tuple[str, str, str | None], tuple[float, float]] = {}
    for node, shapes in zip(nodes, operand_shapes, strict=True):
        op, attrs, shape = node["op"], node["attrs"], node["shape"]
        get = attrs.get
        target = (op, get("custom_call_target"), get("call_target_name"), get("is_host_transfer"))
        fallback = fallbacks.get(target)
        if fallback is None:
            fallback = fallbacks[target] = is_host_callback(op, attrs)
        node["fallback"] = fallback
        if reads_attributes(op):
            node["flops"], node["bytes"] = estimate(op, shape, attrs, shapes)
            continue
        key = (op, shape, shapes[0] if shapes else None)
        cost = costs.get(key)
        if cost is None:
            cost = costs[key] = estimate(op, shape, attrs, shapes)
        node["flops"], node["bytes"] = cost


def _node_frame(nodes: list[dict[str, Any]]) -> pd.DataFrame:
    """The nodes frame, each column made once in its dtype (no inference)."""
    return _frame(NODE_COLUMNS, zip(*map(operator.itemgetter(*NODE_COLUMNS), nodes), strict=True))


def _frame(names: list[str], columns: Iterable[tuple[Any, ...]]) -> pd.DataFrame:
    """A frame of the columns ``names`` holding ``columns``' values, each in its dtype."""
    data: dict[str, Any] = {}
    for column, values in zip(names, columns, strict=True):
        dtype = _DTYPES.get(column, "object")
        if dtype == "object":
            data[column] = array = np.empty(len(values), dtype=object)
            array[:] = values
        elif dtype == "Int64":
            data[column] = pd.array(values, dtype=dtype)
        else:
            data[column] = np.array(values, dtype=dtype)
    return pd.DataFrame(data, copy=False)


class GraphBuilder:
    """Collects nodes, edges and scopes while a parser reads; :meth:`build` makes the Graph."""

    def __init__(self, kind: str, text: str) -> None:
        self.kind = kind
        self.text = text
        self.nodes: list[dict[str, Any]] = []
        self.index: dict[str, int] = {}
        self.edges: list[tuple[str, str, int, str]] = []
        self.scopes: list[dict[str, str]] = []
        self.scope_index: dict[str, int] = {}
        self._sources: list[int] = []
        self._targets: list[int] = []

    def add_node(
        self,
        node_id: str,
        *,
        name: str,
        op: str,
        shape: str = "",
        scope: str = "",
        op_name: str = "",
        source_file: str = "",
        source_line: int | None = None,
        source_function: str = "",
        attrs: dict[str, str] | None = None,
        text: str = "",
        line: int = 0,
        output: bool = False,
    ) -> int:
        """Add a node; a second node with the same id is a :class:`ParseError`."""
        if node_id in self.index:
            raise ParseError(self.kind, line, f"{name} is defined twice", text)
        self.index[node_id] = len(self.nodes)
        self.nodes.append(
            {
                "id": node_id,
                "name": name,
                "op": op,
                "shape": shape,
                "dtype": dtype_of(shape),
                "scope": scope,
                "op_name": op_name,
                "source_file": source_file,
                "source_line": source_line,
                "source_function": source_function,
                "attrs": attrs or {},
                "text": text,
                "line": line,
                "output": output,
            }
        )
        return len(self.nodes) - 1

    def add_node_row(self, row: dict[str, Any]) -> int:
        """:meth:`add_node` of a row that holds every column :meth:`add_node` fills (a
        parser's hot path: no keyword arguments)."""
        node_id = row["id"]
        if node_id in self.index:
            raise ParseError(self.kind, row["line"], f"{row['name']} is defined twice", row["text"])
        self.index[node_id] = len(self.nodes)
        self.nodes.append(row)
        return len(self.nodes) - 1

    def add_edge(self, source: str, target: str, operand: int = 0, kind: str = "data") -> None:
        self.edges.append((source, target, operand, kind))

    def add_resolved_edges(
        self, edges: list[tuple[str, str, int, str]], sources: list[int], targets: list[int]
    ) -> None:
        """Add edges whose ends' node indexes the parser knows (``sources``, ``targets``):
        :meth:`edge_ends` does not look them up again."""
        if len(self._sources) == len(self.edges):
            self._sources += sources
            self._targets += targets
        self.edges += edges

    def edge_ends(self) -> tuple[list[int], list[int]]:
        """The node indexes of each edge's source and target (-1: no such node yet), looked
        up once per edge however often asked."""
        done = len(self._sources)
        get = self.index.get
        if done < len(self.edges):
            added = self.edges[done:]
            self._sources += [get(edge[0], -1) for edge in added]
            self._targets += [get(edge[1], -1) for edge in added]
        if -1 in self._sources or -1 in self._targets:  # a node added since: look again
            self._sources = [get(edge[0], -1) for edge in self.edges]
            self._targets = [get(edge[1], -1) for edge in self.edges]
        return self._sources, self._targets

    def add_scope(
        self, scope_id: str, *, parent: str = "", label: str = "", kind: str = "", node: str = ""
    ) -> str:
        """Add a scope; returns its id, made unique with a ``#n`` suffix when taken."""
        unique, count = scope_id, 1
        while unique in self.scope_index or unique == "":
            count += 1
            unique = f"{scope_id}#{count}"
        self.scope_index[unique] = len(self.scopes)
        self.scopes.append(
            {"id": unique, "parent": parent, "label": label or scope_id, "kind": kind, "node": node}
        )
        return unique

    def build(self, name: str = "") -> Graph:
        """The Graph: topological order, host callbacks, cost estimates, scope sizes."""
        nodes = self.nodes
        sources, targets = self.edge_ends()
        if -1 in sources or -1 in targets:
            for source, target, _operand, _kind in self.edges:
                if source not in self.index or target not in self.index:
                    missing = source if source not in self.index else target
                    raise ParseError(self.kind, 0, f"edge to unknown node {missing!r}")
        group_crowds(self)
        self._order()
        _mark_costs(nodes, self._operand_shapes())
        scopes = self._scopes_parents_first()
        self._roll_up(scopes)
        node_frame = _node_frame(nodes) if nodes else _empty(NODE_COLUMNS)
        edge_frame = (
            _frame(EDGE_COLUMNS, zip(*self.edges, strict=True))
            if self.edges
            else _empty(EDGE_COLUMNS)
        )
        scope_frame = (
            pd.DataFrame(scopes, columns=SCOPE_COLUMNS) if scopes else _empty(SCOPE_COLUMNS)
        ).astype({"nodes": "int64"})
        return Graph(node_frame, edge_frame, scope_frame, kind=self.kind, name=name, text=self.text)

    def _operand_shapes(self) -> list[list[str]]:
        """Each node's operands' shapes, by position (``""`` where no data edge says)."""
        shape_of = [node["shape"] for node in self.nodes]
        operand_shapes: list[list[str]] = [[] for _ in self.nodes]
        for (_source, _target, operand, kind), s, t in zip(
            self.edges, *self.edge_ends(), strict=True
        ):
            if kind == "data" and operand >= 0:
                shapes = operand_shapes[t]
                if operand == len(shapes):
                    shapes.append(shape_of[s])
                    continue
                while len(shapes) <= operand:
                    shapes.append("")
                shapes[operand] = shape_of[s]
        return operand_shapes

    def _order(self) -> None:
        """Kahn's algorithm, text position breaking ties; on a cycle the earliest remaining
        node goes next, so every node gets a rank."""
        count = len(self.nodes)
        successors: list[list[int]] = [[] for _ in range(count)]
        indegree = [0] * count
        for s, t in zip(*self.edge_ends(), strict=True):
            if s != t:
                successors[s].append(t)
                indegree[t] += 1
        ready = [i for i in range(count) if indegree[i] == 0]
        heapq.heapify(ready)
        done = [False] * count
        rank = 0
        next_unfinished = 0
        while rank < count:
            if not ready:
                while done[next_unfinished]:
                    next_unfinished += 1
                ready.append(next_unfinished)
                indegree[next_unfinished] = 0
            index = heapq.heappop(ready)
            if done[index]:
                continue
            done[index] = True
            self.nodes[index]["order"] = rank
            rank += 1
            for successor in successors[index]:
                indegree[successor] -= 1
                if indegree[successor] == 0 and not done[successor]:
                    heapq.heappush(ready, successor)

    def _scopes_parents_first(self) -> list[dict[str, Any]]:
        ordered: list[dict[str, Any]] = []
        placed: set[str] = set()
        children: dict[str, list[dict[str, str]]] = {}
        for scope in self.scopes:
            parent = scope["parent"] if scope["parent"] in self.scope_index else ""
            scope["parent"] = parent
            children.setdefault(parent, []).append(scope)
        stack = list(reversed(children.get("", [])))
        while stack:
            scope = stack.pop()
            if scope["id"] in placed:
                continue
            placed.add(scope["id"])
            ordered.append(dict(scope))
            stack.extend(reversed(children.get(scope["id"], [])))
        return ordered

    def _roll_up(self, scopes: list[dict[str, Any]]) -> None:
        """Node counts per scope, and a caller's FLOPs = the sum over the scope it calls."""
        position = {scope["id"]: i for i, scope in enumerate(scopes)}
        counts = [0] * len(scopes)
        flops = [0.0] * len(scopes)
        for node in self.nodes:
            index = position.get(node["scope"])
            if node["scope"] and index is None:
                node["scope"] = ""
            if index is not None:
                counts[index] += 1
                if not math.isnan(node["flops"]):
                    flops[index] += node["flops"]
        for index in range(len(scopes) - 1, -1, -1):
            scope = scopes[index]
            scope["nodes"] = counts[index]
            parent = position.get(scope["parent"])
            if parent is not None:
                counts[parent] += counts[index]
                flops[parent] += flops[index]
            anchor = self.index.get(scope["node"]) if scope["node"] else None
            if anchor is not None:
                self.nodes[anchor]["flops"] = flops[index]
