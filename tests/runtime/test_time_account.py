"""Where the time went, on the real runtimes: the account adds up to the wall time, compile and
device time come from the runtime's own events and trace, and the hot op is found with its
cell line."""

from __future__ import annotations

import sys
import threading

import pandas as pd
import pytest

from tests.support.helpers import (
    NO_WINDOW_SECONDS,
    assert_one_at_a_time,
    buckets,
    trace_stop_times,
    trace_without_budget,
    union_seconds,
)
from xlanb.analysis.sync_cost import READ_WAITS

jax = pytest.importorskip("jax")

SETUP = """
import jax, jax.numpy as jnp
ta_big = jax.random.normal(jax.random.key(0), (1024, 1024))
"""


@pytest.fixture(scope="module", autouse=True)
def jax_runtime(shell):
    result = shell.run_cell(SETUP)
    assert result.success, result.error_in_exec


def assert_adds_up(prof):
    total = sum(buckets(prof).values())
    assert total == pytest.approx(prof.wall_seconds, rel=0.02), prof.breakdown
    assert set(prof.breakdown["bucket"]) == {
        "python",
        "compile",
        "device",
        "transfer",
        "sync_wait",
        "other",
    }


def profile_mm_loop(run, shell, var: str, steps: int, options: str = ""):
    """A compute-bound loop of `steps` 1024x1024 matmul programs, compiled before the cell."""
    run(
        "@jax.jit\ndef ta_mm(a):\n    return jnp.tanh(a @ a) @ a\nta_mm(ta_big).block_until_ready()"
    )
    run(
        f"%%xla_profile -b jax -q {options} --var {var}\nfor _ in range({steps}):\n"
        "    out = ta_mm(ta_big)\nout.block_until_ready()"
    )
    return shell.user_ns[var]


def test_a_steady_compute_bound_loop_is_mostly_device_time(run, shell):
    # run twice: the first trace of a cell of runs this long closes after 1 s of them
    profile_mm_loop(run, shell, "steady", 8)
    prof = profile_mm_loop(run, shell, "steady", 8)
    assert_adds_up(prof)
    assert buckets(prof)["compile"] == 0
    # every run of the program is one device span, from the runtime's trace, and the account's
    # device time is their union (how much of the wall it is, is a figure: bench/)
    device = prof.spans[prof.spans["lane"] == "device"]
    assert len(device) == 8 and not device["estimated"].any()
    assert_one_at_a_time(device)
    assert buckets(prof)["device"] == pytest.approx(union_seconds(device, prof), rel=1e-6)
    assert "wall " in repr(prof) and "device" in repr(prof).split("\n")[2]


def test_recompiles_are_compile_time_and_the_buckets_sum_to_wall(run, shell):
    run("@jax.jit\ndef ta_shapes(x):\n    return jnp.sin(x).cumsum() @ x")
    run(
        "%%xla_profile -b jax -q --var shapes\nfor n in (64, 128, 256, 512):\n"
        "    ta_shapes(jnp.ones((n,), jnp.float32)).block_until_ready()"
    )
    prof = shell.user_ns["shapes"]
    assert_adds_up(prof)
    compiles = prof.compiles[~prof.compiles["eager"].eq(True)]
    assert len(compiles) == 4
    events = prof.compiles[["seconds", "trace_seconds", "lower_seconds"]].fillna(0).sum().sum()
    spans = prof.spans
    compiled, device = spans[spans["lane"] == "compile"], spans[spans["lane"] == "device"]
    assert compiled["seconds"].sum() == pytest.approx(events, rel=1e-6)
    # the account's compile time is the compiles' but where a program ran meanwhile
    both = union_seconds(pd.concat([compiled, device]), prof)
    assert buckets(prof)["compile"] == pytest.approx(both - union_seconds(device, prof), rel=1e-6)
    assert buckets(prof)["compile"] > buckets(prof)["device"]


def test_the_hot_op_is_the_top_op_with_its_cell_line(run, shell):
    run("ta_long = jax.random.normal(jax.random.key(1), (1 << 21,))")
    run(
        "%%xla_profile -b jax -q --var hot\n"
        "@jax.jit\n"
        "def ta_hot(x):\n"
        "    y = jnp.sort(x)\n"
        "    return jnp.tanh(y[:16]).sum() + x[0] * 2\n"
        "for _ in range(3):\n"
        "    ta_hot(ta_long).block_until_ready()"
    )
    prof = shell.user_ns["hot"]
    top = prof.ops.sort_values("seconds", ascending=False).iloc[0]
    assert top["op"].startswith("sort"), prof.ops
    assert top["cell_line"] == 4 and top["category"] == "sort"
    assert top["share"] > 0.5 and top["count"] >= 3
    assert prof.ops["seconds"].sum() <= prof.wall_seconds
    html = prof._repr_html_()
    assert "Top ops (device time" in html and "y = jnp.sort(x)" in html
    # zooming into a run: the op events themselves are spans inside the device runs
    ops = prof.spans[prof.spans["lane"] == "op"]
    runs = prof.spans[prof.spans["lane"] == "device"]
    sort = ops[ops["name"].str.startswith("sort")].iloc[0]
    assert (
        (runs["start"] <= sort["start"] + 1e-6)
        & (sort["start"] + sort["seconds"] <= runs["start"] + runs["seconds"] + 1e-6)
    ).any()
    lanes = {t.name for t in prof.charts()[-1].to_plotly().data}
    assert {"device", "op"} <= lanes


def test_no_trace_option_turns_tracing_off(run, shell):
    run("%%xla_profile -b jax -q --no-trace --var untraced\nta_mm(ta_big).block_until_ready()")
    prof = shell.user_ns["untraced"]
    assert prof.ops.empty and (prof.spans["lane"] != "device").all()
    assert_adds_up(prof)


def test_a_trace_already_running_leaves_the_cell_profiled_with_a_note(run, shell, tmp_path):
    jax.profiler.start_trace(str(tmp_path))
    try:
        run("%%xla_profile -b jax -q --var busy\nta_mm(ta_big).block_until_ready()")
    finally:
        jax.profiler.stop_trace()
    prof = shell.user_ns["busy"]
    assert any("device trace could not start" in note for note in prof.notes), prof.notes
    assert prof.ops.empty and len(prof.executions) == 1


def test_torch_lazy_syncs_are_accounted_as_estimated(run, lazy_runtime):
    run("ta_w = torch.randn(64, 64, device=dev)")
    run(
        "%%xla_profile -b torch_lazy -q --var lazy_steps\nfor _ in range(5):\n"
        "    ta_w = torch.tanh(ta_w @ ta_w)\n    torch._lazy.mark_step()"
    )
    prof = lazy_runtime.user_ns["lazy_steps"]
    assert_adds_up(prof)
    spans = prof.spans[prof.spans["backend"] == "torch_lazy"]
    assert len(spans) >= 5 and spans["estimated"].all()
    compiled = prof.compiles[prof.compiles["trigger"] == "mark_step"]
    assert (spans["lane"] == "compile").sum() == len(compiled) >= 1
    assert (spans["lane"] == "device").sum() >= 5 - len(compiled) >= 3
    # compile and execute never overlap: a mark_step's time is in one of them, never both
    sync_total = prof.metrics.set_index("name").loc["SyncTime", "total"]
    steps = prof.executions[prof.executions["backend"] == "torch_lazy"]
    assert steps["seconds"].sum(skipna=True) + compiled["seconds"].sum() == pytest.approx(
        sync_total, rel=1e-6
    )
    assert steps["seconds_estimated"].all()
    assert prof.breakdown["estimated"].any()
    # no device trace on torch._lazy: its steps are estimated from xlanb's timers, not after
    # a trace's window
    text = repr(prof)
    estimated_steps = int(prof.step_times["estimated"].sum())
    assert estimated_steps == len(prof.step_times) >= 3
    assert f"{estimated_steps} estimated from xlanb's timers" in text
    assert "trace's window" not in text


def test_findings_state_their_cost_and_the_costliest_comes_first(run, shell):
    run("import numpy as np\n@jax.jit\ndef ta_cost(x, h):\n    return jnp.cumsum(x) * h.sum()")
    run(
        "%%xla_profile -b jax -q --var costs\nh = np.ones(3, np.float32)\n"
        "for n in (32, 64, 128, 256, 512):\n"
        "    ta_cost(jnp.ones((n,)), h).block_until_ready()"
    )
    prof = shell.user_ns["costs"]
    titles = list(prof.findings["title"])
    recompile = next(i for i, t in enumerate(titles) if "recompiled" in t)
    transfer = next(i for i, t in enumerate(titles) if "host input" in t)
    assert recompile < transfer, prof.findings
    row = prof.findings.iloc[recompile]
    compiles = prof.compiles[prof.compiles["graph"] == "jit(ta_cost)"]
    phases = compiles[["seconds", "trace_seconds", "lower_seconds"]].sum().sum()
    assert row["seconds"] == pytest.approx(phases)
    assert row["share"] == pytest.approx(row["seconds"] / prof.wall_seconds)
    assert prof.findings.iloc[transfer]["seconds"] < row["seconds"]
    assert "of the cell): jit(ta_cost) recompiled" in repr(prof)


def test_a_read_every_step_costs_the_device_idle_gaps_after_it(run, shell):
    run(
        "@jax.jit\ndef ta_step(w, x):\n    loss = jnp.mean(jnp.tanh(x @ w) ** 2)\n"
        "    return w * 0.99, loss\nta_x = ta_big[:256, :256]\n"
        "float(ta_step(ta_x, ta_x)[1])"
    )
    run(
        "%%xla_profile -b jax -q --var reads\nw = ta_x\nfor _ in range(30):\n"
        "    w, loss = ta_step(w, ta_x)\n    last = float(loss)"
    )
    prof = shell.user_ns["reads"]
    assert_adds_up(prof)
    spans = prof.spans.sort_values("start")
    runs = spans[spans["lane"] == "device"]
    waits = spans[(spans["lane"] == "sync_wait") & spans["name"].isin(READ_WAITS)]
    starts = runs["start"].to_numpy()
    ends = starts + runs["seconds"].to_numpy()
    # the device idle from the end of each run the host read until the next run starts
    gaps = sum(
        later - end
        for start, end, later in zip(starts[:-1], ends[:-1], starts[1:], strict=True)
        if ((waits["start"] >= start) & (waits["start"] < later)).any()
    )
    assert gaps > 0
    sync = buckets(prof)["sync_wait"]
    assert gaps <= sync + 1e-9
    waited = union_seconds(spans[spans["lane"] == "sync_wait"], prof)
    assert sync <= gaps + waited + 1e-9
    read = prof.findings[prof.findings["title"].str.contains("read back")].iloc[0]
    assert read["seconds"] == pytest.approx(sync)
    costs = prof.findings["seconds"].fillna(0).tolist()
    assert costs == sorted(costs, reverse=True), prof.findings


def test_each_compile_time_on_the_screen_says_what_it_counts(run, shell):
    from xlanb.views.summary import headline

    run("@jax.jit\ndef ta_label(x):\n    return jnp.cos(x).cumsum()")
    run(
        "%%xla_profile -b jax -q --var labelled\nfor n in (48, 96, 192):\n"
        "    ta_label(jnp.ones((n,), jnp.float32)).block_until_ready()"
    )
    prof = shell.user_ns["labelled"]
    xla = prof.compiles[~prof.compiles["eager"].eq(True)]["seconds"].sum()
    # the header's seconds are XLA's compile alone, and say so
    assert dict(headline(prof))["compiles"].startswith(f"{len(prof.compiles)} (XLA compile ")
    assert xla <= prof.summary()["compile_seconds"] + 1e-9
    recompile = prof.findings[prof.findings["title"].str.contains("recompiled")].iloc[0]
    assert all(word in recompile["detail"] for word in ("tracing", "lowering", "XLA compile"))


def test_jax_execution_seconds_hold_no_compile_time(run, shell):
    run("@jax.jit\ndef ta_fresh(a):\n    return jnp.tanh(a @ a)")
    run(
        "%%xla_profile -b jax -q --var fresh\nfor _ in range(3):\n"
        "    ta_fresh(ta_big).block_until_ready()"
    )
    prof = shell.user_ns["fresh"]
    row = prof.executions.set_index("graph").loc["jit(ta_fresh)"]
    compiles = prof.compiles[prof.compiles["graph"] == "jit(ta_fresh)"]
    compile_time = compiles[["seconds", "trace_seconds", "lower_seconds"]].sum().sum()
    # host dispatch of the first call holds the compile; execution time does not
    assert row["dispatch_seconds"] > compile_time
    device = prof.spans[(prof.spans["lane"] == "device")]
    assert row["seconds"] == pytest.approx(device["seconds"].sum(), rel=1e-6)
    assert not row["seconds_estimated"]
    assert row["seconds"] + compile_time <= prof.wall_seconds


def test_programs_get_their_achieved_rate_and_what_bounds_them(run, shell):
    # compiled in the profiled cell: its cost analysis comes with the compile
    run("@jax.jit\ndef ta_rate(a):\n    return jnp.tanh(a @ a) @ a")
    run(
        "%%xla_profile -b jax -q --var rates\nfor _ in range(4):\n"
        "    out = ta_rate(ta_big)\nout.block_until_ready()"
    )
    prof = shell.user_ns["rates"]
    row = prof.executions.set_index("graph").loc["jit(ta_rate)"]
    # the peak is measured once per process with NumPy; on a loaded machine it can read low,
    # so it is only checked to be there
    assert prof.environment["peak_flops_per_second"] > 0
    # two 1024x1024 products per run: about 4.3 GFLOP
    assert row["flops_per_second"] == pytest.approx(4 * 2 * 2 * 1024**3 / row["seconds"], rel=0.05)
    assert row["flops_per_second"] > 0 and row["bytes_per_second"] > 0
    assert row["bound"] == "compute", (row, prof.environment)
    assert "GFLOP/s" in prof._repr_html_()


def test_a_trace_the_user_starts_inside_a_profiled_cell_still_works(run, shell, tmp_path):
    shell.user_ns["ta_dir"] = str(tmp_path)
    run(
        "%%xla_profile -b jax -q --var inner\njax.profiler.start_trace(ta_dir)\n"
        "ta_mm(ta_big).block_until_ready()\njax.profiler.stop_trace()"
    )
    assert list(tmp_path.rglob("*.xplane.pb")), "the user's own trace was not written"
    prof = shell.user_ns["inner"]
    assert not prof.failed and len(prof.executions) == 1
    assert any("your own profiler trace started" in note for note in prof.notes), prof.notes


def test_a_loop_is_split_into_warm_up_and_steady_steps(run, shell, monkeypatch):
    trace_without_budget(monkeypatch)  # all its runs traced
    run("@jax.jit\ndef ta_steps(a):\n    return jnp.tanh(a @ a)")
    run(
        "%%xla_profile -b jax -q --var steps\nfor _ in range(6):\n"
        "    ta_steps(ta_big).block_until_ready()"
    )
    prof = shell.user_ns["steps"]
    steps = prof.step_times
    assert len(steps) == 6 and (steps["graph"] == "jit(ta_steps)").all()
    # the first step holds the compile that led to its run
    assert list(steps["phase"]) == ["warm-up"] + ["steady"] * 5
    assert steps["compile"].iloc[0] > 0
    buckets = steps[["python", "compile", "device", "transfer", "sync_wait"]].sum(axis=1)
    assert buckets.to_numpy() == pytest.approx(steps["seconds"].to_numpy(), rel=1e-6)
    steady = steps[steps["phase"] == "steady"]
    assert (steady["compile"] == 0).all() and (steady["device"] > 0).all()
    assert "5 steady, median" in repr(prof)


def test_straight_line_code_compiling_every_call_has_no_steps_line(run, shell):
    """Three calls of one function on three shapes, no loop: every "step" compiles, and a
    summary line "steps: 3 warm-up" said nothing the compiles do not (and there are no steps)."""
    run("@jax.jit\ndef ta_line(a):\n    return jnp.tanh(a) * 2")
    run(
        "%%xla_profile -b jax -q --var line\n"
        "ta_line(jnp.ones(3)).block_until_ready()\n"
        "ta_line(jnp.ones(5)).block_until_ready()\n"
        "ta_line(jnp.ones(7)).block_until_ready()"
    )
    prof = shell.user_ns["line"]
    assert (prof.compiles["graph"] == "jit(ta_line)").sum() == 3
    assert "steps" not in repr(prof) and "warm-up" not in repr(prof), repr(prof)


def test_a_cell_ending_before_its_runs_finish_says_their_time_is_missing(run, shell):
    """Async dispatch: a loop that queues runs and never waits ends long before the device
    does. Its account (python 100%) would read as "the device is idle" with no word on the
    runs still queued; a note says so, and a cell that waits gets none."""
    from xlanb.capture.backends.jax import QUEUED_AT_END
    from xlanb.capture.backends.jax.state import STATE

    run("@jax.jit\ndef ta_queue(a):\n    return jnp.tanh(a @ a) @ a")
    run("ta_queue(ta_big).block_until_ready()")
    run("%%xla_profile -b jax -q --var queued\nfor _ in range(8):\n    ta_out = ta_queue(ta_big)")
    assert QUEUED_AT_END in shell.user_ns["queued"].notes
    assert STATE.last_result is None  # the last result is not kept past the cell
    run("ta_out.block_until_ready()")
    run(
        "%%xla_profile -b jax -q --var waited\nfor _ in range(8):\n    ta_out = ta_queue(ta_big)\n"
        "ta_out.block_until_ready()"
    )
    assert QUEUED_AT_END not in shell.user_ns["waited"].notes


STEADY_MODEL = """import numpy as np
def ta_layer(w, x):
    return jnp.tanh(x @ w)  # the model's own line
@jax.jit
def ta_train(w, x):
    return ta_layer(w, ta_layer(w, x)) @ w
ta_w = jnp.ones((512, 512)) / 512
ta_host = np.ones((512, 512), np.float32)
"""


def test_ops_of_a_program_compiled_earlier_have_its_name_and_the_calling_line(
    run, shell, monkeypatch
):
    """A step compiled outside the profiled cell (a warm-up cell, unprofiled), run in a loop
    whose inputs are made by eager ops every step: its ops are the function's (they were
    'jit_ta_train', the HLO module's name) on the line that called it (none), and the steps
    are its runs (they were the eager ops', which ran more often)."""
    trace_without_budget(monkeypatch)  # all its runs traced
    run(STEADY_MODEL)
    run("ta_train(ta_w, jnp.asarray(ta_host) * 1.0).block_until_ready()")
    run(
        "%%xla_profile -b jax -q --var warmed\nfor _ in range(6):\n"
        "    batch = jnp.asarray(ta_host) * 1.0\n"
        "    ta_train(ta_w, batch).block_until_ready()"
    )
    prof = shell.user_ns["warmed"]
    assert prof.compiles.empty or "jit(ta_train)" not in set(prof.compiles["graph"])
    top = prof.ops.sort_values("seconds", ascending=False).iloc[0]
    assert top["graph"] == "jit(ta_train)" and top["cell_line"] == 4, prof.ops
    assert set(prof.step_times["graph"]) == {"jit(ta_train)"} and len(prof.step_times) == 6
    assert "line 4: ta_train(ta_w, batch)" in repr(prof)


def test_ops_of_a_program_compiled_in_an_earlier_profile_keep_their_model_lines(run, shell):
    """A step compiled in one profiled cell and run again in another: the second profile's ops
    still say which line of the model they came from (their HLO metadata, remembered), and
    the line of this cell that ran them."""
    run(STEADY_MODEL.replace("ta_", "tb_"))
    run("%%xla_profile -b jax -q\ntb_train(tb_w, jnp.asarray(tb_host)).block_until_ready()")
    run(
        "%%xla_profile -b jax -q --var again\nfor _ in range(3):\n"
        "    tb_train(tb_w, jnp.asarray(tb_host)).block_until_ready()"
    )
    ops = shell.user_ns["again"].ops
    ops = ops[ops["graph"] == "jit(tb_train)"]
    assert not ops.empty and (ops["cell_line"] == 3).all(), ops
    model_lines = {int(line) for line in ops["source_line"].dropna()}
    assert 3 in model_lines, ops[["op", "source_file", "source_line"]]  # jnp.tanh(x @ w)


def test_each_compile_of_a_function_locates_its_own_ops(run, shell, monkeypatch):
    """A function whose op comes from another line for each input shape, compiled for both
    (one HLO module name, two programs): each program's runs are located by its own metadata,
    in the cell that compiled them and in a later one (they were all on the latest compile's
    line)."""
    trace_without_budget(monkeypatch)  # all its runs traced
    run(
        "def tc_f(x):\n    if x.shape[0] == 4:\n        return jnp.sin(x) * 2.0\n"
        "    return jnp.sin(x) * 2.0\ntc_jf = jax.jit(tc_f)"
    )
    body = (
        "for _ in range(3):\n    tc_jf(jnp.ones(4)).block_until_ready()\n"
        "    tc_jf(jnp.ones(8)).block_until_ready()"
    )
    for var in ("tc_compiling", "tc_again"):
        run(f"%%xla_profile -b jax -q --var {var}\n{body}")
        ops = shell.user_ns[var].ops
        ops = ops[ops["graph"] == "jit(tc_f)"]
        runs_by_line = ops.groupby("source_line")["count"].sum()
        assert len(runs_by_line) == 2 and (runs_by_line == 3).all(), (var, ops)


def test_a_loops_time_is_its_bodys_ops_not_the_loop_op(run, shell):
    """A jitted lax.fori_loop: the `while` op ran its body's ops inside it and was the top op
    with their time, counted twice."""
    run(
        "@jax.jit\ndef ta_fori(a):\n"
        "    return jax.lax.fori_loop(0, 20, lambda i, x: jnp.tanh(x @ a), a)\n"
        "ta_small = jnp.ones((256, 256)) / 256\nta_fori(ta_small).block_until_ready()"
    )
    run(
        "%%xla_profile -b jax -q --var fori\nfor _ in range(3):\n"
        "    ta_fori(ta_small).block_until_ready()"
    )
    prof = shell.user_ns["fori"]
    top = prof.ops.sort_values("seconds").iloc[-1]
    assert not top["op"].startswith("while"), prof.ops
    device = prof.spans.loc[prof.spans["lane"] == "device", "seconds"].sum()
    assert prof.ops["seconds"].sum() <= device * 1.01


def test_host_busy_time_and_how_much_of_it_device_time_hides(run, shell):
    run(
        "@jax.jit\ndef ta_async(a):\n    return jnp.tanh(a @ a)\n"
        "ta_async(ta_big).block_until_ready()"
    )
    # async dispatch: Python queues the runs and then waits on the last one
    run(
        "%%xla_profile -b jax -q --var overlap\nfor _ in range(6):\n    out = ta_async(ta_big)\n"
        "out.block_until_ready()"
    )
    prof = shell.user_ns["overlap"]
    from xlanb.analysis.breakdown import host_activity

    busy, hidden = host_activity(prof)
    waits = prof.spans[prof.spans["lane"] == "sync_wait"]["seconds"].sum()
    assert 0 < hidden <= busy <= prof.wall_seconds
    assert busy < prof.wall_seconds - 0.5 * waits
    assert "host busy" in repr(prof).splitlines()[2]


def test_ctrl_c_during_the_end_of_cell_work_still_unhooks_everything(run, shell, lazy_runtime):
    """A real SIGINT delivered while xlanb ends the capture (inside its device-trace read):
    every backend is still torn down, the profile is kept, and the interrupt reaches the user."""
    import os
    import signal

    import torch._C._lazy as lazy_c
    from jax._src import compiler
    from jax._src import config as jax_config
    from jax._src.lib import _jax

    import xlanb
    from xlanb.capture import device_trace, recorder
    from xlanb.capture.backends import jax as jax_backend

    mark_step = lazy_c._mark_step
    finish = device_trace.finish

    def interrupted_finish(trace):
        os.kill(os.getpid(), signal.SIGINT)  # delivered at the next bytecode: mid-teardown
        return finish(trace)

    device_trace.finish = interrupted_finish
    try:
        with pytest.raises(KeyboardInterrupt):
            with xlanb.profile(backend=["jax", "torch_lazy"], name="ctrl-c") as prof:
                shell.user_ns["ta_mm"](shell.user_ns["ta_big"]).block_until_ready()
    finally:
        device_trace.finish = finish
    assert recorder._STATE.active == 0 and xlanb.last() is prof
    assert any("interrupted" in note for note in prof.notes), prof.notes
    assert lazy_c._mark_step is mark_step
    assert compiler.compile_or_get_cached is not jax_backend._compile_hook
    assert type(_jax.PjitFunction.__dict__["__call__"]).__name__ == "wrapper_descriptor"
    assert _jax.PjitFunction.__flags__ & (1 << 11)
    assert jax_config.explain_cache_misses.value is False
    assert not device_trace.is_running()


def test_a_compile_overlapping_queued_runs_marks_only_its_own_step_warm_up(run, shell, monkeypatch):
    trace_without_budget(monkeypatch)  # all its runs traced
    # Async dispatch (found on a flax/optax CNN): steps 0-2 are queued without waiting, so the
    # compile for the new shape of step 3 runs while the device still works on runs 1-2. Only
    # the steps whose run follows a compile are warm-up.
    run("@jax.jit\ndef ta_queued(a):\n    return jnp.tanh(a @ a) @ a")
    run(
        "%%xla_profile -b jax -q --var queued\n"
        "for n in (512, 512, 512, 256, 512, 512):\n"
        "    out = ta_queued(ta_big[:n, :n])\n"
        "out.block_until_ready()"
    )
    steps = shell.user_ns["queued"].step_times
    assert len(steps) == 6
    assert list(steps["phase"]) == ["warm-up", "steady", "steady", "warm-up", "steady", "steady"]


def test_the_runs_of_a_jitted_lambda_after_the_window_are_estimated_too(run, shell):
    """JAX names a lambda's program ``jit__lambda`` (its own sanitizing of ``jit(<lambda>)``):
    the calls of the lambda are the trace's runs of that module, so the runs after the window
    are estimated, as a named function's are."""
    run("ta_lam = jax.jit(lambda a: jnp.tanh(a @ a) @ a)\nta_lam(ta_big).block_until_ready()")
    run(
        "%%xla_profile -b jax -q --trace-runs 5 --var lam\nfor _ in range(20):\n"
        "    out = ta_lam(ta_big)\nout.block_until_ready()"
    )
    prof = shell.user_ns["lam"]
    assert_adds_up(prof)
    device = prof.spans[prof.spans["lane"] == "device"]
    measured, estimated = device[~device["estimated"]], device[device["estimated"]]
    # JAX 0.10 names the module jit__lambda, 0.6 jit__lambda_
    modules = set(measured["name"])
    assert len(modules) == 1 and modules.pop().startswith("jit__lambda"), measured
    assert 1 <= len(measured) < 20 and set(estimated["name"]) == set(measured["name"])
    assert_one_at_a_time(estimated)
    row = prof.executions.set_index("graph").loc["jit(<lambda>)"]
    assert row["count"] == 20 and bool(row["seconds_estimated"])
    assert row["seconds"] == pytest.approx(measured["seconds"].sum() + estimated["seconds"].sum())


def test_the_trace_covers_the_first_runs_and_the_rest_is_accounted_from_them(run, shell):
    """A loop longer than the trace's window: per-op times come from the first runs, the
    runs after the window are estimated from them, and the account counts them as device time
    (without the estimate the untraced runs would count as Python)."""
    prof = profile_mm_loop(run, shell, "windowed", 40, "--trace-runs 5")
    assert_adds_up(prof)
    windows = prof.spans[prof.spans["lane"] == "trace"]
    assert len(windows) == 1 and windows["name"].iloc[0].startswith("device trace: first ")
    device = prof.spans[prof.spans["lane"] == "device"]
    measured, estimated = device[~device["estimated"]], device[device["estimated"]]
    assert 5 <= len(measured) < 40 and not estimated.empty
    # the window closed before the cell ended; estimated runs come after it, one at a time
    window_end = windows["start"].iloc[0] + windows["seconds"].iloc[0]
    cell_end = prof.started_at + prof.wall_seconds
    assert window_end < cell_end
    assert (estimated["start"] >= window_end - 1e-6).all()
    assert_one_at_a_time(estimated)
    # the account's device time is the union of the measured and the estimated runs
    assert buckets(prof)["device"] == pytest.approx(union_seconds(device, prof), rel=1e-6)
    assert buckets(prof)["device"] > measured["seconds"].sum()
    # every op counted once in each traced run (a run the window's stop cut short is not one)
    assert (prof.ops["count"] == len(measured)).all(), prof.ops[["op", "count"]]
    row = prof.executions.set_index("graph").loc["jit(ta_mm)"]
    assert row["count"] == 40 and bool(row["seconds_estimated"])
    # each untraced run takes the traced runs' mean, unless the cell ended first (the estimate
    # is clipped at the capture's end)
    mean, untraced = measured["seconds"].mean(), 40 - len(measured)
    assert row["seconds"] == pytest.approx(measured["seconds"].sum() + estimated["seconds"].sum())
    assert row["seconds"] <= (measured["seconds"].sum() + untraced * mean) * (1 + 1e-6)
    clipped = (estimated["start"] + estimated["seconds"]).max() >= cell_end - 1e-6
    if not clipped:
        assert estimated["seconds"].sum() == pytest.approx(untraced * mean, rel=1e-6)
    text = repr(prof)
    assert "device trace: first" in text and "partly estimated" in text
    # every step is a step, those after the window estimated: the cell waited for its last
    # run, so every estimated run fits before its end
    steps = prof.step_times
    assert len(steps) == 40 and len(estimated) == untraced
    assert list(steps["estimated"]) == [False] * len(measured) + [True] * untraced
    assert f"{untraced} estimated after the trace's window" in text
    # the same loop traced whole: every run measured
    whole = profile_mm_loop(run, shell, "whole", 40, "--trace-runs 0")
    assert (whole.spans["lane"] == "trace").sum() == 1
    assert whole.spans.loc[whole.spans["lane"] == "trace", "name"].iloc[0] == "device trace"
    runs = whole.spans[whole.spans["lane"] == "device"]
    assert len(runs) == 40 and not runs["estimated"].any()


def test_on_an_accelerator_the_window_is_closed_on_the_launching_thread(run, shell, monkeypatch):
    """With an accelerator plugin the profiler is stopped by the thread that launches the
    programs, before its next launch (XLA:GPU: a stop from the watchdog thread while CUDA
    graphs launch left the context failing every later launch). Forced here on XLA:CPU: the
    window closes the same way and the account is the windowed one."""
    from xlanb.capture import device_trace
    from xlanb.capture.backends import jax as jax_backend

    stopped_on: list[int] = []
    stop_early = device_trace.Trace.stop_early

    def recorded(trace, note=None):
        stopped_on.append(threading.get_ident())
        return stop_early(trace, note)

    # the window is read while the launching thread gets the interpreter back quickly
    read_with: list[float] = []
    read = device_trace._read

    def read_recorded(trace, data):
        read_with.append(sys.getswitchinterval())
        return read(trace, data)

    switching = sys.getswitchinterval()
    monkeypatch.setattr(jax_backend, "stops_where_launched", lambda: True)
    monkeypatch.setattr(device_trace.Trace, "stop_early", recorded)
    monkeypatch.setattr(device_trace, "_read", read_recorded)
    prof = profile_mm_loop(run, shell, "launching_thread", 40, "--trace-runs 5")
    assert stopped_on == [threading.get_ident()]
    assert read_with[0] == device_trace.READ_SWITCH_SECONDS < switching
    assert sys.getswitchinterval() == switching
    assert_adds_up(prof)
    windows = prof.spans[prof.spans["lane"] == "trace"]
    assert windows["name"].iloc[0].startswith("device trace: first ")
    device = prof.spans[prof.spans["lane"] == "device"]
    measured = device[~device["estimated"]]
    assert 5 <= len(measured) < 40 and device["estimated"].any()
    assert (prof.ops["count"] == len(measured)).all(), prof.ops[["op", "count"]]
    assert prof.executions.set_index("graph").loc["jit(ta_mm)", "count"] == 40


def test_a_bad_trace_window_is_a_usage_error(shell):
    result = shell.run_cell("%%xla_profile -b jax -q --trace-runs -3\nx = 1")
    assert not result.success
    assert "trace_runs must be at least 1" in str(result.error_in_exec)


@pytest.mark.trace_budget
def test_a_short_cell_traces_a_few_runs_not_the_first_fifty(run, shell):
    """A steady cell of 60 runs of a few ms each (nothing to compile): its window traced the
    first 50 of them, ~40% slower, most of the cell; now its budget (a share of the cell's own
    time) closes it after a few runs, and the runs after it are estimated."""
    run(
        "@jax.jit\ndef ta_short(x, w):\n    for _ in range(10):\n"
        "        x = jnp.tanh(x @ w)\n    return x\n"
        "ta_sx = jnp.ones((128, 128)) * 0.01; ta_short(ta_sx, ta_sx).block_until_ready()"
    )
    run(
        "%%xla_profile -b jax -q --var short_cell\nfor _ in range(60):\n"
        "    ta_short(ta_sx, ta_sx).block_until_ready()"
    )
    prof = shell.user_ns["short_cell"]
    measured = prof.spans[(prof.spans["lane"] == "device") & ~prof.spans["estimated"]]
    estimated = prof.spans[(prof.spans["lane"] == "device") & prof.spans["estimated"]]
    assert 1 <= len(measured) < 50 and estimated["seconds"].sum() > 0, len(measured)
    row = prof.executions.set_index("graph").loc["jit(ta_short)"]
    assert row["count"] == 60 and bool(row["seconds_estimated"])
    assert_adds_up(prof)


@pytest.mark.trace_budget
def test_a_step_compiled_in_the_window_keeps_it_open_for_its_second_run(run, shell):
    """A first cell whose step compiles in the window and is called between other jitted
    calls (flax's `nnx.jit` runs small programs of its own around each step): a window over
    its budget held the step's first run only (its warm-up) and the helper call after it; it
    now holds the step's second run too, whose ops are steady."""
    run("@jax.jit\ndef ta_helper(a):\n    return a * 1.0\nta_helper(ta_big).block_until_ready()")
    run(
        "%%xla_profile -b jax -q --var helped\n"
        "@jax.jit\ndef ta_helped(a):\n    return (jnp.tanh(jnp.tanh(a @ a) @ a) @ a) * 1e-3\n"
        "import time\nx = ta_big\nfor _ in range(4):\n    x = ta_helped(x).block_until_ready()\n"
        "    x = ta_helper(x).block_until_ready()\n    time.sleep(0.05)\n"
        "    x = ta_helper(x).block_until_ready()"
    )
    prof = shell.user_ns["helped"]
    device = _device_spans(prof, "jit(ta_helped)")
    assert len(device) == 4
    assert int((~device["estimated"]).sum()) >= 2
    assert (prof.ops[prof.ops["graph"] == "jit(ta_helped)"]["runs"] >= 2).all()
    assert_adds_up(prof)


#: A host callback that holds the run it is in, unless the window waits for it (one of its
#: fewest runs), until the trace's window has closed: the runs queued after the window's
#: fewest cannot finish before it closes, however slowly the machine stops the profiler.
#: `ta_base[0]`: the dispatch count when the cell's capture began (the cell sets it).
HOLD_UNTIL_THE_WINDOW_CLOSES = """
import time
import numpy as np
from xlanb.capture import device_trace
from xlanb.capture.backends.jax.state import STATE as ta_state
ta_base = [0]

def ta_hold(index):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        trace = device_trace._STATE.running
        if trace is None or trace.window_closed:
            break
        if ta_state.first_probe_at > 0 and int(index) < ta_state.first_probe_at - ta_base[0]:
            break  # one of the runs the window waits for
        time.sleep(0.002)
    return np.float32(index)

@jax.jit
def ta_queued(a, index):
    # a float result: XLA folds 0 * an integer to 0, and then drops the callback
    held = jax.pure_callback(ta_hold, jax.ShapeDtypeStruct((), jnp.float32), index)
    out = jax.lax.fori_loop(0, 10, lambda i, x: jnp.tanh(x @ a), a) * 0.5
    return out + 0 * held, a.sum()
ta_indexes = [jnp.int32(i) for i in range(8)]
_ = ta_queued(ta_big, ta_indexes[0])[0].block_until_ready()
"""

#: A cell of 5 queued steps (its first line: the dispatch count as the capture began);
#: {first} is a line run before them.
QUEUED_CELL = (
    "%%xla_profile -b jax -q --var queued\nta_base[0] = ta_state.sample_count\n{first}\n"
    "x = ta_big\nfor i in range(5):\n"
    "    x, total = ta_queued(x, ta_indexes[i])\nx.block_until_ready()"
)


#: Cell lines that wait (at most a minute) until the running trace's window has closed.
UNTIL_THE_WINDOW_CLOSES = (
    "from xlanb.capture import device_trace as ta_trace\n"
    "ta_until = time.monotonic() + 60\n"
    "while not getattr(ta_trace._STATE.running, 'window_closed', True) and "
    "time.monotonic() < ta_until:\n    time.sleep(0.005)\n"
)


def _traced_runs(prof) -> int:
    device = prof.spans[prof.spans["lane"] == "device"]
    measured = device[~device["estimated"]]
    assert set(measured["name"]) <= {"jit_ta_queued"}, measured
    return len(measured)


@pytest.mark.trace_budget
def test_a_spent_budget_leaves_the_runs_queued_meanwhile_untraced(run, shell):
    """Under async dispatch a loop queues its steps long before they run: once the window's
    budget is spent it closes after its fewest runs have run (MIN_BUDGET_RUNS for code never
    traced; one for code traced before: its runs are steady), and the runs queued meanwhile
    are estimated. It used to wait for the latest call's run, tracing every run queued by
    then (the events then cost more than the budget). Each step's output is dropped by the
    next call: the window still waits for its fewest runs to end. The steps after the fewest
    wait in a host callback until the window has closed, so that the count does not depend on
    how fast this machine stops the profiler."""
    from xlanb.capture import device_trace

    run(HOLD_UNTIL_THE_WINDOW_CLOSES)
    run(QUEUED_CELL.format(first="pass"))  # code never traced: its fewest runs
    assert _traced_runs(shell.user_ns["queued"]) == device_trace.MIN_BUDGET_RUNS
    run(QUEUED_CELL.format(first="pass"))  # traced before: steady runs, one is enough
    prof = shell.user_ns["queued"]
    assert _traced_runs(prof) == 1
    window = prof.spans[prof.spans["lane"] == "trace"]["name"].iloc[0]
    assert window == "device trace: first run"  # one run, said so
    # the runs after the window are estimated from the traced ones (clipped at the cell's end)
    device = prof.spans[prof.spans["lane"] == "device"]
    measured = device[~device["estimated"]]
    assert device["estimated"].any()
    assert device["seconds"].sum() <= 5 * measured["seconds"].mean() * (1 + 1e-9)
    row = prof.executions.set_index("graph").loc["jit(ta_queued)"]
    assert row["count"] == 5 and bool(row["seconds_estimated"])
    assert_adds_up(prof)


#: `ta_late`'s run waits in a host callback until the first window has closed (XLA:CPU runs
#: a program with a host callback in its call, so the call returns after that), and its
#: ops depend on the callback: the window never holds them, however slowly it stops.
HOLD_LATE_UNTIL_THE_WINDOW_CLOSES = """
import time
import numpy as np
from xlanb.capture import device_trace

def ta_hold_late(index):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        trace = device_trace._STATE.running
        if trace is None or trace.window_closed or trace.second:
            break
        time.sleep(0.002)
    return np.float32(index)

@jax.jit
def ta_step_late(a):
    return jnp.tanh(a @ a) * 0.5

@jax.jit
def ta_late(a):
    held = jax.pure_callback(ta_hold_late, jax.ShapeDtypeStruct((), jnp.float32), a[0, 0])
    return jnp.tanh((a + 0 * held) @ a) * 0.5

# compiled for the arguments the cell passes (outputs of a program, as a loop's are)
_ = ta_late(ta_step_late(ta_step_late(ta_big))).block_until_ready()
"""


@pytest.mark.trace_budget
def test_a_function_first_called_in_the_window_and_run_after_it_gets_the_second(run, shell):
    """A function first called while the window is open, whose run comes after its stop (under
    async dispatch: queued behind the loop's runs), was taken as seen by the window: no
    second window started for it, and all its runs were "not traced". Once the window is
    read, a function first called past the runs it holds is forgotten as seen: its next call
    starts the second window."""
    run(HOLD_LATE_UNTIL_THE_WINDOW_CLOSES)
    run(
        "%%xla_profile -b jax -q --var late\n"
        "from xlanb.capture.backends.jax.state import STATE as ta_state\n"
        "x = ta_step_late(ta_step_late(ta_big))\n"
        "y = ta_late(x)\n"  # the window's third call: it closes after its fewest (2) runs
        "ta_until = time.monotonic() + 20\n"
        "while ta_late in (ta_state.traced_functions or ()) and time.monotonic() < ta_until:\n"
        "    time.sleep(0.005)\n"
        "for _ in range(3):\n    y = ta_late(y)\ny.block_until_ready()"
    )
    prof = shell.user_ns["late"]
    assert len(prof.spans[prof.spans["lane"] == "trace"]) == 2
    late = _device_spans(prof, "jit(ta_late)")
    assert len(late) == 4 and (~late["estimated"]).sum() >= 1, late
    assert not [note for note in prof.notes if note.startswith("not traced")], prof.notes
    assert_adds_up(prof)


@pytest.mark.trace_budget
def test_a_window_holds_the_run_after_a_program_compiled_in_it(run, shell):
    """Code traced before holds one run once over its budget, unless a program compiled in
    the window: its first run is not like the next ones (XLA:CPU's first run of a program
    can take 100 times as long), so the window holds the run after it too."""
    run(HOLD_UNTIL_THE_WINDOW_CLOSES)
    cell = QUEUED_CELL.format(first="jax.clear_caches()")  # every run compiles its step
    run(cell)
    run(cell)  # traced before, and compiles again
    assert _traced_runs(shell.user_ns["queued"]) == 2


@pytest.mark.trace_budget
def test_a_program_being_made_after_eager_ops_is_not_run_time(run, shell):
    """A cell that makes its batch with eager ops, then calls a step that traces and compiles
    for a while (a batch of a new shape): JAX reports that time only once each phase has
    ended, and the window counted the time so far as its runs' and closed within the step's
    tracing, with the eager ops alone traced; the step's runs were neither traced nor
    estimated (no device time, no steps of it). The step's tracing sleeps here, so that it
    lasts long against the eager ops' time; the cell sleeps first, so that those do not use up
    the budget. (JAX 0.6 explains the cache miss only once tracing has ended: its window
    still closes within the tracing, and the step's compile starts the second window.)"""
    run(
        "import time\n"
        "@jax.jit\ndef ta_made_late(x):\n    time.sleep(0.5)\n    return jnp.tanh(x).sum()\n"
        "ta_batch = jnp.ones((8, 16)) * 2.0"  # the eager ops compiled before the cell
    )
    run(
        "%%xla_profile -b jax -q --var made_late\ntime.sleep(1.0)\n"
        "ta_batch = jnp.ones((8, 16)) * 2.0\n"
        "for _ in range(4):\n    ta_loss = ta_made_late(ta_batch)\n"
        "ta_loss.block_until_ready()"
    )
    prof = shell.user_ns["made_late"]
    device = prof.spans[prof.spans["lane"] == "device"]
    measured = device[~device["estimated"]]
    assert "jit(ta_made_late)" in set(measured["graph"]), device[["graph", "estimated"]]
    assert set(prof.step_times["graph"]) == {"jit(ta_made_late)"}, prof.step_times
    assert len(prof.step_times) == 4
    assert_adds_up(prof)


def test_big_runs_get_a_shorter_window_read_while_the_cell_goes_on(run, shell):
    """A program of hundreds of thunks a run: once a trace has shown how big the runs of a
    cell are, the same cell run again has a window of about WINDOW_EVENTS events (never under 5
    runs), and its events are read on the watchdog thread, not at the end of the cell."""
    import xlanb
    from xlanb.capture import device_trace

    run(
        "@jax.jit\ndef ta_chain(x, w):\n    for _ in range(300):\n"
        "        x = jnp.sin(x @ w)\n    return x\n"
        "ta_x = jnp.ones((32, 32)); ta_chain(ta_x, ta_x).block_until_ready()"
    )
    # the cell goes on until its window has closed (its watchdog thread may be scheduled late
    # on a loaded machine, after the last run: the trace would then cover the whole cell)
    cell = (
        "%%xla_profile -b jax -q\nimport time\nta_launched = []\nfor _ in range(60):\n"
        "    ta_launched.append(time.time())\n    out = ta_chain(ta_x, ta_x)\n"
        f"{UNTIL_THE_WINDOW_CLOSES}out.block_until_ready()"
    )
    run(cell)
    source = xlanb.last().source
    per_run = device_trace._STATE.events_per_run["jax", source]
    limit = device_trace.window_limit("jax", device_trace.WINDOW_RUNS, source)
    assert per_run > device_trace.WINDOW_EVENTS / 50 and 5 <= limit < 50, per_run
    # another cell is sized from its own runs
    assert device_trace.window_limit("jax", device_trace.WINDOW_RUNS, "x = 1") == 50
    import threading

    read_on, summaries = [], []
    parse, summarize = device_trace._parse, device_trace.summarize

    def noting_the_thread(trace, data):
        read_on.append(threading.current_thread().name)
        return parse(trace, data)

    def noting_the_summary(events, start, end, hlo_texts=None):
        summary = summarize(events, start, end, hlo_texts)
        summaries.append((threading.current_thread().name, summary))
        return summaries[-1][1]

    from xlanb.analysis import device_time

    device_trace._parse, device_trace.summarize = noting_the_thread, noting_the_summary
    device_time.summarize = noting_the_summary  # rows() summarizes at the end of the cell
    try:
        with trace_stop_times() as stopped:
            run(cell)
    finally:
        device_trace._parse, device_trace.summarize = parse, summarize
        device_time.summarize = summarize
    prof = xlanb.last()
    assert read_on == ["xlanb-trace-window"]
    # summarized there too; the end of the cell took that summary as it was
    assert [thread for thread, _ in summaries] == ["xlanb-trace-window", "MainThread"]
    assert summaries[0][1] is summaries[1][1]
    window = prof.spans[prof.spans["lane"] == "trace"]["name"].iloc[0]
    measured = prof.spans[(prof.spans["lane"] == "device") & ~prof.spans["estimated"]]
    # the loop never waits: the runs queued after the window's last one may start on the
    # device before the profiler has stopped, and are then traced too; a run launched after
    # the trace stopped never is
    launched = shell.user_ns["ta_launched"]
    assert len(stopped) == 1
    assert 1 <= len(measured) <= sum(t < stopped[0] for t in launched)
    assert window == _first_window(len(measured))
    # every op counted once in each traced run (a run the window's stop cut short is not one)
    assert (prof.ops["count"] == len(measured)).all(), prof.ops[["op", "count"]]
    assert_adds_up(prof)


@pytest.mark.trace_seconds
def test_a_cells_first_run_of_big_runs_traces_a_bounded_window(run, shell):
    """Big runs (hundreds of thunks, tens of ms each) in a cell never traced before: before a
    trace had measured the cell's runs, its window traced 50 of them (or 10 s); now it closes
    once they have run FIRST_WINDOW_SECONDS (at least 5 runs), and the runs after it are
    estimated as after any window."""
    import xlanb
    from xlanb.capture import device_trace

    run(
        "@jax.jit\ndef ta_first_chain(x, w):\n    for _ in range(300):\n"
        "        x = jnp.sin(x @ w) * 0.5\n    return x\n"
        "ta_fx = jnp.ones((160, 160)); ta_first_chain(ta_fx, ta_fx).block_until_ready()"
    )
    with trace_stop_times() as stopped:
        run(
            "%%xla_profile -b jax -q --var first_big\nimport time\nta_launched = []\n"
            "for _ in range(60):\n    ta_launched.append(time.time())\n"
            "    out = ta_first_chain(ta_fx, ta_fx)\nout.block_until_ready()"
        )
    prof = shell.user_ns["first_big"]
    assert device_trace._STATE.events_per_run["jax", xlanb.last().source] > 500
    measured = prof.spans[(prof.spans["lane"] == "device") & ~prof.spans["estimated"]]
    run_seconds = float(measured["seconds"].median())
    assert run_seconds > 0.01, run_seconds
    # the window closes on the wall time from the first call, never shorter than its runs; the
    # runs queued by then go on while the profiler stops, and only runs launched before it
    # stopped are in the trace
    launched = shell.user_ns["ta_launched"]
    assert len(stopped) == 1
    in_time = sum(t < stopped[0] for t in launched)
    # (the window counts launches: under load fewer than MIN_WINDOW_RUNS may have run by then)
    assert 1 <= len(measured) <= in_time, (len(measured), in_time)
    window = prof.spans[prof.spans["lane"] == "trace"]["name"].iloc[0]
    assert window == _first_window(len(measured))
    row = prof.executions.set_index("graph").loc["jit(ta_first_chain)"]
    assert row["count"] == 60 and bool(row["seconds_estimated"])
    assert_adds_up(prof)


@pytest.mark.trace_seconds
def test_a_compile_after_the_first_run_does_not_use_up_a_first_window(run, shell, monkeypatch):
    """A cell's first trace whose first runs are eager conversions (a NumPy batch made a JAX
    array), then the step, compiled in the cell (over a second): the window's second of runs
    counts run time, not the compile (it closed at 5 runs, 1 run of the step, the warm-up)."""
    from xlanb.capture import device_trace

    # FIRST_WINDOW_SECONDS alone: WINDOW_SECONDS from the first run counts the compile, and
    # closed the window first where the compile took 9.7 s (JAX 0.6 on a loaded machine)
    monkeypatch.setattr(device_trace, "WINDOW_SECONDS", NO_WINDOW_SECONDS)
    run(
        "def tw_step(x, w):\n    for i in range(600):\n"
        "        x = jnp.sin(x @ w) * (1 + i % 3)\n    return x\n"
        "tw_step = jax.jit(tw_step)\n"
        "import numpy as np\ntw_batch = np.ones((16, 16))\ntw_w = jnp.ones((16, 16))"
    )
    run(
        "%%xla_profile -b jax -q --var tw_first\nimport time\ntw_started = time.time()\n"
        "for _ in range(20):\n"
        "    xb = jnp.asarray(tw_batch, jnp.float32)\n    out = tw_step(xb, tw_w)\n"
        "out.block_until_ready()"
    )
    prof = shell.user_ns["tw_first"]
    compiled = prof.compiles.set_index("graph").loc["jit(tw_step)", "seconds"]
    step_runs = prof.spans[
        (prof.spans["lane"] == "device")
        & ~prof.spans["estimated"]
        & (prof.spans["graph"] == "jit(tw_step)")
    ]
    window = prof.spans[prof.spans["lane"] == "trace"].iloc[0]
    if window["name"] == device_trace.WHOLE_TRACE:  # the cell ended first: every run traced
        assert len(step_runs) == 20
    else:
        # the window's wall time from the first run does not count the step's XLA compile,
        # which ended after that run: it stayed open a window's time past both
        window_end = window["start"] + window["seconds"]
        first_window = device_trace.FIRST_WINDOW_SECONDS
        assert window_end >= shell.user_ns["tw_started"] + first_window + compiled, window
    assert_adds_up(prof)


def test_a_long_loops_steps_after_the_window_are_drawn_pale_as_means_of_a_few(run, shell):
    """450 steps, a few traced: every step is a row, and the chart draws at most MAX_STEP_BARS
    bars (each the mean of 3 steps here), those of estimated steps pale; its SVG twin too."""
    from xlanb.views.step_chart import ESTIMATED_OPACITY, MAX_STEP_BARS, step_figure
    from xlanb.views.svg import figure_svg

    run("ta_add = jax.jit(lambda a: a * 0.5 + 1.0)\nta_add(ta_big).block_until_ready()")
    run(
        "%%xla_profile -b jax -q --trace-runs 5 --var long_loop\nout = ta_big\n"
        "for _ in range(450):\n    out = ta_add(out)\nout.block_until_ready()"
    )
    prof = shell.user_ns["long_loop"]
    steps = prof.step_times
    # the window holds at least its 5 runs (and those queued before its stop)
    assert len(steps) == 450 and 5 <= (~steps["estimated"]).sum() < 450
    figure = step_figure(prof)
    steady = [trace for trace in figure["data"] if trace["meta"] == "steady"]
    per_bar = -(-int((steps["phase"] == "steady").sum()) // MAX_STEP_BARS)
    assert per_bar == 3
    for trace in steady:
        assert len(trace["x"]) == 150 and trace["x"][-1] == "447-449"
        assert trace["marker"]["opacity"][-1] == ESTIMATED_OPACITY
        assert trace["marker"]["opacity"][0] == 1.0
    steady_note = [a["text"] for a in figure["layout"]["annotations"] if "steady" in a["text"]]
    assert "a bar is the mean of 3" in steady_note[0]
    svg = figure_svg(figure)
    assert svg.count("<rect") >= 150 and f'fill-opacity="{ESTIMATED_OPACITY:g}"' in svg


def test_the_step_program_is_the_jitted_step_not_an_eager_op_with_more_device_time(run, shell):
    """Code outside jit that makes each step's input (here a 1024x1024 multiply, far more
    device time than the step) runs as often as the step: the steps are the jitted step's
    runs. A near-tie between the two made a straight-line cell's steps line come and go."""
    run("@jax.jit\ndef ta_tiny(a):\n    return a + 1.0")
    run(
        "%%xla_profile -b jax -q --var eager_heavy\nfor i in range(5):\n"
        "    big = jnp.ones((1024, 1024)) * (i + 1.0)\n    out = ta_tiny(big[0, :4])\n"
        "out.block_until_ready()"
    )
    prof = shell.user_ns["eager_heavy"]
    eager = prof.executions[prof.executions["eager"].fillna(False).astype(bool)]
    device = prof.spans[prof.spans["lane"] == "device"].groupby("graph")["seconds"].sum()
    assert device[list(set(eager["graph"]) & set(device.index))].max() > device["jit(ta_tiny)"]
    steps = prof.step_times
    assert set(steps["graph"]) == {"jit(ta_tiny)"} and len(steps) == 5


#: A steady cell: 6 runs of a program compiled before it; `ta_reused` and `ta_input` are set
#: by the tests (the cell's source stays the same).
REUSED_CELL = (
    "%%xla_profile -b jax -q --var reused\nfor _ in range(6):\n"
    "    out = ta_reused(ta_input)\nout.block_until_ready()"
)


def _new_reused_program(run) -> None:
    run(
        "@jax.jit\ndef ta_reused(a):\n    return jnp.tanh(a @ a) @ a\n"
        "ta_input = ta_big[:256, :256]\nta_reused(ta_input).block_until_ready()"
    )


def _traces_started() -> int:
    from xlanb.capture import device_trace

    return device_trace._STATE.counter


@pytest.mark.trace_reuse
def test_a_cell_run_again_reuses_its_last_trace_and_traces_nothing(run, shell):
    """A steady cell run again traces nothing (a trace's stop and read cost tens of ms
    whatever its window): its per-op rows are its last trace's, its runs estimated from that
    trace's runs, and the account still adds up."""
    from xlanb.core.schema import REUSED_TRACE
    from xlanb.views.summary import account_line, steps_line, trace_coverage

    _new_reused_program(run)
    run(REUSED_CELL)
    first = shell.user_ns["reused"]
    device = first.spans[first.spans["lane"] == "device"]
    traced = device[~device["estimated"]]
    assert len(traced) == 6  # no budget in tests: the window holds every run
    started = _traces_started()
    run(REUSED_CELL)
    prof = shell.user_ns["reused"]
    assert _traces_started() == started
    window = prof.spans[prof.spans["lane"] == "trace"]
    assert window["name"].tolist() == [REUSED_TRACE] and window["seconds"].tolist() == [0.0]
    columns = ["graph", "op", "count", "seconds", "runs", "cell_line"]
    pd.testing.assert_frame_equal(prof.ops[columns], first.ops[columns])
    device = prof.spans[prof.spans["lane"] == "device"]
    assert len(device) == 6 and device["estimated"].all()
    # each run is its program's mean traced run, shortened alike only to fit in the cell
    assert (device["seconds"] <= traced["seconds"].mean() * (1 + 1e-9)).all()
    row = prof.executions.set_index("graph").loc["jit(ta_reused)"]
    assert row["count"] == 6 and bool(row["seconds_estimated"])
    assert_adds_up(prof)
    assert "estimated from this cell's last trace" in account_line(prof)
    assert steps_line(prof).endswith("estimated from this cell's last trace")
    assert trace_coverage(prof) == REUSED_TRACE
    run(REUSED_CELL)  # and again: the same trace still stands for it
    assert _traces_started() == started
    again = shell.user_ns["reused"]
    # the same ops as the run before, in a frame of its own: changing one leaves the other
    pd.testing.assert_frame_equal(again.ops, prof.ops)
    again.ops["seconds"] = 0.0
    assert (prof.ops["seconds"] > 0).all()
    run(REUSED_CELL)
    pd.testing.assert_frame_equal(shell.user_ns["reused"].ops, prof.ops)


@pytest.mark.trace_reuse
def test_a_compile_or_a_new_program_in_a_cell_run_again_starts_its_trace(run, shell):
    """The same cell source is traced again where its last trace cannot stand for its runs: a
    compile (new shapes), a function that trace never ran (redefined), a window the user
    sized with --trace-runs."""
    _new_reused_program(run)
    run(REUSED_CELL)
    run(REUSED_CELL)
    started = _traces_started()
    run("ta_input = ta_big[:128, :128]")  # new shapes: compiles in the cell
    run(REUSED_CELL)
    prof = shell.user_ns["reused"]
    assert _traces_started() == started + 1
    assert prof.compiles["graph"].tolist() == ["jit(ta_reused)"]
    device = prof.spans[prof.spans["lane"] == "device"]
    assert (~device["estimated"]).sum() == 6  # the compile's run traced, and the rest
    assert_adds_up(prof)
    run(REUSED_CELL)  # the new shapes' trace is reused now
    assert _traces_started() == started + 1
    _new_reused_program(run)  # compiled before the cell, but a function the trace never ran
    run(REUSED_CELL)
    assert _traces_started() == started + 2
    assert not shell.user_ns["reused"].spans["estimated"].all()
    sized = REUSED_CELL.replace("--var reused", "--var reused --trace-runs 3")
    run(sized)
    run(sized)
    assert _traces_started() == started + 4


#: A cell of two programs: more runs of one than the window holds (50 in tests), then, once
#: the window has closed (`ta_wait_for_the_window`), an eager op (which starts no second
#: window), runs of another, which the first window never reaches, and an eager op.
TWO_PROGRAMS_CELL = (
    "%%xla_profile -b jax -q --var two\nfor _ in range(52):\n"
    "    out = ta_reused(ta_input)\nout.block_until_ready()\n"
    "ta_wait_for_the_window()\n(out + 1).block_until_ready()\n"
    "for _ in range(3):\n    late = ta_late(ta_input)\nlate.block_until_ready()\n"
    "(late + 1).block_until_ready()"
)
WAIT_FOR_THE_WINDOW = """
import time
def ta_wait_for_the_window(timeout=60.0):
    from xlanb.capture import device_trace
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        trace = device_trace._STATE.running
        if trace is None or trace.stopped_at is not None:
            return
        time.sleep(0.005)
"""


def _device_spans(prof, graph: str) -> pd.DataFrame:
    device = prof.spans[prof.spans["lane"] == "device"]
    return device[device["graph"] == graph]


@pytest.mark.trace_reuse
def test_a_program_first_run_after_the_window_is_traced_in_a_second_window(run, shell):
    """A program whose runs all come after the window closed (an evaluation after a training
    loop) is traced from its first call in a second window: the account holds its runs, and
    the cell run again reuses both programs' runs. A redefined program in a run after that
    starts a trace late, and the runs before it are estimated from the kept trace."""
    from xlanb.core.schema import SECOND_WINDOW
    from xlanb.views.summary import account_line

    _new_reused_program(run)
    run("@jax.jit\ndef ta_late(a):\n    return jnp.tanh(a @ a @ a)\nta_late(ta_input)")
    run("(ta_input + 1).block_until_ready()")  # the cell's eager add, compiled before it
    run(WAIT_FOR_THE_WINDOW)
    run(TWO_PROGRAMS_CELL)
    first = shell.user_ns["two"]
    assert len(_device_spans(first, "jit(ta_reused)")) == 52
    late = _device_spans(first, "jit(ta_late)")
    assert len(late) == 3 and not late["estimated"].any()
    windows = first.spans[first.spans["lane"] == "trace"]["name"].tolist()
    # from ta_late's first call: its 3 runs and the last add, not the add before it
    assert len(windows) == 2 and windows[1] == f"{SECOND_WINDOW} 4 runs"
    assert {"jit(ta_reused)", "jit(ta_late)"} <= set(first.ops["graph"])
    assert not first.shown.untraced_programs and "untraced" not in account_line(first)
    assert not [note for note in first.notes if note.startswith("not traced")]
    assert_adds_up(first)
    started = _traces_started()
    run(TWO_PROGRAMS_CELL)
    again = shell.user_ns["two"]
    assert _traces_started() == started  # both programs' runs kept
    assert again.spans[again.spans["lane"] == "device"]["estimated"].all()
    assert len(_device_spans(again, "jit(ta_late)")) == 3
    run("@jax.jit\ndef ta_late(a):\n    return jnp.tanh(a @ a @ a)\nta_late(ta_input)")
    run(TWO_PROGRAMS_CELL)
    third = shell.user_ns["two"]
    assert _traces_started() == started + 1  # from the redefined function's first call
    reused = _device_spans(third, "jit(ta_reused)")
    assert len(reused) == 52 and reused["estimated"].all()
    late = _device_spans(third, "jit(ta_late)")
    assert len(late) == 3 and not late["estimated"].any()
    assert (reused["start"] + reused["seconds"] <= late["start"].min() + 1e-6).all()
    assert {"jit(ta_reused)", "jit(ta_late)"} <= set(third.ops["graph"])
    assert_adds_up(third)


@pytest.mark.trace_reuse
def test_a_program_first_run_after_the_second_window_is_named(run, shell):
    """There is one second window: a program first run after it closed has no device time
    (the python share holds it), which the account line and a note say."""
    from xlanb.views.summary import account_line

    _new_reused_program(run)
    run("@jax.jit\ndef ta_late(a):\n    return jnp.tanh(a @ a @ a)\nta_late(ta_input)")
    run("@jax.jit\ndef ta_third(a):\n    return a @ a\nta_third(ta_input)")
    run(WAIT_FOR_THE_WINDOW)
    run(
        "%%xla_profile -b jax -q --var three\nfor _ in range(52):\n"
        "    out = ta_reused(ta_input)\nout.block_until_ready()\nta_wait_for_the_window()\n"
        "for _ in range(52):\n    out = ta_late(ta_input)\nout.block_until_ready()\n"
        "ta_wait_for_the_window()\n"
        "for _ in range(2):\n    out = ta_third(ta_input)\nout.block_until_ready()"
    )
    prof = shell.user_ns["three"]
    assert _device_spans(prof, "jit(ta_third)").empty
    assert prof.shown.untraced_programs == [("jit(ta_third)", 2)]
    assert "; python holds the untraced runs of jit(ta_third) (2 runs)" in account_line(prof)
    untraced = [note for note in prof.notes if note.startswith("not traced:")]
    assert len(untraced) == 1 and untraced[0].startswith("not traced: jit(ta_third) (2 runs),")
    assert_adds_up(prof)


@pytest.mark.trace_reuse
def test_a_new_shape_after_the_window_is_traced_and_its_ops_add_to_its_function_s(run, shell):
    """A function compiled again after the window closed (a last batch of another shape)
    starts a second window at that compile: its runs are traced, not estimated from the
    other shape's, the call that compiled it is the second window's, and each op's row adds
    up both programs' runs, each with its own first run."""
    from xlanb.core.schema import SECOND_WINDOW
    from xlanb.views.summary import runs_texts, trace_coverage

    run("@jax.jit\ndef ta_shapes(a):\n    return jnp.tanh(a @ a.T) @ a\n")
    run("ta_wide, ta_narrow = ta_big[:256], ta_big[:64]")
    run(WAIT_FOR_THE_WINDOW)
    run(
        "%%xla_profile -b jax -q --var shapes\nfor _ in range(52):\n"
        "    out = ta_shapes(ta_wide)\nout.block_until_ready()\n"
        "ta_wait_for_the_window()\nfor _ in range(3):\n"
        "    last = ta_shapes(ta_narrow)\nlast.block_until_ready()"
    )
    prof = shell.user_ns["shapes"]
    assert len(prof.compiles) == 2
    optimized = prof.graphs[prof.graphs["kind"] == "hlo_optimized"]
    wide, narrow = optimized.sort_values("compile_id")["module_id"].astype(int).tolist()
    device = _device_spans(prof, "jit(ta_shapes)")
    assert len(device) == 55 == int(prof.executions["count"].sum())
    traced = device[~device["estimated"]]
    later = traced[traced["module_id"] == narrow]
    assert len(later) == 3  # the second window's, from the compiling call on
    windows = prof.spans[prof.spans["lane"] == "trace"]["name"].tolist()
    assert len(windows) == 2 and windows[1] == f"{SECOND_WINDOW} 3 runs"
    first_window = int((traced["module_id"] == wide).sum())
    assert 1 <= first_window <= 52 and device["estimated"].sum() == 52 - first_window
    both = prof.ops[prof.ops["programs"] == 2]
    assert len(both) > 0 and (prof.ops["programs"].isin([1, 2])).all()
    assert (both["runs"] == first_window + 3).all()
    assert all("of 2 programs" in text for text in runs_texts(both))
    # the top ops' header names both windows, as their rows hold both
    assert f"{windows[0]}, then 3 runs, " in trace_coverage(prof)
    assert_adds_up(prof)


def test_runs_queued_before_a_second_window_are_traced_or_estimated_not_both(run, shell):
    """Under async dispatch a second window, started at a new shape's compile while the
    runs called before are still queued, traced some of those (25-30 of a loop's, the cost of
    a cell's last batch); it now starts once they have run: it holds the new shape's runs
    alone, and each call still has one device span."""
    from xlanb.core.schema import SECOND_WINDOW

    run("@jax.jit\ndef ta_queued(a):\n    return jnp.tanh(a @ a.T) @ a\n")
    run("ta_wide, ta_narrow = ta_big[:256], ta_big[:48]")
    run("ta_queued(ta_wide).block_until_ready()")
    run(WAIT_FOR_THE_WINDOW)
    run(
        "%%xla_profile -b jax -q --trace-runs 2 --var queued\nfor _ in range(80):\n"
        "    out = ta_queued(ta_wide)\nta_wait_for_the_window()\n"
        "for _ in range(3):\n    last = ta_queued(ta_narrow)\nlast.block_until_ready()"
    )
    prof = shell.user_ns["queued"]
    device = _device_spans(prof, "jit(ta_queued)")
    assert len(device) == 83 == int(prof.executions["count"].sum())
    windows = prof.spans[prof.spans["lane"] == "trace"]["name"].tolist()
    assert windows[1:] == [f"{SECOND_WINDOW} 3 runs"], windows
    # the per-op times hold every traced run
    traced = int((~device["estimated"]).sum())
    both = prof.ops[prof.ops["programs"] == 2]  # ops of both programs (JAX 0.6 names some apart)
    assert len(both) and (both["runs"] == traced).all()
    assert (prof.ops["runs"] <= traced).all()
    assert_adds_up(prof)


@pytest.mark.trace_reuse
def test_a_cell_run_again_that_compiles_a_new_shape_traces_that_call_alone(run, shell):
    """A cell run again reuses its last trace until it compiles: the trace starts inside the
    call that compiles (a new shape of a function it ran), and that call's run is traced,
    not estimated as well (every call has one device span)."""
    run("@jax.jit\ndef ta_again(a):\n    return jnp.tanh(a @ a.T) @ a\n")
    run("ta_wide, ta_shapes_left = ta_big[:256], [ta_big[:32], ta_big[:64]]")
    run(WAIT_FOR_THE_WINDOW)
    cell = (
        "%%xla_profile -b jax -q --var again\nfor _ in range(52):\n"
        "    out = ta_again(ta_wide)\nout.block_until_ready()\n"
        "ta_again(ta_shapes_left.pop()).block_until_ready()"
    )
    run(cell)
    started = _traces_started()
    run(cell)
    prof = shell.user_ns["again"]
    assert _traces_started() == started + 1  # from the new shape's compile
    assert len(prof.compiles) == 1
    device = _device_spans(prof, "jit(ta_again)")
    assert len(device) == 53 == int(prof.executions["count"].sum())
    assert (~device["estimated"]).sum() == 1 and device["estimated"].sum() == 52
    assert_adds_up(prof)


@pytest.mark.trace_reuse
def test_a_program_traced_only_in_the_run_after_its_compile_is_traced_again(run, shell):
    """A compile's run is a warm-up, not like the next ones: a program whose only traced run
    followed its compile is traced again the next time rather than estimated from it."""
    run("@jax.jit\ndef ta_once(a):\n    return a @ a\n")
    cell = "%%xla_profile -b jax -q --var once\nta_once(ta_big).block_until_ready()"
    run(cell)  # compiles, one run
    started = _traces_started()
    run(cell)
    assert _traces_started() == started + 1  # traced again: a steady run this time
    run(cell)
    assert _traces_started() == started + 1  # reused


@pytest.mark.trace_reuse
def test_a_program_with_host_callbacks_is_traced_every_time(run, shell):
    """A host callback's count per run comes from the trace (a loop can call it many times a
    run): a cell whose program has one is never estimated from its last trace. The program
    compiles in the first profiled run, whose compile record names its callback (JAX 0.6's
    trace names the callback's instruction custom-call.N, so a program compiled before any
    capture has no known callback there)."""
    run(
        "import numpy as np\n@jax.jit\ndef ta_called_back(a):\n"
        "    host = jax.pure_callback(lambda x: np.asarray(x) * 2, "
        "jax.ShapeDtypeStruct(a.shape, a.dtype), a)\n"
        "    return (host @ a).sum()"
    )
    cell = (
        "%%xla_profile -b jax -q --var called_back\nfor _ in range(3):\n"
        "    out = ta_called_back(ta_big[:64, :64])\nout.block_until_ready()"
    )
    run(cell)  # compiles: 3 traced runs, 2 of them steady
    started = _traces_started()
    run(cell)
    assert _traces_started() == started + 1
    prof = shell.user_ns["called_back"]
    assert (prof.fallbacks["cause"] == "host_callback").any(), prof.fallbacks


def _first_window(runs: int) -> str:
    """The name of a first window that closed after `runs` traced runs."""
    return "device trace: first run" if runs == 1 else f"device trace: first {runs} runs"
