"""Issue #15's compatibility script on whichever JAX this environment has: the newest
supported release in ``.venv``, the oldest in ``.venv-jax-old`` (``make test-compat``).

A jitted step run at three shapes with a NumPy input and a ``pure_callback``, profiled in a
child process (so that everything written to its file descriptor 2 is seen): the causes are
JAX's own explanations, the executions are counted, the callback is named, the capture
prints nothing, and no hook is left behind after the cell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

jax = pytest.importorskip("jax")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: What the capture touches in JAX, as (object, attribute) to compare before and after.
SNAPSHOT = """
import logging, warnings
import jax._src.compiler as compiler, jax._src.array as array
import jax._src.interpreters.mlir as mlir, jax._src.profiler as jax_profiler
from jax._src.lib import _jax
def snapshot():
    return {
        "call": id(_jax.PjitFunction.__dict__["__call__"]),
        "vectorcall": bool(_jax.PjitFunction.__flags__ & (1 << 11)),  # Py_TPFLAGS_HAVE_VECTORCALL
        "compile": id(compiler.compile_or_get_cached),
        "value": id(array.ArrayImpl.__dict__["_value"]),
        "item": id(array.ArrayImpl.__dict__.get("item")),
        "mlir_warnings": mlir.warnings is warnings,
        "explain": bool(jax.config.jax_explain_cache_misses),
        "levels": [logging.getLogger(n).level for n in
                   ("jax._src.pjit", "jax._src.interpreters.partial_eval")],
        "start_trace": id(jax.profiler.start_trace),
        # JAX 0.12 starts every trace in ProfileSession.start
        "session_start": id(getattr(jax_profiler, "ProfileSession", object).__dict__.get("start")),
    }
"""

SCRIPT = """
import json, sys
{prelude}
import jax, jax.numpy as jnp, numpy as np
import xlanb
{snapshot}
def double(v):
    return np.asarray(v) * 2

@jax.jit
def step(x, y):
    z = jax.pure_callback(double, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    return jnp.tanh(z) @ y.T

before = snapshot()
profiles = []
for _ in range(2):
    with xlanb.profile(backend="jax") as prof:
        for n in (2, 3, 4):
            for _ in range(6):
                step(jnp.ones((n, 4)), np.ones((n, 4), np.float32)).block_until_ready()
    profiles.append(prof)
after = snapshot()
first, second = profiles
jitted = first.compiles[first.compiles["graph"] == "jit(step)"]
runs = first.executions.set_index("graph")["count"]
print(json.dumps({{
    "causes": list(jitted["cause"]),
    "runs": int(runs.get("jit(step)", 0)),
    "callbacks": first.fallbacks.loc[first.fallbacks["cause"] == "host_callback",
                                     ["op", "count"]].values.tolist(),
    "host_inputs": int(first.fallbacks.loc[first.fallbacks["cause"] == "host_transfer",
                                           "count"].sum()),
    "notes": [first.notes, second.notes],
    "second_compiles": len(second.compiles),
    "before": before, "after": after,
}}))
"""


def run_script(prelude: str = "") -> tuple[dict, str]:
    source = SCRIPT.format(prelude=textwrap.dedent(prelude), snapshot=SNAPSHOT)
    env = {**os.environ, "PYTHONPATH": ROOT}
    done = subprocess.run(
        [sys.executable, "-c", source], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1]), done.stderr


def test_causes_runs_callbacks_and_nothing_printed_or_left_behind():
    found, stderr = run_script()
    assert stderr == ""  # no explanation, no profiler line, nothing the capture caused
    assert found["causes"] == [
        "never seen function",
        "different input types: f32[2,4] -> f32[3,4]",
        found["causes"][2],
    ]
    assert found["causes"][2].startswith("different input types: f32[2,4] -> f32[4,4]")
    assert found["runs"] == 18
    assert found["callbacks"] == [["pure_callback in jit(step)", 18]]
    assert found["host_inputs"] == 18
    assert found["notes"] == [[], []]
    assert found["second_compiles"] == 0
    assert found["after"] == found["before"]


def test_outside_the_supported_range_features_are_off_and_said_once():
    """The same script with JAX's release read as 0.5.0: compiles still come from
    jax.monitoring, everything that reaches into JAX's internals is off, the first profile
    says so in one line and the second does not repeat it; still nothing printed, nothing
    left behind."""
    found, stderr = run_script(
        """
        from xlanb.capture import versions
        versions.installed_version = lambda distribution: "0.5.0"
        """
    )
    assert stderr == ""
    assert found["causes"] == ["no explanation from JAX"] * 3
    assert found["runs"] == 0 and found["callbacks"] == [] and found["host_inputs"] == 0
    first, second = found["notes"]
    assert len(first) == 1 and second == []
    assert first[0].startswith("jax: jax 0.5.0 is outside xlanb's supported range (0.6.1 to")
    assert "executions and host inputs" in first[0] and "\n" not in first[0]
    assert found["after"] == found["before"]


def test_a_release_newer_than_tested_keeps_every_feature_and_says_so_once():
    """The same script with JAX's release read as 0.99.0 (newer than the tested range): every
    feature stays on (each touch point is checked at first use), the first profile says once,
    in one line, that the release is newer than tested, the second says nothing; nothing
    printed, nothing left behind."""
    found, stderr = run_script(
        """
        from xlanb.capture import versions
        versions.installed_version = lambda distribution: "0.99.0"
        """
    )
    assert stderr == ""
    assert found["causes"][:2] == [
        "never seen function",
        "different input types: f32[2,4] -> f32[3,4]",
    ]
    assert found["runs"] == 18
    assert found["callbacks"] == [["pure_callback in jit(step)", 18]]
    assert found["host_inputs"] == 18
    first, second = found["notes"]
    assert second == []
    assert first == [
        "jax: jax 0.99.0 is newer than the releases xlanb was tested on (0.6.1 to 0.12.x); "
        "its features stay on, each checked at first use (one that fails is off and said)."
    ]
    assert found["after"] == found["before"]
