"""Typical notebook cells (0.5-5 s) profiled under ``%%xla_profile`` against the same cell
run bare, in a real IPython shell, alternating bare and profiled runs; the ratio of their
median wall times (the cell's run through the shell, display included) with its spread (the
lowest and highest ratio of the pairs), the same for the cell's own lines alone (its first
line to its last: what the capture costs while the cell runs), the process's CPU time
profiled / bare (all threads), and the end of cell: seconds from its last line to the end of
``%%xla_profile`` (display ready), and the main thread's CPU seconds in them.

Cases (``--case``; default all that the runtimes installed here have):

- ``flax-cnn``: a flax nnx CNN, 100 Adam steps (optax) on 8 32x32 images (compiled before;
  needs `pip install flax optax`, which xlanb's environments do not hold);
- ``jax-transformer-first``: a 12-layer JAX transformer step (d=256) defined, compiled (a
  program never seen before: its learning rate differs each run) and run 3 times in the cell;
- ``jax-transformer-steady``: the same step compiled before, 8 steps in the cell;
- ``numpy-ema``: 300 steps of a jitted MLP step on a NumPy batch, with an eager EMA update
  of the parameters after each step;
- ``jax-train-then-eval``: 100 runs of a jitted step (4 512x512 matmuls), then 30 runs of
  another program (12), both compiled before: the second one's runs come after the trace's
  window (with ``--magic-args='--trace-runs 50'`` every run traces, a second one included);
- ``jax-last-batch``: the same 100 runs of the step, then one last batch of another shape
  (a new number of rows every run: it compiles each time, bare too), after the trace's window:
  the compile starts a second window;
- ``torch_xla-mlp``: a torch_xla MLP training step, 100 steps (``.venv-xla``).

Target: profiled / bare <= 1.05; end of a first cell <= 150 ms + 10% of its compile time.

    .venv/bin/python bench/typical_cells.py [--repeats 5] [--case numpy-ema] [--magic-args=ARGS]
    PJRT_DEVICE=CPU .venv-xla/bin/python bench/typical_cells.py --case torch_xla-mlp
"""

from __future__ import annotations

import argparse
import builtins
import itertools
import statistics
import time

import results
from cell_output import JAX_MODEL

FLAX_SETUP = """
import jax, jax.numpy as jnp, numpy as np, optax
from flax import nnx
class CNN(nnx.Module):
    def __init__(self, rngs):
        self.c1 = nnx.Conv(3, 32, (3, 3), rngs=rngs)
        self.c2 = nnx.Conv(32, 64, (3, 3), rngs=rngs)
        self.fc = nnx.Linear(64 * 8 * 8, 10, rngs=rngs)
    def __call__(self, x):
        x = nnx.avg_pool(nnx.relu(self.c1(x)), (2, 2), (2, 2))
        x = nnx.avg_pool(nnx.relu(self.c2(x)), (2, 2), (2, 2))
        return self.fc(x.reshape(x.shape[0], -1))
model = CNN(nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
@nnx.jit
def train_step(model, optimizer, x, y):
    def loss_fn(model):
        return optax.softmax_cross_entropy_with_integer_labels(model(x), y).mean()
    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss
xs = jnp.asarray(np.random.default_rng(0).normal(size=(8, 32, 32, 3)), jnp.float32)
ys = jnp.zeros((8,), jnp.int32)
for i in range(3):
    loss = train_step(model, optimizer, xs, ys)
loss.block_until_ready()
"""
FLAX_CELL = """
for i in range(100):
    loss = train_step(model, optimizer, xs, ys)
loss.block_until_ready()
"""

TRANSFORMER_SETUP = (
    JAX_MODEL
    + """\
x32 = jnp.ones((4, 32, D))
for i in range(3):
    params, loss = warm_step(params, x32)
loss.block_until_ready()
"""
)
#: RUN is replaced by the run's number: each run compiles a program never seen before (its
#: learning rate differs), as a user's first cell does (texts parsed before are kept).
TRANSFORMER_FIRST = """
@jax.jit
def step(params, x):
    loss, g = jax.value_and_grad(model)(params, x)
    return jax.tree.map(lambda p, g: p - 1e-3 * (1 + RUN / 1e6) * g, params, g), loss
for i in range(3):
    params, loss = step(params, x32)
loss.block_until_ready()
"""
TRANSFORMER_STEADY = """
for i in range(8):
    params, loss = warm_step(params, x32)
loss.block_until_ready()
"""

NUMPY_EMA_SETUP = """
import jax, jax.numpy as jnp, numpy as np
rng = np.random.default_rng(0)
params = {"w1": jnp.ones((256, 512)) * 0.01, "w2": jnp.ones((512, 10)) * 0.01}
ema = jax.tree.map(lambda p: p, params)
@jax.jit
def mlp_step(params, x):
    def loss_fn(params):
        return jnp.mean((jax.nn.relu(x @ params["w1"]) @ params["w2"]) ** 2)
    loss, g = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda p, g: p - 1e-3 * g, params, g), loss
batch = rng.normal(size=(64, 256)).astype(np.float32)
for i in range(3):
    params, loss = mlp_step(params, batch)
    ema = jax.tree.map(lambda e, p: 0.99 * e + 0.01 * p, ema, params)
loss.block_until_ready()
"""
NUMPY_EMA_CELL = """
for i in range(300):
    batch = rng.normal(size=(64, 256)).astype(np.float32)
    params, loss = mlp_step(params, batch)
    ema = jax.tree.map(lambda e, p: 0.99 * e + 0.01 * p, ema, params)
loss.block_until_ready()
"""

TORCH_XLA_SETUP = """
import torch, torch_xla
torch.manual_seed(0)
device = torch_xla.device()
net = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.ReLU(),
                          torch.nn.Linear(1024, 10)).to(device)
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
xb = torch.randn(64, 256).to(device)
def train_step():
    opt.zero_grad()
    loss = (net(xb) ** 2).mean()
    loss.backward()
    opt.step()
    torch_xla.sync()
    return loss
for i in range(3):
    loss = train_step()
loss.item()
"""
TORCH_XLA_CELL = """
for i in range(100):
    loss = train_step()
loss.item()
"""

#: The cell's first and last lines note when they ran: the cell's own lines (in cell) are
#: measured between them, the end of cell from the last, on the wall clock and the main
#: thread's CPU clock.
CELL_START = "import builtins, time; builtins.bench_cell_start = time.perf_counter()\n"
CELL_END = (
    "import builtins, time; builtins.bench_cell_end = (time.perf_counter(), time.thread_time())\n"
)

#: name -> (runtime module, setup, cell, whether it is a first cell: compiles every run)
TRAIN_EVAL_SETUP = """
import jax, jax.numpy as jnp
@jax.jit
def train(w, x):
    for _ in range(4):
        x = jnp.tanh(x @ w)
    return w - 1e-3 * x.T @ x, x.sum()
@jax.jit
def evaluate(w, x):
    for _ in range(12):
        x = jnp.tanh(x @ w)
    return x.sum()
w = jnp.ones((512, 512)) * 0.01
x = jnp.ones((512, 512))
w, l = train(w, x)
evaluate(w, x).block_until_ready()
"""
TRAIN_EVAL_CELL = """
for i in range(100):
    w, l = train(w, x)
l.block_until_ready()
for i in range(30):
    e = evaluate(w, x)
e.block_until_ready()
"""

LAST_BATCH_CELL = """
for i in range(100):
    w, l = train(w, x)
w, l = train(w, x[: 200 + RUN])
l.block_until_ready()
"""

CASES = {
    "flax-cnn": ("flax", FLAX_SETUP, FLAX_CELL, False),
    "jax-transformer-first": ("jax", TRANSFORMER_SETUP, TRANSFORMER_FIRST, True),
    "jax-transformer-steady": ("jax", TRANSFORMER_SETUP, TRANSFORMER_STEADY, False),
    "numpy-ema": ("jax", NUMPY_EMA_SETUP, NUMPY_EMA_CELL, False),
    "jax-train-then-eval": ("jax", TRAIN_EVAL_SETUP, TRAIN_EVAL_CELL, False),
    "jax-last-batch": ("jax", TRAIN_EVAL_SETUP, LAST_BATCH_CELL, False),
    "torch_xla-mlp": ("torch_xla", TORCH_XLA_SETUP, TORCH_XLA_CELL, False),
}


def timed(shell, cell: str) -> tuple[float, float, float, float, float]:
    """(wall seconds of `cell` through the shell, seconds from its last line to the end,
    seconds from its first line to its last, CPU seconds of the process, all its threads, CPU
    seconds of the main thread from the last line to the end: the end less what it waited
    for, a worker or the cores other processes held). The start of the cell (the shell's
    start to its first line) is the wall less the other two."""
    from IPython.utils.capture import capture_output

    with capture_output():
        started, cpu = time.perf_counter(), time.process_time()
        result = shell.run_cell(cell)
        ended, ended_cpu = time.perf_counter(), time.thread_time()
        cpu = time.process_time() - cpu
    if result.error_in_exec is not None:
        raise result.error_in_exec
    first = builtins.bench_cell_start  # type: ignore[attr-defined]
    last, last_cpu = builtins.bench_cell_end  # type: ignore[attr-defined]
    return ended - started, ended - last, last - first, cpu, ended_cpu - last_cpu


def run_case(shell, name: str, repeats: int, magic_args: str = "") -> dict:
    _runtime, setup, cell, first = CASES[name]
    with_setup = shell.run_cell(setup)
    if not with_setup.success:  # e.g. flax and optax, which the bench alone needs
        raise RuntimeError(f"{name}: its setup failed: {with_setup.error_in_exec!r}")
    magic = f"%%xla_profile --var bench_prof {magic_args}".rstrip()
    profiled_cell = magic + "\n" + CELL_START + cell + CELL_END
    bare_cell = CELL_START + cell + CELL_END
    runs = itertools.count()  # RUN in a cell: its run's number
    # warm-up: xlanb's own first import and the runtime's hooks
    timed(shell, profiled_cell.replace("RUN", str(next(runs))))
    bare, profiled, ratios, ends, end_cpus, compile_s = [], [], [], [], [], []
    starts: dict[bool, list[float]] = {False: [], True: []}
    in_cell: dict[bool, list[float]] = {False: [], True: []}
    cpu: dict[bool, list[float]] = {False: [], True: []}
    for index in range(repeats):
        order = [(bare_cell, False), (profiled_cell, True)]
        for text, is_profiled in order if index % 2 == 0 else order[::-1]:
            wall, end, lines, cpu_s, end_cpu = timed(shell, text.replace("RUN", str(next(runs))))
            (profiled if is_profiled else bare).append(wall)
            in_cell[is_profiled].append(lines)
            starts[is_profiled].append(wall - lines - end)
            cpu[is_profiled].append(cpu_s)
            if is_profiled:
                ends.append(end)
                end_cpus.append(end_cpu)
                compiles = shell.user_ns["bench_prof"].compiles
                compile_s.append(float(compiles["seconds"].sum()) if len(compiles) else 0.0)
        ratios.append(profiled[-1] / bare[-1])
    return {
        "bare_s": statistics.median(bare),
        "profiled_s": statistics.median(profiled),
        "ratio": statistics.median(profiled) / statistics.median(bare),
        "ratio_low": min(ratios),
        "ratio_high": max(ratios),
        # the cell's own lines, profiled / bare (medians), and the spread of the pairs' ratios
        "in_cell_ratio": statistics.median(in_cell[True]) / statistics.median(in_cell[False]),
        "in_cell_ratio_spread": [
            min(p / b for p, b in zip(in_cell[True], in_cell[False], strict=True)),
            max(p / b for p, b in zip(in_cell[True], in_cell[False], strict=True)),
        ],
        # the process's CPU seconds (all threads), profiled / bare: less moved by the load of
        # a shared machine than the wall time
        "cpu_ratio": statistics.median(cpu[True]) / statistics.median(cpu[False]),
        # the start of the cell (its first line less the bare cell's) and its end: what the
        # capture adds outside the cell's lines, in seconds
        "start_of_cell_s": statistics.median(starts[True]) - statistics.median(starts[False]),
        "end_of_cell_s": statistics.median(ends),
        "end_of_cell_spread_s": [min(ends), max(ends)],
        "end_of_cell_cpu_s": statistics.median(end_cpus),
        "compile_s": statistics.median(compile_s),
        "first_cell": first,
        "repeats": repeats,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    parser.add_argument(
        "--magic-args",
        default="",
        help="options for the profiled cell's %%%%xla_profile (--no-trace: what the rest costs)",
    )
    results.add_check_option(parser)
    args = parser.parse_args()

    shell, cases = results.notebook_shell(CASES, args.case)
    print(
        f"{'case':<23} {'bare s':>7} {'profiled s':>10} {'ratio':>6} {'spread':>13} "
        f"{'in cell':>7} {'spread':>13} {'cpu':>6} {'start s':>7} {'end of cell s':>13} "
        f"{'CPU s':>6} {'compile s':>9}"
    )
    failures = []
    for name in cases:
        figures = run_case(shell, name, args.repeats, args.magic_args)
        print(
            f"{name:<23} {figures['bare_s']:>7.3f} {figures['profiled_s']:>10.3f} "
            f"{figures['ratio']:>6.3f} {figures['ratio_low']:>6.3f}-{figures['ratio_high']:<6.3f} "
            f"{figures['in_cell_ratio']:>7.3f} {figures['in_cell_ratio_spread'][0]:>6.3f}-"
            f"{figures['in_cell_ratio_spread'][1]:<6.3f} {figures['cpu_ratio']:>6.3f} "
            f"{figures['start_of_cell_s']:>7.3f} {figures['end_of_cell_s']:>13.3f} "
            f"{figures['end_of_cell_cpu_s']:>6.3f} {figures['compile_s']:>9.2f}"
        )
        results.write("typical_cells", {name: figures})
        if figures["bare_s"] >= 0.5 and figures["ratio"] > 1.05:
            failures.append(f"{name}: profiled/bare {figures['ratio']:.3f} > 1.05")
        end_target = 0.150 + 0.1 * figures["compile_s"]
        if figures["first_cell"] and figures["end_of_cell_s"] > end_target:
            failures.append(
                f"{name}: end of cell {figures['end_of_cell_s']:.3f} s > {end_target:.3f}"
            )
    return results.check(failures, args.check)


if __name__ == "__main__":
    raise SystemExit(main())
