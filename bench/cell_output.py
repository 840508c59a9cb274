"""What a real profiled cell costs to show, in a real IPython shell under ``%%xla_profile``:
the bytes the front end receives (every display output, as a kernel serialises it), the time
from the cell's last line to the end of ``%%xla_profile`` (the capture's end, then the
display; wall and CPU time of the whole process, median of the repeats) and the report's size,
with the wall over CPU time of a 0.1 s busy loop before each cell (how much of a core other
work left this process: the end of a cell's wall time scales with it), and how the main
thread spent the end of the cell beyond its CPU time: ``queued`` (runnable, waiting for a
core other processes held) and ``asleep`` (waiting on something: a lock, a join, a file, the
runtime), from Linux's per-thread scheduler statistics.

Cases (``--case``, default all the runtimes installed in this environment have):

- ``jax-compiles``: a 12-layer JAX transformer step (d=256, 4 heads) compiled for 4 sequence
  lengths, 5 steps each (each repeat defines the step again: 4 compiles every time);
- ``jax-steady``: the same step compiled before the cell, 20 steps in the cell (no compile);
- ``torch_xla-first``: a 4-layer torch_xla transformer's training step, its first profiled
  cell (compiles; torch_xla's HLO texts in the viewer);
- ``torch_xla-steady``: the same step, 20 steps again (no compile).

Targets: output <= 300 kB, end of cell <= 150 ms for a steady cell, report <= 2 MB.

    .venv/bin/python bench/cell_output.py [--repeats 3] [--case jax-steady]
    PJRT_DEVICE=CPU .venv-xla/bin/python bench/cell_output.py
"""

from __future__ import annotations

import argparse
import builtins
import json
import math
import statistics
import tempfile
import time

import results

#: A 12-layer JAX transformer and its jitted SGD step (`warm_step`), not yet run.
JAX_MODEL = """
import jax, jax.numpy as jnp
L, D, H = 12, 256, 4
def layer(p, x):
    B, T, _ = x.shape
    q, k, v = ((x @ p[n]).reshape(B, T, H, D // H) for n in "qkv")
    a = jax.nn.softmax(jnp.einsum("bthd,bshd->bhts", q, k) / 8.0, axis=-1)
    x = jax.nn.gelu(x + jnp.einsum("bhts,bshd->bthd", a, v).reshape(B, T, D) @ p["o"])
    return x + jax.nn.relu(x @ p["w1"]) @ p["w2"]
def model(params, x):
    for p in params:
        x = layer(p, x)
    return jnp.mean(x ** 2)
shapes = dict(q=(D, D), k=(D, D), v=(D, D), o=(D, D), w1=(D, 4 * D), w2=(4 * D, D))
params = [{n: jax.random.normal(jax.random.key(0), s) * 0.02 for n, s in shapes.items()}
          for _ in range(L)]
@jax.jit
def warm_step(params, x):
    loss, g = jax.value_and_grad(model)(params, x)
    return jax.tree.map(lambda p, g: p - 1e-3 * g, params, g), loss
"""
JAX_SETUP = (
    JAX_MODEL
    + """\
x16 = jnp.ones((4, 16, D))
for i in range(3):
    params, loss = warm_step(params, x16)
loss.block_until_ready()
"""
)
#: Kept for the name other scripts import.
SETUP = JAX_SETUP

#: Every cell ends by noting when its last line ran (wall and CPU clocks, and the main
#: thread's scheduler times).
CELL_END = (
    "import builtins, time; builtins.bench_cell_end = "
    "(time.perf_counter(), time.process_time(), builtins.bench_sched())\n"
)


def sched() -> tuple[float, float]:
    """(seconds on a core, seconds runnable but waiting for one) of the calling thread, from
    Linux's ``/proc/thread-self/schedstat`` ((nan, nan) elsewhere): the end of a cell's wall
    time less these two is the time its main thread slept (waited on a lock, a join, a file,
    the runtime)."""
    try:
        with open("/proc/thread-self/schedstat") as stat:
            on_core, queued, _slices = stat.read().split()
    except (OSError, ValueError):
        return math.nan, math.nan
    return int(on_core) / 1e9, int(queued) / 1e9


CELL = (
    """%%xla_profile --var bench_prof
@jax.jit
def step(params, x):
    loss, g = jax.value_and_grad(model)(params, x)
    return jax.tree.map(lambda p, g: p - 1e-3 * g, params, g), loss
for T in (16, 32, 48, 64):
    for i in range(5):
        params, loss = step(params, jnp.ones((4, T, D)))
loss.block_until_ready()
"""
    + CELL_END
)

JAX_STEADY = (
    """%%xla_profile --var bench_prof
for i in range(20):
    params, loss = warm_step(params, x16)
loss.block_until_ready()
"""
    + CELL_END
)

TORCH_XLA_SETUP = """
import torch, torch_xla
torch.manual_seed(0)
device = torch_xla.device()
model = torch.nn.TransformerEncoder(
    torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True, dropout=0.0), 4
).to(device)
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(8, 64, 256).to(device)
def train_step():
    opt.zero_grad()
    loss = (model(x) ** 2).mean()
    loss.backward()
    opt.step()
    torch_xla.sync()
    return loss
"""

TORCH_XLA_CELL = (
    """%%xla_profile --var bench_prof
for i in range(20):
    loss = train_step()
loss.item()
"""
    + CELL_END
)

#: name -> (runtime module, setup, cell, the cell repeated as the measured one; the first run
#: of a "steady" case is its warm-up, not measured)
CASES = {
    "jax-compiles": ("jax", JAX_SETUP, CELL, False),
    "jax-steady": ("jax", JAX_SETUP, JAX_STEADY, True),
    "torch_xla-first": ("torch_xla", TORCH_XLA_SETUP, TORCH_XLA_CELL, False),
    "torch_xla-steady": ("torch_xla", TORCH_XLA_SETUP, TORCH_XLA_CELL, True),
}

TARGET_BYTES, TARGET_REPORT_BYTES, TARGET_STEADY_END_S = 300_000, 2_000_000, 0.150


def contention() -> float:
    """Wall over CPU time of a 0.1 s busy loop in this process: how much longer than its CPU
    time the end of a cell takes on this machine now (1.0 idle; 2.0 when other work takes half
    of the core), to read the wall times by."""
    wall, cpu = time.perf_counter(), time.process_time()
    while time.process_time() - cpu < 0.1:
        pass
    return (time.perf_counter() - wall) / (time.process_time() - cpu)


def run_case(shell, name: str, repeats: int) -> dict:
    from IPython.utils.capture import capture_output

    _runtime, setup, cell, steady = CASES[name]
    shell.run_cell(setup)
    ends, cpus, sizes, loads, queued, asleep = [], [], [], [], [], []
    runs = repeats + 1 if steady else repeats
    builtins.bench_sched = sched  # type: ignore[attr-defined]
    for index in range(runs):
        loads.append(contention())
        with capture_output() as captured:
            shell.run_cell(cell)
            wall, cpu, (on_core, waiting) = time.perf_counter(), time.process_time(), sched()
        ended_wall, ended_cpu, (ended_on_core, ended_waiting) = builtins.bench_cell_end  # type: ignore[attr-defined]
        if steady and index == 0:
            continue  # the warm-up: compiles
        ends.append(wall - ended_wall)
        cpus.append(cpu - ended_cpu)
        queued.append(waiting - ended_waiting)
        asleep.append((wall - ended_wall) - (on_core - ended_on_core) - queued[-1])
        sizes.append(sum(len(json.dumps(o.data, default=str)) for o in captured.outputs))
        if not steady and name.endswith("-first"):
            break  # only the first cell compiles
    profile = shell.user_ns["bench_prof"]
    with tempfile.TemporaryDirectory() as folder:
        report_bytes = len(profile.to_html(f"{folder}/report.html").encode())
    return {
        "compiles": int(len(profile.compiles)),
        "output_bytes": max(sizes),
        "end_of_cell_s": statistics.median(ends),
        "end_of_cell_cpu_s": statistics.median(cpus),
        "end_of_cell_runs": len(ends),
        "end_of_cell_queued_s": statistics.median(queued),
        "end_of_cell_asleep_s": statistics.median(asleep),
        "contention": statistics.median(loads),
        "report_bytes": report_bytes,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    results.add_check_option(parser)
    args = parser.parse_args()

    shell, cases = results.notebook_shell(CASES, args.case)
    print(
        f"{'case':<17} {'compiles':>8} {'output kB':>9} {'end of cell s':>13} {'cpu s':>6} "
        f"{'report kB':>9} {'wall/cpu of a busy loop':>23} {'queued s':>8} {'asleep s':>8}"
    )
    failures = []
    for name in cases:
        figures = run_case(shell, name, args.repeats)
        print(
            f"{name:<17} {figures['compiles']:>8} {figures['output_bytes'] / 1e3:>9.0f} "
            f"{figures['end_of_cell_s']:>13.3f} {figures['end_of_cell_cpu_s']:>6.3f} "
            f"{figures['report_bytes'] / 1e3:>9.0f} {figures['contention']:>23.2f} "
            f"{figures['end_of_cell_queued_s']:>8.3f} {figures['end_of_cell_asleep_s']:>8.3f}"
        )
        results.write("cell_output", {name: figures})
        if figures["output_bytes"] > TARGET_BYTES:
            failures.append(f"{name}: cell output {figures['output_bytes']} B > {TARGET_BYTES}")
        if figures["report_bytes"] > TARGET_REPORT_BYTES:
            failures.append(f"{name}: report {figures['report_bytes']} B > {TARGET_REPORT_BYTES}")
        if name.endswith("-steady") and figures["end_of_cell_s"] > TARGET_STEADY_END_S:
            failures.append(f"{name}: end of cell {figures['end_of_cell_s']:.3f} s > 0.150 s")
    return results.check(failures, args.check)


if __name__ == "__main__":
    raise SystemExit(main())
