"""xlanb.analysis.time_account: exclusive buckets of a cell's wall time (pure, no runtime)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from xlanb.analysis import time_account as ta

NONE: list[tuple[float, float]] = []


def _acc(ws, we, device=NONE, compile=NONE, transfer=NONE, sync_wait=NONE, **kw):
    return ta.account(
        ws, we, device=device, compile=compile, transfer=transfer, sync_wait=sync_wait, **kw
    )


def _sum(acc) -> float:
    return sum(acc.buckets().values())


def test_empty_inputs_all_python():
    acc = _acc(10.0, 12.5)
    assert acc.python == 2.5
    assert (acc.device, acc.compile, acc.transfer, acc.sync_wait, acc.other) == (0, 0, 0, 0, 0)
    assert acc.host_busy_seconds is None and acc.host_hidden_seconds is None
    assert acc.header() == "wall 2.50 s = python 2.50 s (100%)"


def test_zero_wall():
    acc = _acc(5.0, 5.0, device=[(4.0, 6.0)], host_busy=[(4.0, 6.0)])
    assert acc.wall_seconds == 0 and _sum(acc) == 0
    assert all(row["share"] == 0 for row in acc.rows("jax"))
    assert acc.host_busy_seconds == 0 and acc.host_hidden_seconds == 0
    assert acc.header() == "wall 0.00 µs"


def test_reversed_window_raises():
    with pytest.raises(ValueError, match="before"):
        _acc(2.0, 1.0)


def test_device_union_of_overlaps():
    acc = _acc(0.0, 10.0, device=[(1, 3), (2, 4), (2.5, 3.5), (8, 9)])
    assert acc.device == pytest.approx(4.0, abs=1e-12)
    assert acc.python == pytest.approx(6.0, abs=1e-12)
    assert abs(_sum(acc) - 10.0) < 1e-9


def test_clipping_to_window():
    acc = _acc(
        10.0,
        20.0,
        device=[(5, 12), (19, 30)],
        compile=[(0, 100)],
        transfer=[(25, 30)],
        sync_wait=[(1, 2)],
    )
    assert acc.device == pytest.approx(3.0, abs=1e-12)  # [10,12] + [19,20]
    assert acc.compile == pytest.approx(7.0, abs=1e-12)  # everything else
    assert acc.transfer == 0 and acc.sync_wait == 0 and acc.python == 0
    assert abs(_sum(acc) - 10.0) < 1e-9


def test_priority_device_compile_transfer_sync_python():
    # 0-1 python, 1-3 device (beats compile 2-4), 3-4 compile (beats transfer 3.5-5),
    # 4-5 transfer (beats sync 4.5-7), 5-7 sync_wait, 7-10 python.
    acc = _acc(
        0.0, 10.0, device=[(1, 3)], compile=[(2, 4)], transfer=[(3.5, 5)], sync_wait=[(4.5, 7)]
    )
    assert acc.buckets() == pytest.approx(
        {
            "python": 4.0,
            "compile": 1.0,
            "device": 2.0,
            "transfer": 1.0,
            "sync_wait": 2.0,
            "other": 0.0,
        },
        abs=1e-12,
    )
    assert abs(_sum(acc) - 10.0) < 1e-9


def test_other_only_when_given_and_below_sync_wait():
    base = _acc(0.0, 4.0, sync_wait=[(0, 1)])
    assert base.other == 0.0
    acc = _acc(0.0, 4.0, sync_wait=[(0, 1)], other=[(0.5, 2.0)], device=[(1.5, 1.75)])
    assert acc.other == pytest.approx(0.75, abs=1e-12)  # [1,1.5] + [1.75,2]
    assert acc.sync_wait == pytest.approx(1.0, abs=1e-12)
    assert acc.device == pytest.approx(0.25, abs=1e-12)
    assert acc.python == pytest.approx(2.0, abs=1e-12)


def test_degenerate_intervals_ignored():
    acc = _acc(
        0.0, 1.0, device=[(0.5, 0.5), (0.8, 0.2), (float("nan"), 0.9)], compile=np.empty((0, 2))
    )
    assert acc.device == 0 and acc.python == 1.0


def test_host_busy_and_hidden():
    acc = _acc(0.0, 10.0, device=[(2, 6)], host_busy=[(0, 3), (1, 4), (5, 7), (9, 12)])
    # busy union within window: [0,4] + [5,7] + [9,10] = 7; overlap with [2,6]: [2,4]+[5,6] = 3
    assert acc.host_busy_seconds == pytest.approx(7.0, abs=1e-12)
    assert acc.host_hidden_seconds == pytest.approx(3.0, abs=1e-12)
    # host_busy never takes part in the buckets
    assert acc.device == pytest.approx(4.0) and acc.python == pytest.approx(6.0)


def test_epoch_seconds_precision_and_sum():
    t0 = time.time_ns() / 1e9
    acc = _acc(t0, t0 + 2.0, device=[(t0 + 0.25, t0 + 0.75)], compile=[(t0, t0 + 1.0)])
    assert acc.device == pytest.approx(0.5, abs=1e-6)
    assert acc.compile == pytest.approx(0.5, abs=1e-6)
    assert abs(_sum(acc) - acc.wall_seconds) < 1e-9


def test_rows_fixed_order_and_shares():
    acc = _acc(0.0, 4.0, device=[(0, 1)], compile=[(1, 3)])
    rows = acc.rows("torch_xla")
    assert [r["bucket"] for r in rows] == [
        "python",
        "compile",
        "device",
        "transfer",
        "sync_wait",
        "other",
    ]
    assert {r["backend"] for r in rows} == {"torch_xla"}
    assert [r["share"] for r in rows] == pytest.approx([0.25, 0.5, 0.25, 0, 0, 0])
    assert sum(r["seconds"] for r in rows) == pytest.approx(4.0, abs=1e-9)


def test_header_largest_first_units_and_omits_zero():
    acc = _acc(0.0, 2.81, compile=[(0, 2.11)], device=[(2.11, 2.52)], sync_wait=[(2.52, 2.5206)])
    assert acc.header() == (
        "wall 2.81 s = compile 2.11 s (75%) · device 410 ms (15%) · "
        "python 289 ms (10%) · sync_wait 600 µs (<1%)"
    )


def test_format_duration():
    f = ta.format_duration
    values = [2.814, 0.0412, 0.00412, 412e-6, 3e-7, 0.99996, 123.4, 0.0009996]
    assert [f(v) for v in values] == [
        "2.81 s",
        "41.2 ms",
        "4.12 ms",
        "412 µs",
        "0.30 µs",
        "1.00 s",
        "123 s",
        "1.00 ms",
    ]


def test_merge_intervals():
    assert ta.merge_intervals([]) == []
    assert ta.merge_intervals([(5, 6), (1, 3), (2, 4), (4, 4.5), (7, 7)]) == [
        (1.0, 4.5),
        (5.0, 6.0),
    ]
    assert ta.merge_intervals([(0, 10), (1, 2), (3, 4)]) == [(0.0, 10.0)]
    assert ta.intervals_seconds([(0, 2), (1, 3), (10, 20)], 0, 12) == 5.0


def test_steps_from_marks():
    assert ta.steps_from_marks([], 0.0, 5.0) == []
    assert ta.steps_from_marks([3.0, 1.0, 1.0, 7.0, -1.0], 0.0, 5.0) == [(0.0, 1.0), (1.0, 3.0)]


def test_large_input_matches_reference():
    rng = np.random.default_rng(0)
    n = 100_000
    starts = rng.uniform(0, 1000, size=(5, n))
    lens = rng.exponential(0.002, size=(5, n))
    ivs = [np.stack([s, s + d], axis=1) for s, d in zip(starts, lens, strict=True)]
    acc = ta.account(
        0.0,
        1000.0,
        device=ivs[0],
        compile=ivs[1],
        transfer=ivs[2],
        sync_wait=ivs[3],
        host_busy=ivs[4],
    )
    assert abs(_sum(acc) - 1000.0) < 1e-9
    # Reference via unions: device bucket == union length; compile == |C \ D|.
    d = ta.intervals_seconds(ivs[0])
    assert acc.device == pytest.approx(d, rel=1e-9)
    both = ta.intervals_seconds(np.concatenate([ivs[0], ivs[1]]))
    assert acc.compile == pytest.approx(both - d, rel=1e-9)


def test_accounts_between_windows_match_one_account_per_window():
    rng = np.random.default_rng(7)
    kinds = {}
    for name in ("device", "compile", "transfer", "sync_wait"):
        starts = rng.uniform(0, 10, 300)
        kinds[name] = np.column_stack([starts, starts + rng.exponential(0.05, 300)])
    bounds = np.sort(np.concatenate([[0.0, 10.0], rng.uniform(0, 10, 40)]))
    split = ta.accounts_between(bounds, **kinds)
    assert len(split) == len(bounds) - 1
    for (start, end), buckets in zip(zip(bounds[:-1], bounds[1:], strict=True), split, strict=True):
        one = ta.account(start, end, **kinds)
        for name in ("python", "compile", "device", "transfer", "sync_wait"):
            assert buckets[name] == pytest.approx(getattr(one, name), abs=1e-9)


def test_the_traced_window_follows_the_profiles_spans():
    """The window is kept for the spans frame last asked about (ten askers a cell): another
    profile's frame, or a frame put in its place, gets its own."""
    from xlanb.analysis.breakdown import traced_window, traced_window_name
    from xlanb.core.profile import Profile
    from xlanb.core.schema import WHOLE_TRACE, make_frame

    def spans(name: str, start: float, seconds: float):
        rows = [
            {"backend": "jax", "lane": "device", "name": "jit_f", "graph": None, "start": 1.0,
             "seconds": 0.5, "estimated": False},
            {"backend": "jax", "lane": "trace", "name": name, "graph": None, "start": start,
             "seconds": seconds, "estimated": False},
        ]  # fmt: skip
        return make_frame("spans", rows)

    first = Profile(name="a", backends=["jax"])
    first.spans = spans("device trace: first 5 runs", 1.0, 2.0)
    second = Profile(name="b", backends=["jax"])
    second.spans = spans("device trace: first 5 runs", 3.0, 1.0)
    assert traced_window(first) == (1.0, 3.0)
    assert traced_window(second) == (3.0, 4.0)
    assert traced_window(first) == (1.0, 3.0)
    assert traced_window_name(first) == "device trace: first 5 runs"
    first.spans = spans(WHOLE_TRACE, 1.0, 2.0)  # traced whole: no window
    assert traced_window(first) is None and traced_window_name(first) is None
    first.spans = make_frame("spans", [])
    assert traced_window(first) is None


def test_the_top_ops_coverage_names_a_second_window_and_adds_its_time():
    """A cell whose last batch compiled after the first window closed traced that batch in a
    second window: the top ops' header names both windows and the time both covered."""
    from xlanb.core.profile import Profile
    from xlanb.core.schema import make_frame
    from xlanb.views.summary import trace_coverage

    rows = [
        {"backend": "jax", "lane": "device", "name": "jit_f", "graph": None, "start": 1.0,
         "seconds": 0.5, "estimated": False},
        {"backend": "jax", "lane": "trace", "name": "device trace: first 8 runs", "graph": None,
         "start": 1.0, "seconds": 0.010, "estimated": False},
        {"backend": "jax", "lane": "trace", "name": "device trace: then 1 run", "graph": None,
         "start": 2.0, "seconds": 0.002, "estimated": False},
    ]  # fmt: skip
    profile = Profile(name="a", backends=["jax"], wall_seconds=3.0)
    profile.spans = make_frame("spans", rows)
    assert trace_coverage(profile) == "device trace: first 8 runs, then 1 run, 12.0 ms of 3.00 s"
    profile.spans = make_frame("spans", rows[:2])
    assert trace_coverage(profile) == "device trace: first 8 runs, 10.0 ms of 3.00 s"
