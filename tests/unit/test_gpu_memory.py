"""The device memory lane on XLA:GPU (JAX 0.11.2 on an H100: 5 steady steps of the mlp):
checked against the BFC allocator's own peak and the program's compiled peak."""

from __future__ import annotations

import json
from pathlib import Path

from xlanb.capture.device_trace import MEMORY_METRIC, memory_samples
from xlanb.formats.xspace import read_xspace

DATA = Path(__file__).resolve().parent.parent / "data" / "xla_gpu_dump" / "mlp"
META = json.loads((DATA / "meta.json").read_text())


def test_the_allocator_lane_stays_under_the_allocators_own_peak():
    """The memory lane (`DeviceMemoryInUse` samples: bytes in use after each allocation or free
    of 5 steady steps) against the `peak_bytes_in_use` the BFC allocator writes on the same
    events: never above it, the peak never falls, and it holds at least the program's compiled
    peak (`memory_analysis()`)."""
    events = read_xspace(DATA.parent.parent / "xla_gpu" / "mlp_cmdbuf" / "steady5.xplane.pb")
    memory = events.memory
    assert set(memory["allocator"]) == {"GPU_0_bfc"} and len(memory) == 30
    lane = memory_samples("jax", events, (0.0, float("inf")))
    assert {row["metric"] for row in lane} == {MEMORY_METRIC} and len(lane) == len(memory)
    assert {row["device"] for row in lane} == {"GPU_0_bfc"}
    peak = memory["peak_bytes_in_use"]
    assert (peak.diff().dropna() >= 0).all()
    assert max(row["value"] for row in lane) <= peak.max()
    assert peak.max() >= META["memory_analysis"]["peak_memory_in_bytes"]
