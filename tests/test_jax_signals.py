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
