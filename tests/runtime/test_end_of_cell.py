"""The end of a profiled cell builds every frame as the plain pandas recipe would: each row
list that real JAX and torch._lazy cells hand to ``make_frame`` gives the frame of
``pd.DataFrame(rows)`` with the required columns added, numeric nulls typed and the columns
reordered (the recipe before the one-go build, kept here as the reference), dtypes included;
and the end of a steady cell builds each frame once."""

from __future__ import annotations

import collections
from typing import Any

import pandas as pd
import pytest

import xlanb.analysis
import xlanb.analysis.breakdown
import xlanb.analysis.findings
import xlanb.analysis.step_times
import xlanb.capture.backends.jax.reuse
import xlanb.capture.recorder
from tests.support.frames import reference_frame
from xlanb.analysis.findings import by_cost, findings_frame
from xlanb.core import schema

pytest.importorskip("jax")

#: The modules whose ``make_frame`` builds a live capture's frames.
CALLERS = (
    xlanb.capture.recorder,
    xlanb.capture.backends.jax.reuse,  # the ops frame a cell run again keeps
    xlanb.analysis,
    xlanb.analysis.breakdown,
    xlanb.analysis.step_times,
    xlanb.analysis.findings,
)


@pytest.fixture
def built(monkeypatch):
    """(frame name, row count) of every frame built while the test runs; each is checked
    against :func:`reference_frame` as it is built."""
    seen: list[tuple[str, int]] = []

    def checked(name: str, rows: list[dict[str, Any]]) -> pd.DataFrame:
        frame = schema.make_frame(name, rows)
        pd.testing.assert_frame_equal(frame, reference_frame(name, rows), check_exact=True)
        seen.append((name, len(rows)))
        return frame

    for module in CALLERS:
        monkeypatch.setattr(module, "make_frame", checked)
    return seen


JAX_SETUP = """
import jax, jax.numpy as jnp, numpy as np
rng = np.random.default_rng(0)
eoc_params = {"w1": jnp.ones((32, 64)) * 0.01, "w2": jnp.ones((64, 4)) * 0.01}
eoc_ema = jax.tree.map(lambda p: p, eoc_params)
eoc_kept = []
@jax.jit
def eoc_step(params, x):
    def loss_fn(params):
        return jnp.mean((jax.nn.relu(x @ params["w1"]) @ params["w2"]) ** 2)
    loss, g = jax.value_and_grad(loss_fn)(params)
    return jax.tree.map(lambda p, g: p - 1e-3 * g, params, g), loss
"""
#: A steady cell: a NumPy batch copied on each call, an eager EMA, arrays kept in a list.
JAX_STEADY = """
for i in range(20):
    batch = rng.normal(size=(8, 32)).astype(np.float32)
    eoc_params, loss = eoc_step(eoc_params, batch)
    eoc_ema = jax.tree.map(lambda e, p: 0.99 * e + 0.01 * p, eoc_ema, eoc_params)
eoc_kept.append(jnp.ones((128, 128)) * loss)
loss.block_until_ready()
"""
#: A first cell: new shapes recompile the step, eager ops compile, a host callback runs.
JAX_FIRST = """
for n in (8, 16, 24):
    eoc_params, loss = eoc_step(eoc_params, jnp.ones((n, 32)) * n)
jax.jit(lambda x: jax.debug.print("x {}", x.sum()) or x * 2)(jnp.arange(3.0))
jnp.arange(7.0).sum().block_until_ready()
"""


def reference_findings(prof) -> pd.DataFrame:
    """The findings as derive built them before: the rules' frame, back to rows, ordered by
    cost again and built again (a live capture has no findings of its own source)."""
    rows = findings_frame(prof).to_dict("records")
    return schema.make_frame("findings", by_cost(rows, prof.wall_seconds))


def test_jax_cells_build_the_reference_frames(run, shell, built):
    run(JAX_SETUP)
    titles = set()
    for flags in ("-q", "-q --no-trace"):
        cells = [JAX_STEADY] * 3 + [JAX_FIRST]  # the same cell again: memory kept across runs
        for cell in cells:
            run(f"%%xla_profile {flags} --var eoc_prof\n{cell}")
            prof = shell.user_ns["eoc_prof"]
            pd.testing.assert_frame_equal(prof.findings, reference_findings(prof))
            titles.update(prof.findings["title"])
    names = {name for name, rows in built if rows}
    # the frames with rows are those of a real capture and its derived ones
    assert {"compiles", "executions", "fallbacks", "live_arrays", "findings"} <= names
    assert {"ops", "spans", "breakdown"} <= names  # the device trace's
    # the rules that fire on these cells: transfers, kept memory, recompiles, callbacks
    for words in ("copied to the device", "every run", "recompiled", "host callback"):
        assert any(words in title for title in titles), (words, titles)


def test_torch_lazy_cells_build_the_reference_frames(lazy_runtime, run, shell, built):
    run("""
eoc_model = torch.nn.Linear(6, 3).to(dev)
eoc_x = torch.randn(16, 6).to(dev)
""")
    cell = "%%xla_profile -q --var eoc_lazy\nfor _ in range(4):\n    eoc_model(eoc_x).sum().item()"
    run(cell)
    run(cell)
    assert {"compiles", "executions", "fallbacks", "findings"} <= {n for n, r in built if r}


def test_a_steady_cell_builds_each_frame_once(run, shell, built):
    """The end of a steady JAX cell builds each frame once (the capture's, then the derived
    ones), none of them again."""
    run(JAX_SETUP)
    run(f"%%xla_profile -q --no-trace --var eoc_prof\n{JAX_STEADY}")
    built.clear()
    run(f"%%xla_profile -q --no-trace --var eoc_prof\n{JAX_STEADY}")
    counts = collections.Counter(name for name, _rows in built)
    assert max(counts.values()) == 1, counts
    assert counts["findings"] == 1


def test_a_quiet_cell_leaves_what_the_views_show_until_asked(run, shell):
    """Under ``-q`` the end of the cell keeps no ``Profile.shown`` (nothing is displayed); the
    property computes it when first asked, as derive keeps it for a displayed cell."""
    from IPython.utils.capture import capture_output

    from xlanb.analysis.shown import shown

    run(JAX_SETUP)
    run(f"%%xla_profile -q --var eoc_quiet\n{JAX_STEADY}")
    quiet = shell.user_ns["eoc_quiet"]
    assert quiet._shown is None
    assert quiet.shown.host_activity == shown(quiet).host_activity
    assert quiet._shown is not None
    with capture_output():
        run(f"%%xla_profile --var eoc_shown\n{JAX_STEADY}")
    assert shell.user_ns["eoc_shown"]._shown is not None
