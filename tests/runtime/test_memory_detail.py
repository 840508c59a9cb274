"""Memory in detail, on real JAX (CPU), in the real shell: the live arrays a cell made (counted
by position, with where they were made), each program's largest temporaries, and the memory
lane of the timeline (live memory, each run at its program's compiled peak)."""

from __future__ import annotations

import pytest

jax = pytest.importorskip("jax")


@pytest.fixture(scope="module", autouse=True)
def jax_runtime(shell):
    result = shell.run_cell("import jax, jax.numpy as jnp, numpy as np")
    assert result.success, result.error_in_exec


def test_arrays_made_in_place_of_freed_ones_are_left_alive(run, shell):
    """A cell that frees arrays and keeps as many new ones of the same shape (a step replacing
    its parameters): the new arrays (whose Python objects take the freed ones' addresses) are
    what it left alive, all of them and only them (not the older arrays of the same shape
    still alive); the live count stays the same."""
    run("mt_older = [jnp.ones((64, 64)) for i in range(50)]")  # alive, same shape, not made
    run("mt_state = [jnp.ones((64, 64)) * i for i in range(200)]")  # the 200 newest arrays
    run(
        "%%xla_profile -b jax -q --var prof\n"
        "for i in range(200):\n    mt_state[i] = mt_state[i] + 1.0"
    )
    live = shell.user_ns["prof"].live_arrays
    ends = live.set_index("snapshot")
    assert ends.loc["after", "count"] == ends.loc["before", "count"]
    left = live[live["snapshot"] == "left alive"].set_index("shape")
    assert left.loc["float32[64,64]", "count"] == 200
    run("del mt_state, mt_older")


def test_the_largest_temporaries_of_a_program_name_their_op_and_cell_line(run, shell):
    """A jitted function whose matmul result only feeds the next op: that buffer is the
    program's temporary (JAX's buffer assignment), named by its HLO op, with its shape, size
    and the cell line that made it, and as big as JAX's own temp size; the HTML lists it."""
    run(
        "%%xla_profile -b jax -q --var prof\n"
        "def mt_temps(x):\n"
        "    y = jnp.sin(x).T @ x\n"
        "    return jnp.tanh(x @ x).sum(0) + y\n"
        "mt_temps_jit = jax.jit(mt_temps)\n"
        "mt_temps_jit(jnp.ones((256, 256))).block_until_ready()"
    )
    prof = shell.user_ns["prof"]
    temps = prof.temporaries[prof.temporaries["graph"] == "jit(mt_temps)"]
    assert len(temps) >= 1, prof.temporaries
    stats = (
        shell.user_ns["mt_temps_jit"].lower(jnp_ones(shell, (256, 256))).compile().memory_analysis()
    )
    largest = temps.iloc[0]
    assert largest["bytes"] == 256 * 256 * 4 <= stats.temp_size_in_bytes
    assert temps["bytes"].is_monotonic_decreasing
    assert largest["shape"] == "f32[256,256]"
    assert largest["opcode"] == "dot" and largest["op"].startswith("dot")
    assert largest["cell_line"] == 3  # `y = jnp.sin(x).T @ x`, the magic's line being 1
    assert largest["source"] == "cell line 3" and largest["code"] == "y = jnp.sin(x).T @ x"
    html = prof._repr_html_()
    code = "<code style='white-space:pre'>y = jnp.sin(x).T @ x</code>"
    assert "Largest temporaries" in html and code in html


def jnp_ones(shell, shape):
    return shell.user_ns["jnp"].ones(shape)


def test_the_timeline_has_a_memory_lane_with_live_memory_and_each_runs_compiled_peak(run, shell):
    """Under the time lanes: live device memory before and after the cell (as `live_arrays`
    says) and a marker at each run of a program at its compiled peak, on the plotly figure
    and on its static SVG twin."""
    from xlanb.views.charts import figure_svg, timeline_figure

    run("mt_lane = []\nmt_lane_f = jax.jit(lambda x: jnp.tanh(x @ x))")
    run(
        "%%xla_profile -b jax -q --var prof\n"
        "for i in range(4):\n    mt_lane.append(mt_lane_f(jnp.ones((256, 256)) * i))\n"
        "jax.block_until_ready(mt_lane)"
    )
    prof = shell.user_ns["prof"]
    figure = timeline_figure(prof)
    lane = {trace["name"]: trace for trace in figure["data"] if trace.get("yaxis") == "y2"}
    assert figure["layout"]["yaxis2"]["title"]["text"] == "memory (MB)"
    ends = prof.live_arrays.set_index("snapshot")["bytes"]
    assert lane["live jax"]["y"] == [ends["before"] / 1e6, ends["after"] / 1e6]
    peak = prof.compiles.set_index("graph").loc["jit(<lambda>)", "peak_bytes"]
    runs = prof.spans[(prof.spans["lane"] == "device") & (prof.spans["graph"] == "jit(<lambda>)")]
    assert lane["program peak"]["y"] == [peak / 1e6] * len(runs) and len(runs) == 4
    assert "memory (MB)" in figure_svg(figure)
    run("mt_lane.clear()")


def test_a_program_run_hundreds_of_times_draws_at_most_a_rows_worth_of_peak_markers(run, shell):
    """450 runs of one program: the memory lane marks its compiled peak at no more runs than a
    timeline row draws bars (a marker a run made the figure grow with the loop)."""
    from xlanb.views.charts import ROW_BARS, timeline_figure

    run("mt_many = jax.jit(lambda x: x + 1)")
    run(
        "%%xla_profile -b jax -q --trace-runs 0 --var prof\n"
        "mt_x = jnp.ones(8)\nfor i in range(450):\n    mt_x = mt_many(mt_x)\n"
        "_ = mt_x.block_until_ready()"
    )
    prof = shell.user_ns["prof"]
    runs = prof.spans[(prof.spans["lane"] == "device") & (prof.spans["graph"] == "jit(<lambda>)")]
    assert len(runs) == 450  # the device trace saw every run
    lane = {t["name"]: t for t in timeline_figure(prof)["data"] if t.get("yaxis") == "y2"}
    assert ROW_BARS // 2 <= len(lane["program peak"]["x"]) <= ROW_BARS


def test_arrays_left_alive_say_where_they_were_made(run, shell):
    """JAX keeps the Python stack that made each array: the groups a cell left alive name the
    cell line that made them (through a helper defined in another cell: the line that called
    it), and the "Left alive by the cell" table shows it with the code of the line."""
    run("mt_made = []\ndef mt_helper(n):\n    return jnp.zeros((n, 250))")
    run(
        "%%xla_profile -b jax -q --var prof\n"
        "for i in range(4):\n"
        "    mt_made.append(jnp.ones((1000, 1000)) * i)\n"
        "mt_made.append(mt_helper(8))"
    )
    prof = shell.user_ns["prof"]
    left = prof.live_arrays[prof.live_arrays["snapshot"] == "left alive"].set_index("shape")
    assert left.loc["float32[1000,1000]", "count"] == 4
    assert left.loc["float32[1000,1000]", "created_at"] == "cell line 3"
    assert left.loc["float32[1000,1000]", "cell_line"] == 3
    assert left.loc["float32[8,250]", "created_at"] == "cell line 4"
    html = prof._repr_html_()
    assert "cell line 3" in html and "mt_made.append(jnp.ones((1000, 1000)) * i)" in html
    run("mt_made.clear()")


def test_runs_of_a_program_compiled_in_an_earlier_cell_keep_its_peak(run, shell):
    """The executions table and the memory lane give a program's compiled peak in a later
    cell that only runs it (JAX compiles it once, in the first profiled cell)."""
    from xlanb.views.charts import timeline_figure

    run("@jax.jit\ndef mt_again(x):\n    return jnp.sin(x) @ x")
    cell = (
        "%%xla_profile -b jax -q --var prof\n"
        "for i in range(3):\n    mt_again(jnp.ones((128, 128)) * i).block_until_ready()"
    )
    run(cell)
    peak = shell.user_ns["prof"].compiles.set_index("graph").loc["jit(mt_again)", "peak_bytes"]
    run(cell)
    prof = shell.user_ns["prof"]
    assert (prof.compiles["graph"] != "jit(mt_again)").all()  # nothing compiled this time
    runs = prof.executions.set_index("graph").loc["jit(mt_again)"]
    assert runs["count"] == 3 and runs["peak_bytes"] == peak > 0
    assert "<th>peak_memory</th>" in prof._repr_html_().split("Executions by graph")[1]
    lane = {t["name"]: t for t in timeline_figure(prof)["data"] if t.get("yaxis") == "y2"}
    assert len(lane["program peak"]["y"]) == 3
