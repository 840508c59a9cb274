"""The device-time summary of a trace window (#27): the numpy ``summarize`` against the
pandas one it replaced (``tests/support/device_time_reference.py``), and ``_runs_in``; with
``--load``, what reading a recorded trace costs: ``xlanb.load`` and ``device_time.rows``.

    PYTHONPATH=. .venv/bin/python bench/trace_summary.py [--repeats 60] [--in-blocks] [TRACE...]
    PYTHONPATH=. .venv/bin/python bench/trace_summary.py --load [--repeats 7] [FOLDER...]

Each trace (default: the recorded ones under ``tests/data``) is read as a capture reads it
(``parse_xspace(markers=False)``), both summaries are checked equal, then timed in this
process, in turn (``--in-blocks``: each its repeats in a row, caches warm): the median of
``--repeats`` runs each, CPU time (``time.process_time``), the kept summary cleared before
each run. This is what the watchdog thread spends on a window's events while the cell runs.
``--load``: each folder (default: ``tests/data/xla_gpu/*``; a trace and its XLA dump) is
loaded ``--repeats`` times, then ``rows`` run as often on its trace (read once): median CPU
ms and the spread (min-max), the kept summary cleared before each run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import xlanb  # noqa: E402
from tests.support import device_time_reference as reference  # noqa: E402
from xlanb.analysis import device_time  # noqa: E402
from xlanb.capture import device_trace  # noqa: E402
from xlanb.formats.xspace import find_xspace_files, parse_xspace, read_xspace  # noqa: E402
from xlanb.offline.xla_dump import load_dump_dir  # noqa: E402


def _cpu_ms(
    calls: list[Callable[[], Any]], events: Any, repeats: int, in_turn: bool
) -> list[float]:
    """Median CPU ms of each of `calls`, run `repeats` times, in turn (else each its
    `repeats` times in a row: warm caches), the summary kept on `events` cleared before each
    run."""
    times: list[list[float]] = [[] for _ in calls]
    turns = (
        [list(range(len(calls)))] * repeats
        if in_turn
        else [[i] * repeats for i in range(len(calls))]
    )
    for turn in turns:
        for index in turn:
            events.summary = None
            started = time.process_time()
            calls[index]()
            times[index].append(time.process_time() - started)
    return [statistics.median(kept) * 1e3 for kept in times]


def _times(events: Any, repeats: int, in_turn: bool) -> list[float]:
    """CPU ms of the pandas summary, the numpy one, then of the run count, old and new."""
    whole = (0.0, float("inf"))
    new = device_time.summarize(events, *whole)
    old = reference.summarize(events, *whole)
    assert [row[:4] for row in new.ops] == [row[:4] for row in old.ops]
    assert new.spans == old.spans
    return _cpu_ms(
        [
            lambda: reference.summarize(events, *whole),
            lambda: device_time.summarize(events, *whole),
            lambda: reference.runs_in(events),
            lambda: device_trace._runs_in(events),
        ],
        events,
        repeats,
        in_turn,
    )


def _spread(times: list[float]) -> str:
    """Median CPU ms of `times` (seconds) and their min-max."""
    ms = [value * 1e3 for value in times]
    return f"{statistics.median(ms):.0f} [{min(ms):.0f}-{max(ms):.0f}]"


def _rows_seconds(folder: Path, repeats: int) -> list[float]:
    """CPU seconds of `device_time.rows` on the trace in `folder` with its dump's graphs,
    over the trace's window as ``xlanb.load`` reads it, `repeats` times."""
    events = read_xspace(find_xspace_files(folder)[0], markers=False)
    dumps = sorted(folder.rglob("*after_optimizations*.txt"))
    graphs = load_dump_dir(dumps[0].parent).graphs.to_dict("records") if dumps else []
    frame = events.events
    start = (events.profile_start_ns or int(frame["start_ns"].min())) / 1e9
    last = float((frame["start_ns"] + frame["duration_ns"]).max())
    end = (events.profile_stop_ns or last) / 1e9
    times = []
    for _ in range(repeats):
        events.summary = events.gpu = None
        started = time.process_time()
        device_time.rows("jax", events, (start, end), graphs)
        times.append(time.process_time() - started)
    return times


def _load_table(folders: list[Path], repeats: int) -> None:
    """Print the CPU ms of ``xlanb.load`` and ``device_time.rows`` of each folder."""
    print(f"{'folder':40} {'events':>7} {'xlanb.load ms':>16} {'rows ms':>14}")
    for folder in folders:
        loads = []
        for _ in range(repeats):
            started = time.process_time()
            xlanb.load(folder)
            loads.append(time.process_time() - started)
        events = read_xspace(find_xspace_files(folder)[0]).event_count
        rows = _spread(_rows_seconds(folder, repeats))
        print(f"{str(folder)[-40:]:40} {events:7d} {_spread(loads):>16} {rows:>14}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--repeats", type=int, default=60)
    parser.add_argument(
        "--in-blocks", action="store_true", help="each call's repeats in a row, not in turn"
    )
    parser.add_argument("--load", action="store_true", help="time xlanb.load and rows")
    args = parser.parse_args()
    if args.load:
        folders = args.traces or sorted((ROOT / "tests" / "data" / "xla_gpu").iterdir())
        _load_table(folders, args.repeats)
        return
    traces = args.traces or sorted((ROOT / "tests" / "data").glob("**/*.xplane.pb"))
    print(f"{'trace':48} {'events':>7} {'summarize old':>14} {'new':>6} {'runs old':>9} {'new':>6}")
    for trace in traces:
        events = parse_xspace(trace.read_bytes(), str(trace), markers=False)
        times = _times(events, args.repeats, not args.in_blocks)
        name = str(trace.relative_to(ROOT) if trace.is_relative_to(ROOT) else trace)
        print(
            f"{name[-48:]:48} {events.event_count:7d} {times[0]:14.2f} {times[1]:6.2f} "
            f"{times[2]:9.2f} {times[3]:6.2f}"
        )


if __name__ == "__main__":
    main()
