"""How close the estimate of the runs after a trace's window comes to their measured time.

Each recorded trace holds all its runs, measured. Here its window is taken to close after
the first ``k`` of them, and :mod:`xlanb.analysis.device_time` estimates the others the way a
live capture would, from what the runtime gives after the window: JAX's calls (launched at
the host's execute spans, XLA:GPU) and torch_xla's ExecuteTime samples (taken as each run's
launch to completion: the trace's thunk executor spans on XLA:CPU, the host's execute span
to the run's last kernel on XLA:GPU). Printed per trace: the estimated device seconds of the
untraced runs against their measured seconds (for the calls, also where the cell waited for
its last run, so that the runs fit before its end: ``drained``); for the samples, with the
one-at-a-time rule (a run starts no earlier than the run before it ended) and without it
(each sample scaled).

    .venv/bin/python bench/after_window.py
"""

from __future__ import annotations

from pathlib import Path

from xlanb.analysis import device_time
from xlanb.formats.xspace import read_xspace

DATA = Path(__file__).resolve().parent.parent / "tests" / "data"
FAR = 1e12  # a capture that ends after every estimated run


def _runs(path: Path, backend: str) -> tuple[list[dict], object]:
    events = read_xspace(path, markers=False)
    _, spans = device_time.rows(backend, events, (0.0, FAR))
    return sorted((s for s in spans if s["lane"] == "device"), key=lambda s: s["start"]), events


def _end(span: dict) -> float:
    return span["start"] + span["seconds"]


def from_calls(name: str, path: Path, traced_count: int) -> str:
    runs, events = _runs(path, "jax")
    launches = (device_time.gpu_runs(events.events)["start_ns"] / 1e9).tolist()
    key = device_time.program_key("jit(train_step)")
    estimated = device_time.after_window_from_calls(
        "jax",
        device_time.traced_runs(runs[:traced_count]),
        [(key, launched) for launched in launches],
        _end(runs[traced_count - 1]),
        FAR,
    )
    # the cell waited for its last run (block_until_ready): every run ended by then
    fitted = device_time.after_window_from_calls(
        "jax",
        device_time.traced_runs(runs[:traced_count]),
        [(key, launched) for launched in launches],
        _end(runs[traced_count - 1]),
        _end(runs[-1]),
        drained=True,
    )
    measured = sum(s["seconds"] for s in runs[traced_count:])
    guess = sum(s["seconds"] for s in estimated)
    fit = sum(s["seconds"] for s in fitted)
    return (
        f"{name:<34} calls    {traced_count:>2} traced, {len(runs) - traced_count:>2} after: "
        f"estimated {guess * 1e3:8.3f} ms, measured {measured * 1e3:8.3f} ms "
        f"({guess / measured:.3f}; ending with the cell's wait {fit / measured:.3f})"
    )


def _timed(path: Path, backend: str) -> tuple[list[dict], list[tuple[float, float]]]:
    runs, events = _runs(path, backend)
    if device_time.is_gpu(events.events):
        launches = (device_time.gpu_runs(events.events)["start_ns"] / 1e9).tolist()
        return runs, [
            (_end(run), _end(run) - launch) for run, launch in zip(runs, launches, strict=True)
        ]
    windows = device_time._execution_windows(events.events) / 1e9
    return runs, [(float(done), float(done - launch)) for launch, done in windows]


def from_samples(name: str, path: Path, backend: str, traced_count: int) -> str:
    runs, timed = _timed(path, backend)
    traced = sum(s["seconds"] for s in runs[:traced_count])
    window_execute = sum(seconds for _, seconds in timed[:traced_count])
    after = timed[traced_count:]
    estimated = device_time.after_window_from_samples(
        backend,
        traced,
        window_execute,
        timed,
        (len(after), sum(seconds for _, seconds in after)),
        timed[traced_count - 1][0],
        FAR,
    )
    ratio = min(traced / window_execute, 1.0)
    scaled = sum(seconds * ratio for _, seconds in after)
    measured = sum(s["seconds"] for s in runs[traced_count:])
    guess = sum(s["seconds"] for s in estimated)
    return (
        f"{name:<34} samples  {traced_count:>2} traced, {len(after):>2} after: "
        f"estimated {guess * 1e3:8.3f} ms, measured {measured * 1e3:8.3f} ms "
        f"({guess / measured:.3f}; each sample scaled: {scaled / measured:.3f})"
    )


def main() -> None:
    gpu = DATA / "xla_gpu"
    for case in ("mlp_cmdbuf", "mlp_nocmdbuf", "transformer_cmdbuf", "transformer_nocmdbuf"):
        print(from_calls(f"XLA:GPU {case}", gpu / case / "steady5.xplane.pb", 2))
        print(from_samples(f"XLA:GPU {case}", gpu / case / "steady5.xplane.pb", "jax", 2))
    first = gpu / "mlp_first15" / "first15.xplane.pb"
    print(from_calls("XLA:GPU mlp_first15", first, 5))
    print(from_samples("XLA:GPU mlp_first15", first, "jax", 5))
    mlp = DATA / "xspace" / "torch_xla_mlp.xplane.pb"
    print(from_samples("XLA:CPU torch_xla_mlp", mlp, "torch_xla", 2))


if __name__ == "__main__":
    main()
