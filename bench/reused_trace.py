"""How close a cell run again comes when it reuses its last trace instead of tracing (#27).

Real cells of ``bench/typical_cells.py`` in a real IPython shell: each is profiled once (its
trace kept), then, alternately, run again under ``%%xla_profile`` (no trace: its last trace
reused, its runs estimated from it) and under ``%%xla_profile --trace-runs 0`` (every run
traced: the measured truth of the same cell). Printed per case, medians over the repeats with
their spread: the reused capture's device seconds over the whole trace's, the share of device
time its top 5 ops hold in each, and how often its top op is among the whole trace's top 5.

    .venv/bin/python bench/reused_trace.py [--repeats 5] [--case numpy-ema]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import results
import typical_cells

CASES = ("flax-cnn", "jax-transformer-steady", "numpy-ema")


def _device_seconds(prof) -> float:
    spans = prof.spans
    return float(spans.loc[spans["lane"] == "device", "seconds"].sum())


def _top_share(prof, count: int = 5) -> float:
    ops = prof.ops.sort_values("seconds", ascending=False)
    return float(ops["seconds"].head(count).sum() / ops["seconds"].sum())


def _top_ops(prof, count: int) -> list[tuple[str, str]]:
    top = prof.ops.sort_values("seconds", ascending=False).head(count)
    return list(zip(top["graph"].astype(str), top["op"].astype(str), strict=True))


def run_case(shell, name: str, repeats: int) -> dict:
    from IPython.utils.capture import capture_output

    from xlanb.capture import device_trace
    from xlanb.core.schema import REUSED_TRACE

    _runtime, setup, cell, _first = typical_cells.CASES[name]
    shell.run_cell(setup)
    reused_cell = "%%xla_profile -q --var bench_reused\n" + cell
    whole_cell = "%%xla_profile -q --trace-runs 0 --var bench_whole\n" + cell
    with capture_output():
        shell.run_cell(reused_cell)  # traced: the trace kept for the next runs
    ratios, top_reused, top_whole, same_top, traces = [], [], [], 0, device_trace._STATE.counter
    for _ in range(repeats):
        with capture_output():
            shell.run_cell(reused_cell)
            shell.run_cell(whole_cell)
        reused, whole = shell.user_ns["bench_reused"], shell.user_ns["bench_whole"]
        window = reused.spans.loc[reused.spans["lane"] == "trace", "name"].tolist()
        assert window == [REUSED_TRACE], window
        ratios.append(_device_seconds(reused) / _device_seconds(whole))
        top_reused.append(_top_share(reused))
        top_whole.append(_top_share(whole))
        same_top += _top_ops(reused, 1)[0] in _top_ops(whole, 5)
    return {
        "device_ratio": statistics.median(ratios),
        "device_ratio_spread": [min(ratios), max(ratios)],
        "top5_share_reused": statistics.median(top_reused),
        "top5_share_whole": statistics.median(top_whole),
        "same_top_op": f"{same_top}/{repeats}",
        "traces_started": device_trace._STATE.counter - traces,
        "repeats": repeats,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--case", action="append", choices=CASES)
    args = parser.parse_args()
    shell, cases = results.notebook_shell(
        {name: typical_cells.CASES[name] for name in CASES}, args.case
    )
    print(
        f"{'case':<23} {'device reused/whole':>19} {'spread':>13} {'top-5 reused':>12} "
        f"{'top-5 whole':>11} {'top op in top 5':>15}"
    )
    figures = {}
    for name in cases:
        row = figures[name] = run_case(shell, name, args.repeats)
        low, high = row["device_ratio_spread"]
        print(
            f"{name:<23} {row['device_ratio']:>19.3f} {low:>6.3f}-{high:<6.3f} "
            f"{row['top5_share_reused']:>12.3f} {row['top5_share_whole']:>11.3f} "
            f"{row['same_top_op']:>15}"
        )
    results.write("reused_trace", figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
