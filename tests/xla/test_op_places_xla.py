"""The top ops point at the user's code on PyTorch/XLA (CPU, ``--deep``: XLA_HLO_DEBUG): each
op names the model's line in its recorded Python stack with its text, the cell line that ran
its graph, a readable name of its graph (the function and line that cut it, not the graph's
hash) and which runs its time is from."""

from __future__ import annotations

import linecache

import pytest

from tests.support.helpers import torch_xla_mlp_cell, trace_without_budget
from xlanb.capture import versions
from xlanb.views.summary import summary_text

OPS_TRACED = versions.parse_version(versions.installed_version("torch_xla") or "0") >= (2, 8)

MODEL_CELL = torch_xla_mlp_cell("op_", 128, 256, 32)

CALLS = 4


@pytest.mark.skipif(not OPS_TRACED, reason="torch_xla before 2.8 traces no per-op events")
def test_ops_name_their_line_graph_and_runs_not_a_hash(run, shell, monkeypatch):
    trace_without_budget(monkeypatch)  # all its runs traced
    run(MODEL_CELL)
    model_file = shell.user_ns["op_step"].__code__.co_filename
    number = shell.compile._filename_map[model_file]
    run(f"%%xla_profile -b torch_xla -q --var op_xla\nfor _ in range({CALLS}):\n    op_step()")
    prof = shell.user_ns["op_xla"]
    ops = prof.ops
    assert not ops.empty
    # each graph is named by the sync that cut it (line 12 of the model's cell), not its hash;
    # the first step's graph (it also sets up the optimizer's state) first, then the steady one
    graphs = list(prof.compiles["graph"])
    assert set(ops["graph"]) <= set(graphs)
    named = f"op_step at In[{number}] line 12"
    expected = {
        graph: named if index == 0 else f"{named} #{index + 1}"
        for index, graph in enumerate(graphs)
    }
    assert all(expected[row.graph] == row.program for row in ops.itertuples())
    # the cell line that ran it (the magic line is line 1)
    assert set(ops["cell_line"]) == {3}
    # XLA_HLO_DEBUG prints each op's innermost frame (torch's Linear for the matmuls) into the
    # text; the module's proto holds the whole stack: the forward's matmuls name the model
    # cell's line that ran the model (line 9), the optimizer's update `opt.step()` (line 11)
    located = ops[ops["source_file"].notna()]
    assert not located.empty
    for row in located.itertuples():
        assert row.code == linecache.getline(row.source_file, row.source_line).strip()
        assert row.source.endswith(str(row.source_line)) and not row.source.startswith("/")
    assert set(located.loc[located["category"] == "matmul", "source"]) == {f"In[{number}] line 9"}
    assert f"In[{number}] line 11" in set(located["source"])
    assert not located["source"].str.contains("site-packages|torch/", regex=True).any()
    # which runs: every run traced, the first one holds part of each op's time
    runs = prof.executions.groupby("graph")["count"].sum()
    assert all(row.runs == runs[row.graph] for row in ops.itertuples())
    assert ((ops["first_run_seconds"] > 0) & (ops["first_run_seconds"] <= ops["seconds"])).all()
    top_ops = summary_text(prof).split("top ops")[1].split("compiles")[0]
    assert f"(op_step at In[{number}] line 12" in top_ops and " runs, first " in top_ops
    for graph in set(ops["graph"]):
        assert graph not in top_ops
    # the compiles name their graphs so too
    assert list(prof.compiles["program"]) == [expected[graph] for graph in graphs]
    compiles = summary_text(prof).split("  compiles:")[1]
    assert all(expected[graph] in compiles and graph not in compiles for graph in graphs)
