"""A report's graph payloads: a recompile travels as a patch of the compile before it, a graph
unlike any on the page travels whole, with a string table of its own."""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path
from typing import Any

from tests.support.helpers import applied_patch
from xlanb.graphs import parse
from xlanb.views.graph_viewer import graph_fragment, payload
from xlanb.views.graph_viewer.patch import PagePayloads

DUMP = Path(__file__).parent.parent / "data" / "jax_dump"


def _hlo(name: str) -> str:
    return (DUMP / f"{name}.cpu_after_optimizations.txt").read_text()


def _sent(fragment: str) -> tuple[str, str | None, Any]:
    found = re.search(
        r'<script type="[^"]+" id="([^"]+)"(?: data-base="([^"]+)")?>([^<]+)<', fragment
    )
    assert found is not None, fragment[:300]
    return found[1], found[2], json.loads(gzip.decompress(base64.b64decode(found[3])))


def test_a_recompile_is_a_patch_and_an_unlike_graph_travels_whole():
    text = _hlo("module_0006.jit_step")
    first, recompiled = parse(text, "hlo"), parse(text.replace("f32[4,", "f32[16,"), "hlo")
    chain = "".join(
        f"  %add.{i} = f32[7]{{0}} add(%add.{i - 1}, %add.{i - 1})\n" for i in range(1, 200)
    )
    other = parse(
        "HloModule chain\n\nENTRY %main (p: f32[7]) -> f32[7] {\n"
        f"  %add.0 = f32[7]{{0}} parameter(0)\n{chain}"
        "  ROOT %out = f32[7]{0} negate(%add.199)\n}\n",
        "hlo",
    )
    page = PagePayloads()

    first_id, first_base, first_sent = _sent(graph_fragment(first, packed=True, page=page))
    assert first_base is None and first_sent == payload(first)

    patch_id, patch_base, patch = _sent(graph_fragment(recompiled, packed=True, page=page))
    assert patch_base == first_id and patch_id != first_id
    rebuilt = applied_patch(first_sent, patch)
    assert rebuilt == payload(recompiled, start_strings=first_sent["strings"])
    assert rebuilt["strings"][: len(first_sent["strings"])] == first_sent["strings"]
    assert len(json.dumps(patch)) < 0.9 * len(json.dumps(rebuilt))

    _, other_base, other_sent = _sent(graph_fragment(other, packed=True, page=page))
    assert other_base is None and other_sent == payload(other)  # no strings of the others
