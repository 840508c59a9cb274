"""What a JAX capture adds to each call: a jitted call with device arrays, with a NumPy
argument (a host input), and an eager op (`x + 1` outside jit), each timed with no capture
and inside ``xlanb.profile`` (no device trace, no graphs: the call hook alone), alternating
`--repeats` times in one process; medians. Also the entries the backend keeps after 10,000
calls with a NumPy argument from one line (bounded: one per place and shape of call).

    .venv/bin/python bench/jax_calls.py
"""

from __future__ import annotations

import argparse
import statistics
import time

import results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    import jax
    import jax.numpy as jnp
    import numpy as np

    import xlanb
    from xlanb.capture.backends.jax.state import STATE

    jitted = jax.jit(lambda x: x + 1)
    device_arg, host_arg = jnp.ones(4), np.ones(4, np.float32)
    cases = {
        "jit, device arrays": lambda: jitted(device_arg),
        "jit, NumPy argument": lambda: jitted(host_arg),
        "eager op": lambda: device_arg + 1,
    }
    for call in cases.values():
        call()

    def per_call_us(call) -> float:
        started = time.perf_counter()
        for _ in range(args.calls):
            call()
        return (time.perf_counter() - started) / args.calls * 1e6

    timings: dict[str, dict[str, list[float]]] = {n: {"off": [], "on": []} for n in cases}
    for _ in range(args.repeats):
        for name, call in cases.items():
            timings[name]["off"].append(per_call_us(call))
        with xlanb.profile(backend="jax", trace=False, graphs=False):
            for name, call in cases.items():
                timings[name]["on"].append(per_call_us(call))
    with xlanb.profile(backend="jax", trace=False, graphs=False):
        for _ in range(10_000):
            jitted(host_arg)
        kept = len(STATE.transfers)

    print(f"{'call':<22} {'no capture µs':>13} {'captured µs':>11} {'added µs':>9}")
    figures: dict[str, float | int] = {"entries_after_10k_host_calls": kept}
    for name, arms in timings.items():
        off, on = statistics.median(arms["off"]), statistics.median(arms["on"])
        print(f"{name:<22} {off:>13.1f} {on:>11.1f} {on - off:>9.1f}")
        figures[f"{name}: added_us"] = on - off
    print(f"entries kept after 10,000 calls with a NumPy argument: {kept}")
    results.write("jax_calls", figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
