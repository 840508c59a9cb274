"""xlanb.graphs on text the runtimes produce in this test: JAX StableHLO and optimized HLO
(fusions, a while loop, a host callback), an --xla_dump_to directory, torch._lazy IR, its
TorchScript backend graph and DOT; then diff, bad input, escaping and Profile.graph."""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
import textwrap

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import xlanb
from xlanb import graphs
from xlanb.graphs import ParseError
from xlanb.views.graph_viewer import graph_fragment, graph_html, json_for_script, payload

jax = pytest.importorskip("jax")
jnp = jax.numpy

HERE = os.path.abspath(__file__)


def _line_of(marker: str) -> int:
    """Line number of the source line of this file that holds ``marker``."""
    lines = inspect.getsource(sys.modules[__name__]).splitlines()
    return next(i for i, line in enumerate(lines, 1) if marker in line and "_line_of" not in line)


def train_step(w, x):
    with jax.named_scope("block"):
        h = jnp.tanh(x @ w)  # MARK: matmul
    loss = jnp.sum(h**2)
    jax.debug.print("loss {}", loss)  # MARK: callback
    steps = jax.lax.fori_loop(0, 3, lambda i, v: v * 0.5, h)
    return loss + jnp.sum(steps)


@pytest.fixture(scope="module")
def jax_texts() -> dict[str, str]:
    lowered = jax.jit(train_step).lower(jnp.ones((4, 3)), jnp.ones((8, 4)))
    return {"stablehlo": lowered.as_text(debug_info=True), "hlo": lowered.compile().as_text()}


# -- JAX ---------------------------------------------------------------------------------------
def test_optimized_hlo_fusions_nest_under_the_fusion_instruction(jax_texts):
    text = jax_texts["hlo"]
    assert graphs.detect_kind(text) == "hlo"
    graph = graphs.parse(text)
    nodes = graph.nodes.set_index("id")
    fusions = graph.scopes[graph.scopes["kind"] == "fusion"]
    assert len(fusions) >= 2
    for _, scope in fusions.iterrows():
        # the fusion instruction anchors the scope of its fused computation's instructions
        caller = nodes.loc[scope["node"]]
        assert caller["op"] == "fusion"
        called = re.search(r"calls=%?([\w.\-]+)", caller["text"])[1]
        body = re.search(rf"^%?{re.escape(called)} .*?\n}}", text, re.M | re.S)[0]
        instructions = sum(1 for line in body.splitlines()[1:-1] if " = " in line)
        assert scope["nodes"] == instructions
        inside = graph.nodes[graph.nodes["scope"] == scope["id"]]
        assert (inside["op"] == "parameter").any()
        # the fusion's operands feed the fused parameters; the fused root feeds the fusion
        param_edges = graph.edges[
            (graph.edges["kind"] == "param") & graph.edges["target"].isin(inside["id"])
        ]
        assert len(param_edges) == (inside["op"] == "parameter").sum()
        assert ((graph.edges["kind"] == "root") & (graph.edges["target"] == scope["node"])).any()


def test_optimized_hlo_has_source_lines_op_name_scopes_and_the_callback(jax_texts):
    graph = graphs.parse(jax_texts["hlo"])
    nodes = graph.nodes
    dots = nodes[nodes["op"] == "dot"]
    assert len(dots) == 1
    dot = dots.iloc[0]
    assert (dot["source_file"], dot["source_line"]) == (HERE, _line_of("MARK: matmul"))
    assert dot["op_name"].endswith("block/dot_general")
    assert dot["shape"] == "f32[8,3]" and dot["dtype"] == "f32"
    assert dot["flops"] == 2 * 8 * 3 * 4
    callback = nodes[nodes["fallback"]]
    assert list(callback["op"]) == ["custom-call"]
    assert "xla_ffi_python_cpu_callback" in callback.iloc[0]["attrs"]["custom_call_target"]
    assert callback.iloc[0]["source_line"] == _line_of("MARK: callback")
    # the while loop's body and condition nest under the while
    loops = graph.scopes[graph.scopes["kind"] == "while"]
    assert len(loops) == 1
    parts = graph.scopes[graph.scopes["parent"] == loops.iloc[0]["id"]]["label"]
    assert sorted(p.split(":")[0] for p in parts) == ["body", "condition"]
    assert nodes["output"].sum() >= 1 and nodes["order"].is_unique


def test_stablehlo_functions_regions_and_locations(jax_texts):
    text = jax_texts["stablehlo"]
    assert graphs.detect_kind(text) == "stablehlo"
    graph = graphs.parse(text)
    nodes = graph.nodes
    params = nodes[nodes["id"].str.startswith("main/%arg")]
    assert list(params["shape"]) == ["f32[4,3]", "f32[8,4]"]
    assert list(params["op_name"]) == ["w", "x"]
    # both are used only inside `block`, so they are drawn inside it
    assert set(params["scope"]) == {"block"}
    dot = nodes[nodes["op"] == "stablehlo.dot_general"].iloc[0]
    assert dot["shape"] == "f32[8,3]"
    assert (dot["source_file"], dot["source_line"]) == (HERE, _line_of("MARK: matmul"))
    assert dot["scope"].endswith("block")
    callback = nodes[nodes["fallback"]].iloc[0]
    assert callback["attrs"]["call_target_name"] == "xla_ffi_python_cpu_callback"
    loop = nodes[nodes["op"] == "stablehlo.while"].iloc[0]
    regions = graph.scopes[graph.scopes["parent"] == loop["id"]]
    assert sorted(regions["label"]) == ["cond", "do"]
    # iteration arguments are bound to the loop's operands
    assert (graph.edges["kind"] == "param").sum() >= 4
    assert ((graph.edges["kind"] == "root") & (graph.edges["target"] == loop["id"])).any()


def test_xla_dump_directory_text_and_dot(tmp_path):
    script = textwrap.dedent("""
        import jax, jax.numpy as jnp
        jax.jit(lambda x: jnp.sin(x) @ x.T + 1).lower(jnp.ones((4, 4))).compile()
    """)
    env = dict(
        os.environ,
        XLA_FLAGS=f"--xla_dump_to={tmp_path} --xla_dump_hlo_as_text --xla_dump_hlo_as_dot",
        JAX_PLATFORMS="cpu",
    )
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=120)
    files = graphs.dump_files(tmp_path)
    assert set(files["stage"]) >= {"before_optimizations", "cpu_after_optimizations"}
    assert set(files["kind"]) == {"hlo", "dot"}
    ours = files[(files["module"] == "jit__lambda") & (files["stage"] == "cpu_after_optimizations")]
    after = ours.set_index("kind")["path"]
    text_graph = graphs.parse_file(after["hlo"])
    dot_graph = graphs.parse_file(after["dot"])
    assert text_graph.kind == "hlo" and dot_graph.kind == "dot"
    # the DOT file labels nodes with the same instruction names as the text
    dot_names = set(dot_graph.nodes["name"])
    assert {"dot", "fusion"} & set(text_graph.nodes["op"])
    assert set(text_graph.nodes.loc[text_graph.nodes["op"] == "dot", "name"]) <= dot_names
    assert (dot_graph.scopes["kind"] == "cluster").any()


# -- torch._lazy -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def lazy_texts(lazy_runtime) -> dict[str, str]:
    import torch
    import torch._lazy.debug

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)).to(
        "lazy"
    )
    out = model(torch.randn(3, 4).to("lazy")).sum()
    texts = {
        "ir": torch._lazy.debug.dump_ir([out], "text"),
        "torchscript": torch._lazy.debug.dump_ir([out], "backend"),
        "dot": torch._lazy.debug.render_ir_graph([out]),
    }
    torch._lazy.mark_step()
    return texts


def test_lazy_ir_text(lazy_texts):
    text = lazy_texts["ir"]
    assert graphs.detect_kind(text) == "ir"
    graph = graphs.parse(text)
    nodes = graph.nodes.set_index("id")
    addmm = graph.nodes[graph.nodes["op"] == "aten::addmm"]
    assert list(addmm["shape"]) == ["f32[3,8]", "f32[3,2]"]
    assert addmm.iloc[0]["flops"] == 2 * 3 * 8 * 4
    first = addmm.iloc[0]["id"]
    operands = graph.edges[graph.edges["target"] == first].sort_values("operand")
    assert [nodes.loc[s, "shape"] for s in operands["source"]][:3] == [
        "f32[8]",
        "f32[3,4]",
        "f32[4,8]",
    ]
    root = graph.nodes[graph.nodes["output"]]
    assert list(root["op"]) == ["aten::sum"] and root.iloc[0]["shape"] == "f32[]"
    assert nodes.loc["%0", "attrs"]["device"] == "CPU0"


def test_lazy_torchscript_backend_graph_has_sources(lazy_texts):
    text = lazy_texts["torchscript"]
    assert graphs.detect_kind(text) == "torchscript"
    graph = graphs.parse(text)
    nodes = graph.nodes
    assert (nodes["op"] == "input").sum() >= 4
    addmm = nodes[nodes["op"] == "aten::addmm"]
    assert len(addmm) == 2
    # torch._lazy records the outermost Python frame (here pytest's `python -m` entry)
    assert (addmm["source_file"] != "").all() and (addmm["source_line"] > 0).all()
    assert nodes[nodes["output"]]["op"].tolist() == ["aten::sum"]


def test_lazy_dot_rendering(lazy_texts):
    graph = graphs.parse(lazy_texts["dot"])
    assert graph.kind == "dot"
    assert sorted(graph.nodes.loc[graph.nodes["op"] == "aten::addmm", "shape"]) == [
        "f32[3,2]",
        "f32[3,8]",
    ]
    ir = graphs.parse(lazy_texts["ir"])
    assert len(graph.nodes) == len(ir.nodes) and len(graph.edges) == len(ir.edges)


def test_profile_graph_from_a_profiled_cell(run, shell, lazy_runtime):
    run("""%%xla_profile -q --var graph_prof
lin = torch.nn.Linear(5, 3).to(dev)
y = torch.relu(lin(torch.randn(2, 5).to(dev))).sum()
torch._lazy.mark_step()
""")
    prof = shell.user_ns["graph_prof"]
    graph = prof.graph(0)
    assert isinstance(graph, graphs.Graph) and graph.error is None
    assert "aten::relu" in set(graph.nodes["op"])
    name = prof.graphs["graph"].iloc[0]
    assert prof.graph(name[:6]).nodes.equals(graph.nodes)
    assert prof.graph(-1).name == prof.graphs["graph"].iloc[-1]
    with pytest.raises(IndexError):
        prof.graph(len(prof.graphs) + 5)
    marked = graph.with_fallbacks(["aten::relu"])
    assert list(marked.nodes.loc[marked.nodes["fallback"], "op"]) == ["aten::relu"]
    bundle = graph._repr_mimebundle_()
    assert "xlanb-graph" in bundle["text/html"] and "nodes" in bundle["text/plain"]


def test_a_profiled_cell_parses_no_graph_until_one_is_asked_for(run, shell, monkeypatch):
    """A cell that compiles a program pays for its graph only when someone opens it: the
    capture and its Profile parse no text; ``prof.graph(0)`` parses one, once."""
    parser_module = sys.modules["xlanb.graphs.parse"]
    parsed: list[str] = []
    for kind, parser in list(parser_module._PARSERS.items()):

        def counting(text: str, parser=parser, kind=kind) -> graphs.Graph:
            parsed.append(kind)
            return parser(text)

        monkeypatch.setitem(parser_module._PARSERS, kind, counting)
    read = graphs.hlo._read

    def counting_read(text: str):  # the HLO reader of hlo_cost (rates, roofline)
        parsed.append("hlo_read")
        return read(text)

    monkeypatch.setattr(graphs.hlo, "_read", counting_read)
    run("""%%xla_profile -q --var lazy_graph_prof
import jax, jax.numpy as jnp
def lazy_graph_step(x):
    return jnp.tanh(x @ x.T * 3.25).sum(axis=0)
for _ in range(3):
    jax.jit(lazy_graph_step)(jnp.ones((7, 5))).block_until_ready()
""")
    prof = shell.user_ns["lazy_graph_prof"]
    assert len(prof.graphs) >= 1 and not prof.ops.empty
    # the per-op roofline reads each measured program's HLO once; no graph is built
    optimized = int((prof.graphs["kind"] == "hlo_optimized").sum())
    assert [kind for kind in parsed if kind != "hlo_read"] == []
    assert 1 <= parsed.count("hlo_read") <= optimized
    parsed.clear()
    graph = prof.graph(0)
    assert graph.error is None and len(graph.nodes) > 0
    assert len([kind for kind in parsed if kind != "hlo_read"]) == 1
    asked = len(parsed)
    prof.graph(0)
    assert len(parsed) == asked


# -- diff ----------------------------------------------------------------------------------------
def step(x):
    return jnp.tanh(x @ x.T).sum(axis=0)


def test_diff_of_a_recompile_with_a_new_shape():
    before = graphs.parse(jax.jit(step).lower(jnp.ones((8, 4))).compile().as_text())
    after = graphs.parse(jax.jit(step).lower(jnp.ones((16, 4))).compile().as_text())
    result = graphs.diff(before, after)
    counts = result.counts()
    assert counts["added"] == counts["removed"] == 0
    assert counts["changed"] >= 3
    assert "f32[8,4] -> f32[16,4]" in result.summary
    assert "changed shape" in result.summary
    html = result.html()
    assert html.count('class="xlanb-graph"') == 2
    assert result.summary.replace(">", "&gt;") in html


def test_diff_names_the_added_op():
    before = graphs.parse(jax.jit(step).lower(jnp.ones((8, 4))).as_text())
    after = graphs.parse(jax.jit(lambda x: jnp.exp(step(x))).lower(jnp.ones((8, 4))).as_text())
    result = graphs.diff(before, after)
    added = result.nodes[result.nodes["status"] == "added"]
    assert "stablehlo.exponential" in set(added["op"])
    assert "stablehlo.exponential" in result.summary and "removed" not in result.summary
    overlay = result.html(mode="overlay")
    assert overlay.count('class="xlanb-graph"') == 1


# -- bad input and escaping ----------------------------------------------------------------------
def test_malformed_hlo_names_the_line(jax_texts):
    lines = jax_texts["hlo"].splitlines()
    number = next(i for i, line in enumerate(lines) if " dot(" in line)
    lines[number] = lines[number].replace("dot(%", "dot(%missing_", 1)
    with pytest.raises(ParseError) as caught:
        graphs.parse("\n".join(lines))
    error = caught.value
    assert isinstance(error, ValueError) and isinstance(error, xlanb.XlanbError)
    assert error.line == number + 1 and f"line {number + 1}" in str(error)
    assert "missing_" in str(error)
    with pytest.raises(ParseError, match="never closed"):
        graphs.parse("\n".join(lines[:number]))
    with pytest.raises(ParseError, match="line 3"):
        graphs.parse("IR {\n  %0 = [Float[2]] lazy_tensors::device_data()\n  %1 = garbage\n}")
    with pytest.raises(ParseError, match="not HLO"):
        graphs.parse("hello world")


def test_display_of_text_that_does_not_parse_shows_the_text():
    text = (
        "HloModule m\n\nENTRY %e {\n  %a = f32[] add(%nope, %nope), metadata={op_name="
        '"<script>x</script>"}\n}\n'
    )
    with pytest.raises(ParseError):
        graphs.parse(text)
    html = graph_html(text)
    assert "Could not draw" in html and "line 4" in html
    assert "&lt;script&gt;x&lt;/script&gt;" in html and "<script>x</script>" not in html


NASTY = "</script><script>window.__owned=1</script>\"'&<b>"


def test_names_with_script_tags_and_quotes_are_escaped():
    dot = (
        f'digraph G {{ a [label="{NASTY.replace(chr(34), chr(92) + chr(34))}\\nf32[2]"]; '
        f'b [label="add"]; a -> b; }}'
    )
    graph = graphs.parse(dot)
    assert graph.nodes.iloc[0]["name"] == NASTY
    fragment = graph_fragment(graph, title=NASTY)
    # the name cannot end the data element: every "<" inside it is written "\\u003c"
    assert "</script><script>window" not in fragment
    assert "\\u003c/script\\u003e\\u003cscript\\u003e" in fragment
    data = fragment.split('<script type="application/json">', 1)[1].split("</script>", 1)[0]
    assert NASTY in json.loads(data)["strings"]


@given(st.text())
def test_json_for_script_never_closes_the_script(value):
    text = json_for_script({"name": value})
    assert "</" not in text and "<!--" not in text
    assert json.loads(text) == {"name": value}


def test_payload_columns_line_up(jax_texts):
    graph = graphs.parse(jax_texts["hlo"])
    data = payload(graph, color_by="flops")
    count = len(graph.nodes)
    assert all(len(column) == count for column in data["nodes"].values())
    assert len(data["edges"]) == 3 * len(graph.edges)
    assert max(data["scopes"]["parent"]) < len(graph.scopes)
    assert data["options"]["colorBy"] == "flops"


def test_payload_names_its_codes_and_matches_measured_ops_by_name(jax_texts):
    from xlanb.graphs.ops import CATEGORIES
    from xlanb.views.graph_viewer.payload import DIFF_STATES, EDGE_KINDS, FLAGS

    graph = graphs.parse(jax_texts["hlo"])
    data = payload(graph)
    assert data["contract"] == {
        "flags": FLAGS,
        "edgeKinds": list(EDGE_KINDS),
        "diffStates": list(DIFF_STATES),
        "categories": list(CATEGORIES),
    }
    kinds = [data["contract"]["edgeKinds"][code] for code in data["edges"][2::3]]
    assert kinds == list(graph.edges["kind"])
    assert "measured" not in data and data["options"]["colorBy"] == ""

    fusion, dot = (
        graph.nodes.loc[graph.nodes["op"] == op, "name"].iloc[0] for op in ("fusion", "dot")
    )
    ops = pd.DataFrame(
        {
            "op": [fusion, f"{dot}.0", "not_in_graph"],  # a thunk may carry a run suffix
            "seconds": [0.002, 0.5, 0.001],
            "count": [3, 3, 3],
            "share": [0.004, 0.99, 0.002],
            "cell_line": pd.array([None, 7, None], dtype="Int64"),
            "code": ["", "h = x @ w", ""],
        }
    )
    graph.measured = ops
    data = payload(graph)
    measured, names = data["measured"], data["strings"]
    hottest = [names[data["nodes"]["name"][i]] for i in measured["node"]]
    assert hottest == [dot, fusion] and measured["seconds"] == [0.5, 0.002]
    assert measured["cellLine"] == [7, 0] and names[measured["code"][0]] == "h = x @ w"
    assert measured["unmatched"] == {"ops": 1, "seconds": 0.001, "names": ["not_in_graph"]}
    assert data["options"]["colorBy"] == "time"
    assert payload(graph, color_by="flops")["options"]["colorBy"] == "flops"


def test_widget_holds_the_node_the_front_end_selected(jax_texts):
    pytest.importorskip("anywidget")
    graph = graphs.parse(jax_texts["hlo"])
    viewer = graph.viewer()
    assert viewer.selected is None and json.loads(viewer.data)["kind"] == "hlo"
    dot = graph.nodes[graph.nodes["op"] == "dot"].iloc[0]
    viewer.set_state({"selected": {"name": dot["name"], "op": "dot"}})  # as the browser does
    assert viewer.selected["name"] == dot["name"]
    viewer.search("tanh")
    assert viewer.query == "tanh"
    data, _metadata = viewer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert 'class="xlanb-graph"' in data["text/html"]  # where widgets cannot render
