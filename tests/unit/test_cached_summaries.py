"""The end of a cell asks for `Profile.summary` and `Profile.shown` (what `derive` kept for
the views: the host's activity, ...) several times (headline, HTML, text) and keeps each
answer: a profile changed afterwards (a frame replaced, rows added, the wall time or backends
changed) gets a fresh one, never a stale one."""

from __future__ import annotations

import pandas as pd
import pytest

from xlanb.analysis.breakdown import host_activity, lane_intervals, time_account
from xlanb.core.frame_memo import FrameMemo
from xlanb.core.profile import Profile
from xlanb.core.schema import make_frame

STARTED = 1_000.0


def _executions(count: int, seconds: float) -> pd.DataFrame:
    row = {"backend": "jax", "graph": "jit_step", "seconds": seconds, "time": STARTED}
    return make_frame("executions", [{**row, "count": count}])


def _spans(device: list[tuple[float, float]], waits: list[tuple[float, float]]) -> pd.DataFrame:
    rows = [
        {
            "backend": "jax",
            "lane": lane,
            "name": "jit_step" if lane == "device" else "wait",
            "graph": "jit_step" if lane == "device" else None,
            "start": STARTED + start,
            "seconds": seconds,
            "estimated": False,
        }
        for lane, spans in (("device", device), ("sync_wait", waits))
        for start, seconds in spans
    ]
    return make_frame("spans", rows)


def _profile() -> Profile:
    return Profile(
        name="cached",
        backends=["jax"],
        started_at=STARTED,
        wall_seconds=1.0,
        executions=_executions(3, 0.3),
        spans=_spans([(0.1, 0.2), (0.5, 0.2)], [(0.1, 0.2)]),
    )


def test_summary_follows_a_replaced_frame_the_wall_time_and_added_fallbacks():
    profile = _profile()
    first = profile.summary()
    assert (first["executions"], first["execute_seconds"], first["wall_seconds"]) == (3, 0.3, 1.0)

    first["executions"] = 99  # the caller's copy: the kept answer is not changed by it
    assert profile.summary()["executions"] == 3

    profile.executions = _executions(7, 0.7)
    assert (profile.summary()["executions"], profile.summary()["execute_seconds"]) == (7, 0.7)

    profile.wall_seconds = 2.5
    assert profile.summary()["wall_seconds"] == 2.5

    assert profile.summary()["syncs"] == 0
    profile.fallbacks = make_frame(
        "fallbacks",
        [
            {
                "backend": "jax",
                "op": "item",
                "count": 4,
                "cause": "item",
                "advice": "",
                "location": "",
                "cell_line": 2,
            }
        ],
    )
    assert profile.summary()["syncs"] == 4

    # a frame grown in place (same object, more rows) is read again too
    profile.executions.loc[len(profile.executions)] = ["jax", "jit_other", 0.1, STARTED, 1]
    assert profile.summary()["executions"] == 8


def test_summary_of_two_profiles_with_equal_frames_sizes_is_each_its_own():
    one, other = _profile(), _profile()
    other.executions = _executions(5, 0.5)
    assert one.summary()["executions"] == 3
    assert other.summary()["executions"] == 5
    assert one.summary()["executions"] == 3


def test_host_activity_follows_the_spans_and_the_wall_time():
    profile = _profile()
    busy, hidden = host_activity(profile)
    # busy whenever not waiting: 1.0 s of wall less the 0.2 s wait
    assert round(busy, 6) == 0.8
    assert host_activity(profile) == (busy, hidden)

    profile.wall_seconds = 2.0
    longer = host_activity(profile)
    assert round(longer[0], 6) == 1.8

    profile.spans = _spans([(0.1, 0.2), (0.5, 0.2)], [(0.1, 0.2), (0.5, 0.4)])
    waited = host_activity(profile)
    assert round(waited[0], 6) == 1.4

    other = _profile()  # another profile asked in between: each gets its own answer
    assert round(host_activity(other)[0], 6) == 0.8
    assert host_activity(profile) == waited


def test_derive_keeps_what_the_views_show_and_a_changed_profile_gets_it_afresh():
    from xlanb.analysis import derive
    from xlanb.views.summary import account_line

    profile = derive(_profile())
    kept = profile.shown
    assert kept.host_activity == host_activity(profile)
    assert round(kept.host_activity[0], 6) == 0.8
    assert kept.traced_window is None and kept.forced_syncs.empty and kept.rank_table.empty
    assert profile.shown is kept  # read, not computed again
    assert "host busy 800.0 ms" in account_line(profile)

    profile.wall_seconds = 2.0  # changed after derive: never a stale answer
    assert profile.shown is not kept
    assert round(profile.shown.host_activity[0], 6) == 1.8
    assert "host busy 1.80 s" in account_line(profile)

    built = _profile()  # never derived (a Profile built by hand): computed when first read
    assert built.shown.host_activity == kept.host_activity


def test_the_account_follows_a_replaced_spans_frame_the_window_and_added_rows():
    profile = _profile()
    first = time_account(profile)
    assert first is not None and first.device == pytest.approx(0.4)
    assert time_account(profile) is first  # read once per spans frame and window

    profile.wall_seconds = 0.55  # the window now cuts the second run
    assert time_account(profile).device == pytest.approx(0.25)

    profile.spans = _spans([(0.1, 0.2)], [])
    assert time_account(profile).device == pytest.approx(0.2)

    grown = _spans([(0.1, 0.2)], [])
    profile.spans = grown
    assert time_account(profile).device == pytest.approx(0.2)
    grown.loc[len(grown)] = grown.iloc[0].to_dict() | {"start": STARTED + 0.3}  # in place
    assert time_account(profile).device == pytest.approx(0.4)


def test_lane_intervals_are_read_only_and_each_caller_gets_its_own_dict():
    profile = _profile()
    intervals = lane_intervals(profile)
    assert intervals["device"].tolist() == [
        [STARTED + 0.1, STARTED + 0.1 + 0.2],
        [STARTED + 0.5, STARTED + 0.5 + 0.2],
    ]
    with pytest.raises(ValueError):
        intervals["device"][0, 0] = 0.0
    intervals["device"] = intervals["device"][:1]  # the caller's dict, not the kept one
    assert len(lane_intervals(profile)["device"]) == 2


def test_transfers_count_the_transfer_metrics_else_the_transfer_counters():
    metrics = make_frame(
        "metrics",
        [
            {"backend": "torch_xla", "name": "TransferToDeviceTime", "unit": "s", "count": 3},
            {"backend": "torch_xla", "name": "TransferFromDeviceTime", "unit": "s", "count": 2},
            {"backend": "torch_xla", "name": "CompileTime", "unit": "s", "count": 9},
            {"backend": "torch_xla", "name": "TransferToServerTime", "unit": "s", "count": None},
        ],
    )
    counters = make_frame(
        "counters",
        [
            {"backend": "torch_xla", "name": "xla::_to_copy", "category": "transfer", "delta": 50},
            {"backend": "torch_lazy", "name": "lazy::_to_copy", "category": "transfer", "delta": 4},
            {"backend": "torch_lazy", "name": "lazy::_to_cpu", "category": "transfer", "delta": 1},
            {"backend": "torch_lazy", "name": "CachedCompile", "category": "compile", "delta": 7},
        ],
    )
    profile = Profile(
        name="transfers",
        backends=["torch_xla", "torch_lazy"],
        metrics=metrics,
        counters=counters,
    )
    assert profile.summary()["transfers"] == (3 + 2) + (4 + 1)


def _graphs(names: list[str]) -> pd.DataFrame:
    rows = [
        {
            "backend": "jax",
            "graph": name,
            "kind": "hlo_optimized",
            "nodes": 2,
            "text": f"HloModule {name}\n\nENTRY main {{\n  ROOT p = f32[] parameter(0)\n}}\n",
            "compile_id": 1,
        }
        for name in names
    ]
    return make_frame("graphs", rows)


def test_frame_memo_keeps_a_value_per_frames_and_key_until_a_frame_changes():
    memo: FrameMemo[int] = FrameMemo(size=2)
    made: list[str] = []

    def make(label: str) -> int:
        made.append(label)
        return len(made)

    frame = _spans([(0.1, 0.2)], [])
    assert memo.get((frame,), "a", lambda: make("a")) == 1
    assert memo.get((frame,), "a", lambda: make("again")) == 1  # kept
    assert memo.get((frame,), "b", lambda: make("b")) == 2  # another key
    grown = pd.concat([frame, frame], ignore_index=True)
    assert memo.get((grown,), "a", lambda: make("grown")) == 3
    frame.loc[len(frame)] = frame.iloc[0]  # the same object, a row more
    assert memo.get((frame,), "a", lambda: make("added")) == 4
    assert len(memo._kept) == 2  # the oldest went
    assert made == ["a", "b", "grown", "added"]


def test_graph_queries_follow_a_replaced_graphs_frame_and_hand_out_copies():
    profile = _profile()
    profile.graphs = _graphs(["jit_a"])
    entries = profile.graph_entries()
    assert entries["graph"].tolist() == ["jit_a"]
    entries["graph"] = "changed by the caller"  # a caller's copy: the next one is intact
    assert profile.graph_entries()["graph"].tolist() == ["jit_a"]
    assert profile.graph(0).name == "jit_a"
    profile.graphs = _graphs(["jit_a", "jit_b"])
    assert profile.graph_entries()["graph"].tolist() == ["jit_a", "jit_b"]
    assert profile.graph(-1).name == "jit_b"
    profile.graphs = _graphs(["jit_c"])  # replaced, same length as the first
    assert profile.graph(0).name == "jit_c"
    assert profile.graph_kinds(0) == ["hlo_optimized"]


def test_the_summary_lines_the_html_and_text_share_follow_the_profile():
    from xlanb.analysis import derive
    from xlanb.views.summary import account_line, headline, steps_line

    profile = derive(_profile())
    first = headline(profile)
    assert dict(first)["executions"].startswith("3")
    first.append(("mine", "changed"))  # the caller's copy: the kept lines are not changed
    assert headline(profile) == first[:-1]
    line = account_line(profile)
    assert line.startswith("wall 1.00 s") and account_line(profile) == line

    profile.executions = _executions(7, 0.7)  # a replaced frame: said afresh
    assert dict(headline(profile))["executions"].startswith("7")
    profile.wall_seconds = 2.0  # a changed wall time: said afresh, with the new `shown`
    assert account_line(profile).startswith("wall 2.00 s")
    assert "host busy 1.80 s" in account_line(profile)

    other = derive(_profile())  # another profile of equal frame sizes: its own lines
    assert dict(headline(other))["executions"].startswith("3")
    assert steps_line(other) == steps_line(derive(_profile()))


def test_summary_counts_the_fallbacks_by_kind_as_a_groupby_sums_them():
    rows = [
        ("item", 2),
        ("missing_lowering", 3),
        ("item", 5),
        ("unknown_cause", 1),  # another cause: counted as a CPU fallback
        (None, 7),  # a null cause: left out
        ("dynamic_shape", None),  # a null count: adds nothing
    ]
    profile = _profile()
    profile.fallbacks = make_frame(
        "fallbacks",
        [
            {"backend": "torch_xla", "op": f"aten::op{i}", "count": count, "cause": cause}
            | {"advice": "", "location": ""}
            for i, (cause, count) in enumerate(rows)
        ],
    )
    numbers = profile.summary()
    assert (numbers["syncs"], numbers["fallback_ops"], numbers["dynamic_shapes"]) == (7, 4, 0)


def test_program_runs_count_the_device_spans_of_each_module():
    from xlanb.analysis import _program_runs

    spans = make_frame(
        "spans",
        [
            {"backend": "jax", "lane": lane, "name": "run", "graph": "jit_step"}
            | {"start": STARTED + i, "seconds": 0.1, "estimated": False, "module_id": module}
            for i, (lane, module) in enumerate(
                [("device", 3), ("device", 5), ("op", 3), ("device", 3), ("device", None)]
            )
        ],
    )
    expected = spans.loc[spans["lane"] == "device", "module_id"].dropna().value_counts()
    assert _program_runs(spans) == {int(k): int(v) for k, v in expected.items()} == {3: 2, 5: 1}
