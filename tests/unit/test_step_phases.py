"""Which steps are warm-up (``xlanb.analysis.step_times``): the steps whose own time holds a
compile that finished in them, not a step whose queued run hid a compile of a later call."""

from __future__ import annotations

from xlanb.analysis.step_times import step_frame
from xlanb.core.profile import Profile
from xlanb.core.schema import make_frame

#: An epoch start, as captures have: float seconds there are exact to 2.4e-7 s.
STARTED = 1_796_689_000.0


def _span(lane: str, name: str, start: float, seconds: float) -> dict:
    return {"backend": "jax", "lane": lane, "name": name, "graph": name,
            "start": STARTED + start, "seconds": seconds, "estimated": False}  # fmt: skip


def _profile(spans: list[dict], wall: float) -> Profile:
    profile = Profile(name="steps", backends=["jax"], started_at=STARTED, wall_seconds=wall)
    profile.spans = make_frame("spans", spans)
    return profile


def test_a_compile_hidden_under_queued_runs_makes_no_warm_up_step():
    """Async dispatch: 10 steps queued at once run back to back on the device while the host
    compiles an eager op (its compile ends inside run 5) and then the step for a last batch
    of a new shape: run 5's step is steady (none of its time is compile), the last batch's
    step, which waited for its compile, is the one warm-up."""
    runs = [_span("device", "jit(step)", 0.010 + 0.001 * i, 0.001) for i in range(10)]
    eager = _span("compile", "jit(broadcast_in_dim)", 0.002, 0.0135)  # ends in run 5
    step = _span("compile", "jit(step)", 0.020, 0.030)
    last = _span("device", "jit(step)", 0.050, 0.001)
    steps = step_frame(_profile([*runs, eager, step, last], wall=0.052))
    assert len(steps) == 11
    assert steps.loc[steps["phase"] == "warm-up", "step"].tolist() == [10]
    assert float(steps["compile"].iloc[5]) < 1e-6


def test_a_compile_the_host_waited_for_is_its_step_s_warm_up():
    """Without queued runs (each step waits for its run), the step a compile finished in
    holds that compile and is warm-up, the first step too."""
    spans = []
    clock = 0.0
    for index in range(6):
        if index in (0, 3):  # compiles before the first run and before the fourth
            spans.append(_span("compile", "jit(step)", clock, 0.020))
            clock += 0.020
        spans.append(_span("device", "jit(step)", clock + 0.001, 0.002))
        clock += 0.003
    steps = step_frame(_profile(spans, wall=clock))
    assert steps.loc[steps["phase"] == "warm-up", "step"].tolist() == [0, 3]
