"""What the read-ahead worker does with a compiled program's texts once XLA has compiled it
(``xlanb.capture.backends.jax.ahead.warm``: the op sources, the HLO read, the categories and
roofline costs, the viewer's graph and its prepared payload), timed by part on recorded
XLA:GPU optimized modules (the H100 transformer's and MLP's, ``tests/data/xla_gpu``). On a
GPU the end of a first cell waits for this work, as the runs are too short to hide it. Each
repeat runs in a fresh process (the parts keep their results per text); main-thread CPU
seconds, medians and spread.

    .venv/bin/python bench/read_ahead.py [--repeats 7] [--text PATH]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

import results

ROOT = Path(__file__).resolve().parent.parent
TEXTS = {
    "h100-transformer": ROOT
    / "tests/data/xla_gpu/transformer_cmdbuf/xla_dump"
    / "module_17269.jit_train_step.sm_9.0a_gpu_after_optimizations.txt",
    "h100-mlp": ROOT
    / "tests/data/xla_gpu/mlp_cmdbuf/xla_dump"
    / "module_10613.jit_train_step.sm_9.0a_gpu_after_optimizations.txt",
}
PARTS = ("sources", "read", "categories", "graph", "prepare")

#: One repeat, in a fresh process: the parts in the worker's order, as `warm` runs them.
ONE_RUN = """
import json, sys, time
from xlanb.analysis.op_kinds import instruction_categories
from xlanb.formats.hlo_text import count_hlo_instructions, hlo_op_sources
from xlanb.graphs import hlo, parse_once
from xlanb.graphs.hlo import sharing_reads
from xlanb.graphs.hlo_cost import matmul_dtype, op_costs
from xlanb.graphs.prepared import prepare
import xlanb.views.graph_viewer

text = open(sys.argv[1]).read()
clock, took = time.thread_time, {}
with sharing_reads(text):
    start = clock()
    count_hlo_instructions(text)
    hlo_op_sources(text, "<ipython-input-1>")
    hlo_op_sources(text)
    took["sources"], start = clock() - start, clock()
    hlo.computations(text)
    took["read"], start = clock() - start, clock()
    instruction_categories(text)
    op_costs(text)
    matmul_dtype(text)
    took["categories"], start = clock() - start, clock()
    graph = parse_once(text, "hlo_optimized")
    took["graph"], start = clock() - start, clock()
    prepare(graph)
    took["prepare"] = clock() - start
print(json.dumps(took))
"""


def one_run(path: Path) -> dict[str, float]:
    done = subprocess.run(
        # -P: the xlanb the interpreter imports (PYTHONPATH, the install), not the directory's
        [sys.executable, "-P", "-c", ONE_RUN, str(path)],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--text", type=Path, action="append", help="an HLO text of your own")
    parser.add_argument("--no-write", action="store_true", help="leave bench/results.json")
    args = parser.parse_args()
    texts = {path.name: path for path in args.text} if args.text else TEXTS
    figures = {}
    for name, path in texts.items():
        runs = [one_run(path) for _ in range(args.repeats)]
        totals = [sum(run.values()) for run in runs]
        row = {part: statistics.median(run[part] for run in runs) for part in PARTS}
        row["total"] = statistics.median(totals)
        row["total_spread"] = [min(totals), max(totals)]
        figures[name] = row
        parts = ", ".join(f"{part} {1000 * row[part]:.1f}" for part in PARTS)
        print(
            f"{name}: {1000 * row['total']:.0f} ms ({1000 * min(totals):.0f}-"
            f"{1000 * max(totals):.0f}) of CPU: {parts} ms"
        )
    if not args.no_write:
        results.write("read_ahead", figures)


if __name__ == "__main__":
    main()
