"""The payload: the JSON that carries one graph from Python to the viewer's JavaScript.

It travels in a ``<script type="application/json">`` inside the viewer's element (see
:mod:`.html`) or in the widget's ``data`` trait, and ``static/model.js`` decodes it. Columns
are lists with one entry per node (per scope, per edge); an entry marked *(s)* is an index
into ``strings`` (each distinct string travels once, ``""`` standing for none).

The payload's fields, one by one (version :data:`PAYLOAD_VERSION`), are described in
``PAYLOAD.md`` beside this module.
"""

from __future__ import annotations

import base64
import gzip
import json
import math
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from xlanb.graphs.hlo_read import without_metadata
from xlanb.graphs.model import Graph
from xlanb.graphs.ops import CATEGORIES, base_op, op_category
from xlanb.graphs.prepared import add_preparer
from xlanb.views.escape import BIDI_CONTROLS, json_visible_bidi, visible_bidi

#: Bumped when a field changes meaning (2: ``contract`` and ``measured`` added).
PAYLOAD_VERSION = 2

#: Bits of ``nodes.flags``.
FLAG_OUTPUT = 1  # a result of the graph or of its computation (ROOT)
FLAG_FALLBACK = 2  # a host callback / CPU fallback, drawn red
FLAGS = {"output": FLAG_OUTPUT, "fallback": FLAG_FALLBACK}

#: Kinds of edges (``Graph.edges["kind"]``); an edge's code is the index.
EDGE_KINDS = ("data", "control", "param", "root")
EDGE_CODES = {kind: code for code, kind in enumerate(EDGE_KINDS)}

#: States of a diff's nodes (``GraphDiff.nodes["status"]``); a node's code is the index.
DIFF_STATES = ("same", "added", "removed", "changed")
DIFF_CODES = {state: code for code, state in enumerate(DIFF_STATES)}

#: A node's ``cat`` is the index of its :func:`~xlanb.graphs.ops.op_category` here.
CATEGORY_CODES = {category: code for code, category in enumerate(CATEGORIES)}

#: What the viewer can colour nodes by (``""``: op kind; ``custom``: the ``cost=`` mapping;
#: ``time``: the measured device time).
COLOR_BY = ("", "flops", "bytes", "custom", "time")
#: How the viewer names the measured time (menu, legend, details).
MEASURED_LABEL = "device time"
#: Names of unmatched measured ops that travel (the legend says how many there are).
UNMATCHED_NAMES = 10

#: Characters of an instruction's text, and of one attribute value, that travel.
TEXT_LIMIT = 400
ATTR_LIMIT = 200
#: Graphs of more nodes carry no ``text`` column (the details panel writes an instruction out
#: from its fields: the texts are most of a payload and unlike each other), and a page sends
#: their payload as one binary buffer (:func:`binary_payload`), packed.
BIG_NODES = 50_000

_KIND_TITLES = {
    "hlo": "HLO",
    "stablehlo": "StableHLO",
    "ir": "IR",
    "torchscript": "TorchScript",
    "dot": "DOT",
}


class _Strings:
    """Interned strings: each distinct string travels once."""

    def __init__(self, start: list[str] | None = None) -> None:
        self.table: list[str] = list(start or ())
        self.index: dict[str, int] = {}
        for position, text in enumerate(self.table):
            self.index.setdefault(text, position)

    def __call__(self, value: Any) -> int:
        if value.__class__ is str:
            found = self.index.get(value)
            if found is not None:
                return found
        text = (
            "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)
        )
        found = self.index.get(text)
        if found is None:
            found = self.index[text] = len(self.table)
            self.table.append(text)
        return found

    def many(self, values: list[Any]) -> list[int]:
        """The index of each of `values` (as ``__call__``, strings looked up all at once)."""
        index, table = self.index, self.table
        if not {str}.issuperset(map(type, values)):
            return [self(value) for value in values]
        found: list[Any] = list(map(index.get, values))
        start = len(table)
        if found.count(None) == len(found):  # all new
            numbered = dict(zip(values, range(start, start + len(values)), strict=True))
            if len(numbered) == len(values):  # and distinct: appended as they are
                table.extend(values)
                index.update(numbered)
                return list(range(start, len(table)))
        if None in found:  # new strings, each appended once in the order they come
            fresh = [value for value, at in zip(values, found, strict=True) if at is None]
            new = list(dict.fromkeys(fresh))
            table.extend(new)
            index.update(zip(new, range(start, len(table)), strict=True))
            found = list(map(index.__getitem__, values))
        return found

    def columns(self, columns: Mapping[str, Any]) -> dict[str, np.ndarray]:
        """The index of each value of each column, the columns of fewer distinct values
        interned first (their indexes stay short); a missing value stands for ``""``. A
        column may come factorized already: (codes, distinct values), -1 for missing."""
        missing = self("")
        factorized = {}
        for key, values in columns.items():
            if isinstance(values, tuple):
                factorized[key] = values
                continue
            if not isinstance(values, pd.Series):
                values = pd.Series(values, dtype=object)
            factorized[key] = pd.factorize(values, use_na_sentinel=True)
        coded: dict[str, np.ndarray] = {}
        for key in sorted(factorized, key=lambda key: len(factorized[key][1])):
            codes, uniques = factorized[key]
            distinct = uniques if isinstance(uniques, list) else uniques.tolist()
            lookup = self.many(distinct) + [missing]
            coded[key] = np.array(lookup, np.int64)[codes]
        return coded


def node_label(kind: str, op: str, name: str, attrs: Mapping[str, str], op_name: str) -> str:
    """The first line a node's box shows: the op, or what names it better (a fusion's name, a
    custom call's target, a parameter's name, the callee of a call)."""
    bare = base_op(op)
    target = attrs.get("custom_call_target") or attrs.get("call_target_name")
    if target:
        return target.strip('"')
    if bare == "fusion":
        return name
    if bare in ("parameter", "input"):
        return op_name if kind == "stablehlo" and op_name and "/" not in op_name else name
    if bare in ("call",) and attrs.get("callee"):
        return f"call @{attrs['callee']}"
    if kind == "dot":
        return name
    if kind == "stablehlo":
        return bare
    if op.startswith(("xla::", "lazy_tensors::")):
        return bare
    return op


def node_category(op: str, anchored: bool) -> int:
    """The code of a node's category (its index in :data:`CATEGORIES`)."""
    return CATEGORY_CODES[op_category(op, anchored)]


def graph_title(graph: Graph) -> str:
    """The default title: the kind and the graph's name (``HLO jit(step)``)."""
    return f"{_KIND_TITLES.get(graph.kind, graph.kind)} {graph.name}".strip()


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) or math.isinf(number) else number


def _op_key(op: str) -> str:
    """``sort.0`` -> ``sort``: the instruction a thunk named with a run suffix belongs to."""
    head, _, tail = op.rpartition(".")
    return head if head and tail.isdigit() else op


def measured_nodes(
    graph: Graph, measured: pd.DataFrame
) -> tuple[dict[int, dict[str, Any]], pd.DataFrame]:
    """Measured ops matched to the graph's nodes by name: {node index: totals} and the rows
    that name no node. An op matches the node of its name, else (``sort.0``) the node named
    without the numeric suffix; rows matching one node add up."""
    index: dict[str, int] = {}
    for i, name in enumerate(graph.nodes["name"]):
        index.setdefault(str(name).lstrip("%"), i)
    found: dict[int, dict[str, Any]] = {}
    missing: list[int] = []
    rows = measured.reset_index(drop=True)
    for position, row in enumerate(rows.to_dict("records")):
        seconds = _finite(row.get("seconds"))
        if seconds is None:
            continue
        op = str(row.get("op", ""))
        node = index.get(op, index.get(_op_key(op)))
        if node is None:
            missing.append(position)
            continue
        count, share = _finite(row.get("count")), _finite(row.get("share"))
        line, cell_line = _finite(row.get("source_line")), _finite(row.get("cell_line"))
        totals = found.setdefault(
            node,
            {"seconds": 0.0, "count": None, "share": None, "cell_line": 0, "code": ""},
        )
        totals["seconds"] += seconds
        if count is not None:
            totals["count"] = (totals["count"] or 0) + int(count)
        if share is not None:
            totals["share"] = (totals["share"] or 0.0) + share
        if cell_line and not totals["cell_line"]:
            totals["cell_line"] = int(cell_line)
            code = row.get("code")
            totals["code"] = code if isinstance(code, str) else ""
        if line and not totals.get("line"):
            totals["file"] = row.get("source_file")
            totals["line"] = int(line)
    return found, rows.loc[missing]


def _measured_payload(graph: Graph, measured: pd.DataFrame, strings: _Strings) -> dict[str, Any]:
    found, missing = measured_nodes(graph, measured)
    order = sorted(found, key=lambda node: -found[node]["seconds"])

    def column(key: str, default: Any) -> list[Any]:
        return [found[node].get(key, default) for node in order]

    unmatched_seconds = sum(_finite(s) or 0.0 for s in missing.get("seconds", []))
    return {
        "label": MEASURED_LABEL,
        "node": order,
        "seconds": column("seconds", None),
        "count": column("count", None),
        "share": column("share", None),
        "cellLine": column("cell_line", 0),
        "code": [strings(code) for code in column("code", "")],
        "file": [strings(file) for file in column("file", "")],
        "line": column("line", 0),
        "total": sum(found[node]["seconds"] for node in order),
        "unmatched": {
            "ops": len(missing),
            "seconds": unmatched_seconds,
            "names": [str(op) for op in missing.get("op", [])][:UNMATCHED_NAMES],
        },
    }


def contract() -> dict[str, Any]:
    """The payload's ``contract``: the codes it uses, by name."""
    return {
        "flags": dict(FLAGS),
        "edgeKinds": list(EDGE_KINDS),
        "diffStates": list(DIFF_STATES),
        "categories": list(CATEGORIES),
    }


def _node_columns(
    graph: Graph, strings: _Strings, node_ids: pd.Index, scope_ids: pd.Index
) -> tuple[dict[str, Any], list[list[int]]]:
    """The payload's ``nodes`` columns as arrays (``attrSet``: each node's index into the
    distinct flattened attribute sets, returned beside them; ``text``: a list), and the
    ``flops`` and ``bytes`` columns."""
    nodes = graph.nodes
    ops = nodes["op"]
    attr_codes, distinct_attrs, targeted = _attr_sets(nodes["attrs"].tolist())
    op_codes, op_values = pd.factorize(ops, use_na_sentinel=False)  # a missing op: a value
    distinct_ops = op_values.tolist()
    labels = _labels(graph, op_codes, distinct_ops, attr_codes, targeted)
    interned = strings.columns(
        {
            "label": labels,
            "op": (op_codes, distinct_ops),
            "shape": nodes["shape"],
            "file": nodes["source_file"],
            "func": nodes["source_function"],
            "opName": nodes["op_name"],
        }
    )
    attr_sets = _flat_attr_sets(distinct_attrs, strings)
    ids: Any = nodes["id"]
    if node_ids.is_unique and not nodes["id"].hasnans:  # each id distinct: factorized as is
        ids = (np.arange(len(nodes)), node_ids.tolist())
    if nodes["id"].equals(nodes["name"]):
        interned["id"] = interned["name"] = strings.columns({"id": ids})["id"]
    else:
        interned |= strings.columns({"id": ids, "name": nodes["name"]})
    columns: dict[str, Any] = {
        "id": interned["id"],
        "name": interned["name"],
        "label": interned["label"],
        "op": interned["op"],
        "shape": interned["shape"],
        "scope": _positions(scope_ids, nodes["scope"]),
        "opName": interned["opName"],
        "file": interned["file"],
        "line": _whole_numbers(nodes["source_line"]),
        "func": interned["func"],
    }
    if len(nodes) <= BIG_NODES:
        columns["text"] = _texts(graph.kind, nodes["text"].tolist())
    columns["attrSet"] = attr_codes
    columns["order"] = nodes["order"].to_numpy(dtype=np.int64)
    flags = nodes["output"].astype(bool).to_numpy() * FLAG_OUTPUT
    flags |= nodes["fallback"].astype(bool).to_numpy() * FLAG_FALLBACK
    columns["flags"] = flags.astype(np.int64)
    anchored = nodes["id"].isin(graph.scopes["node"]).to_numpy()
    pairs, pair_codes = np.unique(op_codes * 2 + anchored, return_inverse=True)
    lookup = [node_category(distinct_ops[pair // 2], bool(pair % 2)) for pair in pairs.tolist()]
    columns["cat"] = np.array(lookup, np.int64)[pair_codes.reshape(-1)]
    columns["flops"] = _finite_column(nodes["flops"])
    columns["bytes"] = _finite_column(nodes["bytes"])
    return columns, attr_sets


def _positions(index: pd.Index, values: pd.Series | list[Any]) -> np.ndarray:
    """Each value's position in `index` (as a ``{value: position}`` dict finds it, the last of
    equal values), -1 where it is not there."""
    if index.is_unique:
        return index.get_indexer(pd.Index(values, dtype=object)).astype(np.int64)
    found = {value: i for i, value in enumerate(index.tolist())}
    return np.array([found.get(value, -1) for value in values], np.int64)


def _labels(
    graph: Graph,
    op_codes: np.ndarray,
    distinct_ops: list[str],
    attr_codes: np.ndarray,
    targeted: np.ndarray,
) -> np.ndarray:
    """Each node's :func:`node_label`: the op itself where that is its label whatever the node
    (most), else written per node."""
    kind = graph.kind
    plain = np.array([node_label(kind, op, "\0", {}, "\0") == op for op in distinct_ops], bool)
    labels = np.array(distinct_ops, dtype=object)[op_codes]
    special = np.flatnonzero(~plain[op_codes] | targeted[attr_codes])
    if len(special):
        nodes = graph.nodes.iloc[special]
        rows = zip(
            nodes["op"].tolist(),
            nodes["name"].tolist(),
            nodes["attrs"].tolist(),
            nodes["op_name"].tolist(),
            strict=True,
        )
        labels[special] = [
            node_label(kind, op, name, attrs if isinstance(attrs, dict) else {}, op_name)
            for op, name, attrs, op_name in rows
        ]
    return labels


def _texts(kind: str, texts: list[str]) -> list[str]:
    """The instructions' texts as they travel: HLO metadata dropped, clipped."""
    shown: list[str] = []
    for text in texts:
        if kind == "hlo" and "metadata={" in text:
            text = without_metadata(text)
        shown.append(text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT] + " …")
    return shown


def _whole_numbers(column: pd.Series) -> np.ndarray:
    """A nullable number column as ints, 0 where missing or not finite."""
    values = pd.to_numeric(column, errors="coerce").astype("float64").to_numpy()
    return np.where(np.isfinite(values), values, 0).astype("int64")


def _finite_column(column: pd.Series) -> np.ndarray:
    """A number column as floats, NaN where missing or not finite."""
    values = pd.to_numeric(column, errors="coerce").astype("float64").to_numpy()
    return np.where(np.isfinite(values), values, np.nan)


def _nullable(values: np.ndarray) -> list[float | None]:
    """A float column as a list, None where NaN."""
    finite = np.isfinite(values)
    if finite.all():
        return values.tolist()
    return [v if ok else None for v, ok in zip(values.tolist(), finite.tolist(), strict=True)]


#: A node's attributes: (key, value) pairs.
AttrItems = tuple[tuple[str, Any], ...]


def _attr_sets(attrs_list: list[Any]) -> tuple[np.ndarray, list[AttrItems], np.ndarray]:
    """Each node's attributes as the index of its set among the distinct sets (set 0: none),
    the distinct sets (their items), and per set whether it names a call target (which
    labels the node)."""
    try:  # every node's a dict of hashable values: looked up at once
        keys = list(map(tuple, map(dict.items, attrs_list)))
        seen: dict[AttrItems, int] = {(): 0}
        codes = [seen.setdefault(key, len(seen)) for key in keys]
        distinct = list(seen)
    except TypeError:
        codes, distinct = _attr_sets_one_by_one(attrs_list)
    targeted = [
        any(key in ("custom_call_target", "call_target_name") for key, _ in items)
        for items in distinct
    ]
    return np.array(codes, np.int64), distinct, np.array(targeted, bool)


def _attr_sets_one_by_one(attrs_list: list[Any]) -> tuple[list[int], list[AttrItems]]:
    """:func:`_attr_sets` where not every node's attributes are a dict of hashable values."""
    seen: dict[AttrItems, int] = {(): 0}
    distinct: list[AttrItems] = [()]
    codes: list[int] = []
    for attrs in attrs_list:
        if not attrs or not isinstance(attrs, dict):
            codes.append(0)
            continue
        key = tuple(attrs.items())
        try:
            code = seen.setdefault(key, len(distinct))
        except TypeError:  # a value that is not hashable: a set of its own
            code = len(distinct)
        if code == len(distinct):
            distinct.append(key)
        codes.append(code)
    return codes, distinct


def _flat_attr_sets(sets: list[AttrItems], strings: _Strings) -> list[list[int]]:
    """Each set of attributes as ``[key, value, key, value, ...]`` string indexes (values
    clipped to :data:`ATTR_LIMIT`), all interned at once."""
    flat: list[str] = []
    ends: list[int] = []
    for items in sets:
        for key, value in items:
            if value.__class__ is not str:
                value = str(value)
            flat += (key, value if len(value) <= ATTR_LIMIT else value[:ATTR_LIMIT] + " …")
        ends.append(len(flat))
    found = strings.many(flat)
    return [found[start:end] for start, end in zip([0, *ends[:-1]], ends, strict=True)]


def _flat_edges(edges: pd.DataFrame, node_ids: pd.Index) -> np.ndarray:
    """The payload's ``edges``: ``[source, target, kind code, ...]``."""
    flat = np.empty((len(edges), 3), dtype=np.int64)
    if edges.empty:
        return flat.ravel()
    flat[:, 0] = _positions(node_ids, edges["source"])
    flat[:, 1] = _positions(node_ids, edges["target"])
    data_edge = EDGE_CODES["data"]
    codes, kinds = pd.factorize(edges["kind"])
    lookup = np.array([EDGE_CODES.get(kind, data_edge) for kind in kinds.tolist()], np.int64)
    flat[:, 2] = lookup[codes]
    return flat.ravel()


def _custom_cost(nodes: pd.DataFrame, cost: Mapping[str, float] | pd.Series) -> list[float | None]:
    """Each node's ``cost``, looked up by id, then by name."""
    values = dict(cost.items()) if isinstance(cost, (Mapping, pd.Series)) else {}
    return [
        _finite(values.get(node_id, values.get(name)))
        for node_id, name in zip(nodes["id"], nodes["name"], strict=True)
    ]


def _scope_columns(
    scopes: pd.DataFrame, strings: _Strings, scope_ids: pd.Index, node_ids: pd.Index
) -> dict[str, list[int]]:
    """The payload's ``scopes`` columns."""
    anchors = _positions(node_ids, scopes["node"].fillna("").tolist())
    return {
        "parent": _positions(scope_ids, scopes["parent"]).tolist(),
        "label": [strings(label) for label in scopes["label"].tolist()],
        "kind": [strings(kind) for kind in scopes["kind"].tolist()],
        "anchor": anchors.tolist(),
        "size": [int(size) for size in scopes["nodes"].tolist()],
    }


@dataclass
class GraphPart:
    """What a payload holds of its graph alone (no fallbacks, measured time or diff): the
    ``nodes`` columns (arrays, as :func:`_node_columns` makes them) with their flops and
    bytes, the distinct attribute sets, the ``edges``, and the string table they left (the rest
    of the payload interns its strings after these, as before)."""

    strings: tuple[str, ...]
    string_index: dict[str, int]
    node_ids: pd.Index
    scope_ids: pd.Index
    columns: dict[str, Any]
    attr_sets: list[list[int]]
    edges: np.ndarray
    #: Built for a graph of over :data:`BIG_NODES` nodes (without the ``text`` column).
    big: bool
    #: The length of these columns, edges and strings packed (:func:`packed_for_script`),
    #: once measured (:func:`least_packed_size`).
    packed_size: int | None = None

    def listed(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The ``nodes`` columns as JSON lists (``attrs``: each node's flattened set) and the
        ``flops`` and ``bytes`` columns (None for unknown)."""
        columns: dict[str, Any] = {}
        for key, column in self.columns.items():
            if key == "attrSet":
                sets = self.attr_sets
                columns["attrs"] = [sets[code] for code in column.tolist()]
            elif key not in ("flops", "bytes"):
                columns[key] = column.tolist() if isinstance(column, np.ndarray) else column
        costs = {key: _nullable(self.columns[key]) for key in ("flops", "bytes")}
        return columns, costs


#: The parts built, by the graph's ``nodes`` frame (a graph parsed once shares it with its
#: copies): a weak reference to that frame and the part; the newest :data:`PARTS_KEPT`.
PARTS_KEPT = 8
_parts: OrderedDict[int, tuple[weakref.ref[pd.DataFrame], GraphPart]] = OrderedDict()
_parts_lock = threading.Lock()


def graph_part(graph: Graph) -> GraphPart:
    """The :class:`GraphPart` of `graph`, built once (by the read-ahead thread while the
    cell ran, :mod:`xlanb.graphs.prepared`, or by the first payload of the graph)."""
    found = _found_part(graph)
    if found is not None:
        return found
    part = _built_part(graph, _Strings())
    nodes = graph.nodes
    with _parts_lock:
        _parts[id(nodes)] = (weakref.ref(nodes), part)
        _parts.move_to_end(id(nodes))
        while len(_parts) > PARTS_KEPT:
            _parts.popitem(last=False)
    return part


def _built_part(graph: Graph, strings: _Strings) -> GraphPart:
    """`graph`'s :class:`GraphPart`, its strings interned into `strings` (kept by the part)."""
    nodes = graph.nodes
    node_ids = pd.Index(nodes["id"], dtype=object)
    scope_ids = pd.Index(graph.scopes["id"], dtype=object)
    columns, attr_sets = _node_columns(graph, strings, node_ids, scope_ids)
    edges = _flat_edges(graph.edges, node_ids)
    big = len(nodes) > BIG_NODES
    return GraphPart(
        tuple(strings.table),
        strings.index,
        node_ids,
        scope_ids,
        columns,
        attr_sets,
        edges,
        big,
    )


def _found_part(graph: Graph) -> GraphPart | None:
    """The :class:`GraphPart` of `graph` if it was built."""
    nodes = graph.nodes
    with _parts_lock:
        found = _parts.get(id(nodes))
    if found is None or found[0]() is not nodes or found[1].big != (len(nodes) > BIG_NODES):
        return None
    return found[1]


def measure_packed_size(graph: Graph) -> None:
    """Pack `graph`'s part once to know its size (what :func:`least_packed_size` tells)."""
    part = graph_part(graph)
    if part.packed_size is None and not part.big:
        columns, costs = part.listed()
        alone = {"strings": part.strings, "nodes": columns, "edges": part.edges.tolist()}
        part.packed_size = len(packed_for_script({**alone, "cost": costs}))


def least_packed_size(graph: Graph) -> int | None:
    """About the fewest characters `graph`'s packed payload (not binary) can take: its part's
    packed, where the read-ahead thread measured it (None otherwise). The whole payload holds
    the part's JSON and more, so it packs to no less, give or take gzip's choices: a display
    whose room for the graph is clearly under this skips the graph without packing it."""
    part = _found_part(graph)
    return part.packed_size if part is not None else None


add_preparer(graph_part)
add_preparer(measure_packed_size)


def payload(
    graph: Graph,
    *,
    title: str | None = None,
    height: int = 520,
    fallback_ops: Iterable[str] = (),
    color_by: str | None = None,
    cost: Mapping[str, float] | pd.Series | None = None,
    cost_label: str = "cost",
    diff_status: list[int] | None = None,
    peers: list[int] | None = None,
    summary: str | None = None,
    measured: pd.DataFrame | None = None,
    start_strings: list[str] | None = None,
    arrays: bool = False,
) -> dict[str, Any]:
    """The JSON the viewer reads (the module's docstring says what each field holds).

    ``cost`` maps node ids (or names) to a number of your own to colour by; ``measured``
    (default: ``graph.measured``, e.g. from :meth:`~xlanb.core.profile.Profile.graph`) holds
    measured device time per instruction (rows of a profile's ``ops`` frame); ``color_by`` is
    ``"flops"``, ``"bytes"``, ``"custom"`` (``cost``), ``"time"`` (``measured``) or None:
    ``custom`` with a ``cost``, else ``time`` where something was measured, else op kind.
    ``diff_status`` holds a :data:`DIFF_CODES` code per node, ``peers`` the matching node's
    index in the other graph (-1: none). ``start_strings``: the string table to start from (a
    payload sent as a patch of another, :mod:`.patch`, keeps that one's string indexes);
    ``arrays``: the columns of ``nodes`` (but ``text``), ``edges`` and the flops and bytes as
    numpy arrays (NaN for unknown), ``nodes.attrSet`` in place of ``attrs`` with the distinct
    sets in ``attrSets``, as :func:`binary_payload` sends them."""
    if color_by not in (None, *COLOR_BY):
        raise ValueError(f"color_by is one of {COLOR_BY[1:]} or None, not {color_by!r}")
    if measured is None:
        measured = graph.measured
    graph = graph.with_fallbacks(fallback_ops)
    nodes, scopes = graph.nodes, graph.scopes
    if start_strings is None:  # the graph's own part, built once; its strings go on
        part = graph_part(graph)
        strings = _Strings()
        strings.table, strings.index = list(part.strings), dict(part.string_index)
    else:  # strings indexed as the payload this one patches
        strings = _Strings(start=start_strings)
        part = _built_part(graph, strings)
    columns: dict[str, Any]
    if arrays:
        columns = dict(part.columns)
        flops, nbytes = columns.pop("flops"), columns.pop("bytes")
        flat_edges: Any = part.edges
    else:
        columns, costs = part.listed()
        flops, nbytes, flat_edges = costs["flops"], costs["bytes"], part.edges.tolist()
    if diff_status is not None:
        columns["diff"] = diff_status
    if peers is not None:
        columns["peer"] = peers
    cost_columns: dict[str, Any] = {"flops": flops, "bytes": nbytes}
    if cost is not None:
        cost_columns["custom"] = _custom_cost(nodes, cost)
        cost_columns["customLabel"] = cost_label
        color_by = color_by or "custom"
    extra: dict[str, Any] = {}
    if measured is not None and not measured.empty:
        extra["measured"] = _measured_payload(graph, measured, strings)
        color_by = color_by or ("time" if extra["measured"]["node"] else None)
    if color_by == "time" and "measured" not in extra:
        color_by = None  # nothing measured: colour by op kind
    scope_columns = _scope_columns(scopes, strings, part.scope_ids, part.node_ids)
    return {
        "version": PAYLOAD_VERSION,
        "kind": graph.kind,
        "title": title if title is not None else graph_title(graph),
        "summary": summary,
        "strings": strings.table,
        "contract": contract(),
        "nodes": columns,
        "scopes": scope_columns,
        "edges": flat_edges,
        "cost": cost_columns,
        **extra,
        "options": {"height": int(height), "colorBy": color_by or ""},
    } | ({"attrSets": part.attr_sets} if arrays else {})


#: The ``type`` of a ``<script>`` holding a payload as gzip, base64-encoded (read with the
#: browser's ``DecompressionStream``): a payload's JSON is mostly repeated keys and numbers and
#: shrinks 6-7 times, and base64 has no character HTML reads as markup.
PACKED_TYPE = "application/x-xlanb-gzip-base64"


def packed_for_script(data: Any, level: int = 6) -> str:
    """`data` as JSON, gzip-compressed and base64-encoded (deterministic: no timestamp)."""
    text = json_visible_bidi(
        json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    )
    return packed_bytes(text.encode("utf-8"), level)


#: Columns of a payload's ``nodes`` that stay JSON lists in :func:`binary_payload`.
_LIST_COLUMNS = ("attrs", "text")
#: Integer types of binary columns, narrowest first: (the key a column is sent under, dtype).
_INT_TYPES = (("i8", "<i1"), ("u8", "<u1"), ("i16", "<i2"), ("u16", "<u2"), ("i32", "<i4"))


def binary_payload(data: dict[str, Any]) -> bytes:
    """A payload as one buffer, its number columns (``nodes`` but attrs and text, ``scopes``,
    ``edges``, the lists of ``cost``) as little-endian binary, its ``strings`` as
    ``{"utf8": [byte offset, bytes], "lengths": column}`` (the strings one after the other and
    the length of each in UTF-16 code units, JavaScript's), the rest JSON: the JSON header's
    length in bytes (uint32), the header (UTF-8; a binary column in it is
    ``{"i8"|"u8"|"i16"|"u16"|"i32"|"f32"|"f64": [byte offset, count]}``, the narrowest type
    that holds
    its values as they are, a float column of whole numbers as integers), zeros up to a
    multiple of 8 bytes, then the columns, each at an offset (from there) that is a multiple
    of 8; ``edges`` as three columns, ``source``, ``target`` and ``kind``. ``model.js`` reads
    the columns as typed arrays where they lie (``decodeBuffer``): nothing to parse per
    number."""
    chunks: list[bytes] = []
    size = 0
    # a column sent twice (a graph whose ids are its names) goes once: by id(column), the
    # column kept (so that its id stays its own) and where it went
    sent: dict[int, tuple[Any, dict[str, list[int]]]] = {}

    def put(array: np.ndarray, key: str) -> dict[str, list[int]]:
        nonlocal size
        raw = array.tobytes()
        chunks.append(raw + bytes(-len(raw) % 8))
        size += len(chunks[-1])
        return {key: [size - len(chunks[-1]), len(array)]}

    def ints(values: Any) -> dict[str, list[int]]:
        if id(values) in sent:
            return sent[id(values)][1]
        array = np.asarray(values, dtype=np.int64)
        low, high = (int(array.min()), int(array.max())) if len(array) else (0, 0)
        key, dtype = next(
            (key, dtype)
            for key, dtype in _INT_TYPES
            if np.iinfo(dtype).min <= low and high <= np.iinfo(dtype).max
        )
        sent[id(values)] = (values, put(array.astype(dtype), key))
        return sent[id(values)][1]

    def floats(values: Any) -> Any:
        if isinstance(values, str):
            return values
        array = np.asarray(values, dtype="<f8")  # None -> NaN
        if np.isfinite(array).all() and (np.abs(array) < 2**31).all():
            if (array == np.round(array)).all():
                return ints(array.astype(np.int64))
        narrow = array.astype("<f4")
        if np.array_equal(narrow.astype("<f8"), array, equal_nan=True):
            return put(narrow, "f32")
        return put(array, "f64")

    nodes = {
        key: column if key in _LIST_COLUMNS else ints(column)
        for key, column in data["nodes"].items()
    }
    scopes = {key: ints(column) for key, column in data["scopes"].items()}
    cost = {key: floats(column) for key, column in data["cost"].items()}
    triples = np.asarray(data["edges"], dtype=np.int64).reshape(-1, 3)
    edges = {key: ints(triples[:, i].copy()) for i, key in enumerate(("source", "target", "kind"))}
    strings = _joined_strings(data["strings"])
    text_bytes = np.frombuffer(strings[0].encode("utf-8"), np.uint8)
    table = {**put(text_bytes, "utf8"), "lengths": ints(strings[1])}
    header = {
        **data,
        "strings": table,
        "nodes": nodes,
        "scopes": scopes,
        "edges": edges,
        "cost": cost,
    }
    text = json.dumps(header, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    head = json_visible_bidi(text).encode("utf-8")
    prefix = len(head).to_bytes(4, "little") + head
    prefix += bytes(-len(prefix) % 8)
    return b"".join([prefix, *chunks])


def _joined_strings(strings: list[str]) -> tuple[str, np.ndarray]:
    """`strings` one after the other (bidirectional controls made visible, as
    :func:`json_visible_bidi` shows them) and each one's length in UTF-16 code units."""
    text = "".join(strings)
    if text.isascii():
        return text, np.fromiter(map(len, strings), np.int64, len(strings))
    if any(control in text for control in BIDI_CONTROLS):
        strings = [visible_bidi(string) for string in strings]
        text = "".join(strings)
    lengths = [len(string.encode("utf-16-le")) // 2 for string in strings]
    return text, np.array(lengths, np.int64)


def packed_bytes(raw: bytes, level: int = 6) -> str:
    """`raw` gzip-compressed and base64-encoded, as a :data:`PACKED_TYPE` script holds it
    (deterministic: no timestamp); the page unpacks it with ``DecompressionStream``."""
    return base64.b64encode(gzip.compress(raw, level, mtime=0)).decode("ascii")


def json_for_script(data: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: every ``<``, ``>`` and ``&`` is
    written as a ``\\u`` escape (so no ``</script``, ``<!--`` or markup survives in the page's
    text), and so are the line separators U+2028/U+2029."""
    text = json_visible_bidi(
        json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    )
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )
