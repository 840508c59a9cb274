"""A compile whose time the runtime adds after writing its step's record (torch_xla 2.7 under
load: the compile counted in one record, its seconds in the next) keeps its seconds: the
compiles' seconds add up to the file's last CompileTime total. The file is the recorded
``tests/data/torch_xla/metrics.txt`` with step 4's CompileTime total set back to step 3's."""

from __future__ import annotations

import math
from pathlib import Path

import xlanb

RECORDED = Path(__file__).resolve().parent.parent / "data" / "torch_xla" / "metrics.txt"
STEP_3_TOTAL, STEP_4_TOTAL, LAST_TOTAL = 0.149085310, 0.161607425, 0.171352291


def _late_file(tmp_path: Path) -> Path:
    records = RECORDED.read_text().split("[MetricsData; step=")
    at = next(i for i, record in enumerate(records) if record.startswith("4]"))
    compile_time = records[at].index("Metric: CompileTime")
    head, tail = records[at][:compile_time], records[at][compile_time:]
    assert "Accumulator: 161ms607.425us" in tail
    records[at] = head + tail.replace(
        "Accumulator: 161ms607.425us", "Accumulator: 149ms085.310us", 1
    )
    late = tmp_path / "metrics.txt"
    late.write_text("[MetricsData; step=".join(records))
    return late


def test_the_recorded_file_gives_each_compile_its_seconds():
    compiles = xlanb.load(RECORDED).compiles
    assert len(compiles) == 5 and compiles["seconds"].gt(0).all()
    assert math.isclose(compiles["seconds"].sum(), LAST_TOTAL, rel_tol=1e-9)


def test_a_compiles_late_seconds_go_back_to_it(tmp_path):
    compiles = xlanb.load(_late_file(tmp_path)).compiles
    assert list(compiles["step"]) == [0, 1, 2, 4, 6]
    assert compiles["seconds"].gt(0).all()
    late = compiles.loc[compiles["step"] == 4, "seconds"].iloc[0]
    assert math.isclose(late, STEP_4_TOTAL - STEP_3_TOTAL, rel_tol=1e-6)
    assert math.isclose(compiles["seconds"].sum(), LAST_TOTAL, rel_tol=1e-9)
