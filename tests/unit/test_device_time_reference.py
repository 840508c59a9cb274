"""The numpy device-time summary (:mod:`xlanb.analysis.trace_summary`) against the pandas one
it replaced (``tests/support/device_time_reference.py``), on every recorded trace and a few
windows of each: the same ops in the same order with the same counts and seconds (sums to
the last bits), the same spans, the same runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import device_time_reference as reference
from xlanb.analysis import device_time
from xlanb.capture import device_trace
from xlanb.formats.xspace import read_xspace

DATA = Path(__file__).resolve().parent.parent / "data"
#: Traces of one device: the pandas summary added the devices of a sharded program together
#: (``xspace/jax_2dev_cut`` is checked in test_several_devices.py).
TRACES = sorted(
    path for path in (DATA / "xspace").glob("*.xplane.pb") if not path.name.startswith("jax_2dev")
) + sorted((DATA / "xla_gpu").glob("*/*.xplane.pb"))


def _hlo_texts(trace: Path) -> dict[str | int, str]:
    """Program id -> optimized HLO text, of the XLA dump recorded with a GPU trace."""
    return {
        int(path.name.split(".")[0].removeprefix("module_")): path.read_text()
        for path in sorted((trace.parent / "xla_dump").glob("*gpu_after_optimizations.txt"))
    }


#: How far an op's seconds may lie from the pandas sum's: pandas' groupby sum is compensated
#: (Kahan), ``np.bincount`` adds in event order, so the last bits may differ.
SUM_TOLERANCE = 1e-12


def _assert_same_ops(new: list[tuple], old: list[tuple]) -> None:
    """The same rows in the same order: module, program, op, count and runs equal, seconds
    and first-run seconds equal to :data:`SUM_TOLERANCE` (relative)."""
    assert [row[:4] + row[6:] for row in new] == [row[:4] + row[6:] for row in old]
    for new_row, old_row in zip(new, old, strict=True):
        assert new_row[4:6] == pytest.approx(old_row[4:6], rel=SUM_TOLERANCE, abs=0.0), old_row


def _windows(trace: Path, events) -> list[tuple[float, float]]:
    """The whole trace, its second half, and the capture's window where the fixture says."""
    starts = events.events["start_ns"]
    middle = (float(starts.min()) + float(starts.max())) / 2e9
    windows = [(0.0, float("inf")), (middle, float("inf")), (0.0, middle)]
    info = trace.with_name(trace.name.removesuffix(".xplane.pb") + ".json")
    if info.exists():
        known = json.loads(info.read_text())
        if "before_start_ns" in known:
            windows.append((known["before_start_ns"] / 1e9, known["after_stop_ns"] / 1e9))
    return windows


@pytest.mark.parametrize("trace", TRACES, ids=lambda path: str(path.relative_to(DATA)))
def test_the_summary_is_the_one_pandas_made(trace):
    events = read_xspace(trace, markers=False)
    texts = _hlo_texts(trace)
    for start, end in _windows(trace, events):
        events.summary = None
        new = device_time.summarize(events, start, end, texts)
        old = reference.summarize(events, start, end, texts)
        assert new.gpu == old.gpu
        _assert_same_ops(new.ops, old.ops)
        assert new.total == old.total
        assert new.spans == old.spans
    assert device_trace._runs_in(events) == reference.runs_in(events)


def test_the_traces_hold_what_the_comparison_needs():
    # each path of the summary has a trace: JAX's run ids and runs told without them, GPU
    # kernels and XLA:CPU thunks, the main thread's host spans
    summaries, with_run_ids = [], []
    for trace in TRACES:
        events = read_xspace(trace, markers=False)
        summaries.append(reference.summarize(events, 0.0, float("inf"), _hlo_texts(trace)))
        ops = events.events[events.events["hlo_op"].notna()]
        with_run_ids.append(bool(ops["run_id"].notna().all()))
    assert any(summary.gpu for summary in summaries)
    assert any(not summary.gpu and summary.ops for summary in summaries)
    assert True in with_run_ids and False in with_run_ids
    lanes = {span[0] for summary in summaries for span in summary.spans}
    assert {"op", "device", "sync_wait", "transfer"} <= lanes
