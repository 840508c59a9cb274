"""The part of a viewer payload that depends on its graph alone (:func:`graph_part`) is built
once per parsed text, by the read-ahead thread where it parsed the text while the cell ran
(:mod:`xlanb.graphs.prepared`): a payload that finds it is the one built from scratch."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

from xlanb.graphs import parse_once
from xlanb.graphs.prepared import prepare
from xlanb.views.graph_viewer import payload

payload_module = sys.modules["xlanb.views.graph_viewer.payload"]
DUMP = Path(__file__).parent.parent / "data" / "jax_dump"


def _measured(names: list[str]) -> pd.DataFrame:
    """Ops frame rows for some of the graph's nodes, and one that names none."""
    return pd.DataFrame(
        {
            "op": [*names, "not-a-node.7"],
            "seconds": [0.001 * (i + 1) for i in range(len(names) + 1)],
            "count": [3] * (len(names) + 1),
            "source_file": ["cell"] * (len(names) + 1),
            "source_line": [4] * (len(names) + 1),
        }
    )


def test_a_payload_that_finds_its_graph_part_is_the_one_built_from_scratch(monkeypatch):
    text = (DUMP / "module_0006.jit_step.cpu_after_optimizations.txt").read_text()
    graph = parse_once(text + "\n", "hlo")  # a text of its own: no part built before
    names = [str(name).lstrip("%") for name in graph.nodes["name"].tolist()[:4]]
    measured = _measured(names)
    built: list[int] = []
    original = payload_module._node_columns

    def recorded(*args, **kwargs):
        built.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(payload_module, "_node_columns", recorded)

    prepare(graph)  # as the read-ahead thread does
    assert len(built) == 1
    again = parse_once(text + "\n", "hlo")  # the display's copy of the same parse
    found = payload(again, measured=measured, title="step")
    assert len(built) == 1  # found, not built again
    from_scratch = payload(again, measured=measured, title="step", start_strings=[])
    assert len(built) == 2
    assert json.dumps(found) == json.dumps(from_scratch)
    assert found["measured"]["node"]  # the measured rows matched nodes
    # the part's packed size, measured as it was prepared, bounds the whole payload's
    least = payload_module.least_packed_size(again)
    assert least is not None and len(payload_module.packed_for_script(found)) >= least
    # and a payload built with fallbacks marked is no payload of the part
    marked = payload(again, fallback_ops=[graph.nodes["op"].iloc[0]])
    assert len(built) == 3 and marked["nodes"]["flags"] != found["nodes"]["flags"]
