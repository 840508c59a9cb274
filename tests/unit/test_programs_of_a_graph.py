"""Ops of a graph that ran several programs (JAX: a function compiled for two shapes): the
rows of two trace windows add up (:func:`xlanb.analysis.device_time.add_ops`) and their runs
read as one program's first runs and the rest (:func:`xlanb.views.summary.runs_words`)."""

from __future__ import annotations

import pytest

from xlanb.analysis.device_time import add_ops
from xlanb.views.summary import runs_words


def _op(op: str, seconds: float, runs: int, first: float, **more) -> dict:
    return {
        "graph": "jit(step)",
        "module": "jit_step",
        "op": op,
        "source_file": "/m.py",
        "source_line": 3,
        "count": runs,
        "seconds": seconds,
        "share": 1.0,
        "runs": runs,
        "first_run_seconds": first,
        "programs": 1,
        **more,
    }


def test_an_op_of_two_programs_reads_each_one_s_first_run_apart():
    assert runs_words(8, 0.005, 8, 0.017, None, 2) == (
        "8 runs of 2 programs, first runs 5.0 ms, then 2.0 ms a run"
    )
    assert runs_words(2, 0.004, 2, 0.004, None, 2) == "2 runs, the first of each of 2 programs"
    assert runs_words(6, 0.005, 6, 0.015, None, 1) == "6 runs, first 5.0 ms, then 2.0 ms a run"
    assert runs_words(6, 0.005, 6, 0.015) == runs_words(6, 0.005, 6, 0.015, None, float("nan"))


def test_a_second_window_s_rows_add_to_the_same_op_s_and_shares_are_over_both():
    first = [_op("fusion", 0.006, 5, 0.002), _op("dot", 0.002, 5, 0.001)]
    second = [_op("fusion", 0.001, 3, 0.0005), _op("copy", 0.001, 3, 0.0004)]
    rows = add_ops(first, second)
    assert [row["op"] for row in rows] == ["fusion", "dot", "copy"]
    fusion = rows[0]
    assert (fusion["runs"], fusion["count"], fusion["programs"]) == (8, 8, 2)
    assert fusion["seconds"] == 0.007 and fusion["first_run_seconds"] == 0.0025
    assert [row["programs"] for row in rows[1:]] == [1, 1]
    assert abs(sum(row["share"] for row in rows) - 1.0) < 1e-12
    assert rows[0]["share"] == pytest.approx(0.7)


def test_rows_of_several_devices_add_their_slowest_device_s_seconds():
    first = [_op("fusion", 0.004, 2, 0.002, devices=2, max_device_seconds=0.005)]
    second = [_op("fusion", 0.002, 2, 0.001)]
    (row,) = add_ops(first, second)
    assert row["devices"] == 2 and row["max_device_seconds"] == 0.005 + 0.002


def test_a_later_window_s_runs_of_a_program_counted_before_add_no_first_run():
    """A second window that traced more runs of a program the first window holds the first
    run of (queued runs, under async dispatch) adds them as later runs: its own first traced
    run is a steady one, and the program is not counted again."""
    first = [_op("fusion", 0.012, 2, 0.010)]  # 10 ms first run, then 2 ms
    later = [_op("fusion", 0.020, 10, 0.002, later=True), _op("dot", 0.001, 1, 0.001, later=True)]
    rows = add_ops(first, later)
    fusion = next(row for row in rows if row["op"] == "fusion")
    assert (fusion["runs"], fusion["programs"]) == (12, 1)
    assert fusion["seconds"] == pytest.approx(0.032)
    assert fusion["first_run_seconds"] == 0.010
    assert runs_words(12, 0.010, 12, 0.032, None, 1) == "12 runs, first 10.0 ms, then 2.0 ms a run"
    # a later row with nothing to add to stands alone, its flag gone
    dot = next(row for row in rows if row["op"] == "dot")
    assert "later" not in dot and "later" not in fusion and dot["programs"] == 1
