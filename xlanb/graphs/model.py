"""The one graph model every parser produces: a :class:`Graph` of three DataFrames."""

from __future__ import annotations

import heapq
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from xlanb.core.files import write_atomically
from xlanb.core.seams import implementation
from xlanb.graphs.adjacency import grouped
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


def _objects(values: list[Any]) -> np.ndarray:
    """`values` as an object array, each value an element (a dict or list too)."""
    if _FROMITER_OBJECTS:  # without numpy's look into each value for a nested sequence
        return np.fromiter(values, dtype=object, count=len(values))
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


#: Whether ``np.fromiter`` makes object arrays (numpy 1.23 and newer).
_FROMITER_OBJECTS = np.lib.NumpyVersion(np.__version__) >= "1.23.0"


def _frame(names: list[str], columns: dict[str, list[Any]]) -> pd.DataFrame:
    """A frame of the columns ``names`` holding ``columns``' values, each in its dtype."""
    data: dict[str, Any] = {}
    for column in names:
        values = columns[column]
        dtype = _DTYPES.get(column, "object")
        if dtype == "object":
            data[column] = _objects(values)
        elif dtype == "Int64":  # line numbers, None where unknown: by floats, in C
            as_floats = np.array(values, dtype=float)
            missing = np.isnan(as_floats)
            data[column] = pd.arrays.IntegerArray(
                np.where(missing, 0.0, as_floats).astype(np.int64), missing
            )
        else:
            data[column] = np.array(values, dtype=dtype)
    return pd.DataFrame(data, copy=False)


#: Node columns a parser fills; :meth:`GraphBuilder.build` adds the others.
FILLED_COLUMNS = [c for c in NODE_COLUMNS if c not in ("order", "fallback", "flops", "bytes")]
#: The default of each filled column a parser may leave out of :meth:`GraphBuilder.add_nodes`.
_DEFAULTS: dict[str, Any] = {
    "scope": "",
    "op_name": "",
    "source_file": "",
    "source_line": None,
    "source_function": "",
    "text": "",
    "line": 0,
    "output": False,
}


class GraphBuilder:
    """Collects nodes, edges and scopes while a parser reads; :meth:`build` makes the Graph.

    Nodes are held by column (``columns[name][index]``), edges too (``edge_columns``)."""

    def __init__(self, kind: str, text: str) -> None:
        self.kind = kind
        self.text = text
        self.columns: dict[str, list[Any]] = {column: [] for column in FILLED_COLUMNS}
        self.index: dict[str, int] = {}
        self.edge_columns: dict[str, list[Any]] = {column: [] for column in EDGE_COLUMNS}
        self.scopes: list[dict[str, str]] = []
        self.scope_index: dict[str, int] = {}
        self._sources: list[int] = []
        self._targets: list[int] = []

    @property
    def node_count(self) -> int:
        return len(self.columns["id"])

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
        index = self.index[node_id] = self.node_count
        row: list[Any] = [node_id, name, op, shape, dtype_of(shape), scope, op_name, source_file]
        row += [source_line, source_function, attrs or {}, text, line, output]
        for values, value in zip(self.columns.values(), row, strict=True):
            values.append(value)
        return index

    def add_nodes(self, columns: dict[str, list[Any]]) -> int:
        """Add the nodes ``columns`` hold (``id``, ``name``, ``op``, ``shape``, ``attrs``
        and any other filled column; ``dtype`` is read from ``shape``); returns the index of
        the first. An id defined twice is the :class:`ParseError` of its second node."""
        ids = columns["id"]
        start, count = self.node_count, len(ids)
        fresh = dict(zip(ids, range(start, start + count), strict=True))
        if len(fresh) < count or not self.index.keys().isdisjoint(fresh):
            self._raise_defined_twice(columns)
        self.index.update(fresh)
        shapes = columns["shape"]
        if "dtype" not in columns:
            dtypes = {shape: dtype_of(shape) for shape in set(shapes)}
            columns = {**columns, "dtype": [dtypes[shape] for shape in shapes]}
        for column, values in self.columns.items():
            given = columns.get(column)
            values += [_DEFAULTS[column]] * count if given is None else given
        return start

    def _raise_defined_twice(self, columns: dict[str, list[Any]]) -> None:
        seen = set(self.index)
        for position, node_id in enumerate(columns["id"]):
            if node_id in seen:
                line = columns["line"][position] if "line" in columns else 0
                text = columns["text"][position] if "text" in columns else ""
                name = columns["name"][position]
                raise ParseError(self.kind, line, f"{name} is defined twice", text)
            seen.add(node_id)

    def add_edge(self, source: str, target: str, operand: int = 0, kind: str = "data") -> None:
        edges = self.edge_columns
        edges["source"].append(source)
        edges["target"].append(target)
        edges["operand"].append(operand)
        edges["kind"].append(kind)

    def add_resolved_edges(
        self, sources: list[int], targets: list[int], operands: list[int], kinds: list[str]
    ) -> None:
        """Add edges between the nodes of indexes ``sources`` and ``targets``:
        :meth:`edge_ends` does not look them up again."""
        edges = self.edge_columns
        if len(self._sources) == len(edges["source"]):
            self._sources += sources
            self._targets += targets
        ids = self.columns["id"]
        edges["source"] += map(ids.__getitem__, sources)
        edges["target"] += map(ids.__getitem__, targets)
        edges["operand"] += operands
        edges["kind"] += kinds

    def edge_ends(self) -> tuple[list[int], list[int]]:
        """The node indexes of each edge's source and target (-1: no such node yet), looked
        up once per edge however often asked."""
        done = len(self._sources)
        get = self.index.get
        sources, targets = self.edge_columns["source"], self.edge_columns["target"]
        if done < len(sources):
            self._sources += [get(source, -1) for source in sources[done:]]
            self._targets += [get(target, -1) for target in targets[done:]]
        if -1 in self._sources or -1 in self._targets:  # a node added since: look again
            self._sources = [get(source, -1) for source in sources]
            self._targets = [get(target, -1) for target in targets]
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
        sources, targets = self.edge_ends()
        if -1 in sources or -1 in targets:
            for source, target in zip(
                self.edge_columns["source"], self.edge_columns["target"], strict=True
            ):
                if source not in self.index or target not in self.index:
                    missing = source if source not in self.index else target
                    raise ParseError(self.kind, 0, f"edge to unknown node {missing!r}")
        group_crowds(self)
        columns: dict[str, list[Any]] = dict(self.columns)
        columns["order"] = self._order()
        columns["fallback"], columns["flops"], columns["bytes"] = _costs(
            columns, _OperandShapes(self)
        )
        scopes = self._scopes_parents_first()
        self._roll_up(scopes, columns)
        node_frame = _frame(NODE_COLUMNS, columns) if self.node_count else _empty(NODE_COLUMNS)
        edge_frame = _frame(EDGE_COLUMNS, self.edge_columns) if sources else _empty(EDGE_COLUMNS)
        scope_frame = (
            pd.DataFrame(scopes, columns=SCOPE_COLUMNS) if scopes else _empty(SCOPE_COLUMNS)
        ).astype({"nodes": "int64"})
        return Graph(node_frame, edge_frame, scope_frame, kind=self.kind, name=name, text=self.text)

    def _order(self) -> list[int]:
        """Each node's rank by Kahn's algorithm, text position breaking ties; on a cycle the
        earliest remaining node goes next, so every node gets a rank."""
        count = self.node_count
        successors, starts, indegree = _successors(*self.edge_ends(), count)
        ready = [i for i in range(count) if indegree[i] == 0]
        heapq.heapify(ready)
        heappush, heappop = heapq.heappush, heapq.heappop
        done = [False] * count
        order = [0] * count
        rank = 0
        next_unfinished = 0
        direct = -1  # a ready node below every node in `ready`: next, without the heap
        while rank < count:
            if direct >= 0:
                index, direct = direct, -1
            else:
                if not ready:
                    while done[next_unfinished]:
                        next_unfinished += 1
                    ready.append(next_unfinished)
                    indegree[next_unfinished] = 0
                index = heappop(ready)
                if done[index]:
                    continue
            done[index] = True
            order[index] = rank
            rank += 1
            for successor in successors[starts[index] : starts[index + 1]]:
                indegree[successor] -= 1
                if indegree[successor] == 0 and not done[successor]:
                    if direct < 0:
                        if ready and ready[0] < successor:
                            heappush(ready, successor)
                        else:
                            direct = successor
                    elif successor < direct:
                        heappush(ready, direct)
                        direct = successor
                    else:
                        heappush(ready, successor)
        return order

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

    def _roll_up(self, scopes: list[dict[str, Any]], columns: dict[str, list[Any]]) -> None:
        """Node counts per scope, and a caller's FLOPs = the sum over the scope it calls;
        a node whose scope is not one (``columns``' ``scope``) goes to the top level."""
        position = {scope["id"]: i for i, scope in enumerate(scopes)}
        get = position.get
        scope_of = columns["scope"]
        codes = np.array([get(scope, -1) for scope in scope_of], dtype=np.int64)
        if (codes < 0).any():
            columns["scope"] = [s if c >= 0 else "" for s, c in zip(scope_of, codes, strict=True)]
        inside = codes >= 0
        node_flops = np.array(columns["flops"], dtype=np.float64)
        weights = np.where(np.isnan(node_flops), 0.0, node_flops)[inside]
        counts = np.bincount(codes[inside], minlength=len(scopes)).tolist()
        flops = np.bincount(codes[inside], weights=weights, minlength=len(scopes)).tolist()
        anchored: list[tuple[int, float]] = []
        for index in range(len(scopes) - 1, -1, -1):
            scope = scopes[index]
            scope["nodes"] = counts[index]
            parent = get(scope["parent"])
            if parent is not None:
                counts[parent] += counts[index]
                flops[parent] += flops[index]
            anchor = self.index.get(scope["node"]) if scope["node"] else None
            if anchor is not None:
                anchored.append((anchor, flops[index]))
        if anchored:
            columns["flops"] = rolled = list(columns["flops"])
            for anchor, total in anchored:
                rolled[anchor] = total


def _successors(
    sources: list[int], targets: list[int], count: int
) -> tuple[list[int], list[int], list[int]]:
    """Each node's successors (``successors[starts[i]:starts[i + 1]]``, self-loops left out)
    and its number of predecessors."""
    ends = np.array([sources, targets], dtype=np.int64).reshape(2, -1)
    ends = ends[:, ends[0] != ends[1]]
    starts, (successors,) = grouped(ends[0], count, ends[1])
    return successors, starts, np.bincount(ends[1], minlength=count).tolist()


class _OperandShapes:
    """Each node's operands' shapes by position (``""`` where no data edge says), read from
    the data edges by node when asked; the first operand's shape of every node at once."""

    def __init__(self, builder: GraphBuilder) -> None:
        count = builder.node_count
        edges = builder.edge_columns
        operands = np.array(edges["operand"], dtype=np.int64)
        data = (np.array(edges["kind"], dtype=object) == "data") & (operands >= 0)
        ends = np.array(builder.edge_ends(), dtype=np.int64).reshape(2, -1)[:, data]
        self.shapes = builder.columns["shape"]
        self._starts, (self._sources, self._operands) = grouped(
            ends[1], count, ends[0], operands[data]
        )
        first = np.full(count, None, dtype=object)
        first[np.diff(self._starts) > 0] = ""
        zero = self._operands_zero(ends, operands[data])
        first[ends[1][zero]] = np.array(self.shapes, dtype=object)[ends[0][zero]]
        self.first: list[str | None] = first.tolist()

    @staticmethod
    def _operands_zero(ends: np.ndarray, operands: np.ndarray) -> np.ndarray:
        """The positions of the last data edge into each operand 0."""
        zero = np.flatnonzero(operands == 0)
        last = len(zero) - 1 - np.unique(ends[1][zero][::-1], return_index=True)[1]
        return zero[last]

    def of(self, node: int) -> list[str]:
        shapes: list[str] = []
        start, end = self._starts[node], self._starts[node + 1]
        for source, operand in zip(
            self._sources[start:end], self._operands[start:end], strict=True
        ):
            while len(shapes) <= operand:
                shapes.append("")
            shapes[operand] = self.shapes[source]
        return shapes


def _costs(
    columns: dict[str, list[Any]], operand_shapes: _OperandShapes
) -> tuple[list[bool], list[float], list[float]]:
    """Each node's ``fallback``, ``flops`` and ``bytes``; computed once per distinct op and
    target (fallback), per distinct op, shape and first operand's shape (costs of the ops
    whose estimate reads no attribute) and per distinct op, shape, operands' shapes and
    attributes (the others)."""
    fallbacks: dict[Any, bool] = {}
    costs: dict[tuple[Any, ...], tuple[float, float]] = {}
    reads = {op: reads_attributes(op) for op in set(columns["op"])}
    fallback_of: list[bool] = []
    flops: list[float] = []
    bytes_of: list[float] = []
    for index, (op, shape, attrs, first) in enumerate(
        zip(columns["op"], columns["shape"], columns["attrs"], operand_shapes.first, strict=True)
    ):
        target: Any = op  # a node without attributes has no call target
        if attrs:
            get = attrs.get
            custom, named = get("custom_call_target"), get("call_target_name")
            target = (op, custom, named, get("is_host_transfer"))
        fallback = fallbacks.get(target)
        if fallback is None:
            fallback = fallbacks[target] = is_host_callback(op, attrs)
        fallback_of.append(fallback)
        key: tuple[Any, ...] = (op, shape, first)
        if reads[op]:
            key = (op, shape, tuple(operand_shapes.of(index)), tuple(attrs.items()))
        cost = costs.get(key)
        if cost is None:
            cost = costs[key] = estimate(op, shape, attrs, operand_shapes.of(index))
        flops.append(cost[0])
        bytes_of.append(cost[1])
    return fallback_of, flops, bytes_of
