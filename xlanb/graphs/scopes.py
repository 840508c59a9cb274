"""Nested scopes from op_name paths (``jit(step)/jvp(model)/layer_0/dot_general``), so that a
big computation first shows a handful of boxes (forward, backward, one per layer) instead of
thousands of instructions."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from xlanb.formats.text import split_top
from xlanb.graphs.adjacency import Adjacent


class GraphBuilder(Protocol):
    """What grouping reads and adds to of :class:`xlanb.graphs.model.GraphBuilder`."""

    columns: dict[str, list[Any]]
    index: dict[str, int]
    edge_columns: dict[str, list[Any]]
    scopes: list[dict[str, str]]
    scope_index: dict[str, int]

    def add_scope(
        self, scope_id: str, *, parent: str = "", label: str = "", kind: str = "", node: str = ""
    ) -> str: ...

    def edge_ends(self) -> tuple[list[int], list[int]]: ...


def split_op_name(op_name: str) -> list[str]:
    """``jit(f)/jvp(g)/dot_general`` -> ``["jit(f)", "jvp(g)", "dot_general"]``; a ``/``
    inside brackets does not split; of ``a/x;b/y`` (ops fused from several places) the first
    path counts."""
    if ";" in op_name:
        op_name = op_name.split(";", 1)[0]
    if "/" not in op_name:
        return [op_name] if op_name else []
    return split_top(op_name, "/")


@functools.lru_cache(maxsize=65536)
def _scope_path(op_name: str) -> tuple[str, ...] | None:
    """The scopes an op_name path names (all but its last part), None for a bare name."""
    if ";" in op_name:
        op_name = op_name.split(";", 1)[0]
    if "/" not in op_name:
        return None
    parts = _split_path(op_name)[0]
    return parts[:-1] if len(parts) > 1 else None


#: A path part without brackets, quotes or escapes: it cannot change where a path splits.
_PLAIN_PART = re.compile(r'[^(){}\[\]"\\/]*')


@functools.lru_cache(maxsize=65536)
def _split_path(path: str) -> tuple[tuple[str, ...], bool]:
    """``split_top(path, "/")``, and whether a ``/`` after ``path`` would split it. Paths
    that differ in a plain last part share their head's split (one per layer, not per op)."""
    head, slash, last = path.rpartition("/")
    if slash and _PLAIN_PART.fullmatch(last):
        parts, splits_after = _split_path(head)
        if splits_after:
            return (*parts, last.strip()) if last.strip() else parts, True
    return tuple(split_top(path, "/")), split_top(path + "/x", "/")[-1] == "x"


@dataclass
class _Trie:
    members: list[int] = field(default_factory=list)
    children: dict[str, _Trie] = field(default_factory=dict)
    total: int = 0


def _common(paths: list[tuple[str, ...]]) -> tuple[str, ...]:
    """The longest prefix of all `paths`: that of the least and the greatest (in order,
    a prefix shared by both is shared by all between them)."""
    if not paths:
        return ()
    if len(paths) == 1:
        return paths[0]
    low, high = min(paths), max(paths)
    length = min(len(low), len(high))
    for i in range(length):
        if low[i] != high[i]:
            return low[:i]
    return low[:length]


class Neighbours(Protocol):
    """Each node's operand or user nodes, by node index (a dict, or lists made when asked)."""

    def get(self, index: int, default: Any = None, /) -> Any: ...


def group_by_op_name(
    builder: GraphBuilder,
    members: list[int],
    base: str,
    operands: Neighbours,
    users: Neighbours,
) -> None:
    """Put the nodes ``members`` (builder indices, one computation in text order, all in scope
    ``base``) into nested ``op_name`` scopes under ``base``.

    A node without a path (constants, parameters, outputs) joins the deepest scope shared by
    its users (else by its operands); the prefix shared by all nodes is dropped; a scope with
    one child and no nodes of its own merges with the child; a scope of one node dissolves."""
    if not members:
        return
    first, count = members[0], len(members)
    end = first + count
    contiguous = members[-1] == end - 1 and members == list(range(first, end))
    where = None if contiguous else {index: k for k, index in enumerate(members)}

    def inside(neighbours: Any) -> list[int]:
        """The positions in `members` of the nodes `neighbours` that are members."""
        if where is None:
            return [u - first for u in neighbours if first <= u < end]
        return [where[u] for u in neighbours if u in where]

    op_names = builder.columns["op_name"]
    if contiguous:
        found_paths = list(map(_scope_path, op_names[first:end]))
    else:
        found_paths = [_scope_path(op_names[index]) for index in members]
    missing = [k for k, path in enumerate(found_paths) if path is None]
    for k in reversed(missing):
        found = [found_paths[u] for u in inside(users.get(members[k], ())) if found_paths[u]]
        if found:
            found_paths[k] = _common(found)  # type: ignore[arg-type]
    for k in missing:
        if found_paths[k] is None:
            found = [found_paths[o] for o in inside(operands.get(members[k], ())) if found_paths[o]]
            found_paths[k] = _common(found) if found else ()  # type: ignore[arg-type]
    paths: list[tuple[str, ...]] = found_paths  # type: ignore[assignment]  # none is None
    if paths.count(paths[0]) == count:  # one path (a reducer's, a small region's): no scopes
        scope_of = builder.columns["scope"]
        for index in members:
            scope_of[index] = base
        return
    prefix = len(_common(list(set(paths))))  # each distinct path once
    by_path: dict[tuple[str, ...], list[int]] = {}  # in the order paths first appear
    for index, path in zip(members, paths, strict=True):
        same_path = by_path.get(path)
        if same_path is None:
            by_path[path] = [index]
        else:
            same_path.append(index)
    root = _Trie()
    for path, indexes in by_path.items():
        node = root
        node.total += len(indexes)
        for part in path[prefix:]:
            child = node.children.get(part)
            if child is None:
                child = node.children[part] = _Trie()
            node = child
            node.total += len(indexes)
        node.members += indexes
    _emit(builder, root, base, base, "")


def _emit(builder: GraphBuilder, trie: _Trie, scope: str, id_prefix: str, label: str) -> None:
    scope_of = builder.columns["scope"]
    for index in trie.members:
        scope_of[index] = scope
    for part, child in trie.children.items():
        name = part
        while not child.members and len(child.children) == 1:  # merge single-child chains
            ((next_part, next_child),) = child.children.items()
            name = f"{name}/{next_part}"
            child = next_child
        if child.total == 1 and not child.children:
            _emit(builder, child, scope, id_prefix, label)  # a scope of one node: dissolve
            continue
        child_id = builder.add_scope(
            f"{id_prefix}/{name}" if id_prefix else name, parent=scope, label=name, kind="op_name"
        )
        _emit(builder, child, child_id, child_id, name)


_INPUT_OPS = {
    "parameter",
    "input",
    "device_data",
    "xla::device_data",
    "lazy_tensors::device_data",
    "prim::Param",
}


def group_crowds(
    builder: GraphBuilder, crowded: int = 30, family: int = 8, chunked: int = 400, chunks: int = 40
) -> None:
    """Keep every level of the scope tree readable: where a level holds more than ``crowded``
    boxes, its parameters go into one "parameters" group and independent nodes sharing an
    op_name (an optimizer's update of every weight) into one group each; a level still holding
    more than ``chunked`` boxes is cut into about ``chunks`` consecutive runs (in text order,
    so the runs only feed later runs)."""
    level_nodes: dict[str, list[int]] = {}
    for index, scope in enumerate(builder.columns["scope"]):
        found = level_nodes.get(scope)
        if found is None:
            level_nodes[scope] = [index]
        else:
            found.append(index)
    level_scopes: dict[str, list[dict[str, str]]] = {}
    for scope in builder.scopes:
        if not scope["node"]:
            level_scopes.setdefault(scope["parent"], []).append(scope)
    anchored = {s["node"]: s for s in builder.scopes if s["node"]}
    linked = _Linked(builder)
    for level, members in list(level_nodes.items()):
        scopes_here = level_scopes.get(level, [])
        if len(members) + len(scopes_here) <= crowded:
            continue
        rest = _group_inputs(builder, level, members, anchored)
        rest = _group_families(builder, level, rest, anchored, linked, family)
        if len(rest) + len(scopes_here) > chunked:
            _chunk(builder, level, rest, scopes_here, anchored, chunks)


class _Linked:
    """Each node -> the nodes its data edges feed (``get`` as a dict's), read from the
    builder's edges when first asked."""

    def __init__(self, builder: GraphBuilder) -> None:
        self.builder = builder
        self._feeds: Adjacent | None = None

    def get(self, index: int, default: Any = None, /) -> Any:
        if self._feeds is None:
            builder = self.builder
            sources, targets = np.array(builder.edge_ends(), dtype=np.int64).reshape(2, -1)
            data = np.array(builder.edge_columns["kind"], dtype=object) == "data"
            self._feeds = Adjacent(sources[data], targets[data], len(builder.columns["id"]))
        return self._feeds.get(index, default)


def _move(
    builder: GraphBuilder, members: list[int], scope: str, anchored: dict[str, dict[str, str]]
) -> None:
    scope_of, ids = builder.columns["scope"], builder.columns["id"]
    for index in members:
        scope_of[index] = scope
        if ids[index] in anchored:
            anchored[ids[index]]["parent"] = scope


def _group_inputs(
    builder: GraphBuilder, level: str, members: list[int], anchored: dict[str, dict[str, str]]
) -> list[int]:
    ops = builder.columns["op"]
    inputs = [i for i in members if ops[i] in _INPUT_OPS]
    if len(inputs) < 8:
        return members
    scope = builder.add_scope(
        f"{level}/parameters" if level else "parameters",
        parent=level,
        label=f"parameters ({len(inputs)})",
        kind="group",
    )
    _move(builder, inputs, scope, anchored)
    taken = set(inputs)
    return [i for i in members if i not in taken]


def _group_families(
    builder: GraphBuilder,
    level: str,
    members: list[int],
    anchored: dict[str, dict[str, str]],
    linked: _Linked,
    family: int,
) -> list[int]:
    by_name = _by_first_path(builder.columns["op_name"], members)
    taken: set[int] = set()
    for op_name, group in by_name.items():
        if len(group) < family:
            continue
        inside = set(group)
        if any(_feeds_inside(a, linked.get(a), inside) for a in group):
            continue  # a chain, not a family of independent ops
        parts = split_op_name(op_name)
        leaf = parts[-1] if parts else op_name
        scope = builder.add_scope(
            f"{level}/{op_name}" if level else op_name,
            parent=level,
            label=f"{leaf} ({len(group)})",
            kind="group",
        )
        _move(builder, group, scope, anchored)
        taken.update(group)
    return [i for i in members if i not in taken]


def _by_first_path(op_names: list[str], members: list[int]) -> dict[str, list[int]]:
    """`members` with an op_name by its first path (of ``a/x;b/y``, ``a/x``), in the order
    the first paths first appear, each list in the order of `members`."""
    by_op_name: dict[str, list[int]] = {}
    for index in members:
        same = by_op_name.get(op_names[index])
        if same is None:
            by_op_name[op_names[index]] = [index]
        else:
            same.append(index)
    for no_name in [op_name for op_name in by_op_name if not op_name]:  # in no family
        del by_op_name[no_name]
    if not any(";" in op_name for op_name in by_op_name):
        return by_op_name  # each op_name its own first path: no split per node
    by_name: dict[str, list[int]] = {}
    for index in members:
        if op_names[index]:
            by_name.setdefault(op_names[index].split(";", 1)[0], []).append(index)
    return by_name


def _feeds_inside(node: int, feeds: list[int] | None, inside: set[int]) -> bool:
    """Whether `node` feeds another node of `inside` (`feeds`: the nodes it feeds)."""
    if not feeds or inside.isdisjoint(feeds):
        return False
    return any(fed in inside and fed != node for fed in feeds)


def _chunk(
    builder: GraphBuilder,
    level: str,
    members: list[int],
    scopes_here: list[dict[str, str]],
    anchored: dict[str, dict[str, str]],
    chunks: int,
) -> None:
    wanted = {s["id"] for s in scopes_here}
    first_line: dict[str, int] = {}
    seen: set[str] = set()
    for index, scope_id in enumerate(builder.columns["scope"]):
        if scope_id and scope_id not in seen:
            seen.add(scope_id)
            for ancestor in _ancestors(builder, scope_id):
                if ancestor in wanted:
                    first_line.setdefault(ancestor, index)
    items: list[tuple[int, int | dict[str, str]]] = [(i, i) for i in members]
    items += [(first_line.get(s["id"], 0), s) for s in scopes_here]
    items.sort(key=lambda item: item[0])
    size = max(50, -(-len(items) // chunks))
    for start in range(0, len(items), size):
        run = items[start : start + size]
        label = _dominant(builder, [i for _k, i in run if isinstance(i, int)])
        scope = builder.add_scope(
            f"{level}/run {start // size + 1}" if level else f"run {start // size + 1}",
            parent=level,
            label=f"{start + 1}-{start + len(run)}: {label}"
            if label
            else f"ops {start + 1}-{start + len(run)}",
            kind="chunk",
        )
        _move(builder, [i for _k, i in run if isinstance(i, int)], scope, anchored)
        for _key, item in run:
            if isinstance(item, dict):
                item["parent"] = scope


def _ancestors(builder: GraphBuilder, scope_id: str) -> list[str]:
    found: list[str] = []
    while scope_id and scope_id in builder.scope_index and len(found) < 100:
        found.append(scope_id)
        scope_id = builder.scopes[builder.scope_index[scope_id]]["parent"]
    return found


def _dominant(builder: GraphBuilder, members: list[int]) -> str:
    """The most common source line (or op) of a run of nodes, to label it."""
    counts: dict[str, int] = {}
    files, lines, ops = (builder.columns[c] for c in ("source_file", "source_line", "op"))
    for index in members:
        if files[index] and lines[index]:
            key = f"{files[index].rsplit('/', 1)[-1]}:{lines[index]}"
        else:
            key = ops[index]
        counts[key] = counts.get(key, 0) + 1
    return max(counts, key=counts.__getitem__) if counts else ""
