"""What each runtime debug switch costs the user's own loop, against a process without it.

    PJRT_DEVICE=CPU .venv-xla/bin/python bench/switches.py

The switches are read once, at the runtime's start, so every arm is its own process: a
12-block MLP (Linear, GELU, LayerNorm: tracing-heavy, ~100 IR nodes a block) runs `--steps`
training steps after a warm-up, and the child reports the median CPU time of the Python thread
(``time.thread_time``: steadier than wall time on a shared machine) per step spent
tracing (the step's Python up to ``torch_xla.sync()``) and in the sync (hashing the graph,
launching it; device time is waited for separately), and the compile time of its first steps
(the runtime's ``CompileTime``). Arms run in rotating order,
`--repeats` times. Writes section "switches" of ``bench/results.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import results

CHILD = r"""
import json, statistics, sys, time
import torch, torch_xla, torch_xla.core.xla_model as xm
import torch_xla.debug.metrics as met
steps = int(sys.argv[1])
dev = torch_xla.device()
torch.manual_seed(0)
blocks = [torch.nn.Sequential(torch.nn.Linear(128, 128), torch.nn.GELU(), torch.nn.LayerNorm(128))
          for _ in range(12)]
model = torch.nn.Sequential(*blocks).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 128).to(dev), torch.randn(32, 128).to(dev)
def trace():
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
for _ in range(5):
    trace()
    torch_xla.sync()
xm.wait_device_ops()
compile_s = met.metric_data("CompileTime")[1] / 1e9
traced, synced = [], []
for _ in range(steps):
    started = time.thread_time()
    trace()
    middle = time.thread_time()
    torch_xla.sync()
    traced.append(middle - started)
    synced.append(time.thread_time() - middle)
    xm.wait_device_ops()
print(json.dumps({"trace_ms": statistics.median(traced) * 1e3,
                  "sync_ms": statistics.median(synced) * 1e3, "compile_s": compile_s}))
"""


def arms(workdir: str) -> dict[str, dict[str, str]]:
    """Each arm's switches (what `xlanb.enable()` sets on torch_xla, split by what it buys)."""
    dump = os.path.join(workdir, "dump")
    debug_file = os.path.join(workdir, "debug.txt")
    analysis = {"PT_XLA_DEBUG_LEVEL": "1", "PT_XLA_DEBUG_FILE": debug_file}
    executions = {"PT_XLA_DEBUG_LEVEL": "2", "PT_XLA_DEBUG_FILE": debug_file}
    source = {"XLA_IR_DEBUG": "1", "XLA_HLO_DEBUG": "1"}
    dumps = {"XLA_FLAGS": f"--xla_dump_to={dump} --xla_dump_hlo_as_text"}
    return {
        "none": {},
        "compile analysis": analysis,
        "dump": dumps,
        "analysis + dump": {**analysis, **dumps},
        "execution analysis": executions,
        "exec. analysis + dump": {**executions, **dumps},
        "IR/HLO source (--deep)": source,
        "all": {**analysis, **dumps, **source},
    }


def run_arm(switches: dict[str, str], steps: int) -> dict[str, float]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("XLA_", "PT_XLA_", "XLANB_"))
    }
    env.update(PJRT_DEVICE="CPU", **switches)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(steps)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", nargs="+", help="these arms (and 'none') only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        plan = arms(workdir)
        if args.only:
            plan = {name: plan[name] for name in plan if name == "none" or name in args.only}
        names = list(plan)
        figures: dict[str, list[dict[str, float]]] = {name: [] for name in names}
        for index in range(args.repeats):
            for name in names[index % len(names) :] + names[: index % len(names)]:
                figures[name].append(run_arm(plan[name], args.steps))

    def median(name: str, key: str) -> float:
        return statistics.median(f[key] for f in figures[name])

    base = {key: median("none", key) for key in ("trace_ms", "sync_ms", "compile_s")}
    print(
        f"{'switches':<28} {'trace ms/step':>13} {'ratio':>6} {'sync ms/step':>12} {'ratio':>6} "
        f"{'compile s':>9} {'ratio':>6}"
    )
    table = {}
    for name in names:
        row = {key: median(name, key) for key in base}
        row.update({f"{key}_ratio": row[key] / base[key] for key in base})
        table[name] = row
        print(
            f"{name:<28} {row['trace_ms']:>13.2f} {row['trace_ms_ratio']:>6.2f} "
            f"{row['sync_ms']:>12.2f} {row['sync_ms_ratio']:>6.2f} {row['compile_s']:>9.3f} "
            f"{row['compile_s_ratio']:>6.2f}"
        )
    results.write("switches", table)


if __name__ == "__main__":
    main()
