"""How close per-op device time through XLA:GPU command buffers comes to the truth.

For each recorded case of ``tests/data/xla_gpu`` (H100, JAX 0.11.2; 5 steady steps), the
kernels of the default run (command buffers: every kernel's ``hlo_op`` is
``command_buffer_N``) are placed on HLO instructions by :mod:`xlanb.analysis.command_buffers`,
and compared with the same program run with command buffers off (each kernel names its
instruction). Printed per case: the share of the device time placed on an instruction, the
share placed on the instruction the truth has it on (per op, the smaller of the two times),
the worst error of an op with >= 1% of the time, and the placement agreement: the kernels of
each run paired in order with the truth run's (a difflib alignment of kernel names, copies
and memsets alike), the share of kernel time placed on the instruction (or JAX op name) its
partner names (and how much of the time could be paired): per-op times also differ between
the two processes, which the agreement leaves out.

    .venv/bin/python bench/gpu_attribution.py
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

import pandas as pd

from xlanb.analysis.command_buffers import UNATTRIBUTED, attribute, entry_commands
from xlanb.analysis.device_time import program_events
from xlanb.formats.xspace import read_xspace

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "xla_gpu"
BIG_OP = 0.01


def placed_kernels(folder: Path, by_op_name: bool = False) -> pd.DataFrame:
    """The program's kernels in `folder`'s steady trace with ``placed``: their HLO instruction
    (or JAX op name: the two recordings compiled the transformer apart, with other numbers
    and a few other library calls)."""
    events = program_events(read_xspace(folder / "steady5.xplane.pb", markers=False).events)
    kernels = events[events["hlo_op"].notna()].sort_values("start_ns")
    dumped = sorted((folder / "xla_dump").glob("*after_optimizations.txt"))
    if not dumped:  # a run without command buffers names each kernel's instruction
        return kernels.assign(placed=kernels["hlo_op"].astype(str))
    text = dumped[0].read_text()
    ops = attribute(kernels, text)
    if by_op_name:
        names = {command.name: command.op_name for command in entry_commands(text)}
        ops = ops.map(lambda op: names.get(op, op))
    return kernels.assign(placed=ops)


def per_op(kernels: pd.DataFrame) -> pd.Series:
    return (kernels["duration_ns"] / 1e9).groupby(kernels["placed"].to_numpy()).sum()


def _kernel_key(name: str) -> str:
    return re.sub(r"^(memcpy\w*|MemcpyD2D)$", "copy", re.sub(r"^Memset.*", "memset", name))


def agreement(placed: pd.DataFrame, truth: pd.DataFrame) -> tuple[float, float]:
    """(the share of the paired kernel time placed where the partner is, the share of
    `placed`'s kernel time paired): kernels paired in order with the truth run's, run by
    run."""
    agreed = paired = 0.0
    for (_, run), (_, true_run) in zip(
        placed.groupby("run_id"), truth.groupby("run_id"), strict=False
    ):
        names = [_kernel_key(name) for name in run["name"]]
        true_names = [_kernel_key(name) for name in true_run["name"]]
        ops, true_ops = run["placed"].tolist(), true_run["placed"].tolist()
        seconds = (run["duration_ns"] / 1e9).tolist()
        matcher = difflib.SequenceMatcher(None, names, true_names, autojunk=False)
        for block in matcher.get_matching_blocks():
            for offset in range(block.size):
                paired += seconds[block.a + offset]
                if ops[block.a + offset] == true_ops[block.b + offset]:
                    agreed += seconds[block.a + offset]
    return agreed / paired, paired / float(placed["duration_ns"].sum() / 1e9)


def compare(case: str, by_op_name: bool = False) -> dict[str, Any]:
    placed_runs = placed_kernels(DATA / f"{case}_cmdbuf", by_op_name)
    truth_runs = placed_kernels(DATA / f"{case}_nocmdbuf", by_op_name)
    placed, truth = per_op(placed_runs), per_op(truth_runs)
    total = float(placed.sum())
    unplaced = float(placed[placed.index.str.endswith(UNATTRIBUTED)].sum())
    both = pd.concat([placed.rename("placed"), truth.rename("truth")], axis=1).fillna(0.0)
    matched = float(both.min(axis=1).sum()) / float(both["truth"].sum())
    big = both[both["truth"] >= BIG_OP * both["truth"].sum()]
    errors = (big["placed"] - big["truth"]).abs() / big["truth"]
    return {
        "placed": 1 - unplaced / total,
        "agreement": agreement(placed_runs, truth_runs),
        "matched": matched,
        "big_ops": len(big),
        "worst": float(errors.max()),
        "worst_op": str(errors.idxmax()),
        "busy_ms": total * 1e3 / 5,
        "truth_ms": float(both["truth"].sum()) * 1e3 / 5,
    }


def main() -> None:
    cases = (("mlp", False), ("transformer", False), ("transformer", True), ("h200_mlp", False))
    for case, by_op_name in cases:
        figures = compare(case, by_op_name)
        label = f"{case} (per JAX op name)" if by_op_name else case
        print(
            f"{label}: {figures['placed']:.1%} of kernel time placed on an instruction, "
            f"{figures['matched']:.1%} on the truth's; {figures['big_ops']} ops >= 1%: worst "
            f"error {figures['worst']:.1%} ({figures['worst_op']}); kernel time per step "
            f"{figures['busy_ms']:.2f} ms (truth run {figures['truth_ms']:.2f} ms); placed alike: "
            f"{figures['agreement'][0]:.1%} of the time of kernels paired with the truth run's "
            f"({figures['agreement'][1]:.1%} of the time paired)"
        )


if __name__ == "__main__":
    main()
