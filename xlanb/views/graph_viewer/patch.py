"""A payload sent as the changes from another payload on the same page (a report's compiles of
one function differ in shapes; a recompile's "Changes" view is the recompiled graph again with
diff codes). A patch mirrors the payload's JSON, each part one of:

- ``{"v": value}``: the value itself;
- ``{"k": {key: patch, ...}, "drop": [key, ...]}``: an object whose listed keys differ from the
  base's (the others are the base's; ``drop``: keys the base has and this one has not);
- ``{"a": length, "s": [index, value, ...]}``: a list, the base's cut or grown to `length`
  with the entries at those indexes set (every index past the base's end among them).

``static/ui.js`` (``applyPatch``) rebuilds the payload from its base's before the viewer
starts. A payload patched against a base starts its string table from the base's
(:func:`.payload.payload`'s ``start_strings``), so its string indexes stay the base's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

#: A patch is used only when its JSON is at most this share of the payload's (its gzip is a
#: smaller share still: what changes between compiles is mostly numbers).
PATCH_SHARE = 0.9


def payload_patch(data: Any, base: Any) -> dict[str, Any]:
    """The patch that turns `base` into `data` (the module's docstring says its form)."""
    if isinstance(data, dict) and isinstance(base, dict):
        changed = {
            key: payload_patch(value, base[key]) if key in base else {"v": value}
            for key, value in data.items()
            if key not in base or value != base[key]
        }
        dropped = [key for key in base if key not in data]
        return {"k": changed, "drop": dropped} if dropped else {"k": changed}
    if isinstance(data, list) and isinstance(base, list):
        sets: list[Any] = []
        for index, value in enumerate(data):
            if index >= len(base) or value != base[index]:
                sets += [index, value]
        if len(sets) < len(data):  # fewer than half the entries changed
            return {"a": len(data), "s": sets}
    return {"v": data}


@dataclass
class _Sent:
    script_id: str
    kind: str
    nodes: int
    data: dict[str, Any]


class PagePayloads:
    """The payloads already on one page, each in the ``<script id=...>`` named here: a new
    graph is sent as a patch of the one most like it (same kind, closest node count, the
    latest of equals)."""

    def __init__(self) -> None:
        self.sent: list[_Sent] = []

    def base_for(self, kind: str, nodes: int) -> tuple[str, dict[str, Any]] | None:
        """(script id, payload) of the base for a graph of `kind` with `nodes` nodes."""
        best: _Sent | None = None
        for sent in self.sent:
            if sent.kind == kind and (
                best is None or abs(sent.nodes - nodes) <= abs(best.nodes - nodes)
            ):
                best = sent
        return (best.script_id, best.data) if best else None

    def add(self, script_id: str, kind: str, nodes: int, data: dict[str, Any]) -> None:
        self.sent.append(_Sent(script_id, kind, nodes, data))


def worth_patching(patch: dict[str, Any], data: dict[str, Any]) -> bool:
    """Whether `patch` is small enough to send instead of `data` (:data:`PATCH_SHARE`)."""
    size = len(json.dumps(patch, separators=(",", ":")))
    return size <= PATCH_SHARE * len(json.dumps(data, separators=(",", ":")))
