"""Profiler overhead: a training loop timed bare and under `xlanb.profile()`, alternating in one
process, and the fixed cost of an empty profiled cell. Prints a table.

    PJRT_DEVICE=CPU .venv-xla/bin/python bench/overhead.py     # torch_xla
    .venv/bin/python bench/overhead.py                         # torch._lazy (and JAX)

The debug switches are on for both timings (as after `%load_ext xlanb`): the ratio is the cost
of profiling a cell, not of the switches.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time

import xlanb

xlanb.enable()  # before any runtime starts, as %load_ext xlanb does


def torch_loop(device, sync):
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 64).to(device)
    y = torch.randn(32, 10).to(device)
    sync()

    def step():
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        sync()

    def finish():
        sync()
        float(loss_probe())

    def loss_probe():
        return ((model(x) - y) ** 2).mean().detach().cpu()

    return step, finish


def torch_xla_case():
    import torch_xla

    return "torch_xla", "torch_xla", *torch_loop(torch_xla.device(), torch_xla.sync)


def torch_lazy_case():
    import torch._lazy
    import torch._lazy.ts_backend

    torch._lazy.ts_backend.init()
    return "torch_lazy", "torch_lazy", *torch_loop("lazy", torch._lazy.mark_step)


def jax_case():
    import jax
    import jax.numpy as jnp

    key = jax.random.PRNGKey(0)
    params = {"w1": jax.random.normal(key, (64, 128)) * 0.1, "b1": jnp.zeros(128),
              "w2": jax.random.normal(key, (128, 10)) * 0.1, "b2": jnp.zeros(10)}
    x = jax.random.normal(key, (32, 64))
    y = jax.random.normal(key, (32, 10))

    def loss_fn(p, x, y):
        hidden = jax.nn.relu(x @ p["w1"] + p["b1"])
        return jnp.mean((hidden @ p["w2"] + p["b2"] - y) ** 2)

    @jax.jit
    def train_step(p, x, y):
        grads = jax.grad(loss_fn)(p, x, y)
        return jax.tree_util.tree_map(lambda a, g: a - 0.01 * g, p, grads)

    state = {"params": params}

    def step():
        state["params"] = train_step(state["params"], x, y)

    def finish():
        jax.block_until_ready(state["params"])

    return "jax", "jax", step, finish


def measure(case, steps: int, repeats: int) -> dict:
    """Time the whole `steps`-step loop bare and as one profiled cell, `repeats` times each,
    alternating which goes first."""
    name, backend, step, finish = case
    for _ in range(20):  # warm-up: compile everything first
        step()
    finish()
    per_round = steps
    bare, profiled = [], []
    for index in range(repeats):
        order = ("bare", "profiled") if index % 2 == 0 else ("profiled", "bare")
        for kind in order:
            started = time.perf_counter()
            if kind == "bare":
                for _ in range(per_round):
                    step()
                finish()
                bare.append(time.perf_counter() - started)
            else:
                with xlanb.profile(backend=backend):
                    for _ in range(per_round):
                        step()
                    finish()
                profiled.append(time.perf_counter() - started)
    empty = []
    for _ in range(30):
        started = time.perf_counter()
        with xlanb.profile(backend=backend):
            pass
        empty.append(time.perf_counter() - started)
    bare_s, profiled_s = statistics.median(bare), statistics.median(profiled)
    return {"runtime": name, "steps": steps, "bare_s": bare_s, "profiled_s": profiled_s,
            "ratio": profiled_s / bare_s,
            "empty_cell_ms": statistics.median(empty) * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=4)
    args = parser.parse_args()
    cases = []
    if importlib.util.find_spec("torch_xla"):
        cases.append(torch_xla_case)
    else:
        cases.append(torch_lazy_case)
        if importlib.util.find_spec("jax"):
            cases.append(jax_case)
    rows = [measure(make(), args.steps, args.repeats) for make in cases]
    targets = {"torch_xla": 1.02, "torch_lazy": 1.02, "jax": 1.05}
    print(f"{'runtime':<11} {'steps':>6} {'bare s':>8} {'profiled s':>11} {'ratio':>7} "
          f"{'target':>7} {'empty cell ms':>14} {'target':>7}")
    for row in rows:
        print(f"{row['runtime']:<11} {row['steps']:>6} {row['bare_s']:>8.3f} "
              f"{row['profiled_s']:>11.3f} {row['ratio']:>7.3f} "
              f"{'<=' + str(targets[row['runtime']]):>7} {row['empty_cell_ms']:>14.2f} "
              f"{'<=20':>7}")


if __name__ == "__main__":
    main()
