"""What the JAX live-array snapshots cost a cell: an empty profiled cell (no trace, no graphs)
with 100, 1,000 and 10,000 live device arrays, against the same cell with the snapshots off
(the two passes over ``jax.live_arrays()``); medians, and the best run (the machine's load
shows in the medians). Target (issue #16): <= 5 ms at 10,000. Was
9.4 ms (README, 2-core VM) with a set of every array's id and a (shape, dtype) per array.

    .venv/bin/python bench/live_arrays.py
"""

from __future__ import annotations

import argparse
import statistics
import time

import results

TARGET_MS = 5.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    results.add_check_option(parser)
    args = parser.parse_args()

    import jax.numpy as jnp

    from xlanb.capture.backends.jax import hooks

    kept = []
    figures = {}
    print(
        f"{'live arrays':>11} {'snapshot ms':>11} {'left-alive ms':>13} {'per cell ms':>11} "
        f"{'best ms':>8}"
    )
    for count in (100, 1_000, 10_000):
        kept.extend(jnp.ones(4) for _ in range(count - len(kept)))
        snapshots, lefts = [], []
        for _ in range(args.repeats):
            started = time.perf_counter()
            before = hooks.live_arrays()
            snapshots.append(time.perf_counter() - started)
            started = time.perf_counter()
            hooks.left_alive(before)
            lefts.append(time.perf_counter() - started)
        snapshot, left = statistics.median(snapshots) * 1e3, statistics.median(lefts) * 1e3
        best = min(map(sum, zip(snapshots, lefts, strict=True))) * 1e3
        print(f"{count:>11,} {snapshot:>11.2f} {left:>13.2f} {snapshot + left:>11.2f} {best:>8.2f}")
        figures[f"{count} arrays: ms per cell"] = snapshot + left
        figures[f"{count} arrays: best ms per cell"] = best
    # a cell that made all 10,000 (in 30 shapes): the left-alive groups and where the
    # newest of each were made (Array.traceback)
    before = hooks.live_arrays()
    made = [jnp.ones(index % 30 + 1) for index in range(10_000)]
    lefts = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        rows, _count, _bytes = hooks.left_alive(before)
        lefts.append(time.perf_counter() - started)
    assert len(made) == 10_000 and all("created_at" in row for row in rows), rows[:2]
    left, best = statistics.median(lefts) * 1e3, min(lefts) * 1e3
    print(f"10,000 made in the cell, 30 shapes: left-alive {left:.2f} ms (best {best:.2f})")
    figures["10000 made in the cell: left-alive ms"] = left
    figures["10000 made in the cell: best left-alive ms"] = best
    results.write("live_arrays", figures)
    worst = figures["10000 arrays: ms per cell"]
    return results.check(
        [f"live arrays {worst:.1f} ms > {TARGET_MS} ms"] if worst > TARGET_MS else [], args.check
    )


if __name__ == "__main__":
    raise SystemExit(main())
