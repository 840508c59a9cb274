"""Signals real JAX workloads got wrong (issue 28), each on real JAX (CPU) in a real shell:
host inputs inside nested pytrees, host-to-device transfers as JAX's transfer guard logs
them, a static argument rebuilt every call."""

from __future__ import annotations

import pytest

jax = pytest.importorskip("jax")

SETUP = """
import jax, jax.numpy as jnp, numpy as np
from functools import partial
sg_x = jnp.ones((4, 4))
"""


@pytest.fixture(scope="module", autouse=True)
def jax_runtime(shell):
    result = shell.run_cell(SETUP)
    assert result.success, result.error_in_exec


def host_rows(prof):
    return prof.fallbacks[prof.fallbacks["cause"] == "host_transfer"]


def test_host_inputs_inside_nested_pytrees_are_counted(run, shell):
    """A dict of dicts of NumPy arrays to a jitted step, 100 calls: 3 arrays a call (it
    counted none; a flat dict was counted)."""
    run(
        "@jax.jit\ndef sg_nested(batch):\n"
        "    return batch['a']['x'].sum() + batch['a']['y'].sum() + batch['b']['z'].sum()\n"
        "@jax.jit\ndef sg_leaves(batch):\n"
        "    return sum(leaf.sum() for leaf in jax.tree_util.tree_leaves(batch))\n"
        "sg_np = np.ones((2, 2), np.float32)"
    )
    run(
        "%%xla_profile -b jax -q --var prof\nfor _ in range(100):\n"
        "    sg_nested({'a': {'x': sg_np, 'y': sg_np}, 'b': {'z': sg_np}})"
    )
    rows = host_rows(shell.user_ns["prof"])
    assert rows[["count", "calls", "cell_line"]].to_dict("records") == [
        {"count": 300, "calls": 100, "cell_line": 3}
    ]
    # a list in a tuple in a dict, and a device array beside them
    run(
        "%%xla_profile -b jax -q --var prof\nfor _ in range(10):\n"
        "    sg_leaves({'a': {'x': sg_x, 'y': (sg_np, [sg_np])}, 'b': {'z': sg_np}})"
    )
    rows = host_rows(shell.user_ns["prof"])
    assert int(rows["count"].sum()) == 30 and int(rows["calls"].sum()) == 10


def test_host_transfers_are_those_jax_transfer_guard_logs(run, shell, capfd):
    """A variable-length cell (a batch sliced from NumPy arrays, a step number the function
    does not use): the host-to-device transfers of the jitted calls are as many as JAX's
    transfer guard logs for them (jit drops the unused arguments: they were counted, 5 a
    call where JAX copies 2), and the display names their direction."""
    run(
        "@jax.jit\ndef sg_step(w, batch, step):\n    return ((batch['x'] @ w - batch['y']) ** 2)"
        ".mean()\nsg_w = jnp.ones((4, 1)); sg_X = np.ones((64, 4), np.float32)\n"
        "sg_Y = np.ones((64, 1), np.float32); sg_mask = np.ones((64,), np.float32)"
    )
    capfd.readouterr()
    run(
        "%%xla_profile -b jax -q --var prof\nwith jax.transfer_guard('log'):\n"
        "    for i, bs in enumerate([8, 16, 8, 32, 16, 8, 8]):\n"
        "        loss = sg_step(sg_w, {'x': sg_X[:bs], 'y': sg_Y[:bs], 'm': sg_mask[:bs]}, i)"
    )
    logged = capfd.readouterr().err.count("host-to-device transfer")
    prof = shell.user_ns["prof"]
    rows = host_rows(prof)
    assert logged == 14 and int(rows["count"].sum()) == logged, rows
    assert prof.summary()["transfers"] == logged
    assert "host-to-device transfers: 14" in repr(prof)


def test_eager_slices_of_a_variable_batch_are_a_finding_and_not_indexed(run, shell):
    """`X[:bs]` of a device array, four sizes: JAX compiles `jit(dynamic_slice)` for each
    outside the user's jit. They get a finding with their line and seconds (four got none:
    only ten or more did), and `%xla_profile diff` indexes the user's programs only."""
    run("sg_X4 = jnp.ones((64, 4))\n@jax.jit\ndef sg_sliced(x):\n    return (x * 2).sum()")
    run(
        "%%xla_profile -b jax -q --var prof\nfor bs in [7, 13, 29, 41]:\n"
        "    loss = sg_sliced(sg_X4[:bs])"
    )
    prof = shell.user_ns["prof"]
    eager = prof.compiles[prof.compiles["eager"].eq(True)]
    assert list(eager["graph"]) == ["jit(dynamic_slice)"] * 4
    finding = prof.findings[prof.findings["title"].str.contains("eager-op compiles")]
    assert len(finding) == 1, prof.findings["title"].tolist()
    row = finding.iloc[0]
    assert row["title"] == "4 small eager-op compiles (cell line 3)"
    assert "jit(dynamic_slice) ×4" in row["detail"]
    assert row["seconds"] == float(eager["seconds"].sum())
    recompiled = prof.findings[prof.findings["title"].str.contains("recompiled")].iloc[0]
    assert "`%xla_profile diff cell-" in recompiled["detail"]
    assert recompiled["detail"].split("%xla_profile diff ", 1)[1].split("`")[0].endswith(" 3")
    assert list(prof.graph_entries()["graph"]) == ["jit(sg_sliced)"] * 4


def test_a_static_config_rebuilt_every_call_says_why_in_its_title(run, shell):
    """A config object built inside the loop, passed as a static argument: every call
    compiles. The finding's title says why (it said only "recompiled 5 times") and its
    advice the fix."""
    run(
        "class SgConfig:\n    def __init__(self, scale):\n        self.scale = scale\n"
        "@partial(jax.jit, static_argnames='config')\ndef sg_configured(x, config):\n"
        "    return x * config.scale"
    )
    run(
        "%%xla_profile -b jax -q --var prof\nfor _ in range(6):\n"
        "    cfg = SgConfig(2.0)\n    out = sg_configured(sg_x, config=cfg)"
    )
    finding = shell.user_ns["prof"].findings.iloc[0]
    assert finding["title"] == (
        "jit(sg_configured) recompiled 5 times in this cell: static argument config is a new "
        "SgConfig object each call, hashed by identity (cell line 4)"
    )
    assert "@dataclass(frozen=True)" in finding["advice"] and "same object" in finding["advice"]
