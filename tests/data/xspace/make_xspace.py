"""Record the XSpace fixtures of this directory from the real runtimes (and measure trace costs).

    .venv/bin/python tests/data/xspace/make_xspace.py            # all fixtures
    .venv/bin/python tests/data/xspace/make_xspace.py --measure  # + trace cost measurements

The JAX part runs under ``.venv/bin/python`` (JAX 0.10.2, CPU), the old-JAX part under
``.venv-jax-old/bin/python`` (JAX 0.6.1, ``make test-compat-jax`` builds it), the torch_xla
part under ``.venv-xla/bin/python`` with ``PJRT_DEVICE=CPU`` (torch_xla 2.9); each in its own
process.

Fixtures (one ``<host>.xplane.pb`` of one trace each, renamed, plus a JSON of Python-side
``time.time_ns()`` marks taken around every step, to test clock alignment):

- ``jax_sort.xplane.pb`` / ``.json``: ``jax.profiler.start_trace`` with ``python_tracer_level =
  0, host_tracer_level = 2``; a jitted step (``jnp.sort`` of 2**18 floats, a small matmul, tanh,
  sum) called 5 times, each followed by ``block_until_ready``. The first call compiles inside
  the trace.
- ``jax_fori_loop.xplane.pb`` / ``.json``: a jitted ``lax.fori_loop`` run 3 times (see
  :func:`record_jax_loop`): nested thunks.
- ``jax06_queued_mm.xplane.pb`` / ``.json``: JAX/jaxlib 0.6.1 (``.venv-jax-old``): a jitted
  ``tanh(a @ a) @ a`` of 1024x1024 floats called 4 times without waiting, then one
  ``block_until_ready`` (see :func:`record_jax_queued`): thunks without ``run_id``, each run's
  thunks launched on a client thread before its ``ThunkExecutor::Execute (wait for
  completion)`` span, most of the run's work inside that wait.
- ``jax_cut_mm``, ``jax06_cut_mm``, ``jax06_cut_inline_mm`` (``.xplane.pb`` / ``.json``): JAX
  0.10.2 and 0.6.1: 3 waited runs of the same matmul program, then 3 calls without waiting and
  ``stop_trace`` while the first queued run had started (see :func:`record_jax_cut`): the
  trace holds its first thunks but not its wait (0.10: a ``run_id`` no wait names; 0.6: its
  first thunk on a client thread with no wait in the trace, or after the last wait of one).
- ``jax_2dev_cut.xplane.pb`` / ``.json``: JAX 0.10.2 with two host devices
  (``--xla_force_host_platform_device_count=2``): ``tanh(x @ w) @ w`` on a 512x512 ``x``
  sharded over both, 3 waited runs, then 3 calls without waiting and ``stop_trace`` while a
  queued run had finished on one device and not on the other (see
  :func:`record_jax_two_devices`): each thunk carries its ``device_ordinal``, the devices'
  parts of one run share its ``run_id``, and one part has no wait.
- ``torch_xla_mlp.xplane.pb`` / ``.json``: ``torch_xla.debug.profiler.start_trace``; a
  64-128-10 MLP, SGD, 5 training steps each ending in ``torch_xla.sync()``, then
  ``loss.item()``. The first step compiles inside the trace.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
PY_JAX = ROOT / ".venv" / "bin" / "python"
PY_XLA = ROOT / ".venv-xla" / "bin" / "python"
PY_JAX_OLD = ROOT / ".venv-jax-old" / "bin" / "python"


def _newest_xplane(log_dir: str) -> str:
    files = glob.glob(os.path.join(log_dir, "plugins", "profile", "*", "*.xplane.pb"))
    if not files:
        raise SystemExit(f"no *.xplane.pb under {log_dir}")
    return max(files, key=os.path.getmtime)


def _save(name: str, log_dir: str, info: dict) -> None:
    src = _newest_xplane(log_dir)
    shutil.copy(src, HERE / f"{name}.xplane.pb")
    info["source_file"] = os.path.relpath(src, log_dir)
    info["bytes"] = os.path.getsize(src)
    (HERE / f"{name}.json").write_text(json.dumps(info, indent=1) + "\n")
    print(f"{name}: {info['bytes']} bytes")


# ------------------------------------------------------------------------------------- JAX


def _jax_setup():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def step(x, w):
        s = jnp.sort(x)
        y = jnp.tanh(s[:1024].reshape(64, 16) @ w) + 1.0
        return s, y.sum()

    x = jax.random.normal(jax.random.PRNGKey(0), (1 << 18,))
    w = jnp.ones((16, 16))
    return jax, step, x, w


def _jax_options(python_tracer_level: int = 0):
    import jax.profiler as jp

    opts = jp.ProfileOptions()
    opts.python_tracer_level = python_tracer_level
    opts.host_tracer_level = 2
    return opts


def record_jax() -> None:
    import jax.profiler as jp

    jax, step, x, w = _jax_setup()
    log_dir = tempfile.mkdtemp(prefix="xlanb_jax_trace_")
    before_start = time.time_ns()
    jp.start_trace(log_dir, profiler_options=_jax_options())
    steps = []
    for _ in range(5):
        a = time.time_ns()
        _, total = step(x, w)
        total.block_until_ready()
        steps.append([a, time.time_ns()])
    jp.stop_trace()
    after_stop = time.time_ns()
    _save(
        "jax_sort",
        log_dir,
        {
            "runtime": f"jax {jax.__version__}",
            "backend": jax.default_backend(),
            "before_start_ns": before_start,
            "after_stop_ns": after_stop,
            "steps": steps,
        },
    )


def measure_jax(cells: int = 10) -> dict:
    """start_trace / stop_trace cost per cell, and python_tracer_level 1 vs 0 on a loop."""
    import jax
    import jax.numpy as jnp
    import jax.profiler as jp

    @jax.jit
    def small(x):
        return jnp.tanh(x @ x.T).sum()

    x = jnp.ones((32, 32))
    small(x).block_until_ready()

    def cell():
        for _ in range(20):
            small(x).block_until_ready()

    starts, stops, traced, plain = [], [], [], []
    for _ in range(cells):
        t = time.perf_counter()
        cell()
        plain.append(time.perf_counter() - t)
        d = tempfile.mkdtemp(prefix="xlanb_m_")
        t0 = time.perf_counter()
        jp.start_trace(d, profiler_options=_jax_options())
        t1 = time.perf_counter()
        cell()
        t2 = time.perf_counter()
        jp.stop_trace()
        t3 = time.perf_counter()
        starts.append(t1 - t0)
        traced.append(t2 - t1)
        stops.append(t3 - t2)
        shutil.rmtree(d)

    def helper(v, depth):
        return v if depth == 0 else helper(v, depth - 1)

    def loop(n=2000):
        # A Python-heavy step (50 Python calls, then one dispatch): the python tracer's cost
        # scales with Python calls, not with XLA work.
        t = time.perf_counter()
        for _ in range(n):
            r = small(helper(x, 50))
        r.block_until_ready()
        return time.perf_counter() - t

    loop(100)
    out = {
        "cells": cells,
        "start_s_median": statistics.median(starts),
        "stop_s_median": statistics.median(stops),
        "cell_plain_s_median": statistics.median(plain),
        "cell_traced_s_median": statistics.median(traced),
    }
    runs: dict[str, list[float]] = {"none": [], "0": [], "1": []}
    for _ in range(3):  # interleaved, to share the machine's noise
        runs["none"].append(loop())
        for level in (0, 1):
            d = tempfile.mkdtemp(prefix="xlanb_m_")
            jp.start_trace(d, profiler_options=_jax_options(level))
            runs[str(level)].append(loop())
            t = time.perf_counter()
            jp.stop_trace()
            out[f"loop2000_python_tracer_{level}_stop_s"] = time.perf_counter() - t
            out[f"loop2000_python_tracer_{level}_bytes"] = os.path.getsize(_newest_xplane(d))
            shutil.rmtree(d)
    out["loop2000_no_trace_s"] = runs["none"]
    out["loop2000_python_tracer_0_s"] = runs["0"]
    out["loop2000_python_tracer_1_s"] = runs["1"]
    return out


# ------------------------------------------------------------------------------- torch_xla


def _xla_setup():
    import torch
    import torch_xla

    dev = torch_xla.device()
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)
    ).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 64).to(dev)
    y = torch.randint(0, 10, (32,)).to(dev)

    def train_step():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        torch_xla.sync()
        return loss

    return torch, torch_xla, train_step


def record_torch_xla() -> None:
    import torch_xla.debug.profiler as xp

    torch, torch_xla, train_step = _xla_setup()
    log_dir = tempfile.mkdtemp(prefix="xlanb_xla_trace_")
    before_start = time.time_ns()
    xp.start_trace(log_dir)
    steps = []
    for _ in range(5):
        a = time.time_ns()
        loss = train_step()
        steps.append([a, time.time_ns()])
    value = loss.item()
    after_item = time.time_ns()
    xp.stop_trace()
    after_stop = time.time_ns()
    _save(
        "torch_xla_mlp",
        log_dir,
        {
            "runtime": f"torch {torch.__version__}, torch_xla {torch_xla.__version__}",
            "backend": "PJRT CPU",
            "before_start_ns": before_start,
            "steps": steps,
            "after_item_ns": after_item,
            "after_stop_ns": after_stop,
            "loss": value,
        },
    )


def measure_torch_xla(cells: int = 10) -> dict:
    import torch_xla.debug.profiler as xp

    torch, torch_xla, train_step = _xla_setup()
    for _ in range(3):
        train_step()
    torch_xla.sync(wait=True)

    def cell(n=20):
        for _ in range(n):
            loss = train_step()
        loss.item()

    starts, stops, traced, plain = [], [], [], []
    for _ in range(cells):
        t = time.perf_counter()
        cell()
        plain.append(time.perf_counter() - t)
        d = tempfile.mkdtemp(prefix="xlanb_m_")
        t0 = time.perf_counter()
        xp.start_trace(d)
        t1 = time.perf_counter()
        active = sys.getprofile()
        cell()
        t2 = time.perf_counter()
        xp.stop_trace()
        t3 = time.perf_counter()
        starts.append(t1 - t0)
        traced.append(t2 - t1)
        stops.append(t3 - t2)
        shutil.rmtree(d)
    out = {
        "cells": cells,
        "start_s_median": statistics.median(starts),
        "stop_s_median": statistics.median(stops),
        "cell_plain_s_median": statistics.median(plain),
        "cell_traced_s_median": statistics.median(traced),
        "sys_getprofile_during_trace": repr(active),
    }

    def loop(n=2000):
        t = time.perf_counter()
        cell(n)
        return time.perf_counter() - t

    plain_runs, traced_runs = [], []
    for _ in range(3):  # interleaved, to share the machine's noise
        plain_runs.append(loop())
        d = tempfile.mkdtemp(prefix="xlanb_m_")
        xp.start_trace(d)
        traced_runs.append(loop())
        t = time.perf_counter()
        xp.stop_trace()
        out["loop2000_trace_stop_s"] = time.perf_counter() - t
        out["loop2000_trace_bytes"] = os.path.getsize(_newest_xplane(d))
        shutil.rmtree(d)
    out["loop2000_no_trace_s"] = plain_runs
    out["loop2000_trace_s"] = traced_runs
    return out


# ------------------------------------------------------------------------------------ main


def record_jax_loop() -> None:
    """``jax_fori_loop``: a jitted ``lax.fori_loop`` of 10 matmul + tanh steps, run 3 times
    (compiled before the trace): XLA:CPU's ``while`` thunk holds its body's thunks."""
    import jax
    import jax.numpy as jnp
    import jax.profiler as jp

    @jax.jit
    def loop_step(a):
        return jax.lax.fori_loop(0, 10, lambda i, x: jnp.tanh(x @ a), a)

    a = jnp.ones((128, 128)) / 128
    loop_step(a).block_until_ready()
    log_dir = tempfile.mkdtemp(prefix="xlanb_jax_trace_")
    before_start = time.time_ns()
    jp.start_trace(log_dir, profiler_options=_jax_options())
    steps = []
    for _ in range(3):
        started = time.time_ns()
        loop_step(a).block_until_ready()
        steps.append([started, time.time_ns()])
    jp.stop_trace()
    info = {"runtime": f"jax {jax.__version__}", "backend": jax.default_backend()}
    info |= {"before_start_ns": before_start, "after_stop_ns": time.time_ns(), "steps": steps}
    _save("jax_fori_loop", log_dir, info)


def record_jax_queued() -> None:
    """``jax06_queued_mm`` (run under JAX 0.6.1): 4 runs of a 1024x1024 matmul program queued
    without waiting, then one ``block_until_ready``; ``calls`` are the Python-side marks
    around each call, ``blocked`` those around the wait."""
    import jax
    import jax.numpy as jnp
    import jax.profiler as jp

    @jax.jit
    def mm(a):
        return jnp.tanh(a @ a) @ a

    big = jax.random.normal(jax.random.key(0), (1024, 1024))
    mm(big).block_until_ready()
    log_dir = tempfile.mkdtemp(prefix="xlanb_jax_trace_")
    before_start = time.time_ns()
    jp.start_trace(log_dir, profiler_options=_jax_options())
    calls = []
    for _ in range(4):
        started = time.time_ns()
        out = mm(big)
        calls.append([started, time.time_ns()])
    waited = time.time_ns()
    out.block_until_ready()
    blocked = [waited, time.time_ns()]
    jp.stop_trace()
    info = {"runtime": f"jax {jax.__version__}", "backend": jax.default_backend()}
    info |= {"before_start_ns": before_start, "after_stop_ns": time.time_ns()}
    info |= {"calls": calls, "blocked": blocked}
    _save("jax06_queued_mm", log_dir, info)


WAIT_SPAN = "ThunkExecutor::Execute (wait for completion)"


def _cut_kind(events) -> str | None:
    """How the trace of :func:`record_jax_cut` holds its cut run, if it holds one: ``run_id``
    (a run whose ops carry a run id that no wait span names), ``other_line`` (no run ids: a
    thunk on a client thread with no wait in the trace) or ``same_line`` (no run ids: thunks
    after the last wait on a thread that has waits)."""
    ops = events[events["hlo_op"].notna()]
    waits = events[events["name"] == WAIT_SPAN]
    if ops["run_id"].notna().all():
        return "run_id" if not set(ops["run_id"]) <= set(waits["run_id"].dropna()) else None
    clients = ops[ops["line"].str.contains("Client")]
    if not clients["line"].isin(set(waits["line"])).all():
        return "other_line"
    last_wait = waits.groupby("line")["start_ns"].max()
    after = clients["start_ns"].to_numpy() > clients["line"].map(last_wait).to_numpy()
    return "same_line" if after.any() else None


def _trace_with_queued_runs(run, attempt: int) -> tuple[str, int, int]:
    """A JAX trace of 3 waited calls of `run`, then 3 calls without waiting and ``stop_trace``
    after a spin of ``attempt % 40`` ms: (its folder, epoch ns before its start and after its
    stop)."""
    import jax.profiler as jp

    log_dir = tempfile.mkdtemp(prefix="xlanb_jax_trace_")
    before_start = time.time_ns()
    jp.start_trace(log_dir, profiler_options=_jax_options())
    for _ in range(3):
        run().block_until_ready()
    queued = [run() for _ in range(3)]
    spin_until = time.perf_counter() + (attempt % 40) / 1000
    while time.perf_counter() < spin_until:
        pass
    jp.stop_trace()
    after_stop = time.time_ns()
    queued[-1].block_until_ready()
    return log_dir, before_start, after_stop


def record_jax_cut(names: dict[str, str], tries: int = 400) -> None:
    """Traces stopped while a queued run had started: 3 runs of a 1024x1024 matmul program,
    each waited for, then 3 calls without waiting and ``stop_trace`` after a spin of 0-39 ms,
    until a trace holds a cut run of each kind in `names` (:func:`_cut_kind` -> fixture
    name). ``waited_runs`` and ``queued_calls`` say what the trace was asked to hold."""
    import jax
    import jax.numpy as jnp

    from xlanb.formats.xspace import read_xspace

    @jax.jit
    def mm(a):
        return jnp.tanh(a @ a) @ a

    big = jax.random.normal(jax.random.key(0), (1024, 1024))
    mm(big).block_until_ready()
    wanted = dict(names)
    for attempt in range(tries):
        log_dir, before_start, after_stop = _trace_with_queued_runs(lambda: mm(big), attempt)
        kind = _cut_kind(read_xspace(_newest_xplane(log_dir)).events)
        if kind in wanted:
            info = {"runtime": f"jax {jax.__version__}", "backend": jax.default_backend()}
            info |= {"before_start_ns": before_start, "after_stop_ns": after_stop}
            info |= {"waited_runs": 3, "queued_calls": 3, "cut": kind, "attempt": attempt}
            _save(wanted.pop(kind), log_dir, info)
        shutil.rmtree(log_dir, ignore_errors=True)
        if not wanted:
            return
    raise SystemExit(f"no trace cut a run as {sorted(wanted)} in {tries} tries")


def _cut_on_one_device(events) -> bool:
    """Whether a trace holds a run that one device waited for and another did not (its ops
    there carry the run's id, no wait of that device names it)."""
    ops = events[events["hlo_op"].notna()]
    waits = events[events["name"] == WAIT_SPAN]
    waited = set(zip(waits["run_id"], waits["device_ordinal"], strict=True))
    parts = set(zip(ops["run_id"], ops["device_ordinal"], strict=True))
    return any(run in set(waits["run_id"]) for run, _ in parts - waited)


def record_jax_two_devices(tries: int = 400) -> None:
    """A trace of two host devices stopped while a queued run had ended on one device only:
    3 waited runs of ``tanh(x @ w) @ w`` with `x` sharded over both devices, then 3 calls
    without waiting and ``stop_trace`` after a spin of 0-39 ms (in a process whose XLA_FLAGS
    force two host devices)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    from xlanb.formats.xspace import read_xspace

    mesh = Mesh(jax.devices(), ("d",))
    x = jax.device_put(jnp.ones((512, 512)), NamedSharding(mesh, PartitionSpec("d")))
    w = jnp.ones((512, 512))

    @jax.jit
    def step(x, w):
        return jnp.tanh(x @ w) @ w

    step(x, w).block_until_ready()
    for attempt in range(tries):
        log_dir, before_start, after_stop = _trace_with_queued_runs(lambda: step(x, w), attempt)
        if _cut_on_one_device(read_xspace(_newest_xplane(log_dir)).events):
            info = {"runtime": f"jax {jax.__version__}", "backend": jax.default_backend()}
            info |= {"devices": len(jax.devices()), "before_start_ns": before_start}
            info |= {"after_stop_ns": after_stop, "waited_runs": 3, "queued_calls": 3}
            info |= {"cut": "one_device", "attempt": attempt}
            _save("jax_2dev_cut", log_dir, info)
            shutil.rmtree(log_dir, ignore_errors=True)
            return
        shutil.rmtree(log_dir, ignore_errors=True)
    raise SystemExit(f"no trace cut a run on one device only in {tries} tries")


def main(argv: list[str]) -> None:
    if argv and argv[0] == "jax-2dev":
        record_jax_two_devices()
        return
    if argv and argv[0] == "jax-old":
        record_jax_queued()
        record_jax_cut({"other_line": "jax06_cut_mm", "same_line": "jax06_cut_inline_mm"})
        return
    if argv and argv[0] in ("jax", "torch_xla"):
        which, measure = argv[0], "--measure" in argv
        if measure:
            result = measure_jax() if which == "jax" else measure_torch_xla()
            print("MEASURE", which, json.dumps(result, indent=1))
        else:
            if which == "jax":
                record_jax()
                record_jax_loop()
                record_jax_cut({"run_id": "jax_cut_mm"})
            else:
                record_torch_xla()
        return
    extra = ["--measure"] if "--measure" in argv else []
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    subprocess.run([str(PY_JAX), __file__, "jax", *extra], env=env, check=True)
    if not extra:
        two = {**env, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
        subprocess.run([str(PY_JAX), __file__, "jax-2dev"], env=two, check=True)
    if not extra and PY_JAX_OLD.exists():
        subprocess.run([str(PY_JAX_OLD), __file__, "jax-old"], env=env, check=True)
    elif not extra:
        print("jax06_queued_mm: not recorded (no .venv-jax-old; make test-compat-jax builds it)")
    subprocess.run(
        [str(PY_XLA), __file__, "torch_xla", *extra],
        env={**os.environ, "PJRT_DEVICE": "CPU"},
        check=True,
    )


if __name__ == "__main__":
    main(sys.argv[1:])
