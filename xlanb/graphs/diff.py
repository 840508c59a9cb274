"""What changed between two graphs of the same function (before/after a recompile)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import pandas as pd

from xlanb.core.seams import implementation
from xlanb.graphs.model import Graph

#: Columns of ``GraphDiff.nodes``.
DIFF_COLUMNS = ["status", "a", "b", "op", "op_b", "shape", "shape_b", "name", "name_b"]


@dataclass
class GraphDiff:
    """Node-by-node differences between graphs ``a`` and ``b``.

    ``nodes``: one row per node of either graph: ``status`` (``same``, ``changed``: same op
    and place but another shape or attributes, ``added``: only in ``b``, ``removed``: only in
    ``a``), ``a``/``b`` (node ids, ``""`` when absent), ``op``/``op_b``, ``shape``/``shape_b``,
    ``name``/``name_b``. ``summary`` says in one line what changed."""

    a: Graph
    b: Graph
    nodes: pd.DataFrame
    summary: str

    def counts(self) -> dict[str, int]:
        """Rows per status."""
        return {
            s: int((self.nodes["status"] == s).sum())
            for s in ("same", "changed", "added", "removed")
        }

    def __repr__(self) -> str:
        return f"<GraphDiff {self.a.name!r} -> {self.b.name!r}: {self.summary}>"

    def html(self, mode: str = "side-by-side", **options: Any) -> str:
        """The two graphs side by side (``mode="side-by-side"``) or one graph with the removed
        nodes drawn in (``mode="overlay"``), changes marked."""
        return implementation("diff_html")(self, mode=mode, **options)

    def _repr_html_(self) -> str:
        return self.html()

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": repr(self), "text/html": self.html()}


def diff(a: Graph, b: Graph) -> GraphDiff:
    """Match the nodes of ``a`` and ``b`` and mark what was added, removed or changed.

    Nodes match when they compute the same thing from matching operands: first by structure
    (op and operands' structure, shapes ignored, so a new batch size is a *change*, not a new
    graph), then by op and already-matched neighbours, then by name and op."""
    match = _Matcher(a, b).run()
    rows = []
    a_nodes = a.nodes.set_index("id", drop=False)
    b_nodes = b.nodes.set_index("id", drop=False)
    matched_b = set(match.values())
    for a_id in a.nodes["id"]:
        row_a = a_nodes.loc[a_id]
        b_id = match.get(a_id)
        if b_id is None:
            rows.append(_row("removed", row_a, None))
            continue
        row_b = b_nodes.loc[b_id]
        same = (
            row_a["shape"] == row_b["shape"]
            and row_a["op"] == row_b["op"]
            and _attrs_key(row_a) == _attrs_key(row_b)
        )
        rows.append(_row("same" if same else "changed", row_a, row_b))
    for b_id in b.nodes["id"]:
        if b_id not in matched_b:
            rows.append(_row("added", None, b_nodes.loc[b_id]))
    frame = pd.DataFrame(rows, columns=DIFF_COLUMNS)
    return GraphDiff(a, b, frame, _summary(frame))


def _row(status: str, a: pd.Series | None, b: pd.Series | None) -> dict[str, str]:
    return {
        "status": status,
        "a": a["id"] if a is not None else "",
        "b": b["id"] if b is not None else "",
        "op": a["op"] if a is not None else b["op"],  # type: ignore[index]
        "op_b": b["op"] if b is not None else "",
        "shape": a["shape"] if a is not None else "",
        "shape_b": b["shape"] if b is not None else "",
        "name": a["name"] if a is not None else "",
        "name_b": b["name"] if b is not None else "",
    }


_VOLATILE = {
    "metadata",
    "backend_config",
    "location",
    "stack_frame_id",
    "xla_shape",
    "NodeType",
    "parameter",
    "index",
    "calls",
    "to_apply",
    "body",
    "condition",
    "branch_computations",
    "control-predecessors",
    "frontend_attributes",
}


def _attrs_key(row: pd.Series) -> tuple:
    attrs = row["attrs"] if isinstance(row["attrs"], dict) else {}
    return tuple(
        sorted((k, v) for k, v in attrs.items() if k not in _VOLATILE and not k.startswith("line "))
    )


class _Matcher:
    def __init__(self, a: Graph, b: Graph) -> None:
        self.graphs = (a, b)
        self.ops = [dict(zip(g.nodes["id"], g.nodes["op"], strict=True)) for g in (a, b)]
        self.operands = [self._neighbours(g, "target", "source") for g in (a, b)]
        self.users = [self._neighbours(g, "source", "target") for g in (a, b)]
        self.order = [list(g.nodes.sort_values("order")["id"]) for g in (a, b)]
        self.names = [dict(zip(g.nodes["id"], g.nodes["name"], strict=True)) for g in (a, b)]

    @staticmethod
    def _neighbours(graph: Graph, key: str, value: str) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        edges = graph.edges[graph.edges["kind"] == "data"].sort_values("operand", kind="stable")
        for k, v in zip(edges[key], edges[value], strict=True):
            found.setdefault(k, []).append(v)
        return found

    def run(self) -> dict[str, str]:
        match: dict[str, str] = {}
        signatures = [self._signatures(side) for side in (0, 1)]
        by_signature: dict[tuple[int, str], list[str]] = {}
        for node in self.order[1]:
            by_signature.setdefault((signatures[1][node], self.ops[1][node]), []).append(node)
        for node in self.order[0]:
            candidates = by_signature.get((signatures[0][node], self.ops[0][node]))
            if candidates:
                match[node] = candidates.pop(0)
        self._propagate(match)
        taken = set(match.values())
        by_name = {(self.names[1][n], self.ops[1][n]): n for n in self.order[1] if n not in taken}
        for node in self.order[0]:
            if node not in match:
                other = by_name.pop((self.names[0][node], self.ops[0][node]), None)
                if other is not None:
                    match[node] = other
        return match

    def _signatures(self, side: int) -> dict[str, int]:
        """Hash of (op, operands' hashes) in topological order: equal for equal structure."""
        found: dict[str, int] = {}
        for node in self.order[side]:
            found[node] = hash(
                (
                    self.ops[side][node],
                    tuple(found.get(o, 0) for o in self.operands[side].get(node, ())),
                )
            )
        return found

    def _propagate(self, match: dict[str, str]) -> None:
        """Match unmatched nodes whose op agrees and whose operands (or users) are matched to
        the candidate's, until nothing changes."""
        changed = True
        while changed:
            changed = False
            taken = set(match.values())
            for direction in (self.operands, self.users):
                for node in self.order[0]:
                    if node in match:
                        continue
                    for neighbour in direction[0].get(node, ()):
                        partner = match.get(neighbour)
                        if partner is None:
                            continue
                        reverse = self.users if direction is self.operands else self.operands
                        candidates = [
                            c
                            for c in reverse[1].get(partner, ())
                            if c not in taken and self.ops[1][c] == self.ops[0][node]
                        ]
                        if candidates:
                            match[node] = candidates[0]
                            taken.add(candidates[0])
                            changed = True
                            break


def _summary(frame: pd.DataFrame) -> str:
    counts = Counter(frame["status"])
    if not counts.get("changed") and not counts.get("added") and not counts.get("removed"):
        return f"no change ({counts.get('same', 0)} nodes)"
    parts = []
    changed = frame[frame["status"] == "changed"]
    shape_changes = changed[changed["shape"] != changed["shape_b"]]
    if not shape_changes.empty:
        pairs = Counter(zip(shape_changes["shape"], shape_changes["shape_b"], strict=True))
        shown = ", ".join(f"{a or '?'} -> {b or '?'}" for (a, b), _n in pairs.most_common(2))
        more = f", +{len(pairs) - 2} more" if len(pairs) > 2 else ""
        parts.append(f"{len(shape_changes)} nodes changed shape ({shown}{more})")
    other = len(changed) - len(shape_changes)
    if other:
        parts.append(f"{other} nodes changed attributes")
    for status, verb in (("added", "added"), ("removed", "removed")):
        rows = frame[frame["status"] == status]
        if not rows.empty:
            ops = Counter(rows["op"] if status == "removed" else rows["op"])
            shown = ", ".join(f"{op} x{n}" if n > 1 else op for op, n in ops.most_common(3))
            more = ", ..." if len(ops) > 3 else ""
            parts.append(f"{len(rows)} ops {verb} ({shown}{more})")
    return "; ".join(parts)
