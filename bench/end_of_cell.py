"""The end of a steady cell: the main thread's CPU seconds from the cell's last line to the
end of the magic (``time.thread_time``), in a real IPython shell with rich output on, for
``%%xla_profile -q --no-trace``, ``-q`` (the device trace read) and the displayed default
``%%xla_profile`` (the HTML display built); medians and spreads over the runs.
``--profile [KIND]`` adds a cProfile top list of that end (``no_trace`` unless named), by
own time and by cumulative time.

Cases: ``flax-cnn``, ``jax-transformer-steady``, ``numpy-ema``, ``torch_xla-mlp`` (those of
``bench/typical_cells.py``; a case whose runtime is missing is skipped).

    .venv/bin/python bench/end_of_cell.py [--repeats 7] [--case numpy-ema] [--profile]
    PJRT_DEVICE=CPU .venv-xla/bin/python bench/end_of_cell.py --case torch_xla-mlp \
        [--kind displayed] [--profile displayed]
"""

from __future__ import annotations

import argparse
import builtins
import cProfile
import io
import pstats
import statistics
import time

import results
from typical_cells import CASES as TYPICAL_CASES

CASE_NAMES = ("flax-cnn", "jax-transformer-steady", "numpy-ema", "torch_xla-mlp")
CASES = {name: TYPICAL_CASES[name] for name in CASE_NAMES}

#: The cell's last line notes the main thread's CPU clock and, with --profile, starts cProfile.
CELL_END = (
    "import builtins, time\n"
    "builtins.bench_profiler is not None and builtins.bench_profiler.enable()\n"
    "builtins.bench_cell_end = time.thread_time()\n"
)


def end_cpu(shell, cell: str, profiler: cProfile.Profile | None) -> float:
    """The main thread's CPU seconds from `cell`'s last line to the end of its run."""
    from IPython.utils.capture import capture_output

    builtins.bench_profiler = profiler  # type: ignore[attr-defined]
    with capture_output():
        result = shell.run_cell(cell)
        ended = time.thread_time()
    if profiler is not None:
        profiler.disable()
    if result.error_in_exec is not None:
        raise result.error_in_exec
    return ended - builtins.bench_cell_end  # type: ignore[attr-defined]


#: kind -> the magic's line: under -q without and with the device trace, and displayed
MAGICS = {
    "no_trace": "%%xla_profile -q --no-trace --var bench_prof\n",
    "trace": "%%xla_profile -q --var bench_prof\n",
    "displayed": "%%xla_profile --var bench_prof\n",
}


def run_case(
    shell,
    name: str,
    repeats: int,
    profiler: cProfile.Profile | None,
    kinds: list[str],
    profiled_kind: str,
) -> dict:
    _runtime, setup, cell, _first = CASES[name]
    shell.run_cell(setup)
    cells = {kind: MAGICS[kind] + cell + CELL_END for kind in kinds}
    for text in cells.values():  # warm-up: xlanb's first import, the runtime's hooks
        end_cpu(shell, text, None)
    ends: dict[str, list[float]] = {kind: [] for kind in cells}
    for index in range(repeats):
        shift = index % len(cells)  # each kind in each place of the order in turn
        order = list(cells)[shift:] + list(cells)[:shift]
        for kind in order:
            watch = profiler if kind == profiled_kind else None
            ends[kind].append(end_cpu(shell, cells[kind], watch))
    figures: dict = {"repeats": repeats}
    for kind, seconds in ends.items():
        figures[f"end_cpu_{kind}_ms"] = 1000 * statistics.median(seconds)
        figures[f"end_cpu_{kind}_spread_ms"] = [1000 * min(seconds), 1000 * max(seconds)]
    return figures


def top_list(profiler: cProfile.Profile, runs: int, kind: str, lines: int = 25) -> str:
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    out.write(f"cProfile of {runs} {kind} ends (totals over all runs)\n")
    stats.sort_stats("cumulative").print_stats(lines)
    stats.sort_stats("tottime").print_stats(lines)
    return out.getvalue()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--case", action="append", choices=sorted(CASES))
    parser.add_argument(
        "--kind", action="append", choices=list(MAGICS), help="which ends to measure (all)"
    )
    parser.add_argument(
        "--profile",
        nargs="?",
        const="no_trace",
        choices=list(MAGICS),
        help="print a cProfile top list of these ends (no_trace)",
    )
    parser.add_argument("--no-write", action="store_true", help="leave bench/results.json")
    args = parser.parse_args()

    kinds = args.kind or list(MAGICS)
    if args.profile is not None and args.profile not in kinds:
        kinds.append(args.profile)
    shell, cases = results.notebook_shell(CASES, args.case)
    print(f"{'case':<23} " + " ".join(f"{kind + ' CPU ms':>18} {'spread':>13}" for kind in kinds))
    for name in cases:
        profiler = cProfile.Profile() if args.profile else None
        figures = run_case(shell, name, args.repeats, profiler, kinds, args.profile or "")
        columns = []
        for kind in kinds:
            low, high = figures[f"end_cpu_{kind}_spread_ms"]
            columns.append(f"{figures[f'end_cpu_{kind}_ms']:>18.1f} {low:>6.1f}-{high:<6.1f}")
        print(f"{name:<23} " + " ".join(columns))
        if not args.no_write:
            results.write("end_of_cell", {name: figures})
        if profiler is not None:
            print(top_list(profiler, args.repeats, args.profile))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
