"""The XSpace reader gives what the previous reader (tests/support/xspace_reference.py) gave.

Every recorded trace of tests/data (XLA:CPU JAX and torch_xla, XLA:GPU H100/H200), with and
without markers: the same events frame (values and dtypes), event count, plane stats, profile
window and memory events.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.support import xspace_reference as reference
from xlanb.formats import xspace as X

DATA = Path(__file__).resolve().parents[1] / "data"
TRACES = sorted([*DATA.glob("xspace/*.xplane.pb"), *DATA.glob("xla_gpu/*/*.xplane.pb")])


def test_every_recorded_trace_is_compared() -> None:
    assert len(TRACES) >= 14


@pytest.mark.parametrize("markers", [False, True], ids=["no_markers", "markers"])
@pytest.mark.parametrize("pb", TRACES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_same_result_as_the_reference_reader(pb: Path, markers: bool) -> None:
    data = pb.read_bytes()
    got = X.parse_xspace(data, str(pb), markers=markers)
    want = reference.parse_xspace(data, str(pb), markers=markers)
    assert len(got.events) > 0
    pd.testing.assert_frame_equal(got.events, want.events, check_exact=True)
    pd.testing.assert_frame_equal(got.memory, want.memory, check_exact=True)
    assert got.event_count == want.event_count
    assert got.plane_stats == want.plane_stats
    assert (got.profile_start_ns, got.profile_stop_ns, got.normalized) == (
        want.profile_start_ns,
        want.profile_stop_ns,
        want.normalized,
    )
    assert (got.hostnames, got.errors, got.warnings) == (want.hostnames, want.errors, want.warnings)
