"""Where the time went on PyTorch/XLA: the account adds up, compile time is the runtime's
CompileTime, device time comes from the XLA profiler's trace (one span per program run).
torch_xla 2.7 writes no per-op events into its CPU trace: there the trace is off (said once)
and device time is the runtime's ExecuteTime samples, one span per run."""

from __future__ import annotations

import dataclasses
import re

import pandas as pd
import pytest

from tests.support.helpers import buckets, torch_xla_mlp_cell, trace_stop_times, union_seconds
from xlanb.capture import versions

#: torch_xla 2.8 and newer trace each run's ops (see versions.RUNTIMES).
OPS_TRACED = versions.parse_version(versions.installed_version("torch_xla") or "0") >= (2, 8)
TRACE_OFF_NOTE = (
    "torch_xla: torch_xla 2.7.0 writes no per-op events into its CPU trace (its runs are "
    "there, not their ops), so device trace (per-op device times) is off (on from torch_xla "
    "2.8)."
)

SETUP = "\n" + torch_xla_mlp_cell("ta_", 256, 512, 64) + "\n"


@pytest.fixture(scope="module", autouse=True)
def xla_time_runtime(shell):
    result = shell.run_cell(SETUP)
    assert result.success, result.error_in_exec


def assert_device_time_from_execute_samples(prof, runs: int) -> None:
    """Without a trace: no per-op times, no trace window, one measured device span per run,
    each the runtime's ExecuteTime sample (never an empty device bucket)."""
    assert prof.ops.empty
    assert not (prof.spans["lane"] == "trace").any()
    device = prof.spans[prof.spans["lane"] == "device"]
    execute = prof.metrics.set_index("name").loc["ExecuteTime"]
    assert len(device) == execute["count"] == runs and not device["estimated"].any()
    assert device["seconds"].sum() == pytest.approx(execute["total"], rel=1e-6)
    assert buckets(prof)["device"] > 0


def test_a_training_loop_is_accounted_from_the_trace(run, shell):
    run("%%xla_profile -b torch_xla -q --var ta_loop\nfor _ in range(12):\n    ta_step()")
    prof = shell.user_ns["ta_loop"]
    parts = buckets(prof)
    assert sum(parts.values()) == pytest.approx(prof.wall_seconds, rel=0.02)
    compile_time = prof.metrics.set_index("name").loc["CompileTime", "total"]
    compiles = prof.spans[prof.spans["lane"] == "compile"]
    device = prof.spans[prof.spans["lane"] == "device"]
    # the compiles are the runtime's CompileTime samples; the account's compile time is theirs
    # but where a run queued before them was on the device meanwhile (device time comes first)
    assert compiles["seconds"].sum() == pytest.approx(compile_time, rel=1e-6)
    both = union_seconds(pd.concat([compiles, device]), prof)
    assert parts["compile"] == pytest.approx(both - union_seconds(device, prof), rel=1e-6)
    execute = prof.metrics.set_index("name").loc["ExecuteTime"]
    # torch_xla's thunks carry no run_id: runs are the runtime's own launches in the trace,
    # one device span per execution the runtime counted
    assert len(device) == execute["count"] and not device["estimated"].any()
    # the account's device time is the union of those runs
    assert 0 < parts["device"] == pytest.approx(union_seconds(device, prof), rel=1e-6)
    if not OPS_TRACED:
        assert_device_time_from_execute_samples(prof, 12)
        return
    assert not prof.ops.empty
    top = prof.ops.sort_values("seconds", ascending=False).iloc[0]
    assert top["graph"] in set(prof.compiles["graph"]) | set(prof.executions["graph"])
    assert prof.ops["seconds"].sum() <= prof.wall_seconds
    assert "wall " in repr(prof).split("\n")[2]


def test_the_users_own_trace_in_a_profiled_cell_still_works(run, shell, tmp_path):
    shell.user_ns["ta_dir"] = str(tmp_path)
    run(
        "%%xla_profile -b torch_xla -q --var ta_inner\n"
        "import torch_xla.debug.profiler as xp\nta_step()\n"
        # the step's run is asynchronous: finished before the user's trace takes the
        # profiler over (else it may run in theirs, not xlanb's)
        "import torch_xla.core.xla_model as xm\nxm.wait_device_ops()\nxp.start_trace(ta_dir)\n"
        "ta_step()\nxp.stop_trace()"
    )
    assert list(tmp_path.rglob("*.xplane.pb")), "the user's own trace was not written"
    prof = shell.user_ns["ta_inner"]
    assert not prof.failed
    if not OPS_TRACED:  # xlanb traced nothing: the user's trace had the profiler to itself
        assert not any("your own profiler trace" in note for note in prof.notes), prof.notes
        assert_device_time_from_execute_samples(prof, 2)
        return
    assert any("your own profiler trace started" in note for note in prof.notes), prof.notes
    assert not prof.ops.empty  # the step before the user's trace was traced by xlanb


def test_runs_after_the_trace_window_are_accounted_from_the_runtimes_samples(run, shell):
    """A loop longer than the trace's window: the traced runs are measured, the later ones come
    from ExecuteTime scaled to the traced runs, and the device bucket stays close to the same
    loop traced whole (without the later runs it would be a tenth of it)."""
    run("for _ in range(3):\n    ta_step()")
    run(
        "%%xla_profile -b torch_xla -q --trace-runs 8 --var ta_window\n"
        "for _ in range(80):\n    ta_step()"
    )
    run(
        "%%xla_profile -b torch_xla -q --trace-runs 0 --var ta_whole\n"
        "for _ in range(80):\n    ta_step()"
    )
    windowed, whole = shell.user_ns["ta_window"], shell.user_ns["ta_whole"]
    parts = buckets(windowed)
    assert sum(parts.values()) == pytest.approx(windowed.wall_seconds, rel=0.02)
    if not OPS_TRACED:
        for prof in (windowed, whole):
            assert_device_time_from_execute_samples(prof, 80)
        return
    window = windowed.spans[windowed.spans["lane"] == "trace"]
    assert len(window) == 1 and window["name"].iloc[0].startswith("device trace: first ")
    device = windowed.spans[windowed.spans["lane"] == "device"]
    measured = device[~device["estimated"]]
    assert 8 <= len(measured) < 80  # the window waits for its launched runs to finish
    assert (device["estimated"]).sum() >= 80 - len(measured) - 1
    # every op was counted once in each traced run: the run the window's stop cut short (its
    # first ops are in the trace, its wait is not) is left to the estimate
    per_op = windowed.ops.groupby(["graph", "op"])["count"].sum()
    assert (per_op == len(measured)).all(), per_op.value_counts()
    whole_device = buckets(whole)["device"]
    assert whole.spans.loc[whole.spans["lane"] == "trace", "name"].iloc[0] == "device trace"
    assert (whole.spans["lane"] == "device").sum() == 80
    assert 0.4 * whole_device <= parts["device"] <= 2.5 * whole_device, (parts, whole_device)
    assert "partly estimated" in repr(windowed)
    # the window's runs were all of one graph: the runs after it are its steps too
    steps = windowed.step_times
    assert len(steps) == len(device) and steps["estimated"].sum() == device["estimated"].sum()


def test_a_long_compile_does_not_use_up_the_traces_window(run, shell, monkeypatch):
    """The trace's window (10 s by default; 0.3 s here) counts from the first run: a cell
    whose first compile took longer (a ResNet-18 on this machine: 43 s) had its window closed
    before anything ran, and no measured device time at all."""
    from xlanb.capture import device_trace

    start = device_trace.start
    monkeypatch.setattr(
        device_trace,
        "start",
        lambda runtime, begin, window: start(
            runtime, begin, dataclasses.replace(window, window_seconds=0.3)
        ),
    )
    run(
        "ta_deep = torch.nn.Sequential(*[layer for _ in range(60) for layer in\n"
        "    (torch.nn.Linear(64, 64), torch.nn.Tanh())]).to(ta_dev)\n"
        "ta_deep_x = torch.randn(8, 64, device=ta_dev)"
    )
    run(
        "%%xla_profile -b torch_xla -q --var ta_slow\nfor _ in range(3):\n"
        "    ta_deep(ta_deep_x).sum().backward()\n    torch_xla.sync()"
    )
    prof = shell.user_ns["ta_slow"]
    assert float(prof.compiles["seconds"].max()) > 0.3, "the compile must outlast the window"
    if not OPS_TRACED:
        assert_device_time_from_execute_samples(prof, 3)
        return
    assert not prof.ops.empty
    device = prof.spans[prof.spans["lane"] == "device"]
    assert (~device["estimated"]).any()  # the first run at least was traced


def test_outside_the_supported_range_the_trace_is_off_and_it_is_said_once(run, shell, monkeypatch):
    """The gate read as torch_xla 2.6.0: no device trace (no per-op times), the runtime's
    counters and metrics still measured; one note on the first profile only."""
    monkeypatch.setattr(versions, "gate", lambda backend: versions.check(backend, "2.6.0"))
    cell = "for _ in range(3):\n    ta_step()"
    run(f"%%xla_profile -b torch_xla -q --var old_first\n{cell}")
    run(f"%%xla_profile -b torch_xla -q --var old_second\n{cell}")
    first, second = shell.user_ns["old_first"], shell.user_ns["old_second"]
    outside = [note for note in first.notes if "outside xlanb's supported range" in note]
    assert len(outside) == 1 and "\n" not in outside[0]
    assert outside[0].startswith("torch_xla: torch_xla 2.6.0 is outside xlanb's supported")
    assert "device trace (per-op device times)" in outside[0]
    assert not any("outside" in note for note in second.notes)
    for prof in (first, second):
        assert_device_time_from_execute_samples(prof, 3)
    monkeypatch.undo()
    run(f"%%xla_profile -b torch_xla -q --var back\n{cell}")
    assert shell.user_ns["back"].ops.empty != OPS_TRACED


def test_on_torch_xla_2_7_the_trace_is_off_and_it_is_said_once(run, shell, monkeypatch):
    """torch_xla 2.7 (the real one in its environment, else the gate read as 2.7.0): inside
    the range, but its CPU trace has no per-op events, so the trace is off: no ops, no trace
    window, device time from the runtime's ExecuteTime samples; compile causes and graphs
    stay on; one note, on the first profile of the session only."""
    if OPS_TRACED:
        monkeypatch.setattr(versions, "gate", lambda backend: versions.check(backend, "2.7.0"))
    monkeypatch.setattr(versions._STATE, "told", set())  # this test's session starts here
    run("ta_new = torch.nn.Linear(256, 3).to(ta_dev)")
    cell = "for _ in range(3):\n    ta_out = (ta_new(ta_x) ** 2).sum()\n    torch_xla.sync()"
    run(f"%%xla_profile -b torch_xla -q --var v27_first\n{cell}")
    run(f"%%xla_profile -b torch_xla -q --var v27_second\n{cell}")
    first, second = shell.user_ns["v27_first"], shell.user_ns["v27_second"]
    assert [note for note in first.notes if "per-op" in note] == [TRACE_OFF_NOTE]
    assert not any("per-op" in note or "outside" in note for note in second.notes)
    for prof in (first, second):
        assert_device_time_from_execute_samples(prof, 3)
    assert list(first.compiles["cause"]) == ["new graph"]
    assert list(first.compiles["cell_line"]) == [4]  # the sync that compiled it
    assert {"hlo", "hlo_optimized"} <= set(first.graphs["kind"])


@pytest.mark.trace_seconds
def test_a_cells_first_run_of_big_runs_traces_a_bounded_window(run, shell):
    """Big runs (hundreds of thunks, tens of ms each) in a cell never traced before: the
    whole cell was traced (under 50 runs and 10 s) before a trace had measured its runs; now
    the window closes once the runtime's ExecuteTime reaches FIRST_WINDOW_SECONDS (at least 5
    runs), and the runs after it come from the runtime's samples."""
    from xlanb.capture import device_trace

    run(
        "ta_square = torch.ones(160, 160, device=ta_dev)\n"
        "def ta_chain():\n    out = ta_square\n    for _ in range(150):\n"
        "        out = torch.sin(out @ ta_square) * 0.5\n    torch_xla.sync()\n    return out\n"
        "ta_chain().cpu()"
    )
    with trace_stop_times() as stopped:
        run(
            "%%xla_profile -b torch_xla -q --var ta_first_big\nimport time\nta_launched = []\n"
            "for _ in range(40):\n    ta_launched.append(time.time())\n    ta_chain()"
        )
    prof = shell.user_ns["ta_first_big"]
    if not OPS_TRACED:  # torch_xla 2.7: no trace, every run from the runtime's samples
        assert_device_time_from_execute_samples(prof, 40)
        return
    assert device_trace._STATE.events_per_run["torch_xla", prof.source] > 500
    device = prof.spans[prof.spans["lane"] == "device"]
    measured = device[~device["estimated"]]
    execute = prof.executions.sort_values("time")["seconds"]
    assert float(execute.median()) > 0.01, execute
    # The window closes once the runs' ExecuteTime reaches FIRST_WINDOW_SECONDS (at least
    # MIN_WINDOW_RUNS runs): it holds those runs, and those launched before its watchdog saw it
    # and stopped the trace (how many depends on how soon that thread runs: 1-2 on a quiet
    # machine, 5 at a load of 8), which the trace's span names; the last may be cut short.
    reached = int((execute.cumsum() < device_trace.FIRST_WINDOW_SECONDS).sum()) + 1
    trace_name = prof.spans.loc[prof.spans["lane"] == "trace", "name"].iloc[0]
    named = int(re.fullmatch(r"device trace: first (\d+) runs.*", trace_name).group(1))
    fewest = max(device_trace.MIN_WINDOW_RUNS, reached) - 1
    assert fewest <= len(measured) <= named + 1, (len(measured), reached, named)
    # no run launched after the trace stopped is in it
    if stopped:
        in_time = sum(t < stopped[0] for t in shell.user_ns["ta_launched"])
        assert len(measured) <= in_time, (len(measured), in_time)
    # every run once: traced, or estimated from its sample
    assert len(device) == 40, device
    parts = buckets(prof)
    assert sum(parts.values()) == pytest.approx(prof.wall_seconds, rel=0.02)


def test_a_first_cells_loop_is_steps_of_the_graph_its_window_ended_on(run, shell):
    """Adam makes its state on the first step: a first cell compiles that step's graph, then
    the loop's. Its window traced both, so the runs after it (whose samples name no graph) had
    no graph and the cell had no steps; they are the steps of the graph the window ran after
    its last compile."""
    run(torch_xla_mlp_cell("ad_", 64, 128, 32).replace("torch.optim.SGD", "torch.optim.Adam"))
    run(
        "%%xla_profile -b torch_xla -q --trace-runs 3 --var ad_first\n"
        "for _ in range(20):\n    ad_step()"
    )
    prof = shell.user_ns["ad_first"]
    assert len(prof.compiles) == 2
    if not OPS_TRACED:
        return
    device = prof.spans[prof.spans["lane"] == "device"]
    measured = device[~device["estimated"]]
    assert len(device) == 20 and 3 <= len(measured) < 20, device
    first, loop = measured.sort_values("start")["graph"].iloc[[0, -1]]
    assert first != loop and (device["graph"] == first).sum() == 1
    steps = prof.step_times
    assert len(steps) == 19 and set(steps["graph"]) == {loop}
    assert steps["estimated"].sum() == device["estimated"].sum()
    assert (steps["phase"] == "steady").sum() >= 18
    # each run's row names its graph too, those after the window the loop's (they had none)
    runs = prof.executions
    assert len(runs) == 20 and runs["graph"].notna().all(), runs
    assert (runs["graph"] == first).sum() == 1 and (runs["graph"] == loop).sum() == 19


def test_a_run_after_a_compile_past_the_window_is_not_the_loop_s(run, shell):
    """A last batch of another shape compiles a new graph after the trace's window closed:
    its run is not a step of the graph the window ran (its graph was never traced, and its
    sample names none), while the loop's runs before that compile still are."""
    run("for _ in range(3):\n    ta_step()")
    run(
        "%%xla_profile -b torch_xla -q --trace-runs 3 --var ta_last\n"
        "for _ in range(20):\n    ta_step()\n"
        "ta_x_all, ta_x = ta_x, ta_x[:40]\nta_step()\nta_x = ta_x_all"
    )
    prof = shell.user_ns["ta_last"]
    assert len(prof.compiles) == 1
    if not OPS_TRACED:
        return
    device = prof.spans[prof.spans["lane"] == "device"]
    measured = device[~device["estimated"]]
    assert len(device) == 21 and 3 <= len(measured) < 20, device
    (loop,) = set(measured["graph"])
    runs = prof.executions
    assert len(runs) == 21 and (runs["graph"] == loop).sum() == 20, runs
    last = runs.sort_values("time").iloc[-1]
    assert last["graph"] != loop
    assert len(prof.step_times) == 20 and set(prof.step_times["graph"]) == {loop}
