"""xlanb.graphs on PyTorch/XLA's own text: IR (``_get_xla_tensors_text``), HLO with
``XLA_HLO_DEBUG`` metadata (``_get_xla_tensors_hlo``), DOT, the ``--xla_dump_to`` modules and
``prof.graph()`` after a profiled step.

Run with ``PJRT_DEVICE=CPU XLA_HLO_DEBUG=1 XLA_IR_DEBUG=1``. torch_xla is imported inside the
fixtures, after the shell fixture loaded xlanb, as in the other torch_xla tests.
"""

from __future__ import annotations

import os
import re

import pytest

from xlanb import graphs
from xlanb.capture import switches, versions

HERE = os.path.abspath(__file__)
_RELEASE = versions.parse_version(versions.installed_version("torch_xla") or "0")
#: torch_xla 2.8 and newer trace each run's ops on the CPU (see versions.RUNTIMES).
OPS_TRACED = _RELEASE >= (2, 8)
#: torch_xla 2.7's XLA:CPU compiles each elementwise op and reduction as its own kernel.
CPU_FUSES = _RELEASE >= (2, 8)


@pytest.fixture(scope="module")
def xla(shell):
    pytest.importorskip("torch_xla")
    result = shell.run_cell("import torch, torch_xla\ndev = torch_xla.device()")
    assert result.success, result.error_in_exec
    import torch
    import torch_xla

    # xlanb sets the switches before torch_xla starts (tests/conftest.py loads it first):
    # their absence is a failure of the feature under test, not a reason to skip
    assert os.environ.get("XLA_HLO_DEBUG") == "1" and os.environ.get("XLA_IR_DEBUG") == "1", (
        "xlanb did not set XLA_HLO_DEBUG=1 XLA_IR_DEBUG=1 before torch_xla started"
    )
    return torch, torch_xla


def marker_line(marker: str) -> int:
    with open(HERE, encoding="utf-8") as source:
        return next(
            i for i, line in enumerate(source, 1) if marker in line and "marker_line" not in line
        )


def small_step(torch, device):
    x = torch.ones(5, 3, device=device)
    w = torch.full((3, 7), 0.5, device=device)
    h = torch.relu(x @ w)  # MARK: relu-matmul
    return (h * h).sum()


def test_hlo_with_debug_metadata_points_at_the_user_line(xla):
    torch, torch_xla = xla
    out = small_step(torch, torch_xla.device())
    text = torch_xla._XLAC._get_xla_tensors_hlo([out])
    graph = graphs.parse(text)
    assert graph.kind == "hlo"
    nodes = graph.nodes
    dot = nodes[nodes["op"] == "dot"].iloc[0]
    assert dot["shape"] == "f32[5,7]"
    assert dot["attrs"]["op_type"] in ("aten__mm", "aten__matmul")
    assert (dot["source_file"], dot["source_line"]) == (HERE, marker_line("MARK: relu-matmul"))
    assert dot["flops"] == 2 * 5 * 7 * 3
    relu = nodes[nodes["attrs"].map(lambda a: a.get("op_type") == "aten__relu")]
    assert not relu.empty and (relu["source_line"] == marker_line("MARK: relu-matmul")).all()
    # the reducer computation of sum() is a called computation, shown in its own group
    assert (graph.scopes["kind"] == "computation").any()
    operands = graph.edges[graph.edges["target"] == dot["id"]].sort_values("operand")
    shapes = nodes.set_index("id").loc[list(operands["source"]), "shape"]
    assert list(shapes) == ["f32[5,3]", "f32[3,7]"]


def test_ir_text_has_locations(xla):
    torch, torch_xla = xla
    out = small_step(torch, torch_xla.device())
    graph = graphs.parse(torch_xla._XLAC._get_xla_tensors_text([out]))
    assert graph.kind == "ir"
    mm = graph.nodes[graph.nodes["op"].isin(["aten::mm", "aten::matmul"])].iloc[0]
    assert mm["shape"] == "f32[5,7]"
    assert mm["source_file"] == os.path.basename(HERE)
    assert mm["source_line"] == marker_line("MARK: relu-matmul")
    assert mm["source_function"] == "small_step"
    assert graph.nodes[graph.nodes["output"]]["op"].tolist() == ["aten::sum"]


def test_dot_text(xla):
    torch, torch_xla = xla
    out = small_step(torch, torch_xla.device())
    dot = graphs.parse(torch_xla._XLAC._get_xla_tensors_dot([out]))
    ir = graphs.parse(torch_xla._XLAC._get_xla_tensors_text([out]))
    assert dot.kind == "dot"
    assert sorted(dot.nodes["op"]) == sorted(ir.nodes["op"])
    assert len(dot.edges) == len(ir.edges)


def test_module_path_prefixes_become_scopes(xla):
    torch, torch_xla = xla
    device = torch_xla.device()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)).to(
        device
    )

    def name_outputs(name):
        def hook(module, inputs, output):
            torch_xla._XLAC._set_xla_custom_op_name_prefix(output, f"model/{name}/", 1)

        return hook

    for name, module in model.named_children():
        module.register_forward_hook(name_outputs(name))
    out = model(torch.ones(3, 4, device=device)).sum()
    graph = graphs.parse(torch_xla._XLAC._get_xla_tensors_hlo([out]))
    scopes = graph.scopes[graph.scopes["kind"] == "op_name"]
    assert {"0", "1", "2"} <= set(scopes["label"])
    first = scopes[scopes["label"] == "0"].iloc[0]
    inside = graph.nodes[graph.nodes["scope"] == first["id"]]
    assert "dot" in set(inside["op"]) and inside["op_name"].str.startswith("model/0/").any()


def test_dump_directory_and_profile_graph(xla, run, shell):
    flags = switches.value("XLA_FLAGS") or ""
    dump = re.search(r"--xla_dump_to=(\S+)", flags)
    assert dump, "xlanb did not set --xla_dump_to before torch_xla started"
    run("""%%xla_profile -q --var graphs_prof
gx = torch.ones(6, 4, device=dev)
gw = torch.full((4, 9), 0.25, device=dev)
gy = torch.tanh(gx @ gw).sum(dim=0)
torch_xla.sync()
""")
    prof = shell.user_ns["graphs_prof"]
    assert set(prof.graphs["kind"]) >= {"hlo", "hlo_optimized"}
    graph = prof.graph(0)
    assert graph.error is None and graph.kind == "hlo"
    dot = graph.nodes[graph.nodes["op"] == "dot"].iloc[0]
    # the cell's third line (the matmul), as the runtime recorded it from the cell's code
    assert dot["source_file"].startswith("<ipython-input") and dot["source_line"] == 3
    optimized = prof.graph(0, kind="hlo_optimized")
    fusions = optimized.scopes[optimized.scopes["kind"] == "fusion"]
    if CPU_FUSES:
        assert not fusions.empty and (fusions["nodes"] > 1).all()
    else:  # the graph as that compiler left it: each op its own instruction, none fused
        assert fusions.empty and "fusion" not in set(optimized.nodes["op"])
        assert {"dot", "tanh", "reduce"} <= set(optimized.nodes["op"])
    html = graph._repr_mimebundle_()["text/html"]
    assert 'class="xlanb-graph"' in html


def test_dump_files_of_a_sync(xla, tmp_path):
    torch, torch_xla = xla
    flags = switches.value("XLA_FLAGS") or ""
    dump = re.search(r"--xla_dump_to=(\S+)", flags)
    assert dump, "xlanb did not set --xla_dump_to before torch_xla started"
    out = small_step(torch, torch_xla.device()) * 3.0
    torch_xla.sync()
    files = graphs.dump_files(dump[1])
    assert not files.empty
    last = files[files["module_id"] == files["module_id"].max()]
    assert set(last["stage"]) >= {"before_optimizations", "cpu_after_optimizations"}
    for path in last[last["kind"] == "hlo"]["path"]:
        graph = graphs.parse_file(path)
        assert graph.kind == "hlo" and len(graph.nodes) > 3
    del out


BIG_MODEL = """
torch.manual_seed(0)
big_model = torch.nn.TransformerEncoder(
    torch.nn.TransformerEncoderLayer(128, 4, 256, batch_first=True, dropout=0.0), 4
).to(dev)
big_opt = torch.optim.SGD(big_model.parameters(), lr=1e-3)
def big_step(x):
    big_opt.zero_grad()
    loss = (big_model(x) ** 2).mean()
    loss.backward()
    big_opt.step()
    torch_xla.sync()
    return loss
"""


def test_a_program_whose_optimized_hlo_is_huge_keeps_the_cell_output_small(xla, run, shell):
    """A 4-layer transformer's training step: 2,000 HLO instructions, 21,000 once optimized
    (fusions). With measured device time the viewer opens a program on its optimized HLO; one
    that large is shown on its HLO instead, and the cell's output stays within 300 kB."""
    import json

    from IPython.utils.capture import capture_output

    run(BIG_MODEL)
    cell = "%%xla_profile --var {var}\nbx = torch.randn(6, 16, 128).to(dev)\n" + (
        "for _ in range(3):\n    loss = big_step(bx)\nloss.item()"
    )
    with capture_output() as shown:
        run(cell.format(var="big_compiled"))
    compiled = shell.user_ns["big_compiled"]
    sizes = dict(zip(compiled.graphs["kind"], compiled.graphs["nodes"], strict=True))
    assert sizes["hlo_optimized"] > 5000 > sizes["hlo"], sizes
    assert sum(len(json.dumps(o.data, default=str)) for o in shown.outputs) <= 300_000
    if not OPS_TRACED:  # no per-op device time to open the optimized HLO with
        assert compiled.ops.empty and compiled.graph_kinds(0)[0] == "hlo"
        return
    # the same program's device time, from a cell that ran it again (a compiling cell's trace
    # does not always hold its runs' ops on torch_xla)
    for _ in range(3):
        run(cell.replace("bx = torch.randn(6, 16, 128).to(dev)\n", "").format(var="big_again"))
        if not shell.user_ns["big_again"].ops.empty:
            break
    ops = shell.user_ns["big_again"].ops
    assert set(ops["graph"]) >= set(compiled.graphs["graph"]), ops["graph"].unique()
    compiled.ops = ops
    assert compiled.graph_kinds(0)[0] == "hlo_optimized"
    with capture_output() as shown:
        shell.display_formatter.active_types = shell.display_formatter.format_types
        from IPython.display import display

        display(compiled)
    html = shown.outputs[0].data["text/html"]
    assert len(json.dumps(shown.outputs[0].data, default=str)) <= 300_000
    assert "Graph viewer (1)" in html
