"""The runs after a trace's window closed, estimated from the traced ones
(:mod:`xlanb.analysis.device_time`), on inputs taken from real recorded traces: JAX's calls on
XLA:CPU (JAX 0.10) and XLA:GPU (H100, JAX 0.11), torch_xla's execute-time samples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xlanb.analysis import device_time
from xlanb.formats.xspace import read_xspace

DATA = Path(__file__).resolve().parent.parent / "data"
WHOLE = (0.0, 1e12)


def _device_runs(path: Path, backend: str = "jax") -> tuple[list[dict], object]:
    events = read_xspace(path, markers=False)
    _, spans = device_time.rows(backend, events, WHOLE)
    return [span for span in spans if span["lane"] == "device"], events


def _end(span: dict) -> float:
    return span["start"] + span["seconds"]


def _gpu_steady() -> tuple[list[dict], list[float]]:
    """The 5 traced runs of the steady GPU trace and the launch (host execute span) of each."""
    runs, events = _device_runs(DATA / "xla_gpu" / "mlp_nocmdbuf" / "steady5.xplane.pb")
    launches = (device_time.gpu_runs(events.events)["start_ns"] / 1e9).tolist()
    assert len(runs) == len(launches) == 5
    return runs, launches


def test_the_calls_of_a_function_are_the_runs_of_its_module_in_a_gpu_trace():
    runs, _ = _gpu_steady()
    # the trace names a run by its HLO module, JAX's call hook by the jitted function
    assert {span["name"] for span in runs} == {"jit_train_step"}
    assert {key for key, _, _ in device_time.traced_runs(runs)} == {
        device_time.program_key("jit(train_step)")
    }


@pytest.mark.parametrize(
    ("function", "module"),
    [
        ("jit(train_step)", "jit_train_step"),
        ("jit(<lambda>)", "jit__lambda"),  # JAX 0.10's HloModule names of these functions
        ("jit(<unnamed function>)", "jit__unnamed_function"),
        ("jit(f_)", "jit_f"),
    ],
)
def test_a_jitted_function_and_its_module_are_one_program(function, module):
    assert device_time.program_key(function) == device_time.program_key(module)


def test_untraced_gpu_calls_are_queued_after_the_window_at_the_traced_mean():
    # the window held the first 2 of 5 runs: its 3 other calls (launched while run 2 ran,
    # under async dispatch) ran after it, one at a time
    runs, launches = _gpu_steady()
    traced, window_end = runs[:2], _end(runs[1])
    key = device_time.program_key("jit(train_step)")
    calls = [(key, launched) for launched in launches]
    assert max(launches) < window_end
    mean = (runs[0]["seconds"] + runs[1]["seconds"]) / 2
    graphs = {key: "jit(train_step)"}
    estimated = device_time.after_window_from_calls(
        "jax", device_time.traced_runs(traced), calls, window_end, window_end + 1.0, (), graphs
    )
    # back to back runs from the window's end, a span each: steps of the program's graph
    assert len(estimated) == 3
    assert all(s["lane"] == "device" and s["estimated"] for s in estimated)
    assert {s["graph"] for s in estimated} == {"jit(train_step)"}
    assert {s["name"] for s in estimated} == {"jit_train_step"}
    assert estimated[0]["start"] == window_end
    for before, after in zip(estimated, estimated[1:], strict=False):
        assert after["start"] == pytest.approx(_end(before), abs=1e-9)
    assert [s["seconds"] for s in estimated] == [pytest.approx(mean, rel=1e-12)] * 3
    # a capture that ended in the third: clipped at its end
    capture_end = window_end + 2.5 * mean
    clipped = device_time.after_window_from_calls(
        "jax", device_time.traced_runs(traced), calls, window_end, capture_end
    )
    assert [s["seconds"] for s in clipped] == [
        pytest.approx(mean, rel=1e-12),
        pytest.approx(mean, rel=1e-12),
        pytest.approx(capture_end - clipped[2]["start"], rel=1e-12),
    ]
    assert _end(clipped[-1]) == pytest.approx(capture_end, abs=1e-9)
    # ... unless the cell waited for its last run: then all 3 ran before its end, shortened
    drained = device_time.after_window_from_calls(
        "jax", device_time.traced_runs(traced), calls, window_end, capture_end, drained=True
    )
    assert len(drained) == 3 and _end(drained[-1]) <= capture_end
    # (epoch seconds in float64 keep ~0.2 µs)
    assert sum(s["seconds"] for s in drained) == pytest.approx(2.5 * mean, abs=1e-6)
    # one that ended before the window's end holds none of them
    assert not device_time.after_window_from_calls(
        "jax", device_time.traced_runs(traced), calls, window_end, window_end
    )


def test_runs_traced_by_an_earlier_capture_leave_every_call_estimated():
    """A cell run again that reused its last trace: the traced runs are not among its calls,
    so all 5 calls are queued from the capture's start at the traced mean."""
    runs, launches = _gpu_steady()
    key = device_time.program_key("jit(train_step)")
    calls = [(key, launched) for launched in launches]
    start = launches[0]
    mean = (runs[0]["seconds"] + runs[1]["seconds"]) / 2
    estimated = device_time.after_window_from_calls(
        "jax", device_time.traced_runs(runs[:2]), calls, start, start + 1.0, traced_here=False
    )
    assert len(estimated) == 5 and all(s["estimated"] for s in estimated)
    assert [s["seconds"] for s in estimated] == [pytest.approx(mean, rel=1e-12)] * 5
    assert estimated[0]["start"] == start


def test_a_run_called_after_the_queue_drained_starts_at_its_call():
    runs, launches = _gpu_steady()
    traced, window_end = runs[:2], _end(runs[1])
    mean = (runs[0]["seconds"] + runs[1]["seconds"]) / 2
    key = device_time.program_key("jit(train_step)")
    late = window_end + 10 * mean  # the fifth call, made long after the others ran
    calls = [(key, launched) for launched in launches[:4]] + [(key, late)]
    estimated = device_time.after_window_from_calls(
        "jax", device_time.traced_runs(traced), calls, window_end, late + 1.0
    )
    assert [(s["start"], s["seconds"]) for s in estimated] == [
        (window_end, pytest.approx(mean, rel=1e-12)),
        (pytest.approx(window_end + mean, abs=1e-9), pytest.approx(mean, rel=1e-12)),
        (late, pytest.approx(mean, rel=1e-12)),
    ]
    # calls past the dispatch samples' cap: spread after the last call, each the mean
    spread = device_time.after_window_from_calls(
        "jax", device_time.traced_runs(traced), calls, window_end, late + 1.0, [(key, 4)]
    )
    extra = spread[len(estimated) :]
    assert len(extra) == 4 and {s["name"] for s in extra} == {device_time.UNSAMPLED_CALLS}
    assert extra[0]["start"] == _end(estimated[-1])
    assert sum(s["seconds"] for s in extra) == pytest.approx(4 * mean, rel=1e-12)
    assert max(_end(s) for s in extra) <= late + 1.0
    # a program that never ran in the window gets nothing: its runs' time is unknown
    other = device_time.after_window_from_calls(
        "jax", device_time.traced_runs(traced), [("other", late)], window_end, late + 1.0
    )
    assert other == []


def test_a_cut_cpu_run_and_the_queued_calls_after_it_are_estimated_from_the_whole_runs():
    # JAX 0.10 on XLA:CPU: 3 waited calls, 3 queued ones, the trace stopped in the first of
    # those; each call is a PjitFunction span of the Python thread
    runs, events = _device_runs(DATA / "xspace" / "jax_cut_mm.xplane.pb")
    info = json.loads((DATA / "xspace" / "jax_cut_mm.json").read_text())
    frame = events.events
    pjit = frame[frame["name"] == "PjitFunction(mm)"].sort_values("start_ns", kind="stable")
    # the outer span of each call (the runtime writes it twice, one inside the other)
    outer = pjit[pjit["start_ns"] > (pjit["start_ns"] + pjit["duration_ns"]).shift().fillna(0)]
    launches = (outer["start_ns"] / 1e9).tolist()
    assert len(runs) == info["waited_runs"] and len(launches) == 6
    window_end = float((frame["start_ns"] + frame["duration_ns"]).max()) / 1e9
    key = device_time.program_key("jit(mm)")
    calls = [(key, launched) for launched in launches]
    mean = sum(span["seconds"] for span in runs) / len(runs)
    traced = device_time.traced_runs(runs)
    estimated = device_time.after_window_from_calls("jax", traced, calls, window_end, 1e12)
    assert len(estimated) == info["queued_calls"]
    assert {s["name"] for s in estimated} == {"jit_mm"} and estimated[0]["start"] == window_end
    assert sum(s["seconds"] for s in estimated) == pytest.approx(
        info["queued_calls"] * mean, rel=1e-12
    )
    # the capture ended soon after the trace stopped: the estimate ends there too
    capture_end = info["after_stop_ns"] / 1e9
    clipped = device_time.after_window_from_calls("jax", traced, calls, window_end, capture_end)
    assert clipped[0]["start"] == window_end
    assert _end(clipped[-1]) == pytest.approx(capture_end, abs=1e-9)
    assert sum(s["seconds"] for s in clipped) == pytest.approx(capture_end - window_end, abs=1e-9)


def _timed_runs(case: str) -> tuple[list[dict], list[tuple[float, float]]]:
    """The traced runs of a recorded trace and (end, seconds) of each from its launch to its
    completion, as the runtime's ExecuteTime samples time them: torch_xla 2.9 on XLA:CPU
    (launch and wait spans of the thunk executor), and the GPU trace (the host's execute span
    to the run's last kernel)."""
    if case == "cpu":
        runs, events = _device_runs(DATA / "xspace" / "torch_xla_mlp.xplane.pb", "torch_xla")
        windows = device_time._execution_windows(events.events) / 1e9
        timed = [(float(done), float(done - launch)) for launch, done in windows]
    else:
        runs, launches = _gpu_steady()
        timed = [
            (_end(run), _end(run) - launch) for run, launch in zip(runs, launches, strict=True)
        ]
    assert len(runs) == len(timed) == 5
    return runs, timed


@pytest.mark.parametrize("case", ["cpu", "gpu"])
def test_runs_after_the_window_are_their_samples_scaled_to_the_traced_runs(case):
    runs, timed = _timed_runs(case)
    # the window held 3 runs; the runtime timed all 5
    traced = sum(span["seconds"] for span in runs[:3])
    window_execute = sum(seconds for _, seconds in timed[:3])
    window_end = timed[2][0]
    after = timed[3:]
    # the runs' device time over their launch to completion (at most 1: a run's last thunk
    # may end a little after its wait on XLA:CPU)
    ratio = min(traced / window_execute, 1.0)
    counted = (5, window_execute + sum(seconds for _, seconds in after))
    estimated = device_time.after_window_from_samples(
        "torch_xla", (3, traced), window_execute, timed, counted, window_end, 1e12
    )
    # each ends where its sample ended; none starts before the run timed before it ended
    scaled = [seconds * ratio for _, seconds in after]
    room = [end - before for (end, _), (before, _) in zip(after, timed[2:4], strict=True)]
    assert [s["seconds"] for s in estimated] == [
        min(a, b) for a, b in zip(scaled, room, strict=True)
    ]
    assert [s["start"] + s["seconds"] for s in estimated] == pytest.approx(
        [end for end, _ in after],
        abs=1e-6,  # float64 epoch seconds: ~0.2 µs apart
    )
    assert {s["name"] for s in estimated} == {device_time.SCALED_SAMPLES}
    assert all(s["estimated"] and s["graph"] is None for s in estimated)
    if case == "cpu":
        # torch_xla's runs one after another: each its sample scaled
        assert scaled == [s["seconds"] for s in estimated]
    else:
        # runs queued under async dispatch: a sample holds the wait for the runs before it
        assert all(a > b for a, b in zip(scaled, room, strict=True))


def test_runs_whose_samples_the_runtime_dropped_are_spread_before_the_next_sampled_run():
    # the runtime's buffer keeps the newest samples: it lost all but the fifth run's; the
    # fourth's time, from the totals, is spread from the window's end to the fifth's start
    runs, timed = _timed_runs("cpu")
    traced = sum(span["seconds"] for span in runs[:3])
    window_execute = sum(seconds for _, seconds in timed[:3])
    window_end, after = timed[2][0], timed[3:]
    ratio = min(traced / window_execute, 1.0)
    counted = (5, window_execute + sum(seconds for _, seconds in after))
    lost = device_time.after_window_from_samples(
        "torch_xla", (3, traced), window_execute, timed[4:], counted, window_end, 1e12
    )
    assert [s["name"] for s in lost] == [device_time.SCALED_SAMPLES, device_time.UNSAMPLED_RUNS]
    sampled, spread = lost
    assert sampled["seconds"] == after[1][1] * ratio
    assert spread["start"] == window_end
    assert spread["seconds"] == min(after[0][1] * ratio, sampled["start"] - window_end)


def test_the_first_run_of_a_program_compiled_in_the_capture_is_left_out_of_the_estimate():
    """On XLA:CPU a program's first run holds one-off warm-up (JAX 0.10, a shard_map step on
    4 host devices: 153 ms, then 2.5 ms a run). The window held those 2 runs; the 18 calls
    after it, estimated at the mean of both (78 ms), overran the cell's end and 15 of them
    were lost: 5 steps for 20 calls, device time 348 ms for about 200 ms."""
    key = device_time.program_key("jit(step)")
    traced = [(key, "jit_step", 0.153), (key, "jit_step", 0.0025)]
    window_end = 100.0
    calls = [(key, window_end - 0.2 + 0.001 * index) for index in range(20)]
    capture_end = window_end + 0.19
    estimated = device_time.after_window_from_calls(
        "jax", traced, calls, window_end, capture_end, compiled={key}
    )
    assert len(estimated) == 18
    assert [s["seconds"] for s in estimated] == [pytest.approx(0.0025, rel=1e-9)] * 18
    # a program compiled before the capture: its first traced run is an ordinary one
    ordinary = device_time.after_window_from_calls("jax", traced, calls, window_end, 1e12)
    assert ordinary[0]["seconds"] == pytest.approx((0.153 + 0.0025) / 2, rel=1e-9)
    # a single traced run is all there is to go by
    single = device_time.after_window_from_calls(
        "jax", traced[:1], calls, window_end, 1e12, compiled={key}
    )
    assert single[0]["seconds"] == pytest.approx(0.153, rel=1e-9)


def test_runs_a_later_window_traced_from_the_queue_are_not_estimated_before_it():
    """A second window that started while 5 runs of `step` were still queued traced 3 of
    them and the 1 `eval` call of its own segment: 3 of the latest `step` calls before it are
    its, not the first window's to estimate; an `eval` the window traced no surplus of and a
    program it did not trace keep their calls."""
    before = [("step", float(t)) for t in range(10)] + [("other", 10.0)]
    after = [("eval", 11.0)]
    traced = [{}, {"step": 2}, {"step": 3, "eval": 1}]
    kept = device_time.without_queued_runs([[], before, after], traced)
    assert kept[0] == [] and kept[2] == after
    assert kept[1] == [("step", float(t)) for t in range(7)] + [("other", 10.0)]
    # calls past the samples' cap are the last segment's own calls
    kept = device_time.without_queued_runs([[], before, after], traced, {"step": 3})
    assert kept[1] == before


def test_runs_launched_after_a_compile_past_the_window_are_not_the_loop_graph_s():
    runs, timed = _timed_runs("cpu")
    traced = sum(span["seconds"] for span in runs[:3])
    window_execute = sum(seconds for _, seconds in timed[:3])
    after = timed[3:]
    counted = (5, window_execute + sum(seconds for _, seconds in after))
    # a compile ended between the two runs after the window: the second may be its graph's
    between = (after[0][0] + after[1][0] - after[1][1]) / 2
    estimated = device_time.after_window_from_samples(
        "torch_xla",
        (3, traced),
        window_execute,
        timed,
        counted,
        timed[2][0],
        1e12,
        "loop",
        between,
    )
    assert [span["graph"] for span in estimated] == ["loop", None]


@pytest.mark.parametrize("stop", ["after the third run ended", "in the third run"])
def test_the_runs_after_the_window_are_the_capture_s_runs_past_the_traced_ones(stop):
    """torch_xla 2.9 (CI, 1 run in ~30): the window read the runtime's totals, then stopped
    the trace; a run that ended in between was traced, yet counted after the window, and
    became a 'not sampled' run too: 22 device spans for 21 runs. A run the stop cut short is
    traced, and its sample ends after the stop: it is not estimated either."""
    runs, timed = _timed_runs("cpu")
    traced = sum(span["seconds"] for span in runs[:3])
    # the totals were read as the second run ended: they held 2 runs
    window_execute = sum(seconds for _, seconds in timed[:2])
    counted = (5, sum(seconds for _, seconds in timed))
    third_end = timed[2][0]
    window_end = third_end + 1e-4 if stop == "after the third run ended" else third_end - 1e-4
    estimated = device_time.after_window_from_samples(
        "torch_xla", (3, traced), window_execute, timed, counted, window_end, 1e12
    )
    assert [s["name"] for s in estimated] == [device_time.SCALED_SAMPLES] * 2
    assert [_end(s) for s in estimated] == pytest.approx([end for end, _ in timed[3:]], abs=1e-6)
