"""Which graph each torch_xla run ran, read from the device trace's runs inside its runtime
sample (:func:`xlanb.analysis.run_labels.label_runs`). The times are two captures of a real
step of two graphs on XLA:CPU (torch_xla 2.9), in µs from the first run's end."""

from __future__ import annotations

import pytest

from xlanb.analysis.run_labels import label_runs

A, B = "8183bfbd2b4b55ad9d43585211616b90", "8324b59978d9554f46a9d752e4579751"


def _rows(runs):
    return [
        {"time": end * 1e-6, "seconds": (end - start) * 1e-6, "graph": None, "count": 1}
        for start, end in runs
    ]


def _spans(spans):
    return [
        {"lane": "device", "graph": graph, "start": start * 1e-6, "seconds": (end - start) * 1e-6}
        for graph, start, end in spans
    ]


#: Runs 12 µs apart: the run before a run ends within the clock's slack of its start.
CLOSE_RUNS = {
    "12 us apart": (
        [(789.4, 810.4), (822.3, 838.8), (930.3, 937.7)],
        [(B, 801.3, 804.2), (A, 825.2, 836.6), (B, 933.6, 935.1)],
        [B, A, B],
    ),
    "11 us apart": (
        [(574.4, 593.7), (719.1, 734.1), (745.3, 756.7), (859.5, 876.7)],
        [(A, 578.4, 590.1), (B, 727.4, 729.3), (A, 747.7, 754.8), (B, 867.8, 870.7)],
        [A, B, A, B],
    ),
}


@pytest.mark.parametrize("case", sorted(CLOSE_RUNS))
def test_a_run_takes_the_traced_run_inside_it_not_its_neighbour_s(case):
    runs, spans, graphs = CLOSE_RUNS[case]
    rows = _rows(runs)
    label_runs(rows, _spans(spans))
    assert [row["graph"] for row in rows] == graphs


def test_a_traced_run_just_outside_its_sample_still_labels_it():
    # clock rounding: the trace's run ends a few µs after the runtime's sample
    rows = _rows([(100.0, 110.0), (300.0, 310.0)])
    label_runs(rows, _spans([(A, 108.0, 118.0), (B, 295.0, 302.0)]))
    assert [row["graph"] for row in rows] == [A, B]


def test_a_run_launched_while_another_ran_does_not_take_its_traced_run():
    # B was launched while A ran: both samples hold A's traced run, which ended as A completed
    rows = _rows([(100.0, 200.0), (150.0, 230.0)])
    label_runs(rows, _spans([(A, 180.0, 195.0), (B, 205.0, 225.0)]))
    assert [row["graph"] for row in rows] == [A, B]


def test_runs_that_cannot_be_told_apart_are_never_guessed_between_two_graphs():
    # one sample holds both traced runs, nearer both their ends than the other's: no label
    rows = _rows([(100.0, 200.0), (120.0, 260.0)])
    label_runs(rows, _spans([(A, 140.0, 150.0), (B, 160.0, 170.0)]))
    assert [row["graph"] for row in rows] == [None, None]


def test_a_run_already_labelled_keeps_its_graph_and_its_traced_run():
    rows = _rows([(100.0, 110.0), (122.0, 140.0)])
    rows[0]["graph"] = B
    label_runs(rows, _spans([(B, 102.0, 108.0), (A, 125.0, 135.0)]))
    assert [row["graph"] for row in rows] == [B, A]
