"""%%xla_profile on real JAX (CPU), in a real shell.

The shell is shared by every test of the session, so each test uses its own function names and
shapes; JAX's caches outlive the cells.
"""

from __future__ import annotations

import json
import logging
import re
import weakref
from collections import Counter

import pytest

import xlanb
from tests.support.helpers import (
    outputs_of,
    packed_graphs,
    run_notebook,
    scan_callback_source,
    trace_without_budget,
)
from xlanb.capture import backends, versions
from xlanb.capture.backends import jax as jax_backend
from xlanb.core.profile import FRAME_COLUMNS
from xlanb.core.units import format_seconds
from xlanb.views.summary import headline

jax = pytest.importorskip("jax")

#: JAX 0.6 (the oldest supported release, run by `make test-compat`) writes HLO metadata
#: without ``op_type`` and stack frames (a callback is a ``custom-call.N``, its primitive only
#: in ``op_name``), explains a static argument without its position, and names
#: ``jax.debug.print``'s primitive ``debug_callback``.
JAX_06 = versions.parse_version(jax.__version__) < (0, 7)

SETUP = """
import jax, jax.numpy as jnp, numpy as np
from functools import partial
xa = jnp.ones((4, 4)); wa = jnp.ones((4, 3)); x84 = jnp.ones((8, 4))
"""


@pytest.fixture(scope="module", autouse=True)
def jax_runtime(shell):
    result = shell.run_cell(SETUP)
    assert result.success, result.error_in_exec


def jit_compiles(prof):
    """The compiles of jitted functions (not of eager single ops)."""
    compiles = prof.compiles[prof.compiles["backend"] == "jax"]
    return compiles[~compiles["eager"].eq(True)] if "eager" in compiles else compiles


def executions(prof) -> dict[str, int]:
    return dict(zip(prof.executions["graph"], prof.executions["count"], strict=True))


def test_backend_is_registered_after_torch_lazy():
    names = list(backends.BACKENDS)
    assert names.index("jax") == names.index("torch_lazy") + 1
    assert "jax" in backends.CHOICES
    assert jax_backend.is_installed() and jax_backend.is_imported()
    assert jax_backend.debug_switches("/tmp") == {} and not jax_backend.has_started()
    assert "pip install jax jaxlib" in jax_backend.INSTALL_HINT


def test_first_call_compiles_once_then_hits_the_cache(run, shell):
    run("@jax.jit\ndef jt_first(x, w):\n    return jnp.tanh(x @ w).sum()")
    run("%%xla_profile -b jax -q --var first\nout = jt_first(xa, wa)")
    run("%%xla_profile -b jax -q --var cached\nfor _ in range(5):\n    out = jt_first(xa, wa)")
    first, cached = shell.user_ns["first"], shell.user_ns["cached"]

    assert len(first.compiles) == 1
    row = first.compiles.iloc[0]
    assert row["graph"] == "jit(jt_first)"
    assert row["cause"] == "never seen function"
    assert row["cell_line"] == 2 and row["trigger"] == "jit" and not row["eager"]
    assert row["trace_seconds"] > 0 and row["lower_seconds"] > 0 and row["seconds"] > 0
    assert executions(first) == {"jit(jt_first)": 1}

    graphs = first.graphs.set_index("kind")
    assert list(first.graphs["kind"]) == ["stablehlo", "hlo_optimized"]
    assert (first.graphs["graph"] == "jit(jt_first)").all()
    assert "stablehlo.tanh" in graphs.loc["stablehlo", "text"]
    assert "tanh(" in graphs.loc["hlo_optimized", "text"]
    assert (first.graphs["nodes"] > 0).all()
    assert graphs.loc["hlo_optimized", "flops"] > 0
    assert graphs.loc["hlo_optimized", "bytes_accessed"] > 0
    assert graphs.loc["hlo_optimized", "peak_memory_bytes"] > 0
    assert graphs.loc["hlo_optimized", "signature"] == "f32[4,4], f32[4,3]"
    assert set(first.graphs["compile_id"]) == {row["compile_id"]}

    assert cached.compiles.empty  # it holds the graphs of the program it ran
    kept = ["graph", "kind", "text", "compile_id"]
    assert cached.graphs[kept].equals(first.graphs[kept])
    assert executions(cached) == {"jit(jt_first)": 5}
    assert cached.summary()["executions"] == 5
    assert cached.executions.iloc[0]["seconds"] > 0
    assert cached.findings.empty
    for name, frame in cached.frames().items():
        assert list(frame.columns)[: len(FRAME_COLUMNS[name])] == FRAME_COLUMNS[name]


def test_new_input_shape_compiles_once_more_with_the_shape_change(run, shell):
    run("@jax.jit\ndef jt_shape(x):\n    return (x * 2).sum()\nout = jt_shape(xa)")
    run(
        "%%xla_profile -b jax -q --var prof\nout = jt_shape(xa)\nout = jt_shape(x84)\n"
        "out = jt_shape(x84)"
    )
    prof = shell.user_ns["prof"]
    assert list(prof.compiles["cause"]) == ["different input types: f32[4,4] -> f32[8,4]"]
    assert list(prof.compiles["cell_line"]) == [3]
    assert "now f32[8,4] and before f32[4,4]" in prof.compiles.iloc[0]["explanation"]
    assert executions(prof) == {"jit(jt_shape)": 3}
    assert set(prof.graphs["signature"]) == {"f32[8,4]"}
    finding = prof.findings.iloc[0]
    assert finding["severity"] == "warning"
    assert finding["title"] == "jit(jt_shape) recompiled 1 time in this cell (cell line 3)"
    assert "f32[4,4] -> f32[8,4]" in finding["detail"]
    assert "pad" in finding["advice"]


def test_static_argument_change_recompiles(run, shell):
    run("@partial(jax.jit, static_argnums=1)\ndef jt_static(x, k):\n    return x * k")
    run("%%xla_profile -b jax -q --var prof\nfor k in [2, 3, 2, 3]:\n    out = jt_static(xa, k)")
    prof = shell.user_ns["prof"]
    assert list(prof.compiles["cause"]) == [
        "never seen function",
        "static argument changed: 2 -> 3",
    ]
    assert list(prof.compiles["cell_line"]) == [3, 3]
    assert executions(prof) == {"jit(jt_static)": 4}
    assert prof.fallbacks.empty  # static Python ints are not transferred
    # two values of a static argument (a flag) compile two programs once: information
    finding = prof.findings.iloc[0]
    assert len(prof.findings) == 1 and finding["severity"] == "info"
    assert finding["title"] == (
        "jit(jt_static) compiled once per value of a static argument (2, 3) (cell line 3)"
    )
    run("%%xla_profile -b jax -q --var prof\nfor k in [4, 5, 6, 7]:\n    out = jt_static(xa, k)")
    finding = shell.user_ns["prof"].findings.iloc[0]
    assert finding["severity"] == "warning"
    assert finding["title"] == "jit(jt_static) recompiled 4 times in this cell (cell line 3)"
    assert "static argument" in finding["advice"]
    # its seconds (tracing, lowering and XLA's compile) split as the header's are not
    rows = shell.user_ns["prof"].compiles
    xla = format_seconds(float(rows["seconds"].sum()))
    assert "lowering " in finding["detail"] and f"XLA compile {xla})" in finding["detail"]


def test_an_identity_hashed_static_object_is_named_with_its_place(run, shell):
    """A config object rebuilt every call as a static argument: the cause names its class and
    argument and says it is hashed by identity (it showed two truncated reprs,
    "<__main__.Config object at 0x7f…"), and the advice says how to fix it."""
    run(
        "class JtConfig:\n    def __init__(self, scale):\n        self.scale = scale\n"
        "@partial(jax.jit, static_argnums=1)\ndef jt_config(x, config):\n"
        "    return x * config.scale\njt_config(xa, JtConfig(2.0))"
    )
    run("%%xla_profile -b jax -q --var prof\nfor _ in range(3):\n    jt_config(xa, JtConfig(2.0))")
    prof = shell.user_ns["prof"]
    assert (
        list(prof.compiles["cause"])
        == [
            f"static argument changed: a new JtConfig object{'' if JAX_06 else ' at args[1]'} "
            "(hashed by identity: each new object compiles again)"
        ]
        * 3
    )
    finding = prof.findings.iloc[0]
    assert finding["severity"] == "warning" and "recompiled 3 times" in finding["title"]
    assert "@dataclass(frozen=True)" in finding["advice"]


def test_many_host_input_calls_are_counted_exactly_in_bounded_memory(run, shell):
    """5,000 calls with a NumPy batch from one line and 2,000 through a helper from two other
    lines: exact counts and each its own cell line, while the backend keeps one entry per
    place and shape of call (it kept one record, with a whole stack, per call)."""
    from xlanb.capture.backends.jax.state import STATE

    run(
        "@jax.jit\ndef jt_many(batch):\n    return batch['x'].sum() + batch['y'].sum()\n"
        "def jt_helper(v):\n    return jt_many({'x': v, 'y': v})\n"
        "many_in = np.ones((2, 2), np.float32)"
    )
    run("""%%xla_profile -b jax -q --var prof
import xlanb.capture.backends.jax.state as jt_state
for _ in range(5000):
    jt_many({"x": many_in, "y": xa})
for _ in range(1000):
    jt_helper(many_in)
    jt_helper(many_in)
jt_kept = len(jt_state.STATE.transfers)
""")
    prof = shell.user_ns["prof"]
    assert shell.user_ns["jt_kept"] <= 3 and not STATE.transfers
    rows = prof.fallbacks[prof.fallbacks["cause"] == "host_transfer"]
    by_line = rows.groupby("cell_line")["count"].sum().to_dict()
    assert by_line == {4: 5000, 6: 2000, 7: 2000}, rows
    assert rows.groupby("cell_line")["calls"].sum().to_dict() == {4: 5000, 6: 1000, 7: 1000}


def test_a_call_runs_the_counter_alone_and_a_host_input_one_helper(run, shell):
    """Per call of a jitted function, the dispatch counter's Python functions entered: itself
    alone with device arrays, one helper more with a NumPy argument from a place seen before
    (it ran four: a check per argument, the place, the types per argument, the note; ~17 µs
    a call), counted by a profile function on the calls; the calls and host inputs stay
    exact, on their lines, in one entry per place."""
    run(
        "@jax.jit\ndef jt_counted(x, y):\n    return x + y\n"
        "counted_in = np.ones((4, 4), np.float32)"
    )
    run("""%%xla_profile -b jax -q --var prof
import os, sys, collections, xlanb.capture.backends.jax.hooks as jt_hooks
import xlanb.capture.backends.jax.state as jt_state
jt_entered, jt_hooks_dir = collections.Counter(), os.path.dirname(jt_hooks.__file__)
def jt_profile(frame, event, arg):
    if event == "call" and os.path.dirname(frame.f_code.co_filename) == jt_hooks_dir:
        jt_entered[frame.f_code.co_name] += 1
try:
    for i in range(201):
        if i == 1:  # each place's first call walks the stack: not counted
            sys.setprofile(jt_profile)
        jt_counted(counted_in, xa)
        jt_counted(xa, xa)
finally:
    sys.setprofile(None)
jt_kept = len(jt_state.STATE.transfers)
""")
    # (what runs once a window, such as the trace's probe of its 5th call, is not per call)
    entered = shell.user_ns["jt_entered"]
    per_call = {name: count for name, count in entered.items() if count > 1}
    assert per_call == {"count_call": 400, "note_host_arguments": 200}, entered
    assert shell.user_ns["jt_kept"] == 1
    prof = shell.user_ns["prof"]
    assert executions(prof)["jit(jt_counted)"] == 402
    rows = prof.fallbacks[prof.fallbacks["cause"] == "host_transfer"]
    assert rows[["op", "count", "calls", "cell_line"]].to_dict("records") == [
        {
            "op": "jit(jt_counted) argument: numpy.ndarray",
            "count": 201,
            "calls": 201,
            "cell_line": 12,
        }
    ]


def test_calls_with_device_arrays_keep_no_object_a_call(run, shell):
    """The dispatch samples are stored in preallocated lists: a call with device arrays keeps
    no new object that the garbage collector tracks (a tuple a call, kept, woke the collector
    every 700 calls and cost ~1,700 instructions a call), counted with the collector off
    and no device trace (its window's watchdog thread allocates as it polls, at any load);
    the calls and their samples stay exact."""
    run("@jax.jit\ndef jt_kept(x, y):\n    return x + y\njt_kept(xa, xa)")
    run("""%%xla_profile -b jax -q --no-trace --var prof
import gc
gc.disable()
try:
    jt_kept(xa, xa)
    jt_before = gc.get_count()[0]
    for _ in range(500):
        out = jt_kept(xa, xa)
    jt_tracked = gc.get_count()[0] - jt_before
finally:
    gc.enable()
""")
    assert shell.user_ns["jt_tracked"] < 50, shell.user_ns["jt_tracked"]
    prof = shell.user_ns["prof"]
    assert executions(prof)["jit(jt_kept)"] == 501
    dispatch = prof.metrics.set_index("name").loc["DispatchTime"]
    assert dispatch["count"] == 501


def test_a_keyword_argument_named_self_reaches_the_jitted_function(run, shell):
    """The counter takes the jitted function as its first positional argument, not as a
    parameter named `self` (a keyword argument `self` failed the user's call with "got
    multiple values for argument 'self'")."""
    run("@jax.jit\ndef jt_self(self, y):\n    return self + y")
    run("%%xla_profile -b jax -q --var prof\nout_self = jt_self(self=xa, y=xa)")
    assert float(shell.user_ns["out_self"][0, 0]) == 2.0
    assert executions(shell.user_ns["prof"])["jit(jt_self)"] == 1


def test_numpy_and_scalar_inputs_are_host_transfers(run, shell):
    run(
        "@jax.jit\ndef jt_host(x, scale):\n    return x * scale\nnp_in = np.ones((4, 4), "
        "np.float32)\nout = jt_host(xa, xa)"
    )
    run(
        "%%xla_profile -b jax -q --var prof\nfor _ in range(3):\n    out = jt_host(np_in, xa)\n"
        "out = jt_host(xa, 0.5)"
    )
    prof = shell.user_ns["prof"]
    fallbacks = prof.fallbacks.set_index("op")
    numpy_row = fallbacks.loc["jit(jt_host) argument: numpy.ndarray"]
    assert numpy_row["count"] == 3 and numpy_row["cause"] == "host_transfer"
    assert numpy_row["advice"] == ("pass a device array (jax.device_put) instead of a numpy array")
    assert numpy_row["cell_line"] == 3
    scalar_row = fallbacks.loc["jit(jt_host) argument: float"]
    assert scalar_row["count"] == 1 and scalar_row["cell_line"] == 4
    numbers = prof.summary()
    assert numbers["transfers"] == numbers["host_inputs"] == 4
    assert numbers["fallback_ops"] == 0  # JAX has no CPU fallbacks
    head = dict(headline(prof))
    assert head["host-to-device transfers"] == "4" and "host inputs" not in head  # counted once
    assert head["CPU fallbacks"] == "0"
    counters = prof.counters.set_index("name")
    assert counters.loc["HostToDeviceTransfer", "delta"] == 4
    assert counters.loc["HostToDeviceTransfer", "category"] == "transfer"
    # A numpy array of the same shape and dtype hits the cache; a Python float is weakly typed.
    assert list(prof.compiles["cause"]) == [
        "different input types: f32[4,4] -> f32[]{weak_type=True}"
    ]
    finding = prof.findings[prof.findings["title"].str.contains("host input")].iloc[0]
    assert finding["title"] == (
        "4 host inputs copied to the device on calls of jitted functions (cell line 3, 4)"
    )
    assert "jax.device_put" in finding["advice"]


def test_explicit_copies_are_transfers_as_jax_transfer_guard_logs_them(run, shell, capfd):
    """A loop that moves its NumPy batches itself (``jnp.asarray``, ``jax.device_put``), an
    eager update with a host scalar and a host slice, a tree put, a device array put (no
    copy) and one host input: every host value JAX copies to the device is a transfer, as
    ``transfer_guard("log_explicit")`` logs them (it counted the host input alone: 1 of 18)."""
    run(
        "@jax.jit\ndef ec_train(w, x):\n    return w - 0.1 * x.T @ (x @ w)\n"
        "ec_batches = [np.full((8, 4), i, np.float32) for i in range(5)]\n"
        "ec_w2 = ec_train(xa, jnp.ones((8, 4)))\nec_w2 = ec_w2 * 0.99 + jnp.asarray(xa)"
    )
    capfd.readouterr()
    run(
        "%%xla_profile -b jax -q --var prof\nwith jax.transfer_guard('log_explicit'):\n"
        "    for i, b in enumerate(ec_batches):\n"
        "        x = jnp.asarray(b) if i % 2 else jax.device_put(b)\n"
        "        ec_w2 = ec_train(ec_w2, x)\n"
        "        ec_w2 = ec_w2 * 0.99 + jnp.asarray(b[:4])\n"
        "    pair = jax.device_put({'a': b, 'b': b})\n"
        "    same = jax.device_put(ec_w2)\n"
        "    out = ec_train(ec_w2, b)"
    )
    logged = capfd.readouterr().err.count("host-to-device transfer")
    prof = shell.user_ns["prof"]
    assert logged == 18
    counters = prof.counters.set_index("name")["delta"].to_dict()
    assert counters["HostToDeviceTransfer"] == 1  # the host input, also a fallback row
    assert counters["HostToDeviceCopy"] == logged - 1
    assert prof.summary()["transfers"] == logged
    assert f"host-to-device transfers: {logged}" in repr(prof)


def test_values_read_back_every_step_are_syncs_with_their_line(run, shell):
    run("@jax.jit\ndef jt_loss(x):\n    return (x * 2).sum()")
    run(
        "%%xla_profile -b jax -q --var prof\nlosses = []\nfor _ in range(6):\n"
        "    loss = jt_loss(xa)\n    losses.append(float(loss))\nprint(loss.item())"
    )
    prof = shell.user_ns["prof"]
    assert shell.user_ns["losses"] == [32.0] * 6
    reads = prof.fallbacks.set_index("op")
    assert reads.loc["float(x) of a jax.Array", "count"] == 6
    assert reads.loc["float(x) of a jax.Array", "cell_line"] == 5
    assert reads.loc["float(x) of a jax.Array", "cause"] == "item"
    assert reads.loc["x.item() of a jax.Array", "cell_line"] == 6
    assert prof.summary()["syncs"] == 7 and prof.summary()["fallback_ops"] == 0
    finding = prof.findings.set_index("title").loc[
        "7 values read back to the host (syncs) (cell line 5, 6)"
    ]
    assert finding["severity"] == "warning" and "every N steps" in finding["advice"]
    assert "torch.where" not in finding["advice"]
    # the property is JAX's own again after the capture, and reads outside it are not counted
    from jax._src.array import ArrayImpl

    assert ArrayImpl.__dict__["_value"].fget.__module__ == "jax._src.array"
    assert ArrayImpl.__dict__["item"].__module__ == "jax._src.numpy.array_methods"
    run("%%xla_profile -b jax -q --var once\nloss = jt_loss(xa)\nprint(float(loss))")
    once = shell.user_ns["once"]
    assert once.summary()["syncs"] == 1
    assert set(once.findings["severity"]) <= {"info"}


def test_pure_callback_in_a_hot_function_is_a_host_callback_fallback(run, shell):
    run("""%%xla_profile -b jax -q --var prof
def _double(v):
    return np.asarray(v) * 2
@jax.jit
def jt_callback(x):
    y = jax.pure_callback(_double, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    return y + 1
for _ in range(12):
    out = jt_callback(xa)
""")
    prof = shell.user_ns["prof"]
    assert float(shell.user_ns["out"][0, 0]) == 3.0
    assert len(prof.fallbacks) == 1
    row = prof.fallbacks.iloc[0]
    assert row["op"] == "pure_callback in jit(jt_callback)"
    assert row["cause"] == "host_callback" and row["count"] == 12
    assert row["cell_line"] == 6  # the pure_callback line inside the function
    assert list(prof.compiles["cell_line"]) == [9]
    assert (
        "xla_ffi_python_cpu_callback" in prof.graphs.set_index("kind").loc["hlo_optimized", "text"]
    )
    finding = prof.findings.iloc[0]
    assert finding["severity"] == "warning"
    assert finding["title"] == (
        "host callback pure_callback in hot function "
        "jit(jt_callback): 12 round trips to Python (cell line 6)"
    )
    # Known from the compile: the callbacks of a cached function are still counted.
    run("%%xla_profile -b jax -q --var again\nout = jt_callback(xa)\nout = jt_callback(xa)")
    again = shell.user_ns["again"]
    assert again.compiles.empty
    assert list(again.fallbacks["count"]) == [2]
    assert list(again.findings["severity"]) == ["info"]


def test_a_callback_in_a_scan_is_counted_per_iteration(run, shell):
    source = scan_callback_source("jt_scan", 3, 10)
    run(f"%%xla_profile -b jax -q --var prof\n{source}for _ in range(4):\n    out = jt_scan(xa)")
    row = shell.user_ns["prof"].fallbacks.iloc[0]
    assert row["op"] == "pure_callback in jit(jt_scan)" and row["calls"] == 4
    assert row["count"] == 40  # 10 iterations a run, counted by the device trace


@pytest.mark.xfail(
    JAX_06,
    strict=True,
    reason="JAX 0.6 names a callback's instruction custom-call.N: the trace cannot tell it",
)
def test_a_callback_compiled_before_any_capture_is_found_by_the_trace(run, shell):
    """A function with a callback in a scan, compiled and run in a cell without profiling: in
    a profiled cell its callback runs are found by the device trace's events named after the
    callback primitive (it was invisible: only compiles seen by a capture were known)."""
    run(scan_callback_source("jt_early", 4, 5) + "jt_early(xa).block_until_ready()")
    run("%%xla_profile -b jax -q --var prof\nfor _ in range(3):\n    out = jt_early(xa)")
    prof = shell.user_ns["prof"]
    assert prof.compiles.empty
    row = prof.fallbacks.set_index("op").loc["pure_callback in jit(jt_early)"]
    assert row["cause"] == "host_callback" and row["count"] == 15 and row["calls"] == 3


def test_untraced_jax_graph_opens_on_the_optimized_hlo(run, shell):
    run("@jax.jit\ndef jt_view(x):\n    return jnp.tanh(x @ x).sum()")
    run("%%xla_profile -b jax -q --no-trace --var prof\nout = jt_view(xa)")
    prof = shell.user_ns["prof"]
    assert set(prof.graphs["kind"]) == {"stablehlo", "hlo_optimized"}
    assert prof.graph(0).kind == "hlo"  # the optimized HLO: fusions and scopes, as XLA runs it
    assert prof.graph(0, kind="stablehlo").kind == "stablehlo"  # one argument away


def test_a_steady_profile_holds_the_programs_it_ran(run, shell):
    """A program compiled in one profiled cell and run, without compiling, in the next: the
    second profile holds that program's graphs (``prof.graph(0)`` raised KeyError "this
    profile holds no graph") and its report shows them in the viewer."""
    run("@jax.jit\ndef jt_steady(x):\n    return jnp.sin(x @ x).sum()")
    run("%%xla_profile -b jax -q --var first\nout = jt_steady(xa)")
    run("%%xla_profile -b jax -q --var prof\nfor _ in range(3):\n    out = jt_steady(xa)")
    first, prof = shell.user_ns["first"], shell.user_ns["prof"]
    assert jit_compiles(prof).empty and executions(prof) == {"jit(jt_steady)": 3}
    assert set(prof.graphs["graph"]) == set(first.graphs["graph"]) != set()
    assert prof.graph(0).text == first.graph(0).text
    assert prof.graph(0, kind="stablehlo").kind == "stablehlo"
    shown = packed_graphs(prof.to_html())
    assert [g["kind"] for g in shown if "jt_steady" in g["title"]] == ["hlo", "stablehlo"]


def test_debug_print_and_no_graphs(run, shell, capfd):
    run("""%%xla_profile -b jax -q --no-graphs --var prof
@jax.jit
def jt_print(x):
    jax.debug.print("sum={s}", s=x.sum())
    return x * 2
out = jt_print(xa)
""")
    prof = shell.user_ns["prof"]
    assert prof.graphs.empty and len(prof.compiles) == 1
    primitive = "debug_callback" if JAX_06 else "debug_print"
    assert list(prof.fallbacks["op"]) == [f"{primitive} in jit(jt_print)"]
    assert list(prof.fallbacks["cell_line"]) == [4]
    assert "sum=16" in capfd.readouterr().out


def test_grad_of_a_jitted_function(run, shell):
    run("@jax.jit\ndef jt_loss(w, x):\n    return jnp.sum(jnp.tanh(x @ w) ** 2)")
    run("%%xla_profile -b jax -q --var prof\ngrads = jax.grad(jt_loss)(wa, xa)")
    run("%%xla_profile -b jax -q --var again\ngrads = jax.grad(jt_loss)(wa, xa)")
    prof, again = shell.user_ns["prof"], shell.user_ns["again"]
    compiles = jit_compiles(prof)
    # Forward pass (with residuals) and backward pass: two programs, both named after the
    # function; the first explained by JAX, the second derived from it.
    assert list(compiles["graph"]) == ["jit(jt_loss)", "jit(jt_loss)"]
    assert list(compiles["cause"]) == ["never seen function", jax_backend.DERIVED]
    # JAX 0.6 records a jaxpr trace of the function for the forward pass (a "jit" trigger)
    first = "jit" if JAX_06 else "transformation"
    assert list(compiles["trigger"]) == [first, "transformation"]
    assert list(compiles["cell_line"]) == [2, 2]
    assert len(prof.graphs[prof.graphs["kind"] == "hlo_optimized"]) == 2
    assert shell.user_ns["grads"].shape == (4, 3)
    assert jit_compiles(again).empty
    assert executions(again)["jit(jt_loss)"] == 2  # the traced call, and the backward pass


def test_a_pmapped_step_is_the_user_s_program_not_an_eager_op(run, shell):
    # From JAX 0.9 `jax.pmap` runs a `jax.jit` of a function JAX makes (`_fun` in
    # jax/_src/pmap.py) around the user's: it is their step, with its graph and source lines.
    run(
        "def pm_step(w, x):\n    return w - 0.1 * jax.lax.psum(jnp.tanh(x @ w).sum(), 'i') * w\n"
        "pm_fn = jax.pmap(pm_step, axis_name='i')\n"
        "pm_w, pm_x = jnp.ones((1, 4, 4)), jnp.ones((1, 6, 4))"
    )
    run("%%xla_profile -b jax -q --var prof\nfor _ in range(4):\n    pm_w = pm_fn(pm_w, pm_x)")
    prof = shell.user_ns["prof"]
    steps = prof.compiles[prof.compiles["graph"] == "jit(_fun)"]
    if steps.empty:  # JAX before 0.9 runs pmap through its own path, not a jax.jit
        pytest.skip("pmap does not run through jax.jit on this JAX")
    assert not steps["eager"].any() and (steps["cause"] != "eager op").all()
    assert not prof.executions.set_index("graph").loc["jit(_fun)", "eager"]
    assert not any("eager-op" in title for title in prof.findings["title"])
    ops = prof.ops[prof.ops["graph"] == "jit(_fun)"]
    assert ops["cell_line"].notna().any()


def test_jit_recreated_in_a_loop_is_a_finding(run, shell):
    run(
        "%%xla_profile -b jax -q --var prof\nfor i in range(3):\n"
        "    out = jax.jit(lambda v: v + 100)(xa)"
    )
    prof = shell.user_ns["prof"]
    assert list(prof.compiles["cause"]) == ["never seen function"] * 3
    assert list(prof.findings["title"]) == [
        "jit(<lambda>) compiled 3 times as a function JAX had never seen (cell line 3)"
    ]
    assert "outside the loop" in prof.findings.iloc[0]["advice"]


def test_raising_cell_keeps_what_compiled_and_restores_jax(run, shell):
    from jax._src import compiler
    from jax._src import config as jax_config
    from jax._src.lib import _jax

    result = run(
        """%%xla_profile -b jax -q --var prof
@jax.jit
def jt_fine(x):
    return x - 1
out = jt_fine(xa)
@jax.jit
def jt_raises(x):
    raise ValueError("bad <b>")
out = jt_raises(xa)
""",
        expect_error=True,
    )
    assert isinstance(result.error_in_exec, ValueError)
    assert str(result.error_in_exec) == "bad <b>"
    prof = shell.user_ns["prof"]
    assert prof.failed and prof.error == "ValueError: bad <b>"
    assert list(prof.compiles["graph"]) == ["jit(jt_fine)"]
    assert executions(prof) == {"jit(jt_fine)": 1}
    # Everything xlanb switched on for the capture is off again.
    assert compiler.compile_or_get_cached is not jax_backend._compile_hook
    assert type(_jax.PjitFunction.__dict__["__call__"]).__name__ == "wrapper_descriptor"
    assert _jax.PjitFunction.__flags__ & (1 << 11)
    assert jax_config.explain_cache_misses.value is False
    assert not jax_backend._listening


def test_html_and_quotes_in_a_function_name_are_kept_verbatim(run, shell):
    name = "<img src=x onerror=\"alert(1)\">'q'"
    run(f"def _html(x):\n    return x * 3\n_html.__name__ = {name!r}\njt_html = jax.jit(_html)")
    run("%%xla_profile -b jax -q --var prof\nout = jt_html(xa)")
    prof = shell.user_ns["prof"]
    assert list(prof.compiles["graph"]) == [f"jit({name})"]
    assert list(prof.compiles["cause"]) == ["never seen function"]
    assert set(prof.graphs["graph"]) == {f"jit({name})"}
    assert executions(prof) == {f"jit({name})": 1}
    html = prof._repr_html_()
    assert "<img src=x" not in html


def test_many_eager_op_compiles_are_flagged_not_graphed(run, shell):
    run(
        "%%xla_profile -b jax -q --var prof\nfor n in range(1001, 1013):\n"
        "    v = jnp.sin(jnp.ones((n,)))"
    )
    prof = shell.user_ns["prof"]
    assert len(prof.compiles) >= 12 and prof.compiles["eager"].all()
    assert (prof.compiles["cause"] == "eager op").all()
    assert (prof.compiles["cell_line"] == 3).all()
    assert "jit(sin)" in set(prof.compiles["graph"])
    assert prof.graphs.empty and prof.fallbacks.empty
    assert executions(prof)["jit(sin)"] == 12
    assert prof.executions.set_index("graph").loc["jit(sin)", "eager"]
    finding = prof.findings.iloc[0]
    assert finding["title"].endswith("small eager-op compiles (cell line 3)")
    assert "jax.jit" in finding["advice"]


def test_nothing_is_printed_and_user_explain_setting_is_kept(run, shell, capfd):
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    logger = logging.getLogger(jax_backend.EXPLAIN_LOGGER)
    handler = Keep()
    logger.addHandler(handler)
    try:
        run(
            "%%xla_profile -b jax -q --var prof\njt_quiet = jax.jit(lambda x: x + 7)\n"
            "out = jt_quiet(xa)"
        )
        assert records == []  # xlanb switched the explanations on and kept them to itself
        assert "TRACING CACHE MISS" not in capfd.readouterr().err
        assert list(shell.user_ns["prof"].compiles["cause"]) == ["never seen function"]
        run("jt_plain = jax.jit(lambda x: x + 8)\nout = jt_plain(xa)")
        assert records == []  # off again outside captures
        run("jax.config.update('jax_explain_cache_misses', True)")
        try:
            run(
                "%%xla_profile -b jax -q --var prof\njt_user = jax.jit(lambda x: x + 9)\n"
                "out = jt_user(xa)"
            )
            assert len(records) == 1 and records[0].startswith("TRACING CACHE MISS")
            assert list(shell.user_ns["prof"].compiles["cause"]) == ["never seen function"]
            run("jt_user2 = jax.jit(lambda x: x + 10)\nout = jt_user2(xa)")
            assert len(records) == 2
        finally:
            run("jax.config.update('jax_explain_cache_misses', False)")
    finally:
        logger.removeHandler(handler)


def test_python_api_and_nested_captures(shell):
    import jax.numpy as jnp

    @jax.jit
    def jt_api(x):
        return x @ x

    class Callable:
        def __call__(self):
            return "mine"

    value = jnp.ones((5, 5))
    with xlanb.profile(backend="jax", name="outer") as outer:
        # Other callables are untouched by the dispatch counter, also right after their
        # class changed (CPython's attribute cache).
        Callable.changed = True
        assert Callable()() == "mine"
        target, called = Callable(), []
        weakref.finalize(target, called.append, 1)
        del target
        assert called == [1]
        jt_api(value)
        with xlanb.profile(backend="jax", name="inner") as inner:
            jt_api(value)
            jt_api(value)
    assert len(outer.compiles) == 1 and inner.compiles.empty
    assert executions(outer) == {"jit(jt_api)": 3}
    assert executions(inner) == {"jit(jt_api)": 2}
    assert outer.compiles["cell_line"].isna().all()
    assert outer.compiles.iloc[0]["location"].startswith(__file__ + ":")


def test_calls_past_the_samples_cap_are_counted_exactly_in_nested_captures(shell):
    """Under the samples' cap a call is its sample alone (its function's count and seconds
    are summed from the samples); past it, its function's running totals: the counts of an
    outer capture crossing the cap and of an inner one stay exact, and the seconds are the
    samples' sum while under the cap."""
    import jax.numpy as jnp

    from xlanb.capture.backends.jax.state import SAMPLE_LIMIT

    @jax.jit
    def jt_capped(x):
        return x + 1

    value = jnp.ones(2)
    jt_capped(value)
    with xlanb.profile(backend="jax", trace=False, graphs=False) as outer:
        for _ in range(SAMPLE_LIMIT - 30):
            jt_capped(value)
        with xlanb.profile(backend="jax", trace=False, graphs=False) as inner:
            for _ in range(50):
                jt_capped(value)
        for _ in range(20):
            jt_capped(value)
    assert executions(outer) == {"jit(jt_capped)": SAMPLE_LIMIT + 40}
    assert executions(inner) == {"jit(jt_capped)": 50}
    dispatch = outer.metrics.set_index("name").loc["DispatchTime"]
    assert dispatch["count"] == SAMPLE_LIMIT + 40
    assert (outer.samples["metric"] == "DispatchTime").sum() == SAMPLE_LIMIT
    inner_seconds = inner.executions.set_index("graph").loc["jit(jt_capped)", "dispatch_seconds"]
    inner_samples = inner.samples[inner.samples["metric"] == "DispatchTime"]["value"]
    assert len(inner_samples) == 30  # the cap came within the inner capture
    assert inner_seconds > inner_samples.sum() > 0


def test_explanation_causes():
    cause = jax_backend.explanation_cause
    assert (
        cause(
            "TRACING CACHE MISS at f.py:3 (<module>):\n  never seen function:\n"
            "    f id=1 defined at f.py:1"
        )
        == "never seen function"
    )
    assert cause(
        "TRACING CACHE MISS at f.py:3 (<module>):\n  for f defined at f.py:1\n"
        "  all previously seen cache keys differ. For the closest previous key:\n"
        "  different input types:\n  * at x, now f32[8,4] and before f32[4,4]\n"
        "  * at y, now i32[] and before f32[]"
    ) == ("different input types: f32[4,4] -> f32[8,4], f32[] -> i32[]")
    assert cause(
        "TRACING CACHE MISS at f.py:3 (<module>):\n  for f defined at f.py:1\n"
        "  different input pytree:\n  * at input path [0][1], now <class "
        "'jax._src.tree_util.Static'> with pytree metadata Static(val=(1, 2)) and "
        "before <class 'jax._src.tree_util.Static'> with pytree metadata "
        "Static(val=None), so the pytree node metadata does not match"
    ) == ("static argument changed: None -> (1, 2)")
    parsed = jax_backend.parse_explanation(
        "TRACING CACHE MISS at /a b/c.py:12 (run (x)):\n  for g defined at /a b/c.py:2\n"
        "  different input types:\n  * at x, now f32[2] and before f32[1]"
    )
    assert parsed.name == "g" and parsed.frames == [("run (x)", "/a b/c.py", 12)]


def test_mixed_torch_lazy_and_jax_cell(run, shell, request):
    pytest.importorskip("torch")
    try:
        request.getfixturevalue("lazy_runtime")
    except pytest.FixtureLookupError:  # an older conftest: set torch._lazy up here
        shell.run_cell(
            "import torch, torch._lazy, torch._lazy.ts_backend\n"
            "try:\n    torch._lazy.ts_backend.init()\nexcept RuntimeError:\n"
            "    pass\ndev = 'lazy'"
        )
    # a torch graph of its own: one that a torch._lazy test compiled earlier in the process
    # is a cache hit here, with no compile to show
    run("@jax.jit\ndef jt_mixed(x):\n    return x * 5")
    run("""%%xla_profile -q --var prof
t = (torch.ones(3, 17, device=dev) * 2).sum()
torch._lazy.mark_step()
out = jt_mixed(xa)
""")
    prof = shell.user_ns["prof"]
    assert prof.backends == ["torch_lazy", "jax"]
    assert set(prof.compiles["backend"]) == {"torch_lazy", "jax"}
    jax_rows = prof.compiles[prof.compiles["backend"] == "jax"]
    assert list(jax_rows["graph"]) == ["jit(jt_mixed)"] and list(jax_rows["cell_line"]) == [4]
    assert set(prof.executions["backend"]) == {"torch_lazy", "jax"}
    assert executions(prof)["jit(jt_mixed)"] == 1
    # JAX reads beside one torch read after the step: the torch sync stays information
    run("""%%xla_profile -q --var prof
t = (torch.ones(3, 17, device=dev) * 3).sum()
torch._lazy.mark_step()
for _ in range(3):
    float(jt_mixed(xa)[0, 0])
print((t * 4).item())
""")
    prof = shell.user_ns["prof"]
    assert prof.summary()["syncs"] == 4
    forced = prof.findings[prof.findings["title"].str.contains("forced sync")]
    assert list(forced["severity"]) == ["info"], forced[["severity", "title"]]


def test_profiled_jax_cell_in_a_real_kernel():
    notebook = run_notebook(
        [
            "%load_ext xlanb",
            "import jax, jax.numpy as jnp\n"
            "@jax.jit\n"
            "def step(x):\n"
            "    return (x * 2).sum()\n"
            "small, big = jnp.ones((3, 3)), jnp.ones((5, 3))",
            "%%xla_profile --var prof\nfor batch in [small, small, big]:\n    out = step(batch)",
            "import json\n"
            "print(json.dumps({'causes': list(prof.compiles['cause']),\n"
            "                  'lines': [int(v) for v in prof.compiles['cell_line']],\n"
            "                  'runs': int(prof.executions['count'].sum()),\n"
            "                  'backends': prof.backends}))",
        ],
        timeout=120,
    )
    profiled = notebook.cells[2]
    shown = outputs_of(profiled, "text/html")
    assert "jit(step)" in shown or "<b>compiles</b> 2" in shown
    streams = "".join(
        output.get("text", "")
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if output.get("output_type") == "stream"
    )
    assert "TRACING CACHE MISS" not in streams
    result = json.loads(outputs_of(notebook.cells[3], "text/plain").strip())
    assert result == {
        "causes": ["never seen function", "different input types: f32[3,3] -> f32[5,3]"],
        "lines": [3, 3],
        "runs": 3,
        "backends": ["jax"],
    }


def test_jax_profile_round_trips_through_save_and_load(run, shell, tmp_path):
    import pandas as pd

    run("@jax.jit\ndef jt_saved(x):\n    return jnp.cos(x)\nnp_saved = np.ones((2, 2))")
    run("%%xla_profile -b jax -q --var prof\nout = jt_saved(xa)\nout = jt_saved(np_saved)")
    prof = shell.user_ns["prof"]
    assert not prof.compiles.empty and not prof.graphs.empty and not prof.fallbacks.empty
    loaded = xlanb.load(prof.save(tmp_path / "jax.xlanb.json"))
    for name, frame in prof.frames().items():
        pd.testing.assert_frame_equal(loaded.frames()[name], frame, check_dtype=True)
    assert loaded.environment["jax"] == jax.__version__


def test_dispatch_times_are_sampled_for_percentile_charts(run, shell):
    run("@jax.jit\ndef jt_sampled(x):\n    return jnp.cos(x).sum()\nout = jt_sampled(xa)")
    run("%%xla_profile -b jax -q --var prof\nfor _ in range(25):\n    out = jt_sampled(xa)")
    prof = shell.user_ns["prof"]
    dispatch = prof.metrics.set_index("name").loc["DispatchTime"]
    assert dispatch["count"] == 25 and dispatch["unit"] == "s"
    samples = prof.samples[prof.samples["metric"] == "DispatchTime"]
    assert len(samples) == 25
    assert samples["value"].sum() == pytest.approx(dispatch["total"])
    assert samples["time"].between(prof.started_at, prof.started_at + prof.wall_seconds + 1).all()
    charts = {chart.title: chart for chart in prof.charts()}
    assert charts["percentiles"].to_plotly().data[0].name == "DispatchTime"


def test_non_ascii_scope_names_survive_into_the_graph(run, shell):
    run(
        "@jax.jit\ndef jt_umlaut(x):\n    with jax.named_scope('größe'):\n"
        "        return jnp.sin(x) * 2"
    )
    run("%%xla_profile -b jax -q --var umlaut\nout = jt_umlaut(xa)")
    prof = shell.user_ns["umlaut"]
    graph = prof.graph("jit(jt_umlaut)", kind="hlo_optimized")
    names = " ".join(str(n) for n in graph.nodes["op_name"].dropna())
    assert "größe" in names and "303" not in names


def test_two_threads_profiling_at_once_leave_the_explain_option_as_it_was():
    """JAX's explain option is per thread: a capture begun on the main thread and one begun on
    a worker, ending in the other order, used to leave it on for the main thread (every later
    compile then logged a TRACING CACHE MISS warning)."""
    import threading

    import jax
    import jax.numpy as jnp
    from jax._src import config as jax_config

    assert not jax_config.explain_cache_misses.value
    begun, main_ended = threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def worker():
        with xlanb.profile(backend="jax", name="worker-thread", trace=False) as prof:
            begun.set()
            main_ended.wait(30)
            jax.jit(lambda v: v * 7 - 1)(jnp.ones(5)).block_until_ready()
        seen["worker"] = prof

    main = xlanb.profile(backend="jax", name="main-thread", trace=False)
    main.__enter__()
    thread = threading.Thread(target=worker)
    thread.start()
    begun.wait(30)
    jax.jit(lambda v: v * 3 + 1)(jnp.ones(4)).block_until_ready()
    main.__exit__(None, None, None)
    main_ended.set()
    thread.join(60)
    assert not jax_config.explain_cache_misses.value
    # each capture saw the compiles in its span (the worker's spans both), each explained
    for prof, count in ((main.profile, 1), (seen["worker"], 2)):
        jitted = prof.compiles[~prof.compiles["eager"].astype(bool)]
        assert len(jitted) == count, prof.compiles
        assert (jitted["cause"] != "no explanation from JAX").all(), prof.compiles


def test_each_jax_compile_of_one_function_is_its_own_graph(run, shell):
    """A function recompiled for new shapes: every compile is reachable by index, so the
    README's diff(prof.graph(0), prof.graph(1)) recipe works on JAX too (graph(1) raised
    IndexError: the graphs were keyed by function name only)."""
    from xlanb.graphs import diff

    run(
        "%%xla_profile -q --var per_compile\n"
        "@jax.jit\ndef pc_step(x):\n    return jnp.tanh(x) @ x.T\n"
        "for n in (3, 5, 7):\n    pc_step(jnp.ones((n, 4))).block_until_ready()"
    )
    prof = shell.user_ns["per_compile"]
    compiled = prof.compiles[prof.compiles["graph"] == "jit(pc_step)"]
    assert len(compiled) == 3
    texts = [prof.graph(i).text for i in range(3)]
    assert [("f32[3,4]" in t, "f32[5,4]" in t, "f32[7,4]" in t) for t in texts] == [
        (True, False, False),
        (False, True, False),
        (False, False, True),
    ]
    with pytest.raises(IndexError):
        prof.graph(3)
    # a name is the function's latest compile
    assert "f32[7,4]" in prof.graph("jit(pc_step)").text
    changes = diff(prof.graph(0), prof.graph(1))
    assert changes is not None
    # the cell's output has a viewer per compile
    shown = prof._repr_html_()
    first_views = [
        graph
        for graph in packed_graphs(shown)
        if graph["kind"] != "stablehlo" and "diff" not in graph["nodes"]
    ]
    titles = [graph["title"] for graph in first_views]
    assert sum("jit(pc_step) (compile " in t for t in titles) == 3 and "Graph viewer (3)" in shown
    # and each compile's StableHLO is a tab away, and each recompile's changes from the
    # compile before it: a new shape changes nodes, adds none
    changes = [graph for graph in packed_graphs(shown) if "diff" in graph["nodes"]]
    assert len(packed_graphs(shown)) == 3 + 3 + 2 and len(changes) == 2
    assert shown.count(">Changes from compile ") == 2
    from xlanb.views.graph_viewer.payload import DIFF_CODES

    for graph in changes:
        assert DIFF_CODES["changed"] in graph["nodes"]["diff"], graph["summary"]
        assert "0 added, 0 removed" in graph["summary"], graph["summary"]
    # a report too: a viewer per compile (it showed each function's last compile only)
    from xlanb.views.report import report_html

    page = report_html([prof])
    assert page.count(">Changes from compile ") == 2
    assert sum("jit(pc_step) (compile " in g["title"] for g in packed_graphs(page)) >= 3 + 3
    # each recompile is one command away from its diff with the previous compile
    assert prof.previous_compile(0) is None and prof.previous_compile(2) == 1
    assert f"%xla_profile diff {prof.name} 2" in shown
    assert f"`%xla_profile diff {prof.name} 2`" in " ".join(prof.findings["detail"])
    result = run(f"pc_diff = %xla_profile diff {prof.name} 2")
    assert result.success and type(shell.user_ns["pc_diff"]).__name__ == "GraphDiff"
    with pytest.raises(KeyError, match="first compile"):
        prof.diff(0)


def test_commands_for_a_profile_name_with_spaces_are_quoted_and_run(run, shell):
    import html

    run(
        '%%xla_profile -q -n "my run" --var spaced\n'
        "@jax.jit\ndef sp_step(x):\n    return jnp.tanh(x) @ x.T\n"
        "for n in (3, 5):\n    sp_step(jnp.ones((n, 4))).block_until_ready()"
    )
    prof = shell.user_ns["spaced"]
    assert prof.name == "my run"
    command = "%xla_profile diff 'my run' 1"
    assert command in html.unescape(prof._repr_html_())
    assert f"`{command}`" in " ".join(prof.findings["detail"])
    result = run(f"sp_diff = {command}")
    assert result.success and type(shell.user_ns["sp_diff"]).__name__ == "GraphDiff"
    assert run("%xla_profile compare 'my run' spaced").success


TRANSFORMER_CELL = """%%xla_profile -q --var big_cell
import math
def tc_layer(p, x):
    B, T, D = x.shape
    q, k, v = (x @ p[n] for n in "qkv")
    a = jax.nn.softmax(jnp.einsum("btd,bsd->bts", q, k) / math.sqrt(D), axis=-1)
    x = jax.nn.gelu(x + jnp.einsum("bts,bsd->btd", a, v) @ p["o"])
    return x + jax.nn.relu(x @ p["w1"]) @ p["w2"]
def tc_loss(params, x):
    for p in params:
        x = tc_layer(p, x)
    return jnp.mean(x**2)
@jax.jit
def tc_step(params, x):
    loss, grads = jax.value_and_grad(tc_loss)(params, x)
    return jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads), loss
shapes = dict(q=(64, 64), k=(64, 64), v=(64, 64), o=(64, 64), w1=(64, 256), w2=(256, 64))
tc_params = [{n: jax.random.normal(jax.random.key(0), s) * 0.01 for n, s in shapes.items()}
             for _ in range(6)]
for tokens in (8, 16, 24, 32):
    for _ in range(40):
        tc_params, tc_loss_value = tc_step(tc_params, jnp.ones((2, tokens, 64)))
tc_done = tc_loss_value.block_until_ready()
"""


def test_the_timeline_draws_no_bar_for_a_wait_that_lasted_no_time(run, shell, monkeypatch):
    """The runtime marks each donation and usage check as a wait (`Wait for donation holds`),
    most lasting 0 s: drawn at the minimum bar width they made a band of waiting that never
    happened (and were half the timeline's bytes). Waits under a microsecond are not spans
    at all (over a thousand a transformer step: the summary's rows at every cell's end), but
    for a read's, which the account follows with the device's idle gap."""
    from xlanb.analysis.sync_cost import READ_WAITS

    trace_without_budget(monkeypatch)  # all its runs traced
    from xlanb.views.charts import timeline_figure

    run("zw_f = jax.jit(lambda p, x: (p * 0.9 + x.mean(), (p * x).sum()))")
    run(
        "%%xla_profile -b jax -q --var prof\nzw_p = jnp.ones((64, 64))\nfor i in range(20):\n"
        "    zw_p, zw_l = zw_f(zw_p, jnp.ones((64, 64)))\n    zw_l.block_until_ready()"
    )
    spans = shell.user_ns["prof"].spans
    waits = spans[spans["lane"] == "sync_wait"]
    # the runtime's marks, 2 a run, are left out; the reads' waits are kept
    short = waits[waits["seconds"] < 1e-6]
    assert short["name"].isin(READ_WAITS).all()
    lanes = {trace["name"]: trace for trace in timeline_figure(shell.user_ns["prof"])["data"]}
    # no lane where no wait is left to draw (the marks were all the cell's waits)
    drawn = [lasted for _name, lasted in lanes.get("sync_wait", {}).get("customdata", [])]
    assert len(drawn) == (waits["seconds"] > 0).sum() and all(lasted > 0 for lasted in drawn)


def test_a_recompiling_transformer_cell_shows_in_bounded_bytes(run, shell):
    """A 6-layer transformer step compiled for 4 shapes, 160 runs: the cell's output holds no
    graph text and stays bounded (it was 1.4 MB: every HLO and StableHLO text in full, every
    traced op and wait a bar): the summary with its graph viewers under 200 kB, and with every
    run traced (``--trace-runs 0``, the most a cell can draw; a window's runs depend on the
    machine's speed) the charts too, all under 480 kB. The default window's output is a figure
    in `bench/cell_output.py` (target 300 kB)."""
    from xlanb.views.charts import ROW_BARS, RUN_OPS
    from xlanb.views.notebook import charts

    run(TRANSFORMER_CELL.replace("-q --var", "-q --trace-runs 0 --var", 1))
    prof = shell.user_ns["big_cell"]
    assert len(prof.compiles[prof.compiles["graph"] == "jit(tc_step)"]) == 4
    assert (prof.spans[prof.spans["lane"] == "device"]["graph"] == "jit(tc_step)").sum() == 160
    shown = prof._repr_html_()
    bundles = [chart._repr_mimebundle_() for chart in charts(prof)]
    parts = {"summary": len(shown)} | {
        chart.title: len(json.dumps(bundle))
        for chart, bundle in zip(charts(prof), bundles, strict=True)
    }
    assert parts["summary"] < 200_000 and sum(parts.values()) < 480_000, parts
    assert "HloModule" not in shown and "stablehlo." not in shown
    drawn = packed_graphs(shown)
    assert drawn and all(graph["title"].startswith("jax jit(tc_step)") for graph in drawn)
    timeline = next(chart.figure for chart in charts(prof) if chart.title == "timeline")
    for trace in timeline["data"]:  # a lane's bars can span rows; each row is thinned alone
        per_row = Counter(trace["y"]).values() if trace["type"] == "bar" else [len(trace["x"])]
        # an ops row also keeps its program's last run one bar per op
        assert max(per_row) <= ROW_BARS + (RUN_OPS if trace["name"] == "op" else 0), trace["name"]


PERSISTENT_CACHE_SCRIPT = """
import json, sys
import jax, jax.numpy as jnp
import xlanb
from xlanb.views.summary import headline
jax.config.update("jax_compilation_cache_dir", sys.argv[1])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)

def pc_body(x):
    return jnp.tanh(x @ x.T).sum()

for attempt in ("cold", "warm"):
    jax.clear_caches()  # the second round finds the program only on disk
    with xlanb.profile(backend="jax", name=attempt, trace=False) as prof:
        jax.jit(pc_body)(jnp.ones((32, 32))).block_until_ready()
    rows = prof.compiles[prof.compiles["graph"] == "jit(pc_body)"]
    print(json.dumps({"attempt": attempt, "hits": rows["cache_hit"].tolist(),
                      "headline": dict(headline(prof))}))
"""


def test_persistent_cache_hits_are_marked_and_nothing_is_printed(tmp_path):
    """With JAX's persistent compilation cache on, a program read back from disk is marked as
    such (it was listed as an ordinary compile), and the capture prints nothing JAX alone
    would not print."""
    import subprocess
    import sys

    from tests.support.helpers import clean_env

    done = subprocess.run(
        [sys.executable, "-c", PERSISTENT_CACHE_SCRIPT, str(tmp_path / "cache")],
        capture_output=True,
        text=True,
        env=clean_env(JAX_PLATFORMS="cpu"),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr
    cold, warm = (json.loads(line) for line in done.stdout.splitlines())
    assert cold["hits"] == [False] and warm["hits"] == [True], (cold, warm)
    assert "from the persistent cache" not in cold["headline"]["compiles"]
    # every program of the warm round (jnp.ones' own too) came from disk
    assert re.fullmatch(r"(\d+) \(.+\), \1 from the persistent cache", warm["headline"]["compiles"])


def test_static_memory_of_each_program_matches_jax(run, shell):
    """`prof.memory`: arguments, outputs, aliased, temporaries, code and peak of each program
    compiled in the cell, as JAX's own memory analysis of the same program gives them; the
    compiles table shows the peak."""
    run(
        "@jax.jit\ndef jt_mem(w, x):\n    return jnp.tanh(x @ w) @ w.T\n"
        "mem_w, mem_x = jnp.ones((256, 512)), jnp.ones((64, 256))"
    )
    run("%%xla_profile -b jax -q --var prof\nout = jt_mem(mem_w, mem_x)")
    prof = shell.user_ns["prof"]
    memory = prof.memory[prof.memory["graph"] == "jit(jt_mem)"].set_index("kind")["bytes"]
    jt_mem, w, x = (shell.user_ns[name] for name in ("jt_mem", "mem_w", "mem_x"))
    stats = jt_mem.lower(w, x).compile().memory_analysis()
    assert memory["inputs"] == stats.argument_size_in_bytes == (256 * 512 + 64 * 256) * 4
    assert memory["outputs"] == stats.output_size_in_bytes == 64 * 256 * 4
    assert memory["intermediates"] == stats.temp_size_in_bytes
    assert memory["aliased"] == stats.alias_size_in_bytes
    peak = getattr(stats, "peak_memory_in_bytes", None) or (  # JAX 0.6 does not say
        stats.argument_size_in_bytes
        + stats.output_size_in_bytes
        + stats.temp_size_in_bytes
        - stats.alias_size_in_bytes
    )
    assert memory["peak"] == peak
    assert "<th>peak_memory</th>" in prof._repr_html_()


def test_arrays_the_cell_leaves_alive_are_counted_by_shape(run, shell):
    """Results appended to a list in the cell stay alive after it: `prof.live_arrays` has the
    live arrays before and after (as `jax.live_arrays()` counts them) and what the cell left
    alive by shape and dtype, and the cell's summary says so."""
    run("jt_kept = []")
    run(
        "%%xla_profile -b jax -q --var prof\njt_live_before = len(jax.live_arrays())\n"
        "for i in range(6):\n    jt_kept.append(jnp.ones((128, 64)) * i)"
    )
    # counted after the cell: within it, the trace window's probe (the output of a call
    # whose run had not ended at the next call, as on a loaded machine) is alive too
    run("jt_live_after = len(jax.live_arrays())")
    prof = shell.user_ns["prof"]
    live = prof.live_arrays.set_index("snapshot")
    assert live.loc["before", "count"] == shell.user_ns["jt_live_before"]
    assert live.loc["after", "count"] == shell.user_ns["jt_live_after"]
    left = prof.live_arrays[prof.live_arrays["snapshot"] == "left alive"].set_index("shape")
    assert left.loc["float32[128,64]", "count"] == 6
    assert left.loc["float32[128,64]", "bytes"] == 6 * 128 * 64 * 4
    assert "Left alive by the cell" in prof._repr_html_()
    run("jt_kept.clear()")
    # 6 x 32 kB is not worth a finding; 40 MB kept is one (information, not an alarm)
    assert not prof.findings["title"].str.contains("live device memory").any()
    run(
        "%%xla_profile -b jax -q --var prof\n"
        "for i in range(10):\n    jt_kept.append(jnp.ones((1000, 1000)) * i)"
    )
    grew = shell.user_ns["prof"].findings
    grew = grew[grew["title"].str.contains("live device memory grew")].iloc[0]
    assert grew["severity"] == "info" and grew["title"].startswith("live device memory grew by 40")
    assert "float32[1000,1000] ×10" in grew["detail"]
    run("jt_kept.clear()")


def test_derive_of_a_reloaded_capture_makes_the_frames_of_the_live_one(run, shell, tmp_path):
    import pandas as pd

    from xlanb.analysis import derive

    run("@jax.jit\ndef jt_derived(x):\n    return jnp.cos(x) @ x\nnp_derived = np.ones((4, 4))")
    run(
        "%%xla_profile -b jax -q --var prof\nfor _ in range(3):\n    out = jt_derived(xa)\n"
        "out = jt_derived(np_derived)\nvalue = float(out.sum())"
    )
    prof = shell.user_ns["prof"]
    assert not prof.breakdown.empty and not prof.step_times.empty and not prof.findings.empty
    assert "flops_per_second" in prof.executions.columns
    reloaded = derive(xlanb.load(prof.save(tmp_path / "derived.xlanb.json")))
    for name in ("breakdown", "step_times", "executions", "ops", "findings", "fallbacks"):
        pd.testing.assert_frame_equal(getattr(reloaded, name), getattr(prof, name))
