"""What placing torch_xla's reads of values costs: ``x.item()`` and ``bool(x)`` of a CPU tensor
(the wrapper passes them straight through) and ``x.item()`` of an XLA tensor already computed
(counted by place: its stack walked once per place), each timed with no capture and inside
``xlanb.profile`` with no device trace and no graphs, alternating `--repeats` times in one
process; medians.

    PJRT_DEVICE=CPU .venv-xla/bin/python bench/torch_reads.py
"""

from __future__ import annotations

import argparse
import statistics
import time

import results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    import torch
    import torch_xla

    import xlanb

    cpu = torch.ones(())
    on_device = torch.ones((), device=torch_xla.device()) * 2
    torch_xla.sync()
    cases = {
        "CPU x.item()": lambda: cpu.item(),
        "CPU bool(x)": lambda: bool(cpu),
        "XLA x.item()": lambda: on_device.item(),
    }

    def per_call_us(call) -> float:
        started = time.perf_counter()
        for _ in range(args.calls):
            call()
        return (time.perf_counter() - started) / args.calls * 1e6

    timings: dict[str, dict[str, list[float]]] = {n: {"off": [], "on": []} for n in cases}
    for _ in range(args.repeats):
        for name, call in cases.items():
            timings[name]["off"].append(per_call_us(call))
        with xlanb.profile(backend="torch_xla", trace=False, graphs=False):
            for name, call in cases.items():
                timings[name]["on"].append(per_call_us(call))

    print(f"{'read':<14} {'no capture µs':>13} {'captured µs':>11} {'added µs':>9}")
    figures: dict[str, float] = {}
    for name, arms in timings.items():
        off, on = statistics.median(arms["off"]), statistics.median(arms["on"])
        print(f"{name:<14} {off:>13.2f} {on:>11.2f} {on - off:>9.2f}")
        figures[f"{name}: added_us"] = on - off
    results.write("torch_reads", figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
