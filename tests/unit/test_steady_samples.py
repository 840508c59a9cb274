"""The samples of a loop's steady steps: found per sample in its step where the steps are one
loop's (in order, apart), the same as against every step otherwise (merged ranks)."""

from __future__ import annotations

import numpy as np

from xlanb.core.profile import Profile
from xlanb.core.schema import make_frame
from xlanb.views.charts import steady_samples


def _profile(starts: list[float], seconds: list[float], phases: list[str], times) -> Profile:
    profile = Profile(started_at=1000.0, wall_seconds=10.0)
    profile.step_times = make_frame(
        "step_times",
        [
            {"backend": "jax", "step": i, "graph": "jit(step)", "start": start,
             "seconds": length, "python": 0.0, "compile": 0.0, "device": length,
             "transfer": 0.0, "sync_wait": 0.0, "phase": phase, "estimated": False}
            for i, (start, length, phase) in enumerate(zip(starts, seconds, phases, strict=True))
        ],
    )  # fmt: skip
    profile.samples = make_frame(
        "samples",
        [{"backend": "jax", "metric": "DispatchTime", "time": t, "value": 1e-3} for t in times],
    )
    return profile


def _against_every_step(profile: Profile) -> list[float]:
    steps = profile.step_times[profile.step_times["phase"] == "steady"]
    starts = steps["start"].to_numpy() + profile.started_at
    ends = starts + steps["seconds"].to_numpy()
    times = profile.samples["time"].to_numpy()
    inside = (
        (times[:, None] > starts[None, :] + 1e-6) & (times[:, None] <= ends[None, :] + 1e-6)
    ).any(1)
    return times[inside].tolist()


def test_a_loops_steady_samples_are_those_of_its_steady_steps():
    rng = np.random.default_rng(0)
    for _ in range(200):
        lengths = rng.choice([0.0, 1e-7, 1e-3, 0.02], size=12) * rng.random(12)
        bounds = np.concatenate([[0.5], 0.5 + lengths.cumsum()])
        starts, ends = bounds[:-1], bounds[1:]
        phases = ["warm-up" if warm else "steady" for warm in rng.random(12) < 0.3]
        phases[1:6] = ["steady"] * 5  # enough steady steps for the curves to keep to them
        times = np.concatenate(
            [rng.uniform(0.49, bounds[-1] + 0.01, 40), ends, ends + 1e-6, starts + 1e-6]
        )
        profile = _profile(starts.tolist(), lengths.tolist(), phases, times + 1000.0)
        kept = steady_samples(profile, profile.samples)["time"].tolist()
        assert kept == _against_every_step(profile)


def test_steps_of_merged_ranks_out_of_order_are_read_against_every_step():
    starts = [0.0, 0.1, 0.2, 0.3, 0.4, 0.05, 0.15, 0.25]  # a second rank's steps overlap
    profile = _profile(starts, [0.1] * 8, ["steady"] * 8, [1000.0 + t for t in (0.07, 0.33, 0.6)])
    kept = steady_samples(profile, profile.samples)["time"].tolist()
    assert kept == _against_every_step(profile) == [1000.07, 1000.33]
