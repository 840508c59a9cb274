"""The main thread's waits in a trace's summary (real XLA:CPU traces of JAX 0.6 and 0.10 and
torch_xla): a wait of under a microsecond (XLA:CPU marks one per argument buffer a run waits
on, over a thousand a transformer step) is not a span; a read's wait is, however short (the
account follows it with the device's idle gap); the waits left out add up to almost nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from xlanb.analysis import device_time
from xlanb.analysis.sync_cost import READ_WAITS
from xlanb.analysis.trace_summary import MAIN_THREAD, SHORTEST_WAIT_NS
from xlanb.formats.xspace import read_xspace

TRACES = sorted((Path(__file__).resolve().parent.parent / "data" / "xspace").glob("*.xplane.pb"))


@pytest.mark.parametrize("trace", TRACES, ids=lambda path: path.name)
def test_waits_under_a_microsecond_are_not_spans(trace):
    events = read_xspace(trace, markers=False)
    frame = events.events
    main = frame[
        frame["hlo_op"].isna()
        & (frame["kind"] == "sync_wait")
        & frame["line"].astype(str).str.fullmatch(MAIN_THREAD)
    ]
    short = main[(main["duration_ns"] < SHORTEST_WAIT_NS) & ~main["name"].isin(READ_WAITS)]
    _ops, spans = device_time.rows("jax", events, (0.0, float("inf")))
    waits = [span for span in spans if span["lane"] == "sync_wait"]
    assert len(waits) == len(main) - len(short)
    assert all(
        span["seconds"] * 1e9 >= SHORTEST_WAIT_NS - 1 or span["name"] in READ_WAITS
        for span in waits
    )
    left_out = main["duration_ns"].sum() / 1e9 - sum(span["seconds"] for span in waits)
    assert left_out <= len(short) * SHORTEST_WAIT_NS / 1e9 + 1e-6


def test_the_recorded_traces_have_such_waits():
    # what the test above checks is there to check
    counts = []
    for trace in TRACES:
        frame = read_xspace(trace, markers=False).events
        main = frame[(frame["kind"] == "sync_wait") & (frame["line"] == "python")]
        counts.append(int((main["duration_ns"] < SHORTEST_WAIT_NS).sum()))
    assert sum(counts) > 0
