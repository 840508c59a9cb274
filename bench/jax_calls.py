"""What a JAX capture adds to each call: a jitted call with device arrays, with a NumPy
argument (a host input), an eager op (`x + 1` outside jit), an eager op with a host
scalar (`x * 0.5`: a copy), `jnp.asarray` and `jax.device_put` of a NumPy array (explicit
copies), each timed with no capture, with a pass-through Python ``__call__`` in place of
JAX's (the floor of any Python-level call hook: what replacing the C++ fast path costs
alone) and inside ``xlanb.profile`` (no device trace, no graphs: the hooks alone),
alternating `--repeats` times in one process; medians. Also the entries the backend keeps
after 10,000 calls with a NumPy argument from one line (bounded: one per place and shape of
call) and the dispatch samples kept.

    .venv/bin/python bench/jax_calls.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import results


@contextmanager
def pass_through(function_type: type) -> Iterator[None]:
    """JAX's ``PjitFunction.__call__`` replaced by a Python one that only calls it."""
    from xlanb.capture.backends.jax.dispatch import hook_call, unhook_call, vectorcall_flag

    address, vectorcall = vectorcall_flag(function_type)
    original = function_type.__dict__["__call__"]

    # the function comes as args[0]: `args` is passed on as it came, as the counter does
    def call(*args: Any, **kwargs: Any) -> Any:
        return original(*args, **kwargs) if kwargs else original(*args)

    hook_call(function_type, call, address)
    try:
        yield
    finally:
        unhook_call(function_type, original, address, vectorcall)


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
    cases: dict[str, Callable[[], Any]] = {
        "jit, device arrays": lambda: jitted(device_arg),
        "jit, NumPy argument": lambda: jitted(host_arg),
        "eager op": lambda: device_arg + 1,
        "eager op, host scalar": lambda: device_arg * 0.5,
        "jnp.asarray(NumPy)": lambda: jnp.asarray(host_arg),
        "jax.device_put(NumPy)": lambda: jax.device_put(host_arg),
    }
    for call in cases.values():
        call()

    def per_call_us(call: Callable[[], Any]) -> float:
        started = time.perf_counter()
        for _ in range(args.calls):
            call()
        return (time.perf_counter() - started) / args.calls * 1e6

    arms = {
        "off": nullcontext,
        "floor": lambda: pass_through(type(jitted)),
        "on": lambda: xlanb.profile(backend="jax", trace=False, graphs=False),
    }
    timings = {(name, arm): [] for name in cases for arm in arms}
    for _ in range(args.repeats):
        for name, call in cases.items():  # each case's arms side by side
            for arm, context in arms.items():
                with context():
                    timings[name, arm].append(per_call_us(call))
    with xlanb.profile(backend="jax", trace=False, graphs=False):
        for _ in range(10_000):
            jitted(host_arg)
        kept, samples = len(STATE.transfers), STATE.sample_count

    print(f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'call':<22} {'no capture µs':>13} {'floor added':>11} {'captured added':>14}")
    figures: dict[str, float | int] = {"entries_after_10k_host_calls": kept}
    for name in cases:
        off, floor, on = (statistics.median(timings[name, arm]) for arm in arms)
        print(f"{name:<22} {off:>13.1f} {floor - off:>11.1f} {on - off:>14.1f}")
        figures[f"{name}: added_us"] = on - off
        figures[f"{name}: pass-through added_us"] = floor - off
    print(f"kept after 10,000 calls with a NumPy argument: {kept} entry, {samples} samples")
    results.write("jax_calls", figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
