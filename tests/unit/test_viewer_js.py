"""The graph viewer's JavaScript without a page: ``node --test tests/js`` (layout, search, diff
states, payload patches) on payloads this test writes from recorded HLO. Node is part of
``make setup``: without it this test fails, it does not skip."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path

from xlanb.graphs import parse
from xlanb.graphs.diff import diff
from xlanb.graphs.overlay import overlay_graph
from xlanb.views.graph_viewer import payload
from xlanb.views.graph_viewer.patch import payload_patch
from xlanb.views.graph_viewer.payload import DIFF_CODES, binary_payload

ROOT = Path(__file__).parent.parent.parent
DUMP = ROOT / "tests" / "data" / "jax_dump"
TRANSFORMER = next(
    (ROOT / "tests" / "data" / "xla_gpu_dump" / "transformer").glob("*_optimizations.txt")
)
QUERIES = ["add", "fusion", "bf16[", "MULTIPLY", "parameter", "no-such-op"]


def _payloads() -> dict:
    text = (DUMP / "module_0006.jit_step.cpu_after_optimizations.txt").read_text()
    graph = parse(text, "hlo")
    wider = parse(text.replace("f32[4,", "f32[16,"), "hlo")
    result = diff(graph, wider)
    merged, status = overlay_graph(result)
    plain = payload(graph)
    patched = payload(wider, start_strings=plain["strings"])
    large = parse(TRANSFORMER.read_text(), "hlo")
    positions = {node_id: i for i, node_id in enumerate(large.nodes["id"])}
    found = {q: [positions[i] for i in large.find(q)["id"]] for q in QUERIES}
    untexted, arrays = payload(large), payload(large, arrays=True)
    for sent in (untexted, arrays):
        del sent["nodes"]["text"]  # as a graph of over BIG_NODES nodes travels
    # a string that is not ASCII (and not in the BMP) to cut out of the strings' text
    for sent in (untexted, arrays):
        sent["strings"] = [*sent["strings"], "naïve 𝔵 ∑"]
    binary = base64.b64encode(binary_payload(arrays)).decode("ascii")
    return {
        "large": {"payload": payload(large), "found": found},
        "binary": {"plain": untexted, "binary": binary},
        "overlay": {
            "payload": payload(merged, diff_status=[DIFF_CODES[s] for s in status]),
            "counts": result.counts(),
        },
        "patch": {"base": plain, "patch": payload_patch(patched, plain), "data": patched},
    }


def test_viewer_javascript_passes_its_node_tests(tmp_path: Path):
    node = shutil.which("node")
    assert node, "needs node (make setup installs Debian's nodejs)"
    (tmp_path / "payloads.json").write_text(json.dumps(_payloads()), encoding="utf-8")
    env = dict(os.environ, XLANB_JS_FIXTURES=str(tmp_path))
    run = subprocess.run(
        [node, "--test", "tests/js/"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "# fail 0" in run.stdout and "# skipped 0" in run.stdout, run.stdout[-2000:]
