"""What the memory findings cost (issue #16): the per-cell bookkeeping of live-memory growth
(every profiled cell), a lowering that warns about unusable donations with and without the
capture's proxy of JAX's warnings (side by side), and the out-of-memory report's pass over
the live arrays (only when a cell ran out of memory) at 1,000 and 10,000 live arrays.

    .venv/bin/python bench/memory_findings.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings

import results


def median_seconds(function, repeats: int, inner: int = 1) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(inner):
            function()
        times.append((time.perf_counter() - started) / inner)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    results.add_check_option(parser)
    args = parser.parse_args()

    import jax
    import jax.numpy as jnp

    from xlanb.capture import cell_memory
    from xlanb.capture.backends.base import Capture
    from xlanb.capture.backends.jax import hooks
    from xlanb.capture.backends.jax.state import STATE, Restore

    figures: dict[str, float] = {}
    source = "%%xla_profile\nfor step in range(100):\n    losses.append(step_fn(x))\n"

    def one_cell() -> None:
        capture = Capture()
        for snapshot, count, size in (("before", 10, 4e6), ("after", 110, 4.4e6)):
            row = {"backend": "jax", "snapshot": snapshot, "shape": ""}
            capture.add("live_arrays", {**row, "count": count, "bytes": size})
        cell_memory.remember(source, [("jax", capture)])

    figures["growth bookkeeping: us per cell"] = median_seconds(one_cell, args.repeats, 1000) * 1e6
    cell_memory.clear()

    def lower() -> None:
        step = jax.jit(lambda s, b: (s + b.sum(), b[:2]), donate_argnums=(0, 1))
        step.lower(jnp.ones((8, 8)), jnp.ones((16, 8)))

    warnings.simplefilter("ignore")
    plain = median_seconds(lower, args.repeats, 20)
    restore = Restore()
    hooks._donation_on(restore, [])
    STATE.listening = True
    try:
        proxied = median_seconds(lower, args.repeats, 20)
    finally:
        STATE.listening = False
        hooks._donation_off(restore)
        STATE.clear()
    figures["lowering with an unusable donation: ms"] = plain * 1e3
    figures["same, under the capture's proxy: ms"] = proxied * 1e3
    figures["proxy ratio"] = proxied / plain

    kept = []
    try:
        raise MemoryError("RESOURCE_EXHAUSTED: Out of memory allocating 1 bytes.")
    except MemoryError as caught:
        error = caught
    for count in (1_000, 10_000):
        kept.extend(jnp.ones(4) for _ in range(count - len(kept)))
        jax.block_until_ready(kept)
        seconds = median_seconds(
            lambda: hooks.live_at_failure(hooks.LiveSnapshot(0, 0.0), error), args.repeats
        )
        figures[f"out-of-memory report, {count} arrays: ms"] = seconds * 1e3
    for name, value in figures.items():
        print(f"{name:>48}: {value:.3f}")
    results.write("memory_findings", figures)
    return results.check([], args.check)


if __name__ == "__main__":
    sys.exit(main())
