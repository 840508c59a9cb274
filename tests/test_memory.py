"""Memory across cells and at failure, on real JAX (CPU), in the real shell: a cell that keeps
more device memory every time it runs, donation that JAX could not use, and out-of-memory."""

from __future__ import annotations

import pytest

jax = pytest.importorskip("jax")

SETUP = "import jax, jax.numpy as jnp, numpy as np"


@pytest.fixture(scope="module", autouse=True)
def jax_runtime(shell):
    result = shell.run_cell(SETUP)
    assert result.success, result.error_in_exec


def titled(prof, words: str):
    findings = prof.findings
    return findings[findings["title"].str.contains(words, regex=False)]


LEAKY_CELL = (
    "%%xla_profile -b jax -q --var prof\n"
    "for step in range(5):\n"
    "    mt_losses.append(jnp.ones((256, 256)) * step)\n"
)


def test_a_cell_that_keeps_more_device_memory_each_run_is_a_warning(run, shell):
    """The same cell run again and again, appending device arrays to a list: from its second
    run on, a warning names the cell, the growth per run, the arrays it keeps, and advice."""
    run("mt_losses = []")
    run(LEAKY_CELL)
    assert titled(shell.user_ns["prof"], "every run").empty  # one run is not a pattern
    run(LEAKY_CELL)
    run(LEAKY_CELL)
    prof = shell.user_ns["prof"]
    leak = titled(prof, "every run")
    assert len(leak) == 1, prof.findings
    leak = leak.iloc[0]
    assert leak["severity"] == "warning"
    assert prof.name in leak["title"]
    assert "keeps 1.31 MB more live device memory every run (its last 3 runs)" in leak["title"]
    assert "float32[256,256] ×5" in leak["detail"]
    assert "jax.device_get" in leak["advice"]
    # the one-cell information finding is not repeated beside the warning
    assert titled(prof, "live device memory grew").empty
    earlier = prof.live_arrays[prof.live_arrays["snapshot"] == "earlier run"]
    assert list(earlier["bytes"]) == [5 * 256 * 256 * 4] * 2
    run("mt_losses.clear()")


def test_a_cell_that_grows_once_is_not_a_leak(run, shell):
    """Initialising parameters keeps memory once; running the cell again replaces them."""
    cell = (
        "%%xla_profile -b jax -q --var prof\n"
        "mt_params = [jnp.ones((512, 512)) * i for i in range(4)]"
    )
    for _ in range(3):
        run(cell)
        assert titled(shell.user_ns["prof"], "every run").empty
    # the same code in another cell has its own history
    run("mt_losses = []")
    run(LEAKY_CELL + "# another cell\n")
    assert titled(shell.user_ns["prof"], "every run").empty
    run("del mt_params; mt_losses.clear()")
