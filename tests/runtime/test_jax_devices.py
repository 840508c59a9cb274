"""Per-op device time of a `jit` sharded over two devices (XLA:CPU with two forced host
devices, real JAX in a child process: the device count is fixed when JAX starts).

What a user reads in `prof.ops`: one row per (program, op) as on one device, `count` the
op's runs on a device, `seconds` one device's time (the mean over the devices), `devices`
2 and the slowest device's seconds; the runs are one `device` span each (both devices'
time together, not their sum), so the ops of the traced runs add up to at most their
device time. The same process runs a `jit` on one of its devices: that profile's ops are
as they always were, without the new columns.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.support.helpers import clean_env
from xlanb.capture import versions
from xlanb.formats.jax_text import NEVER_SEEN, NEW_SHARDINGS

jax = pytest.importorskip("jax")

if versions.parse_version(jax.__version__) < (0, 10):
    # jaxlib 0.6.1's thunks carry no `device_ordinal` (tests/data/xspace/jax06_*): its ops
    # add the devices together, as before; 0.7-0.9 not tried
    pytest.skip("this JAX's trace does not say which device ran a thunk", allow_module_level=True)

RUNS = 6

SCRIPT = """
import json, sys
import jax, jax.numpy as jnp
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
import xlanb

runs = int(sys.argv[1])
mesh = Mesh(jax.devices(), ("d",))
x_sharded = jax.device_put(jnp.ones((256, 256)), NamedSharding(mesh, P("d")))
x_single = jnp.ones((128, 256))
w = jnp.ones((256, 256))

@jax.jit
def sharded_step(x, w):
    return jnp.tanh(x @ w) @ w

@jax.jit
def single_step(x, w):
    return jnp.tanh(x @ w) @ w

sharded_step(x_sharded, w).block_until_ready()
single_step(x_single, w).block_until_ready()
out = {"devices": len(jax.devices()), "sharded_over": len(x_sharded.sharding.device_set)}
for name, step, x in (("sharded", sharded_step, x_sharded), ("single", single_step, x_single)):
    with xlanb.profile(backend="jax", trace_runs=None) as prof:
        for _ in range(runs):
            y = step(x, w)
        y.block_until_ready()
    spans = prof.spans
    device = spans[(spans["lane"] == "device") & ~spans["estimated"].astype(bool)]
    out[name] = {
        "ops": json.loads(prof.ops.to_json(orient="records")),
        "columns": list(prof.ops.columns),
        "device_spans": device["seconds"].tolist(),
        "steps": len(prof.step_times),
        "buckets": dict(zip(prof.breakdown["bucket"], prof.breakdown["seconds"])),
        "wall": prof.wall_seconds,
    }

@jax.jit
def update(w, x):
    return w - 0.01 * (x.T @ jnp.tanh(x @ w)) / x.shape[0]

state = jnp.ones((256, 256))  # on no mesh: the first update's output is on the mesh
with xlanb.profile(backend="jax") as prof:
    for _ in range(3):
        state = update(state, x_sharded)
    state.block_until_ready()
recompiles = prof.findings[prof.findings["title"].str.contains("recompiled")]
out["moved"] = {
    "causes": prof.compiles["cause"].tolist(),
    "advice": recompiles["advice"].tolist(),
}

import numpy as np
batch = np.ones((256, 256), np.float32)
double = jax.jit(lambda x: x * 2, in_shardings=NamedSharding(mesh, P("d")))
double(batch)
with xlanb.profile(backend="jax") as prof, jax.transfer_guard("log_explicit"):
    put = [
        jax.device_put(batch, NamedSharding(mesh, P("d"))),
        jax.device_put(batch, NamedSharding(mesh, P())),
        jax.device_put(batch),
    ]
    for _ in range(3):
        doubled = double(batch)
out["transfers"] = prof.summary()["transfers"]
out["host_inputs"] = prof.summary()["host_inputs"]

@jax.jit
def grow(x, w):
    return jnp.tanh(x @ w) @ w + 1.0

with xlanb.profile(backend="jax") as prof:
    grow(x_single, w).block_until_ready()
    grow(x_sharded, w).block_until_ready()  # the latest compile: later cells' peak
sizes = [
    grow.lower(x, w).compile().memory_analysis().argument_size_in_bytes
    for x in (x_single, x_sharded)
]
with xlanb.profile(backend="jax") as later:  # runs it, compiles nothing
    grow(x_sharded, w).block_until_ready()
out["memory"] = {
    "later": json.loads(
        later.executions[["graph", "peak_bytes", "devices"]].to_json(orient="records")
    ),
    "later_html": later._repr_html_(),
    "devices": prof.compiles["devices"].tolist(),
    "input_bytes": prof.compiles["input_bytes"].tolist(),
    "jax_input_bytes": sizes,
    "rows": json.loads(prof.memory.to_json(orient="records")),
    "html": prof._repr_html_(),
    "findings": prof.findings["title"].tolist(),
}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def profiles() -> dict:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(RUNS)],
        capture_output=True,
        text=True,
        env=clean_env(
            JAX_PLATFORMS="cpu",
            XLA_FLAGS="--xla_force_host_platform_device_count=2",
            XLANB_STRICT_SCHEMA="1",
        ),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    found["logged_transfers"] = done.stderr.count("host-to-device transfer")
    assert found["devices"] == 2 and found["sharded_over"] == 2
    return found


def test_a_sharded_jit_s_ops_are_one_device_s(profiles):
    sharded = profiles["sharded"]
    ops = sharded["ops"]
    assert ops and {op["graph"] for op in ops} == {"jit(sharded_step)"}
    for op in ops:
        assert op["devices"] == 2, op
        # a run of the op on each device: the count is per device, as the runs are
        assert op["count"] == op["runs"] == RUNS, op
        assert op["max_device_seconds"] >= op["seconds"] > 0, op
    assert sum(op["share"] for op in ops) == pytest.approx(1.0)


def test_a_sharded_jit_s_runs_are_one_span_each_and_hold_its_ops(profiles):
    sharded = profiles["sharded"]
    # one span per run (from the first device's start to the last one's end), not per device
    assert len(sharded["device_spans"]) == RUNS
    assert sharded["steps"] == RUNS
    # each device runs the step's ops one after another (each needs the last one's result):
    # one device's op time of a run lies within that run's span
    op_seconds = sum(op["seconds"] for op in sharded["ops"])
    assert op_seconds <= sum(sharded["device_spans"]) * (1 + 1e-9)
    assert sharded["buckets"]["device"] <= sharded["wall"]


def test_a_jit_on_one_of_the_devices_has_the_ops_it_always_had(profiles):
    single = profiles["single"]
    assert "devices" not in single["columns"]
    assert "max_device_seconds" not in single["columns"]
    assert {op["graph"] for op in single["ops"]} == {"jit(single_step)"}
    for op in single["ops"]:
        assert op["count"] == op["runs"] == RUNS, op
    assert len(single["device_spans"]) == RUNS
    assert sum(op["seconds"] for op in single["ops"]) <= sum(single["device_spans"]) * (1 + 1e-9)


def test_state_that_moved_to_the_mesh_is_a_recompile_of_shardings_not_shapes(profiles):
    # JAX calls it "different input types": f32[256,256]({}) and then f32[256,256]({Auto:
    # ('d',)}), the same type on the mesh its sharded input is on; padding batches is no cure
    first, again = profiles["moved"]["causes"]
    assert first == NEVER_SEEN
    assert again == f"{NEW_SHARDINGS}: {{}} -> {{Auto: ('d',)}} at w"
    (advice,) = profiles["moved"]["advice"]
    assert "jax.device_put(state, NamedSharding(mesh, P())" in advice
    assert "pad batches" not in advice


def test_a_host_value_to_two_devices_is_two_transfers_as_jax_logs_them(profiles):
    # puts sharded and replicated over both devices, then to the default device (5 copies),
    # and a NumPy batch to a jit sharded over both, 3 calls (6): JAX's transfer guard logs a
    # copy per device (the host inputs were counted once a call)
    assert profiles["logged_transfers"] == 11
    assert profiles["transfers"] == profiles["logged_transfers"]
    assert profiles["host_inputs"] == 6


def test_a_sharded_program_s_memory_is_one_device_s_and_says_so(profiles):
    # XLA's compiled memory stats are one device's: the sharded input counts its half, the
    # replicated weights whole (JAX's own memory_analysis() of the same program says so)
    memory = profiles["memory"]
    assert memory["devices"] == [1, 2]
    assert memory["input_bytes"] == memory["jax_input_bytes"]
    assert memory["jax_input_bytes"][1] == (128 * 256 + 256 * 256) * 4
    rows = memory["rows"]
    assert {row["devices"] for row in rows if row["compile_id"] == rows[0]["compile_id"]} == {1}
    assert {row["devices"] for row in rows if row["compile_id"] != rows[0]["compile_id"]} == {2}
    # the compiles table: the sharded program's peak on each of its devices, the other's not
    peaks = re.findall(r"<td>([\d.]+ [kMG]?B)( on each of \d devices)?</td>", memory["html"])
    # the sharded compile's row and the function's runs (their peak: its latest compile's)
    assert [on for _size, on in peaks if on] == [" on each of 2 devices"] * 2, peaks
    # a later cell that only runs it: its executions keep the peak and its devices
    peak = next(row["bytes"] for row in rows if row["kind"] == "peak" and row["devices"] == 2)
    assert memory["later"] == [{"graph": "jit(grow)", "peak_bytes": peak, "devices": 2}]
    later = re.findall(r"<td>([\d.]+ [kMG]?B)( on each of \d devices)?</td>", memory["later_html"])
    assert [on for _size, on in later if on] == [" on each of 2 devices"], later
