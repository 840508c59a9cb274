"""Memory across cells and at failure, on real JAX (CPU), in the real shell: a cell that keeps
more device memory every time it runs, donation that JAX could not use, and out-of-memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from xlanb.core.units import format_bytes

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


def test_the_same_code_profiled_with_other_options_is_the_same_cell(run, shell):
    """Each run keeps its profile in a new variable (`--var run_1`, `--var run_2`, ...): the
    magic's line changed, the cell did not (it was never warned about)."""
    body = "for step in range(5):\n    mt_losses.append(jnp.ones((256, 256)) * step)\n"
    run("mt_losses = []")
    for name in ("run_1", "run_2", "run_3"):
        run(f"%%xla_profile -b jax -q --var {name}\n" + body)
    assert len(titled(shell.user_ns["run_3"], "every run")) == 1
    run("mt_losses.clear()")


STARTING_CELL = (
    "%%xla_profile -b jax -q --var prof\n"
    "if 'mt_state' not in globals():\n"
    "    mt_state = jnp.ones((512, 256))  # made once, on the first run\n"
    "for step in range(4):\n"
    "    mt_kept.append((jnp.ones((64, 64)) * step, jnp.ones(128) * step,\n"
    "                    jnp.ones((8, 8)) * step, jnp.sum(mt_state) * step))\n"
)


def test_the_growth_per_run_is_the_steady_runs_and_every_kept_group_is_named(run, shell):
    """A first run that also makes state once is not averaged into "every run" (it said
    243 kB more every run when each run keeps 69 kB); the kept arrays name every group, the
    scalars too (the fourth group was cut off)."""
    run("mt_kept = []")
    for _ in range(3):
        run(STARTING_CELL)
    prof = shell.user_ns["prof"]
    leak = titled(prof, "every run")
    assert len(leak) == 1, prof.findings
    per_run = 4 * (64 * 64 + 128 + 8 * 8 + 1) * 4  # 68.6 kB
    assert (
        f"keeps {format_bytes(per_run)} more live device memory every run"
        in (leak.iloc[0]["title"])
    )
    assert leak.iloc[0]["severity"] == "info"  # under 1 MB a run: worth knowing, no alarm
    detail = leak.iloc[0]["detail"]
    for group in ("float32[64,64] ×4", "float32[128] ×4", "float32[8,8] ×4", "float32[] ×4"):
        assert group in detail, detail
    run("mt_kept.clear(); del mt_state")


def test_donation_jax_could_not_use_is_a_warning_and_jax_still_warns_once(run, shell):
    """JAX on the CPU does donate: a donated train state returned updated is aliased. A
    donated argument no output can reuse (another shape) is not: JAX warns "Some donated
    buffers were not usable" while lowering; the user still gets that warning once, from
    JAX's own line, and the profile names the program, the argument and the bytes."""
    run(
        "def mt_step(state, batch):\n"
        "    return state + batch.sum(), batch[:10].astype(jnp.int32)\n"
        "mt_step = jax.jit(mt_step, donate_argnums=(0, 1))"
    )
    run(
        "%%xla_profile -b jax -q --var prof\n"
        "import warnings\n"
        "with warnings.catch_warnings(record=True) as mt_caught:\n"
        "    warnings.simplefilter('always')\n"
        "    mt_state, mt_ints = mt_step(jnp.ones((300, 300)), jnp.ones((1000, 250)))\n"
    )
    caught = [w for w in shell.user_ns["mt_caught"] if "donated buffers" in str(w.message)]
    assert len(caught) == 1 and caught[0].filename.endswith("mlir.py")
    assert "float32[1000,250]" in str(caught[0].message)
    prof = shell.user_ns["prof"]
    compiles = prof.compiles.set_index("graph")
    assert compiles.loc["jit(mt_step)", "not_donated"] == "argument 1: float32[1000,250]"
    assert compiles.loc["jit(mt_step)", "not_donated_bytes"] == 1000 * 250 * 4
    assert compiles.loc["jit(mt_step)", "aliased_bytes"] == 300 * 300 * 4  # the state was
    finding = titled(prof, "donated").iloc[0]
    assert finding["severity"] == "warning"
    assert finding["title"].startswith("jit(mt_step): 1.00 MB donated but not reused")
    assert "argument 1: float32[1000,250]" in finding["detail"]
    assert "same shape and dtype" in finding["advice"]
    import warnings

    from jax._src.interpreters import mlir

    assert mlir.warnings is warnings  # the proxy is gone with the capture


def test_donation_that_worked_is_not_a_finding(run, shell):
    run("mt_train = jax.jit(lambda state, x: state + x.sum(), donate_argnums=0)")
    run("%%xla_profile -b jax -q --var prof\nmt_s = mt_train(jnp.ones((200, 200)), jnp.ones(8))")
    prof = shell.user_ns["prof"]
    assert titled(prof, "donated").empty
    assert prof.compiles.set_index("graph").loc["jit(<lambda>)", "aliased_bytes"] == 200 * 200 * 4


WORKER = Path(__file__).parent.parent / "workers" / "out_of_memory.py"


def run_out_of_memory(cells: list[str]) -> dict:
    """Run `cells` in a real IPython shell in a child process whose address space is limited
    (the first cell runs before the limit, the others under it): the test machine's memory is
    never at risk."""
    completed = subprocess.run(
        [sys.executable, str(WORKER)],
        input=json.dumps([[cell, False] for cell in cells]),
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "JAX_PLATFORMS": "cpu"},
    )
    assert "@@RESULT@@" in completed.stdout, completed.stderr[-3000:]
    return json.loads(completed.stdout.split("@@RESULT@@")[-1])


def test_a_cell_that_runs_out_of_memory_keeps_a_failed_profile_with_what_was_alive():
    """JAX on the CPU raises JaxRuntimeError "RESOURCE_EXHAUSTED: Out of memory allocating N
    bytes" when an allocation fails (here: an address-space limit in a child process). The
    cell's exception reaches the user unchanged; the profile is marked failed and holds the
    arrays alive at the failure, largest first with where they are held, the bytes asked for,
    and advice."""
    out = run_out_of_memory(
        [
            "import jax, jax.numpy as jnp\n"
            "@jax.jit\ndef grow(x):\n    return jnp.concatenate([x] * 16) * 2\n"
            "kept = [jnp.ones((64, 1024, 1024)) + i for i in range(2)]\n"  # 2 x 256 MiB
            "jax.block_until_ready(kept)",
            "%%xla_profile -b jax -q --var prof\n"
            "small = jnp.ones((1000,))\n"
            "try:\n"
            "    big = grow(jnp.ones((32, 1024, 1024)))\n"  # 128 MiB in, 2 GiB out
            "    big.block_until_ready()\n"
            "except Exception as error:\n"
            "    caught = error\n"
            "    raise\n",
        ]
    )
    result = out["results"][-1]
    assert result["error"].startswith("JaxRuntimeError: ")
    assert "Out of memory allocating" in result["error"], result["error"]
    assert result["same_object"]  # the user's own exception object, re-raised unchanged
    assert not any("xlanb" in frame for frame in result["frames"])
    assert out["failed"] and out["error"] == result["error"]
    failed = [row for row in out["live_arrays"] if row["snapshot"] == "failed result"]
    assert [(row["shape"], row["count"]) for row in failed] == [("float32[512,1024,1024]", 1)]
    assert "big" in failed[0]["origin"]  # the result that did not fit, and its name
    failure = [row for row in out["live_arrays"] if row["snapshot"] == "at failure"]
    assert failure[0]["shape"] == "float32[64,1024,1024]" and failure[0]["count"] >= 2
    assert failure[0]["bytes"] == failure[0]["count"] * 2**28
    assert "kept" in failure[0]["origin"]
    assert [row["bytes"] for row in failure] == sorted((r["bytes"] for r in failure), reverse=True)
    finding = next(f for f in out["findings"] if "out of memory" in f["title"])
    assert finding["severity"] == "error"
    assert finding["title"].endswith("ran out of memory allocating 2.15 GB")
    assert len([f for f in out["findings"] if "out of memory" in f["title"]]) == 1
    assert "Limit: " in finding["detail"] and "RLIMIT_AS" in finding["detail"]
    assert f"float32[64,1024,1024] ×{failure[0]['count']}" in finding["detail"]
    assert "jit(grow)" in finding["detail"]  # the program compiled in the cell, its needs
    assert "donat" in finding["advice"] and "batch" in finding["advice"]
    assert "Alive at the failure" in out["html"]


def test_auto_profiled_cells_are_recognised_run_after_run(run, shell):
    """Under `%xla_profile on` every cell is profiled: the same cell run twice, appending
    device arrays each time, gets the warning on its second run."""
    import xlanb

    run("mt_cache = {}")
    run("%xla_profile on")
    try:
        for _ in range(2):
            run("mt_cache[len(mt_cache)] = jnp.ones((128, 128)) + len(mt_cache)")
        prof = xlanb.last()
    finally:
        run("%xla_profile off")
    leak = titled(prof, "more live device memory every run")
    assert len(leak) == 1 and "its last 2 runs" in leak.iloc[0]["title"]
    run("mt_cache.clear()")
