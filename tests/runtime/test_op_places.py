"""The top ops point at the user's code (real JAX on CPU, in a real shell): each op names the
model's line (In[n] of the cell that defines it, or the profiled cell's own line), that
line's text, and which runs its time is from (the first traced run holds the warm-up)."""

from __future__ import annotations

import re

import pytest

from xlanb.core.units import format_seconds
from xlanb.views.html import profile_html
from xlanb.views.summary import summary_text, top_ops

jax = pytest.importorskip("jax")

MODEL_CELL = """import jax, jax.numpy as jnp
def op_model(p, x):
    h = jnp.tanh(x @ p["w1"])
    return h @ p["w2"]
def op_loss(p, x, y):
    return jnp.mean((op_model(p, x) - y) ** 2)
@jax.jit
def op_step(p, x, y):
    loss, g = jax.value_and_grad(op_loss)(p, x, y)
    return jax.tree.map(lambda a, b: a - 0.01 * b, p, g), loss
key = jax.random.PRNGKey(0)
op_p = {"w1": jax.random.normal(key, (64, 96)), "w2": jax.random.normal(key, (96, 16))}
op_x = jax.random.normal(key, (32, 64))
op_y = jax.random.normal(key, (32, 16))"""

CALLS = 4


def test_ops_name_the_models_line_in_its_cell_and_the_runs_they_are_from(run, shell):
    run(MODEL_CELL)
    model_file = shell.user_ns["op_model"].__code__.co_filename
    model_lines = MODEL_CELL.splitlines()
    run(
        f"%%xla_profile --var op_prof\nfor _ in range({CALLS}):\n"
        "    op_p, op_loss_value = op_step(op_p, op_x, op_y)\nop_loss_value.block_until_ready()"
    )
    prof = shell.user_ns["op_prof"]
    ops = prof.ops[prof.ops["graph"] == "jit(op_step)"]
    located = ops[ops["source_file"].notna()]
    assert not located.empty
    # the model's cell, not the profiled cell's call line
    assert set(located["source_file"]) == {model_file}
    number = shell.compile._filename_map[model_file]
    for row in located.itertuples():
        assert row.source == f"In[{number}] line {row.source_line}"
        assert row.code == model_lines[row.source_line - 1].strip()
    # the matmuls are the model's two lines with `@`
    matmuls = located[located["category"] == "matmul"]
    assert set(matmuls["source_line"]) == {3, 4}
    # every op ran once a run; the first run is part of the time, never more than all of it
    assert set(ops["runs"]) == {CALLS}
    assert (ops["count"] == ops["runs"]).all()
    assert ((ops["first_run_seconds"] > 0) & (ops["first_run_seconds"] <= ops["seconds"])).all()
    # the cell line is the call that ran the ops (the magic line is line 1)
    assert set(ops["cell_line"]) == {3}
    # the views say it too: where, the code, the runs; not the call line
    text = summary_text(prof)
    shown = top_ops(prof, 5)
    for row in shown.itertuples():
        if isinstance(row.source, str):
            assert f" {row.source}: {row.code}" in text
            assert f"({CALLS} runs, first " in text
            later = (row.seconds - row.first_run_seconds) / (CALLS - 1)
            assert f", then {format_seconds(later)} a run)" in text
    assert "op_p, op_loss_value = op_step" not in text.split("top ops")[1].split("compiles")[0]
    html = profile_html(prof, graph_viewers=False)
    assert f"In[{number}] line 3" in html and f"{CALLS} runs, first " in html
    assert "jit(op_step)/jvp()/dot_general" in html  # the JAX op name
    # each row keeps to one line: its runs and its model line's code never wrap the table
    top = html.split("Top ops (")[1].split("</table>")[0]
    header = re.findall(r"<th>(.*?)</th>", top)
    for cells in re.findall(r"<tr>(.*?)</tr>", top.split("<tbody>")[1]):
        tags = re.findall(r"<td[^>]*>", cells)
        for column in ("runs", "code", "where"):
            assert "white-space:nowrap" in tags[header.index(column)], (column, cells)
    # where and what first: the model's line and its code before the runs' split
    assert header.index("code") < header.index("runs")
    # the steps start at seconds into the cell, readable as printed
    steps = prof.step_times
    assert len(steps) == CALLS and steps["start"].iloc[0] == 0.0
    assert steps["start"].is_monotonic_increasing and steps["start"].max() < prof.wall_seconds
    assert "e+09" not in steps.to_string()


def test_an_op_the_profiled_cell_writes_is_named_by_its_cell_line(run, shell):
    run(
        "%%xla_profile --var op_own\n"
        "own_x = jnp.ones((48, 48))\n"
        "own_f = jax.jit(lambda v: jnp.sin(v @ v))\n"
        "own_f(own_x).block_until_ready()"
    )
    prof = shell.user_ns["op_own"]
    located = prof.ops[prof.ops["source_file"].notna()]
    assert not located.empty
    # the lambda is on line 3 of the cell as the editor counts it (the magic line is line 1)
    assert set(located["source"]) == {"cell line 3"}
    assert set(located["cell_line"]) == {3}
    assert set(located["code"]) == {"own_f = jax.jit(lambda v: jnp.sin(v @ v))"}
    assert set(located["runs"]) == {1}
    assert (located["first_run_seconds"] == located["seconds"]).all()


def test_reads_in_a_function_of_another_kernel_cell_name_that_cell(run, shell, request):
    """A value read in a helper defined in an earlier cell of a Jupyter kernel: its place is
    that cell (``In[n] line 2 (rd_read)``), never the kernel's temporary file."""
    pytest.importorskip("ipykernel")
    from ipykernel.compiler import XCachingCompiler

    from xlanb.analysis.attribution import forced_sync_places

    request.getfixturevalue("lazy_runtime")
    ipython_compile = shell.compile
    shell.compile = XCachingCompiler()  # a Jupyter kernel's: cells are /tmp/ipykernel_<pid>/*.py
    try:
        run("def rd_read(t):\n    return t.sum().item()")
        helper_file = shell.user_ns["rd_read"].__code__.co_filename
        number = shell.compile._filename_map[helper_file]
        run(
            "%%xla_profile -q --var rd_prof\nrd_w = torch.ones(3, device=dev)\n"
            "for _ in range(2):\n    rd_read(rd_w * 2)\nrd_w.sum().item()"
        )
    finally:
        shell.compile = ipython_compile
    prof = shell.user_ns["rd_prof"]
    places = forced_sync_places(prof.executions, prof.fallbacks)
    by_place = dict(zip(places["read_at"], places["count"], strict=True))
    assert by_place == {f"In[{number}] line 2 (rd_read)": 2, "cell line 5": 1}, places
    assert not places["library"].any()
    shown = prof._repr_html_() + repr(prof) + "".join(prof.findings["detail"].astype(str))
    assert "ipykernel_" not in shown


def test_ops_that_jax_names_after_its_primitives_say_what_they_compute(run, shell):
    # XLA:CPU names a thunk after its instruction and JAX names instructions after its
    # primitives (``conv_general_dilated.3``, ``broadcast_in_dim``): the name alone says
    # nothing, the instruction's opcode in the optimized HLO does
    run("import jax, jax.numpy as jnp")
    run(
        "%%xla_profile -q --var conv_prof\n"
        "@jax.jit\n"
        "def op_conv(x, w):\n"
        "    dims = ('NHWC', 'HWIO', 'NHWC')\n"
        "    return jax.lax.conv_general_dilated(x, w, (1, 1), 'SAME', dimension_numbers=dims)\n"
        "_ = op_conv(jnp.ones((2, 16, 16, 3)), jnp.ones((3, 3, 3, 8))).block_until_ready()"
    )
    ops = shell.user_ns["conv_prof"].ops
    convs = ops[ops["op"].str.startswith("conv_general_dilated")]
    assert not convs.empty, ops[["op", "op_name", "category"]].to_string()
    assert set(convs["category"]) == {"convolution"}, convs[["op", "category"]]
