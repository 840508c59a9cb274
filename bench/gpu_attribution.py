"""How close per-op device time through XLA:GPU command buffers comes to the truth.

For each recorded case of ``tests/data/xla_gpu`` (H100, JAX 0.11.2; 5 steady steps), the
kernels of the default run (command buffers: every kernel's ``hlo_op`` is
``command_buffer_N``) are placed on HLO instructions by :mod:`xlanb.analysis.command_buffers`,
and compared with the same program run with command buffers off (each kernel names its
instruction). Printed per case: the share of the device time placed on an instruction, the
share placed on the instruction the truth has it on (per op, the smaller of the two times),
and the worst error of an op with >= 1% of the time.

    .venv/bin/python bench/gpu_attribution.py
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from xlanb.analysis.command_buffers import UNATTRIBUTED, attribute, entry_commands
from xlanb.analysis.device_time import program_events
from xlanb.formats.xspace import read_xspace

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "xla_gpu"
BIG_OP = 0.01


def per_op(folder: Path, by_op_name: bool = False) -> pd.Series:
    """Seconds per HLO instruction of the program's kernels in `folder`'s steady trace (or
    per JAX op name: the two recordings compiled the transformer apart, with other numbers
    and a few other library calls)."""
    events = program_events(read_xspace(folder / "steady5.xplane.pb", markers=False).events)
    kernels = events[events["hlo_op"].notna()]
    text = next((folder / "xla_dump").glob("*after_optimizations.txt")).read_text()
    ops = attribute(kernels, text)
    if by_op_name:
        names = {command.name: command.op_name for command in entry_commands(text)}
        ops = ops.map(lambda op: names.get(op, op))
    return (kernels["duration_ns"] / 1e9).groupby(ops.to_numpy()).sum()


def compare(case: str, by_op_name: bool = False) -> dict[str, float]:
    placed = per_op(DATA / f"{case}_cmdbuf", by_op_name)
    truth = per_op(DATA / f"{case}_nocmdbuf", by_op_name)
    total = float(placed.sum())
    unplaced = float(placed[placed.index.str.endswith(UNATTRIBUTED)].sum())
    both = pd.concat([placed.rename("placed"), truth.rename("truth")], axis=1).fillna(0.0)
    matched = float(both.min(axis=1).sum()) / float(both["truth"].sum())
    big = both[both["truth"] >= BIG_OP * both["truth"].sum()]
    errors = (big["placed"] - big["truth"]).abs() / big["truth"]
    return {
        "placed": 1 - unplaced / total,
        "matched": matched,
        "big_ops": len(big),
        "worst": float(errors.max()),
        "worst_op": str(errors.idxmax()),
        "busy_ms": total * 1e3 / 5,
        "truth_ms": float(both["truth"].sum()) * 1e3 / 5,
    }


def main() -> None:
    for case, by_op_name in (("mlp", False), ("transformer", False), ("transformer", True)):
        figures = compare(case, by_op_name)
        label = f"{case} (per JAX op name)" if by_op_name else case
        print(
            f"{label}: {figures['placed']:.1%} of kernel time placed on an instruction, "
            f"{figures['matched']:.1%} on the truth's; {figures['big_ops']} ops >= 1%: worst "
            f"error {figures['worst']:.1%} ({figures['worst_op']}); kernel time per step "
            f"{figures['busy_ms']:.2f} ms (truth run {figures['truth_ms']:.2f} ms)"
        )


if __name__ == "__main__":
    main()
