"""Profiler overhead: a training loop timed bare and under `xlanb.profile()`, alternating in one
process, and the fixed cost of an empty profiled cell. Prints a table.

    PJRT_DEVICE=CPU .venv-xla/bin/python bench/overhead.py     # torch_xla
    .venv/bin/python bench/overhead.py                         # torch._lazy (and JAX)

The debug switches are on for every arm (as after `%load_ext xlanb`): the ratios are the cost
of profiling a cell, not of the switches. Four arms alternate: bare, profiled with
`--no-trace`, profiled with the device trace as by default (its window: the first 50 runs),
and with the trace over the whole loop (`--trace-runs 0`); the whole loop's trace size is
reported per 1,000 steps. The JAX loop runs 20,000 steps of ~70 µs (a loop of ~1.5 s, like the
torch_xla one: the fixed cost per cell is the separate "empty" figure). `--check` exits 1
when a figure is past its target; every run writes `bench/results.json` (section "overhead").
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time

import results

import xlanb

xlanb.enable()  # before any runtime starts, as %load_ext xlanb does


def torch_loop(device, sync):
    import torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)
    ).to(device)
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
    params = {
        "w1": jax.random.normal(key, (64, 128)) * 0.1,
        "b1": jnp.zeros(128),
        "w2": jax.random.normal(key, (128, 10)) * 0.1,
        "b2": jnp.zeros(10),
    }
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


def jax_read_case():
    """The JAX step that also reads its loss back every step (``float(loss)``: a sync), as
    logging loops do: what counting the reads costs."""
    import jax
    import jax.numpy as jnp

    _name, backend, step, finish = jax_case()
    loss_of = jax.jit(lambda: jnp.ones(()))

    def read_step():
        step()
        float(loss_of())

    return "jax+read", backend, read_step, finish


def measure(case, steps: int, repeats: int) -> dict:
    """Time the whole `steps`-step loop bare, profiled without and with the device trace,
    `repeats` times each, rotating which goes first."""
    from xlanb.capture import device_trace

    name, backend, step, finish = case
    for _ in range(20):  # warm-up: compile everything first
        step()
    finish()
    arms = ("bare", "untraced", "traced", "whole")
    times: dict[str, list[float]] = {arm: [] for arm in arms}
    trace_bytes = []
    for index in range(repeats):
        for arm in arms[index % len(arms) :] + arms[: index % len(arms)]:
            started = time.perf_counter()
            if arm == "bare":
                for _ in range(steps):
                    step()
                finish()
            else:
                with xlanb.profile(
                    backend=backend,
                    trace=arm != "untraced",
                    trace_runs=None if arm == "whole" else device_trace.WINDOW_RUNS,
                ):
                    for _ in range(steps):
                        step()
                    finish()
                if arm == "whole":
                    trace_bytes.append(device_trace.last_trace_bytes())
            times[arm].append(time.perf_counter() - started)
    empty: dict[str, list[float]] = {"untraced": [], "traced": []}
    for _ in range(30):
        for arm in empty:
            started = time.perf_counter()
            with xlanb.profile(backend=backend, trace=arm == "traced"):
                pass
            empty[arm].append(time.perf_counter() - started)
    bare = statistics.median(times["bare"])
    traced_backend = backend in ("jax", "torch_xla")
    return {
        "runtime": name,
        "steps": steps,
        "bare_s": bare,
        "untraced_ratio": statistics.median(times["untraced"]) / bare,
        "traced_ratio": statistics.median(times["traced"]) / bare if traced_backend else None,
        "whole_trace_ratio": (statistics.median(times["whole"]) / bare if traced_backend else None),
        "empty_cell_ms": statistics.median(empty["untraced"]) * 1e3,
        "empty_traced_cell_ms": (
            statistics.median(empty["traced"]) * 1e3 if traced_backend else None
        ),
        "trace_kb_per_1000_steps": (
            statistics.median(trace_bytes) / 1024 * 1000 / steps
            if traced_backend and trace_bytes
            else None
        ),
    }


TARGETS = {
    "untraced_ratio": {"torch_xla": 1.02, "torch_lazy": 1.05, "jax": 1.05},
    "traced_ratio": {"torch_xla": 1.05, "jax": 1.05},
    "empty_cell_ms": {"torch_xla": 20, "torch_lazy": 20, "jax": 20},
    "empty_traced_cell_ms": {"torch_xla": 30, "jax": 30},
}


def over_target(row: dict) -> list[str]:
    return [
        f"{row['runtime']} {figure} {row[figure]:.3f} > {targets[row['runtime']]}"
        for figure, targets in TARGETS.items()
        if row.get(figure) is not None
        and row["runtime"] in targets
        and row[figure] > targets[row["runtime"]]
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=2000, help="torch_xla / torch._lazy steps")
    parser.add_argument("--jax-steps", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=6)
    results.add_check_option(parser)
    args = parser.parse_args()
    cases = []
    if importlib.util.find_spec("torch_xla"):
        cases.append((torch_xla_case, args.steps))
    else:
        cases.append((torch_lazy_case, args.steps))
        if importlib.util.find_spec("jax"):
            cases.append((jax_case, args.jax_steps))
            cases.append((jax_read_case, args.jax_steps // 4))
    rows = [measure(make(), steps, args.repeats) for make, steps in cases]

    def cell(value, form):
        return "-" if value is None else format(value, form)

    print(
        f"{'runtime':<11} {'steps':>6} {'bare s':>8} {'untraced':>9} {'traced':>7} "
        f"{'whole':>6} {'empty ms':>9} {'empty traced ms':>16} {'trace KB/1k steps':>18}"
    )
    for row in rows:
        print(
            f"{row['runtime']:<11} {row['steps']:>6} {row['bare_s']:>8.3f} "
            f"{cell(row['untraced_ratio'], '.3f'):>9} {cell(row['traced_ratio'], '.3f'):>7} "
            f"{cell(row['whole_trace_ratio'], '.2f'):>6} "
            f"{cell(row['empty_cell_ms'], '.2f'):>9} "
            f"{cell(row['empty_traced_cell_ms'], '.2f'):>16} "
            f"{cell(row['trace_kb_per_1000_steps'], '.0f'):>18}"
        )
    results.write("overhead", {row["runtime"]: row for row in rows})
    sys.exit(results.check([line for row in rows for line in over_target(row)], args.check))


if __name__ == "__main__":
    main()
