"""Per-op device time of a program that ran on several devices: one device's count and
seconds (the mean over the devices), how many devices ran each op and the slowest one's
seconds; one device gives the frames it always gave.

On XLA:CPU, a recording of two forced host devices (``tests/data/xspace/jax_2dev_cut``).
The GPU traces are the H100 recordings of ``tests/data/xla_gpu`` (one GPU each): a second
device is made by copying the recorded ``/device:GPU:0`` plane, kernels and stats as they
are, to ``/device:GPU:1``, so both devices ran the same kernels at the same times.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

import xlanb
from xlanb.analysis import device_time, trace_summary
from xlanb.analysis.trace_summary import WAIT_SPAN
from xlanb.formats import xspace as X
from xlanb.formats.xspace import read_xspace
from xlanb.views.summary import summary_text

GPU = Path(__file__).resolve().parent.parent / "data" / "xla_gpu"
RECORDINGS = ["mlp_cmdbuf", "mlp_nocmdbuf", "transformer_cmdbuf"]


def with_a_second_gpu(trace: Path, out: Path) -> Path:
    """`trace` with its GPU:0 plane copied, as recorded, to a new plane ``/device:GPU:1``."""
    space = X.XSpace.FromString(trace.read_bytes())
    (gpu0,) = [plane for plane in space.planes if plane.name == "/device:GPU:0"]
    copy = space.planes.add()
    copy.CopyFrom(gpu0)
    copy.name = "/device:GPU:1"
    copy.id = max(plane.id for plane in space.planes) + 1
    out.write_bytes(space.SerializeToString())
    return out


def load(recording: str, trace: Path | None = None) -> xlanb.Profile:
    folder = GPU / recording
    dump = folder / "xla_dump"
    return xlanb.load(trace or folder / "steady5.xplane.pb", dump=dump if dump.exists() else None)


@pytest.mark.parametrize("recording", RECORDINGS)
def test_two_gpus_give_one_gpu_s_ops_and_say_two_devices(recording, tmp_path):
    one = load(recording)
    two = load(
        recording,
        with_a_second_gpu(GPU / recording / "steady5.xplane.pb", tmp_path / "h.xplane.pb"),
    )
    key = ["graph", "op", "source_file", "source_line"]
    one_ops = one.ops.sort_values(key, kind="stable", ignore_index=True)
    two_ops = two.ops.sort_values(key, kind="stable", ignore_index=True)
    assert "devices" not in one_ops and "max_device_seconds" not in one_ops
    assert (two_ops["devices"] == 2).all()
    assert two_ops["count"].tolist() == one_ops["count"].tolist()
    assert two_ops["runs"].tolist() == one_ops["runs"].tolist()
    for column in ("seconds", "first_run_seconds", "share"):
        assert two_ops[column].tolist() == pytest.approx(one_ops[column].tolist(), rel=1e-9)
    # both devices took the same time: the slowest is either
    assert two_ops["max_device_seconds"].tolist() == pytest.approx(
        one_ops["seconds"].tolist(), rel=1e-9
    )
    # the runs are the same runs (one span over both devices each), so the account is too
    spans = two.spans[two.spans["lane"] == "device"]
    assert len(spans) == len(one.spans[one.spans["lane"] == "device"])
    pd.testing.assert_frame_equal(two.breakdown, one.breakdown)
    # the top ops say whose time they show
    assert "a run on each of 2 devices" in summary_text(two)
    assert "devices" not in summary_text(one)


#: JAX 0.10 on XLA:CPU with two forced host devices, a sharded step's trace stopped while a
#: queued run had ended on one device only (tests/data/xspace/make_xspace.py).
TWO_CPU_DEVICES = GPU.parent / "xspace" / "jax_2dev_cut.xplane.pb"


def test_a_run_cut_on_one_device_is_left_out_on_both():
    events = read_xspace(TWO_CPU_DEVICES, markers=False)
    frame = events.events
    ops = frame[frame["hlo_op"].notna()]
    waits = frame[frame["name"] == WAIT_SPAN]
    # the recording: each thunk says its device; the devices' parts of a run share its id,
    # each device waits for its own; one run has a part no wait names
    assert set(ops["device_ordinal"]) == {0, 1}
    waited_by = waits.groupby("run_id")["device_ordinal"].nunique()
    whole = set(waited_by[waited_by == 2].index)
    assert len(whole) >= 3 and set(ops["run_id"]) - whole
    assert trace_summary.whole_runs(frame) == len(whole)

    op_rows, spans = device_time.rows("jax", events, (0.0, math.inf))
    kept = ops[ops["run_id"].isin(whole)]
    for row in op_rows:
        assert row["devices"] == 2, row
        assert row["count"] == row["runs"] == len(whole), row
        # no thunk of this step holds another: an op's time is its events' durations
        per_device = kept[kept["hlo_op"] == row["op"]].groupby("device_ordinal")["duration_ns"]
        assert row["seconds"] == pytest.approx(per_device.sum().mean() / 1e9, rel=1e-9)
        assert row["max_device_seconds"] == pytest.approx(per_device.sum().max() / 1e9, rel=1e-9)
    assert sum(row["share"] for row in op_rows) == pytest.approx(1.0)
    # one span per whole run, over both devices: one device's op time lies within them
    runs = [span for span in spans if span["lane"] == "device"]
    assert len(runs) == len(whole)
    assert sum(row["seconds"] for row in op_rows) <= sum(span["seconds"] for span in runs)


def test_a_program_s_static_needs_say_on_how_many_devices_each_holds_them():
    # the out-of-memory finding's list of the cell's programs: compiled sizes are one device's
    from xlanb.analysis.findings.memory_rules import _static_needs

    compiles = pd.DataFrame(
        {
            "graph": ["jit(small)", "jit(sharded)", "jit(unknown)"],
            "peak_bytes": [1e9, 2e9, 5e8],
            "input_bytes": [5e8, 1e9, 1e8],
            "devices": pd.array([1, 8, None], dtype="Int64"),
        }
    )
    assert _static_needs(compiles) == [
        "jit(sharded) peak 2.00 GB on each of 8 devices (inputs 1.00 GB)",
        "jit(small) peak 1.00 GB (inputs 500.0 MB)",
        "jit(unknown) peak 500.0 MB (inputs 100.0 MB)",
    ]
