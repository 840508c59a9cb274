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
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from xlanb.graphs.model import Graph
from xlanb.graphs.ops import CATEGORIES, base_op, op_category
from xlanb.graphs.prepared import add_preparer
from xlanb.views.escape import json_visible_bidi

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
#: their number columns as binary (:func:`binary_columns`), packed.
BIG_NODES = 50_000

_METADATA = re.compile(r',?\s*metadata=\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}')
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
        """The index of each of `values` (as ``__call__``, in one loop)."""
        index, table = self.index, self.table
        if index.keys().isdisjoint(values) and all(v.__class__ is str for v in values):
            new = dict.fromkeys(values)  # distinct, in order
            if len(new) == len(values):  # all new and distinct: appended as they are
                start = len(table)
                table.extend(values)
                index.update(zip(values, range(start, len(table)), strict=True))
                return list(range(start, len(table)))
        found: list[int] = []
        for value in values:
            if value.__class__ is not str:
                found.append(self(value))
                continue
            position = index.get(value)
            if position is None:
                position = index[value] = len(table)
                table.append(value)
            found.append(position)
        return found

    def columns(self, columns: Mapping[str, pd.Series | list[Any]]) -> dict[str, list[int]]:
        """The index of each value of each column, the columns of fewer distinct values
        interned first (their indexes stay short); a missing value stands for ``""``."""
        missing = self("")
        factorized = {}
        for key, values in columns.items():
            if isinstance(values, list):
                values = pd.Series(values, dtype=object)
            factorized[key] = pd.factorize(values, use_na_sentinel=True)
        coded: dict[str, list[int]] = {}
        for key in sorted(factorized, key=lambda key: len(factorized[key][1])):
            codes, uniques = factorized[key]
            lookup = self.many(uniques.tolist()) + [missing]
            coded[key] = np.array(lookup, np.int64)[codes].tolist()
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


#: The payload's ``nodes`` columns, in the order they travel.
_NODE_COLUMNS = (
    "id",
    "name",
    "label",
    "op",
    "shape",
    "scope",
    "opName",
    "file",
    "line",
    "func",
    "text",
    "attrs",
    "order",
    "flags",
    "cat",
)
#: The ``Graph.nodes`` columns :func:`_node_columns` reads, in the order it unpacks them.
_GRAPH_COLUMNS = (
    "id",
    "name",
    "op",
    "shape",
    "scope",
    "op_name",
    "source_file",
    "source_line",
    "source_function",
    "attrs",
    "text",
    "order",
    "output",
    "fallback",
    "flops",
    "bytes",
)


def _node_columns(
    graph: Graph, strings: _Strings, scope_index: Mapping[str, int]
) -> tuple[dict[str, list[Any]], list[float | None], list[float | None]]:
    """The payload's ``nodes`` columns, and each node's flops and bytes."""
    nodes, scopes = graph.nodes, graph.scopes
    anchored = set(scopes["node"])
    ids, names, ops = nodes["id"].tolist(), nodes["name"].tolist(), nodes["op"].tolist()
    attrs_list = [a if isinstance(a, dict) else {} for a in nodes["attrs"].tolist()]
    labels = _labels(graph.kind, ops, names, attrs_list, nodes["op_name"].tolist())
    interned = strings.columns(
        {
            "label": labels,
            "op": nodes["op"],
            "shape": nodes["shape"],
            "file": nodes["source_file"],
            "func": nodes["source_function"],
            "opName": nodes["op_name"],
        }
    )
    interned["attrs"] = _attr_columns(attrs_list, strings)
    if ids == names:
        interned["id"] = interned["name"] = strings.columns({"id": nodes["id"]})["id"]
    else:
        interned |= strings.columns({"id": nodes["id"], "name": nodes["name"]})
    columns: dict[str, list[Any]] = {
        "id": interned["id"],
        "name": interned["name"],
        "label": interned["label"],
        "op": interned["op"],
        "shape": interned["shape"],
        "scope": [scope_index.get(scope, -1) for scope in nodes["scope"].tolist()],
        "opName": interned["opName"],
        "file": interned["file"],
        "line": _whole_numbers(nodes["source_line"]),
        "func": interned["func"],
    }
    if len(nodes) <= BIG_NODES:
        columns["text"] = _texts(graph.kind, nodes["text"].tolist())
    columns["attrs"] = interned["attrs"]
    columns["order"] = nodes["order"].astype("int64").tolist()
    flags = nodes["output"].astype(bool).to_numpy() * FLAG_OUTPUT
    flags |= nodes["fallback"].astype(bool).to_numpy() * FLAG_FALLBACK
    columns["flags"] = flags.tolist()
    categories: dict[tuple[str, bool], int] = {}
    cats = columns["cat"] = []
    for node_id, op in zip(ids, ops, strict=True):
        key = (op, node_id in anchored)
        code = categories.get(key)
        if code is None:
            code = categories[key] = node_category(*key)
        cats.append(code)
    return columns, _finite_column(nodes["flops"]), _finite_column(nodes["bytes"])


def _labels(
    kind: str,
    ops: list[str],
    names: list[str],
    attrs_list: list[dict[str, str]],
    op_names: list[str],
) -> list[str]:
    """Each node's :func:`node_label`; ops whose label is the op itself (most) looked up once."""
    plain: dict[str, bool] = {}
    labels: list[str] = []
    for op, name, attrs, op_name in zip(ops, names, attrs_list, op_names, strict=True):
        is_plain = plain.get(op)
        if is_plain is None:
            is_plain = plain[op] = node_label(kind, op, "\0", {}, "\0") == op
        if is_plain and not ("custom_call_target" in attrs or "call_target_name" in attrs):
            labels.append(op)
        else:
            labels.append(node_label(kind, op, name, attrs, op_name))
    return labels


def _texts(kind: str, texts: list[str]) -> list[str]:
    """The instructions' texts as they travel: HLO metadata dropped, clipped."""
    shown: list[str] = []
    for text in texts:
        if kind == "hlo" and "metadata={" in text:
            text = _METADATA.sub("", text)
        shown.append(text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT] + " …")
    return shown


def _whole_numbers(column: pd.Series) -> list[int]:
    """A nullable number column as ints, 0 where missing or not finite."""
    values = pd.to_numeric(column, errors="coerce").astype("float64").to_numpy()
    return np.where(np.isfinite(values), values, 0).astype("int64").tolist()


def _finite_column(column: pd.Series) -> list[float | None]:
    """A number column as floats, None where missing or not finite."""
    values = pd.to_numeric(column, errors="coerce").astype("float64").to_numpy()
    finite = np.isfinite(values)
    if finite.all():
        return values.tolist()
    return [v if ok else None for v, ok in zip(values.tolist(), finite.tolist(), strict=True)]


def _attr_columns(attrs_list: list[dict[str, Any]], strings: _Strings) -> list[list[int]]:
    """Each node's :func:`_flat_attrs`, nodes with the same attributes flattened once."""
    seen: dict[tuple[tuple[str, Any], ...], list[int]] = {}
    flat: list[list[int]] = []
    for attrs in attrs_list:
        if not attrs:
            flat.append([])
            continue
        key = tuple(attrs.items())
        try:
            found = seen.get(key)
        except TypeError:  # a value that is not hashable
            found = _flat_attrs(attrs, strings)
        if found is None:
            found = seen[key] = _flat_attrs(attrs, strings)
        flat.append(found)
    return flat


def _flat_attrs(attrs: Mapping[str, Any], strings: _Strings) -> list[int]:
    """A node's attributes as ``[key, value, key, value, ...]`` string indexes."""
    if not attrs:
        return []
    flat: list[Any] = []
    for key, value in attrs.items():
        if value.__class__ is not str:
            value = str(value)
        flat += (key, value if len(value) <= ATTR_LIMIT else value[:ATTR_LIMIT] + " …")
    return strings.many(flat)


def _flat_edges(edges: pd.DataFrame, node_index: Mapping[str, int]) -> list[int]:
    """The payload's ``edges``: ``[source, target, kind code, ...]``."""
    if edges.empty:
        return []
    index = pd.Series(node_index, dtype="int64")
    flat = np.empty((len(edges), 3), dtype=np.int64)
    flat[:, 0] = index.loc[edges["source"]].to_numpy()
    flat[:, 1] = index.loc[edges["target"]].to_numpy()
    data_edge = EDGE_CODES["data"]
    codes, kinds = pd.factorize(edges["kind"])
    lookup = np.array([EDGE_CODES.get(kind, data_edge) for kind in kinds.tolist()], np.int64)
    flat[:, 2] = lookup[codes]
    return flat.ravel().tolist()


def _custom_cost(nodes: pd.DataFrame, cost: Mapping[str, float] | pd.Series) -> list[float | None]:
    """Each node's ``cost``, looked up by id, then by name."""
    values = dict(cost.items()) if isinstance(cost, (Mapping, pd.Series)) else {}
    return [
        _finite(values.get(node_id, values.get(name)))
        for node_id, name in zip(nodes["id"], nodes["name"], strict=True)
    ]


def _scope_columns(
    scopes: pd.DataFrame,
    strings: _Strings,
    scope_index: Mapping[str, int],
    node_index: Mapping[str, int],
) -> dict[str, list[Any]]:
    """The payload's ``scopes`` columns."""
    return {
        "parent": [scope_index.get(p, -1) for p in scopes["parent"]],
        "label": [strings(label) for label in scopes["label"]],
        "kind": [strings(kind) for kind in scopes["kind"]],
        "anchor": [node_index.get(node, -1) if node else -1 for node in scopes["node"]],
        "size": [int(size) for size in scopes["nodes"]],
    }


@dataclass
class GraphPart:
    """What a payload holds of its graph alone (no fallbacks, measured time or diff): the
    ``nodes`` columns with their flops and bytes, the ``edges``, and the string table they
    left (the rest of the payload interns its strings after these, as before)."""

    strings: tuple[str, ...]
    string_index: dict[str, int]
    node_index: dict[str, int]
    scope_index: dict[str, int]
    columns: dict[str, list[Any]]
    flops: list[float | None]
    nbytes: list[float | None]
    edges: list[int]
    #: Built for a graph of over :data:`BIG_NODES` nodes (without the ``text`` column).
    big: bool
    #: The length of these columns, edges and strings packed (:func:`packed_for_script`),
    #: once measured (:func:`least_packed_size`).
    packed_size: int | None = None


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
    node_index = {node_id: i for i, node_id in enumerate(nodes["id"].tolist())}
    scope_index = {scope_id: i for i, scope_id in enumerate(graph.scopes["id"].tolist())}
    columns, flops, nbytes = _node_columns(graph, strings, scope_index)
    edges = _flat_edges(graph.edges, node_index)
    big = len(nodes) > BIG_NODES
    return GraphPart(
        tuple(strings.table),
        strings.index,
        node_index,
        scope_index,
        columns,
        flops,
        nbytes,
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
        columns = {"flops": part.flops, "bytes": part.nbytes}
        alone = {"strings": part.strings, "nodes": part.columns, "edges": part.edges}
        part.packed_size = len(packed_for_script({**alone, "cost": columns}))


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
) -> dict[str, Any]:
    """The JSON the viewer reads (the module's docstring says what each field holds).

    ``cost`` maps node ids (or names) to a number of your own to colour by; ``measured``
    (default: ``graph.measured``, e.g. from :meth:`~xlanb.core.profile.Profile.graph`) holds
    measured device time per instruction (rows of a profile's ``ops`` frame); ``color_by`` is
    ``"flops"``, ``"bytes"``, ``"custom"`` (``cost``), ``"time"`` (``measured``) or None:
    ``custom`` with a ``cost``, else ``time`` where something was measured, else op kind.
    ``diff_status`` holds a :data:`DIFF_CODES` code per node, ``peers`` the matching node's
    index in the other graph (-1: none). ``start_strings``: the string table to start from (a
    payload sent as a patch of another, :mod:`.patch`, keeps that one's string indexes)."""
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
    node_index, scope_index, flat_edges = part.node_index, part.scope_index, part.edges
    columns, flops, nbytes = dict(part.columns), part.flops, part.nbytes
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
    scope_columns = _scope_columns(scopes, strings, scope_index, node_index)
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
    }


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


#: Columns of a payload's ``nodes`` that stay JSON lists in :func:`binary_columns`.
_LIST_COLUMNS = ("attrs", "text")


def binary_columns(data: dict[str, Any]) -> dict[str, Any]:
    """A payload whose number columns (``nodes`` but attrs and text, ``scopes``, ``edges``,
    ``cost``) travel as little-endian binary in base64, ``{"i8": ...}``, ``{"i16": ...}`` or
    ``{"i32": ...}`` (the narrowest that holds the column) or ``{"f64": ...}`` (NaN for null),
    which ``model.js`` decodes: far quicker to write and read than JSON numbers."""

    def ints(values: list[int]) -> dict[str, str]:
        array = np.asarray(values, dtype=np.int64)
        low, high = (int(array.min()), int(array.max())) if len(array) else (0, 0)
        key, dtype = next(
            (key, dtype)
            for key, dtype in (("i8", "<i1"), ("i16", "<i2"), ("i32", "<i4"))
            if np.iinfo(dtype).min <= low and high <= np.iinfo(dtype).max
        )
        return {key: base64.b64encode(array.astype(dtype).tobytes()).decode("ascii")}

    def floats(values: list[float | None]) -> dict[str, str]:
        raw = np.array(values, dtype="<f8").tobytes()  # None -> NaN
        return {"f64": base64.b64encode(raw).decode("ascii")}

    nodes = {
        key: column if key in _LIST_COLUMNS else ints(column)
        for key, column in data["nodes"].items()
    }
    scopes = {key: ints(column) for key, column in data["scopes"].items()}
    cost = {
        key: floats(column) if isinstance(column, list) else column
        for key, column in data["cost"].items()
    }
    return {**data, "nodes": nodes, "scopes": scopes, "edges": ints(data["edges"]), "cost": cost}


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
