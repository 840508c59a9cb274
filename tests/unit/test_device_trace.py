"""The device-trace session rules that do not need a runtime: a runtime that cannot trace says
so once; one that is busy says so every time; the trace's files never outlive the cell."""

from __future__ import annotations

import os

import pytest

from xlanb.capture import device_trace


def test_a_runtime_that_cannot_trace_says_so_once():
    def begin(directory):
        raise AttributeError("module 'profiler' has no attribute 'ProfilerSession'")

    trace, note = device_trace.start("oldruntime", begin)
    assert trace is None and "cannot run the device trace" in note and "said once" in note
    assert device_trace.start("oldruntime", begin) == (None, None)


def test_a_busy_profiler_is_reported_every_cell():
    def begin(directory):
        raise RuntimeError("ALREADY_EXISTS: Another profiling session active.")

    for _ in range(2):
        trace, note = device_trace.start("busyruntime", begin)
        assert trace is None and "could not start (ALREADY_EXISTS" in note


def test_a_trace_directory_is_removed_when_the_trace_is_read():
    made = []

    def begin(directory):
        made.append(directory)
        return lambda: b""  # an empty XSpace: an error, never an empty success

    trace, note = device_trace.start("emptyruntime", begin)
    assert trace is not None and note is None
    assert device_trace.finish(trace) is None
    assert any("could not be read" in n and "0 bytes" in n for n in trace.notes), trace.notes
    assert not os.path.exists(made[0]) and not device_trace.is_running()


def test_runs_without_run_ids_are_the_runtimes_own_executions():
    # torch_xla's thunks carry no run_id; its 5 steps are 5 executions in the trace, each one
    # ThunkExecutor::Execute span, however the ops inside are spread in time
    from pathlib import Path

    from xlanb.formats.xspace import read_xspace

    fixture = Path(__file__).parent.parent / "data" / "xspace" / "torch_xla_mlp.xplane.pb"
    events = read_xspace(fixture)
    assert events.op_events()["run_id"].isna().all()
    _, spans = device_trace.rows("torch_xla", events, (0, 1e12))
    assert sum(span["lane"] == "device" for span in spans) == 5
    device_trace_gap = device_trace.RUN_GAP_NS
    try:
        device_trace.RUN_GAP_NS = 0  # op gaps must not matter any more
        _, spans = device_trace.rows("torch_xla", events, (0, 1e12))
    finally:
        device_trace.RUN_GAP_NS = device_trace_gap
    assert sum(span["lane"] == "device" for span in spans) == 5


def test_an_op_holding_other_ops_counts_only_its_own_time():
    """XLA:CPU's `while` thunk (a jitted lax.fori_loop) runs its body's thunks inside it: the
    loop was the top op with the body's whole time (49%), counted again in its body's ops."""
    import json
    from pathlib import Path

    from xlanb.formats.xspace import read_xspace

    data = Path(__file__).parent.parent / "data" / "xspace"
    events = read_xspace(data / "jax_fori_loop.xplane.pb")
    info = json.loads((data / "jax_fori_loop.json").read_text())
    window = (info["before_start_ns"] / 1e9, info["after_stop_ns"] / 1e9)
    ops, spans = device_trace.rows("jax", events, window)
    seconds = {row["op"]: row["seconds"] for row in ops}
    loops = [op for op in seconds if op.startswith("while")]
    assert loops and all(seconds[op] < 0.05 * max(seconds.values()) for op in loops), seconds
    device = sum(span["seconds"] for span in spans if span["lane"] == "device")
    assert sum(seconds.values()) <= device * 1.01, (seconds, device)
    assert sum(row["share"] for row in ops) == pytest.approx(1.0)


def test_old_jax_runs_are_one_device_span_each_to_their_completion():
    """jaxlib 0.6's XLA:CPU trace has no ``run_id``: each run's first thunk starts on a client
    thread, then its ``ThunkExecutor::Execute (wait for completion)`` span holds most of the
    run (the matmuls' work on the worker pool has no op event of its own). Split at the wait
    starts, each run was two device spans covering a fraction of its time (the account said
    Python); each run is one span, from its first thunk to the end of its wait."""
    import json
    from pathlib import Path

    from xlanb.formats.xspace import read_xspace

    data = Path(__file__).parent.parent / "data" / "xspace"
    events = read_xspace(data / "jax06_queued_mm.xplane.pb")
    info = json.loads((data / "jax06_queued_mm.json").read_text())
    assert info["runtime"] == "jax 0.6.1" and events.op_events()["run_id"].isna().all()
    window = (info["before_start_ns"] / 1e9, info["after_stop_ns"] / 1e9)
    _, spans = device_trace.rows("jax", events, window)
    runs = sorted((s["start"], s["start"] + s["seconds"]) for s in spans if s["lane"] == "device")
    assert len(runs) == len(info["calls"]), runs
    # queued back to back: the device is busy from the first launch until the wait returns
    first_call, waited = info["calls"][0][0] / 1e9, info["blocked"][1] / 1e9
    busy = sum(end - start for start, end in runs)
    assert busy >= 0.9 * (waited - first_call), (busy, waited - first_call)
    assert all(a[1] <= b[0] for a, b in zip(runs, runs[1:], strict=False)), runs
    assert first_call <= runs[0][0] and runs[-1][1] <= waited + 1e-4, (runs, first_call, waited)


@pytest.mark.parametrize("fixture", ["jax06_cut_mm", "jax06_cut_inline_mm", "jax_cut_mm"])
def test_a_run_the_trace_stopped_in_is_not_a_run_nor_in_the_op_counts(fixture):
    """A window closes while the next queued run has started (CI, JAX 0.6: one op counted 6
    times in 5 runs). Real traces of 3 waited runs, then queued calls cut by ``stop_trace``:
    the cut run's first thunks are in the trace, its wait is not (on another client thread,
    on the same one, or, with JAX 0.10's run ids, a run no wait names). It is neither a
    device span nor in the op counts, and the waited runs keep their own extents."""
    import json
    from pathlib import Path

    from xlanb.formats.xspace import read_xspace

    data = Path(__file__).parent.parent / "data" / "xspace"
    events = read_xspace(data / f"{fixture}.xplane.pb")
    info = json.loads((data / f"{fixture}.json").read_text())
    waited = info["waited_runs"]
    # the trace holds part of a run past the waited ones
    op_counts = events.op_events().groupby("hlo_op").size()
    assert op_counts.max() > waited, op_counts
    window = (info["before_start_ns"] / 1e9, info["after_stop_ns"] / 1e9)
    ops, spans = device_trace.rows("jax", events, window)
    runs = sorted((s["start"], s["seconds"]) for s in spans if s["lane"] == "device")
    assert len(runs) == waited, runs
    assert {row["count"] for row in ops} == {waited}, [(r["op"], r["count"]) for r in ops]
    # each waited run spans about the same time (the cut one's thunks were not added to one)
    seconds = [s for _, s in runs]
    assert max(seconds) < 1.5 * min(seconds), seconds
    if info["cut"] == "run_id":  # the runs that size the next window: whole ones only
        assert device_trace._runs_in(events) == waited


@pytest.mark.trace_budget
def test_the_windows_budget_is_a_share_of_the_captures_time():
    """A window closes once tracing its runs has cost TRACE_BUDGET_SHARE of the capture's time
    so far (never before MIN_BUDGET_RUNS runs): a cell that started running at once closes it
    after its fewest runs; one that compiled for a while first traces more of its runs."""
    share = device_trace.TRACE_BUDGET_SHARE / device_trace.TRACED_SLOWDOWN
    fewest = device_trace.MIN_BUDGET_RUNS
    assert not device_trace.over_budget(fewest - 1, 1.0, 1.0)
    assert device_trace.over_budget(fewest, 0.01, 0.01)
    # a 10 s compile before the runs: the window stays open until they have run 10 s * share
    assert not device_trace.over_budget(50, 0.99 * 10 * share, 10.0)
    assert device_trace.over_budget(50, 10.0 * share, 10.0)
