"""What a profiled cell's display costs: each typical steady cell (bench/typical_cells.py)
captured once in a real IPython shell with ``%%xla_profile -q --var p``, then what the
notebook does with ``p``, timed many times, the cases alternating: IPython's display formatter
with every mime type active (the Profile's reprs) and the charts (built and formatted). Main
thread CPU milliseconds, medians and spreads; ``--profile`` adds a cProfile top list.
Target: <= 15 ms for the whole display of each case.

    .venv/bin/python bench/display_cost.py [--repeats 30] [--case numpy-ema] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import time

import results
from typical_cells import CASES

STEADY = ["flax-cnn", "jax-transformer-steady", "numpy-ema"]


def display_once(shell, profile) -> tuple[float, float]:
    """Main-thread CPU seconds of (the Profile's reprs, the charts) as a notebook builds them."""
    from xlanb.views.notebook import charts

    formatter = shell.display_formatter
    started = time.thread_time()
    formatter.format(profile)
    reprs = time.thread_time()
    for chart in charts(profile):
        formatter.format(chart)
    return reprs - started, time.thread_time() - reprs


def captured(shell, name: str):
    """The profile of case `name`'s cell, run once after its setup (and a warm-up)."""
    _runtime, setup, cell, _first = CASES[name]
    shell.run_cell(setup)
    for _ in range(2):  # the first run warms xlanb's imports and the runtime's hooks
        result = shell.run_cell("%%xla_profile -q --var p\n" + cell)
        if result.error_in_exec is not None:
            raise result.error_in_exec
    return shell.user_ns["p"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--case", action="append", choices=STEADY)
    parser.add_argument("--profile", action="store_true", help="print a cProfile top list")
    parser.add_argument("--save", help="save each case's profile as DIR/<case>.json")
    results.add_check_option(parser)
    args = parser.parse_args()

    shell, names = results.notebook_shell({k: CASES[k] for k in STEADY}, args.case)
    profiles = {name: captured(shell, name) for name in names}
    if args.save:
        for name, profile in profiles.items():
            profile.save(f"{args.save}/{name}.json")
    for profile in profiles.values():  # warm: first-call imports
        display_once(shell, profile)
    reprs: dict[str, list[float]] = {name: [] for name in names}
    chart_s: dict[str, list[float]] = {name: [] for name in names}
    totals: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(args.repeats):
        for name, profile in profiles.items():
            shown, drawn = display_once(shell, profile)
            reprs[name].append(shown * 1e3)
            chart_s[name].append(drawn * 1e3)
            totals[name].append((shown + drawn) * 1e3)
    print(f"{'case':<23} {'reprs ms':>9} {'charts ms':>9} {'total ms':>9} {'spread ms':>13}")
    failures = []
    for name in names:
        total = statistics.median(totals[name])
        print(
            f"{name:<23} {statistics.median(reprs[name]):>9.1f} "
            f"{statistics.median(chart_s[name]):>9.1f} {total:>9.1f} "
            f"{min(totals[name]):>6.1f}-{max(totals[name]):<6.1f}"
        )
        results.write(
            "display_cost",
            {
                name: {
                    "reprs_ms": statistics.median(reprs[name]),
                    "charts_ms": statistics.median(chart_s[name]),
                    "total_ms": total,
                    "total_spread_ms": [min(totals[name]), max(totals[name])],
                    "repeats": args.repeats,
                }
            },
        )
        if total > 15:
            failures.append(f"{name}: display {total:.1f} ms > 15 ms")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(5):
            for profile in profiles.values():
                display_once(shell, profile)
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(40)
        print(out.getvalue())
    return results.check(failures, args.check)


if __name__ == "__main__":
    raise SystemExit(main())
