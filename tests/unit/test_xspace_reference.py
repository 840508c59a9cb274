"""The XSpace reader gives what the previous reader (tests/support/xspace_reference.py) gave.

Every recorded trace of tests/data (XLA:CPU JAX and torch_xla, XLA:GPU H100/H200), with and
without markers: the same events frame (values and dtypes), event count, plane stats, profile
window and memory events. The reference reads no ``device_ordinal`` (a column added after
it): that column is checked on its own.
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
    pd.testing.assert_frame_equal(
        got.events.drop(columns=["device_ordinal"]), want.events, check_exact=True
    )
    pd.testing.assert_frame_equal(got.memory, want.memory, check_exact=True)
    assert got.event_count == want.event_count
    assert got.plane_stats == want.plane_stats
    assert (got.profile_start_ns, got.profile_stop_ns, got.normalized) == (
        want.profile_start_ns,
        want.profile_stop_ns,
        want.normalized,
    )
    assert (got.hostnames, got.errors, got.warnings) == (want.hostnames, want.errors, want.warnings)


@pytest.mark.parametrize("pb", TRACES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_device_ordinals_are_the_thunks_own(pb: Path) -> None:
    # XLA:CPU writes `device_ordinal` on each thunk of JAX 0.10 (one device: 0); jaxlib
    # 0.6, torch_xla 2.9 and XLA:GPU kernels write none (a kernel's device is its plane's)
    events = X.parse_xspace(pb.read_bytes(), str(pb)).events
    ordinals = events["device_ordinal"]
    assert str(ordinals.dtype) == "Int64"
    ops = events["hlo_op"].notna()
    if pb.name.startswith("jax_2dev"):  # two forced host devices
        assert set(ordinals[ops]) == {0, 1}
    elif pb.parent.name == "xspace" and pb.name.startswith("jax_"):
        assert (ordinals[ops] == 0).all()
    else:
        assert ordinals[ops].isna().all()
