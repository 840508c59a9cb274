"""%%xla_profile on the real PyTorch/XLA runtime (2.9; 2.7 in make test-compat-xla), in a shell.

torch_xla is imported by the setup cell, after the shell fixture loaded xlanb, so the runtime
starts with PT_XLA_DEBUG, XLA_HLO_DEBUG and --xla_dump_to set, as a notebook user's would.
Each test uses its own shapes so the compile cache of earlier tests does not leak into its
numbers.
"""

from __future__ import annotations

import json
import os
import re

import pandas as pd
import pytest

import xlanb
from tests.support.helpers import check_unprofiled_compiles_are_remembered, outputs_of, run_notebook
from xlanb.capture import versions

_RELEASE = versions.parse_version(versions.installed_version("torch_xla") or "0")
#: torch_xla 2.8 and newer trace each run's ops on the CPU (see versions.RUNTIMES).
OPS_TRACED = _RELEASE >= (2, 8)
#: The compile cause the runtime writes for a user's sync (2.7 still calls it mark_step).
SYNC_TRIGGER = "user torch_xla.sync" if OPS_TRACED else "user mark_step"

SETUP = """
import torch, torch_xla
import torch_xla.debug.metrics as met
dev = torch_xla.device()
torch.manual_seed(0)
"""


@pytest.fixture(scope="module", autouse=True)
def xla_runtime(shell):
    assert shell.run_cell(SETUP).success


def test_stable_training_loop_stops_compiling_after_warm_up(run, shell):
    run("""
model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(),
                            torch.nn.Linear(16, 1)).to(dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(32, 6).to(dev), torch.randn(32, 1).to(dev)
torch_xla.sync()
def train_step():
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    torch_xla.sync()
""")
    run("%%xla_profile --var warm\nfor _ in range(5):\n    train_step()")
    run("%%xla_profile --var steady\nfor _ in range(10):\n    train_step()")
    warm, steady = shell.user_ns["warm"], shell.user_ns["steady"]
    assert 1 <= len(warm.compiles) <= 2
    assert warm.compiles["seconds"].gt(0).all()
    assert warm.compiles["graph"].str.fullmatch(r"[0-9a-f]{16,32}").all()  # no leading zeros
    # the runtime's own wording: torch_xla 2.7 names the same call mark_step
    assert (warm.compiles["trigger"] == SYNC_TRIGGER).all()
    assert steady.summary()["compiles"] == 0
    assert steady.summary()["executions"] == 10
    counters = steady.counters.set_index("name")
    assert counters.loc["CachedCompile", "delta"] == 10
    assert "UncachedCompile" not in counters.index
    execute = steady.metrics.set_index("name").loc["ExecuteTime"]
    assert execute["count"] == 10 and execute["unit"] == "s"
    assert 0 < execute["p50"] <= execute["p99"] <= execute["max"]
    assert len(steady.samples[steady.samples["metric"] == "ExecuteTime"]) == 10
    assert (
        steady.samples["time"]
        .between(steady.started_at, steady.started_at + steady.wall_seconds + 1)
        .all()
    )
    assert not steady.fallbacks.shape[0]


def test_changing_batch_size_compiles_once_per_new_shape(run, shell):
    run("""%%xla_profile --var prof
w = torch.randn(7, 3, device=dev)
torch_xla.sync()
for batch in [8, 8, 16, 16, 32, 8]:
    out = (torch.randn(batch, 7).to(dev) @ w).sum()
    torch_xla.sync()
""")
    prof = shell.user_ns["prof"]
    loop = prof.compiles[prof.compiles["cell_line"] == 6]
    assert list(loop["cause"]) == [
        "new graph",
        "new shape: f32[8,7] -> f32[16,7]",
        "new shape: f32[16,7] -> f32[32,7]",
    ]
    # `location` numbers the code without the magic line; `cell_line` as the editor does.
    assert loop["location"].str.endswith(":5").all()
    assert prof.summary()["executions"] == 7
    assert "2 recompilations from changing input shapes (cell line 6)" in " ".join(
        prof.findings["title"]
    )
    hlo = prof.graphs[(prof.graphs["kind"] == "hlo") & prof.graphs["graph"].isin(loop["graph"])]
    assert len(hlo) == 3
    # XLA_HLO_DEBUG metadata points back to the cell's matmul line.
    assert hlo["text"].str.contains('op_type="aten__mm"').all()
    assert hlo["text"].str.contains("source_line=4").all()
    assert (hlo["nodes"] > 3).all()


def test_item_in_loop_is_a_fallback_with_cause_item(run, shell):
    run("""%%xla_profile --var prof
w = torch.randn(5, 5, device=dev)
values = []
for _ in range(4):
    w = w * 0.5
    values.append(w.sum().item())
""")
    prof = shell.user_ns["prof"]
    row = prof.fallbacks.set_index("op").loc["aten::_local_scalar_dense"]
    assert row["count"] == 4 and row["cause"] == "item" and row["cell_line"] == 6
    forced = prof.compiles[prof.compiles["cause"].str.startswith("forced sync")]
    assert len(forced) >= 1 and set(forced["cell_line"]) == {6}
    assert forced["trigger"].str.contains("access tensor value").all()


def test_compiles_of_unprofiled_cells_are_remembered(run, shell):
    check_unprofiled_compiles_are_remembered(
        run, shell, "torch_xla.sync()", "new shape: f32[8,9] -> f32[16,9]"
    )


def test_compiles_of_a_long_unprofiled_cell_are_remembered(run, shell):
    """The same, in a warm-up cell that goes on for a while after compiling: xlanb's janitor,
    which keeps its files small during long cells, must remember the compiles before it
    empties the files (they were "new graph")."""
    from xlanb.capture import workdir

    check_unprofiled_compiles_are_remembered(
        run,
        shell,
        "torch_xla.sync()",
        "new shape: f32[8,7] -> f32[16,7]",
        columns=7,
        pause=workdir.JANITOR_SECONDS * 2.5,
    )


def test_executions_are_told_apart_by_graph(run, shell):
    """A step that runs two graphs (a forward sync, then an update sync): with --deep's
    execution analysis every run has its graph, so the executions split 6 + 6 (they were one
    "unknown graph" row of 12 at the default level)."""
    run("""%%xla_profile --var prof
w = torch.randn(5, 5, device=dev)
torch_xla.sync()
for _ in range(6):
    h = (w @ w).tanh()
    torch_xla.sync()
    w = w - 0.01 * h.sum(0)
    torch_xla.sync()
""")
    executions = shell.user_ns["prof"].executions
    per_graph = executions.groupby("graph")["count"].sum().sort_values().tolist()
    assert per_graph[-2:] == [6, 6], executions
    assert executions["graph"].notna().all(), executions


@pytest.mark.skipif(_RELEASE < (2, 8), reason="torch_xla.compile is new in 2.8")
def test_a_torch_xla_compile_step_is_named_by_the_cell_not_contextlib(run, shell):
    """torch_xla.compile syncs in its context manager's exit, in the standard library's
    contextlib: the program is named after the cell line that called the step."""
    run(
        "tc_w = torch.randn(6, 6, device=dev)\n"
        "def tc_step(w):\n    return (w @ w).tanh() * 0.5\n"
        "tc_compiled = torch_xla.compile(tc_step)"
    )
    run("%%xla_profile --var prof\nfor _ in range(3):\n    tc_w = tc_compiled(tc_w)")
    prof = shell.user_ns["prof"]
    programs = list(prof.compiles["program"])  # the first step's graph, then the steady one
    assert programs and all(name.startswith("cell line 3") for name in programs), programs
    assert "contextlib" not in repr(prof)


def test_programs_with_one_module_name_keep_their_own_runs_and_ops(run, shell):
    """torch_xla names every program of a line alike (`SyncTensorsGraph.10` for each shape of
    `tanh(x @ w)`): the trace tells them apart by program id, which is the dump's module number.
    Each compile's run and ops are its own (all were the last compile's: its runs 3 of 4)."""
    run("""w_same = torch.randn(64, 64, device=dev)
torch_xla.sync()
def same_name_step(x):
    y = torch.tanh(x @ w_same)
    torch_xla.sync()
    return y
""")
    run("""%%xla_profile -q --var prof
for n in (8, 16, 24, 32):
    same_name_step(torch.ones(n, 64, device=dev))
""")
    prof = shell.user_ns["prof"]
    compiled = prof.compiles["graph"].tolist()
    assert len(set(compiled)) == 4, prof.compiles
    assert prof.executions["graph"].tolist() == compiled, prof.executions
    if not OPS_TRACED:  # torch_xla 2.7: no trace (its runs named by --deep's analysis above)
        assert prof.ops.empty
        return
    runs = prof.spans[prof.spans["lane"] == "device"].sort_values("start")
    assert runs["graph"].tolist() == compiled, runs
    assert set(prof.ops["graph"]) == set(compiled), prof.ops


def test_masked_indexing_is_placed_by_the_runtimes_stack(run, shell):
    """`x[x > 0]` (a nonzero underneath, which the text does not name): every execution's
    analysis (--deep) places its forced sync on that line, so the dynamic-shape row gets it
    (it had no line although the compile row had the forced sync there)."""
    run("""%%xla_profile --var prof
v = torch.randn(64, device=dev)
for _ in range(3):
    kept = v[v > 0]
    v = v * 1.5
    torch_xla.sync()
""")
    prof = shell.user_ns["prof"]
    rows = prof.fallbacks[prof.fallbacks["cause"] == "dynamic_shape"]
    assert not rows.empty and (rows["cell_line"] == 4).all(), prof.fallbacks
    forced = prof.executions[prof.executions["read_at"].notna()]
    assert len(forced) >= 3 and (forced["cell_line"] == 4).all(), prof.executions


MASK_LIBRARY = """
import torch

def _check(mask):
    return bool(mask.all())  # a padding-mask test, as transformers' masking_utils does

def forward(mask, depth=12):
    if depth:
        return forward(mask, depth - 1)  # deeper than the runtime's default 8 frames
    return _check(mask)
"""


@pytest.mark.parametrize(
    ("install_dir", "package"), [("site-packages", "masklib"), ("pip-target", "masklib_t")]
)
def test_a_read_inside_a_library_has_its_place_and_the_calling_cell_line(
    run, shell, tmp_path, monkeypatch, install_dir, package
):
    """A value read 13 frames deep inside an installed library (like GPT-2's padded
    attention mask in transformers/masking_utils.py): the runtime's stack places it in the
    library's file and on the cell line that called it, and the advice speaks of the library
    call, not of a .item() the cell does not have (it had no place at all). Installed in a
    ``site-packages`` or with ``pip install --target`` into a directory on the import path
    (its ``*.dist-info`` beside the package: that one was taken for the user's code)."""
    from xlanb.analysis.attribution import forced_sync_places
    from xlanb.analysis.findings.torch_rules import LIBRARY_READS

    library = tmp_path / install_dir
    (library / package).mkdir(parents=True)
    (library / package / "__init__.py").write_text(MASK_LIBRARY)
    (library / f"{package}-1.0.dist-info").mkdir()
    monkeypatch.syspath_prepend(str(library))
    run(f"""%%xla_profile --var prof
import {package}
attention = torch.ones(4, 16, device=dev)
for _ in range(3):
    padded = {package}.forward(attention * 2 > 1)
    torch_xla.sync()
print(attention.sum().item())
""")
    prof = shell.user_ns["prof"]
    places = forced_sync_places(prof.executions, prof.fallbacks)
    assert places["read_at"].tolist()[0] == f"{package}/__init__.py:5 (_check)", places
    assert places["cell_line"].tolist() == [5, 7] and places["count"].tolist() == [3, 1], places
    assert places["library"].tolist() == [True, False]
    # the reads of every step are the library's; the one after the loop costs little: the
    # advice is about the library call (it was about a .item() once the cell had one)
    # (the forced-sync finding only where the cut graphs compiled: the first parameter's)
    reads = prof.findings[prof.findings["title"].str.contains("read back|forced sync")]
    assert set(reads["advice"]) == {LIBRARY_READS}, prof.findings["title"].tolist()


def test_nonzero_is_a_dynamic_shape_fallback(run, shell):
    run("%%xla_profile --var prof\nm = torch.randn(6, 6, device=dev)\nidx = torch.nonzero(m > 0)")
    row = shell.user_ns["prof"].fallbacks.set_index("op").loc["aten::nonzero"]
    assert row["count"] == 1 and row["cause"] == "dynamic_shape" and row["cell_line"] == 3


def test_raising_cell_keeps_profile_and_reraises_unchanged(run, shell):
    result = run(
        """%%xla_profile --var prof
t = torch.ones(3, 2, device=dev) * 2
torch_xla.sync()
error = RuntimeError("boom")
raise error
""",
        expect_error=True,
    )
    assert result.error_in_exec is shell.user_ns["error"]
    prof = shell.user_ns["prof"]
    assert prof.failed and prof.error == "RuntimeError: boom"
    assert prof.summary()["compiles"] == 1


def test_counters_and_metrics_are_never_cleared(run, shell):
    met = shell.user_ns["met"]
    before = met.counter_value("MarkStep")
    executions_before = met.metric_data("ExecuteTime")[0]
    run(
        "%%xla_profile -q\nfor _ in range(3):\n    z = torch.ones(2, 9, device=dev).sum()\n"
        "    torch_xla.sync()"
    )
    assert met.counter_value("MarkStep") == before + 3
    assert met.metric_data("ExecuteTime")[0] == executions_before + 3
    assert xlanb.last().counters.set_index("name").loc["MarkStep", "total"] == before + 3


def test_transfers_counted_from_transfer_metrics(run, shell):
    run("%%xla_profile --var prof\nh = torch.randn(4, 13).to(dev)\nback = (h * 2).cpu()")
    prof = shell.user_ns["prof"]
    transfer_metrics = prof.metrics.set_index("name")
    assert transfer_metrics.loc["TransferToDeviceTime", "count"] >= 1
    assert transfer_metrics.loc["TransferFromDeviceTime", "count"] == 1
    assert prof.summary()["transfers"] == int(
        transfer_metrics.loc[["TransferToDeviceTime", "TransferFromDeviceTime"], "count"].sum()
    )


def test_profile_round_trips_with_graphs(run, shell, tmp_path):
    run(
        "%%xla_profile --var prof\nq = (torch.randn(3, 17, device=dev) ** 2).sum()\n"
        "torch_xla.sync()"
    )
    prof = shell.user_ns["prof"]
    assert not prof.graphs.empty
    loaded = xlanb.load(prof.save(tmp_path / "p.json"))
    for name, frame in prof.frames().items():
        pd.testing.assert_frame_equal(loaded.frames()[name], frame)


def test_debug_files_stay_small_across_cells(run, shell):
    import os

    for _ in range(3):
        run(
            "%%xla_profile -q\nfor i in range(3):\n    r = torch.randn(2, 19, device=dev) * i\n"
            "    torch_xla.sync()"
        )
    from xlanb.capture import switches

    assert os.path.getsize(switches.value("PT_XLA_DEBUG_FILE")) == 0
    dump_dir = switches.value("XLA_FLAGS").split("--xla_dump_to=")[1].split()[0]
    assert os.listdir(dump_dir) == []


def test_in_a_real_kernel():
    notebook = run_notebook(
        [
            "%load_ext xlanb",
            "import torch, torch_xla\ndev = torch_xla.device()\n"
            "w = torch.randn(4, 4, device=dev)\ntorch_xla.sync()",
            "%%xla_profile --var prof\n"
            "for batch in [8, 16]:\n"
            "    y = (torch.randn(batch, 4).to(dev) @ w).sum()\n"
            "    torch_xla.sync()\n"
            "print((y * 2).item())",
            "import json\n"
            "print(json.dumps({'causes': list(prof.compiles['cause']),\n"
            "                  'lines': [int(v) for v in prof.compiles['cell_line'].dropna()]}))",
        ]
    )
    html = outputs_of(notebook.cells[2], "text/html")
    assert "<b>compiles</b> 3" in html and "aten::_local_scalar_dense" in html
    result = json.loads(outputs_of(notebook.cells[3], "text/plain").strip())
    assert result["causes"][:2] == ["new graph", "new shape: f32[8,4] -> f32[16,4]"]
    assert result["causes"][2].startswith("forced sync")
    assert result["lines"] == [4, 4, 5]


@pytest.mark.parametrize(
    ("user_flags", "noted"),
    [
        ("--xla_dump_to={dir} --xla_cpu_use_thunk_runtime=true", True),
        ("--xla_dump_to={dir} --xla_dump_hlo_as_text", False),
    ],
)
def test_a_users_own_dump_flags_are_left_exactly_as_set(tmp_path, user_flags, noted):
    """xlanb must not add --xla_dump_hlo_as_text to a dump the user set up themselves (it
    changes what their dump writes); it says once what it cannot show instead."""
    import json
    import subprocess
    import sys

    flags = user_flags.format(dir=tmp_path / "mine")
    code = (
        "import os, json, xlanb\n"
        "notes = xlanb.enable()\n"
        "print(json.dumps([os.environ['XLA_FLAGS'], notes or []]))\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("XLANB_SWITCHES", "XLA_FLAGS")}
    env["XLA_FLAGS"] = flags
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    after, notes = json.loads(done.stdout.strip().splitlines()[-1])
    assert after == flags
    assert any("--xla_dump_hlo_as_text" in note for note in notes) is noted, notes


def test_a_nested_capture_leaves_the_outer_one_every_compile(run, shell):
    """An inner capture used to truncate the PT_XLA_DEBUG file and empty the dump dir, so the
    outer profile lost the causes and graphs of the compiles before it."""
    run(
        "import xlanb\n"
        "with xlanb.profile(backend='torch_xla', name='outer-x') as nest_outer:\n"
        "    (torch.ones(3, 17, device=dev) * 2).sum().item()\n"
        "    with xlanb.profile(backend='torch_xla', name='inner-x') as nest_inner:\n"
        "        (torch.ones(5, 17, device=dev) * 3).sum().item()\n"
        "    (torch.ones(7, 17, device=dev) * 4).sum().item()\n"
    )
    outer, inner = shell.user_ns["nest_outer"], shell.user_ns["nest_inner"]
    assert len(inner.compiles) == 1
    assert len(outer.compiles) == 3
    # every compile of the outer span has its cause (from PT_XLA_DEBUG) and its HLO
    assert outer.compiles["cause"].notna().all(), outer.compiles
    assert set(outer.compiles["graph"]) <= set(outer.graphs["graph"])
    assert set(inner.compiles["graph"]) <= set(outer.compiles["graph"])


XLA_CHILD = """
import os, torch, torch_xla
dev = torch_xla.device()
for n in (2, 3, 4, 5, 6):
    (torch.ones(n, 11, device=dev) * 2).sum().item()
print(os.environ.get("PT_XLA_DEBUG_FILE"), os.environ.get("XLA_FLAGS"))
"""


def test_a_child_process_started_in_a_profiled_cell_writes_nothing_into_its_profile(run, shell):
    """A plain Python child (not importing xlanb) used to inherit PT_XLA_DEBUG_FILE and
    --xla_dump_to: the parent then showed the child's 5 compiles beside its own 2."""
    shell.user_ns["xla_child_code"] = XLA_CHILD
    run("%%xla_profile -q\n(torch.ones(2, 13, device=dev) * 2).sum().item()")
    run(
        "%%xla_profile -q --var with_xla_child\n"
        "import subprocess, sys\n"
        "(torch.ones(3, 13, device=dev) * 2).sum().item()\n"
        "xla_child = subprocess.run([sys.executable, '-c', xla_child_code],"
        " capture_output=True, text=True, timeout=300)\n"
        "(torch.ones(5, 13, device=dev) * 2).sum().item()"
    )
    child = shell.user_ns["xla_child"]
    assert child.returncode == 0, child.stderr
    # (torch_xla itself adds its own defaults to XLA_FLAGS when the child imports it)
    assert child.stdout.split()[0] == "None" and "--xla_dump_to" not in child.stdout
    prof = shell.user_ns["with_xla_child"]
    assert len(prof.compiles) == 2, prof.compiles
    assert len(set(prof.graphs["graph"])) == 2


SWITCHES_CHILD = """
import json, xlanb
xlanb.enable()
import torch, torch_xla
from xlanb.capture import switches
dev = torch_xla.device()
w = torch.randn(64, 64, device=dev)
torch_xla.sync()
with xlanb.profile(backend="torch_xla") as prof:
    for _ in range(3):
        w = torch.relu(w @ w) / 64
        torch_xla.sync()
lines = prof.ops["source_line"].dropna() if "source_line" in prof.ops else []
# a step of two graphs, the first compiled before the capture
v = torch.randn(5, 5, device=dev)
h = (v @ v).tanh()
torch_xla.sync()
torch_xla._XLAC._xla_wait_device_ops(devices=[])
with xlanb.profile(backend="torch_xla") as steps:
    for _ in range(6):
        h = (v @ v).tanh()
        torch_xla.sync()
        v = v - 0.01 * h.sum(0)
        torch_xla.sync()
runs = steps.executions.groupby("graph")["count"].sum()
# values read inside a library, at either level: placed by their own stacks
import os, sys, tempfile
from xlanb.analysis.attribution import forced_sync_places
library = os.path.join(tempfile.mkdtemp(), "site-packages")
os.makedirs(os.path.join(library, "masklib"))
with open(os.path.join(library, "masklib", "__init__.py"), "w") as handle:
    handle.write(MASK_LIBRARY)
sys.path.insert(0, library)
import masklib
attention = torch.ones(4, 16, device=dev)
with xlanb.profile(backend="torch_xla") as masked:
    for _ in range(3):
        padded = masklib.forward(attention * 2 > 1)
        torch_xla.sync()
    print_me = float(attention.sum())
places = forced_sync_places(masked.executions, masked.fallbacks)
reads = masked.fallbacks[masked.fallbacks["cause"] == "item"]
# a loop longer than the trace's window: the runs after it are the loop graph's too
u = torch.randn(512, 512, device=dev)
for _ in range(2):
    u = torch.tanh(u @ u)
    torch_xla.sync()
with xlanb.profile(backend="torch_xla", trace_runs=3) as long:
    for _ in range(60):
        u = torch.tanh(u @ u)
        torch_xla.sync()
estimated = long.spans[long.spans["lane"] == "device"]["estimated"].astype(bool)
print(json.dumps({
    "estimated_runs": int(estimated.sum()),
    "long_runs": long.executions["graph"].value_counts(dropna=False).tolist(),
    "places": places[["read_at", "count"]].values.tolist(),
    "read_rows": reads[["count", "location"]].values.tolist(),
    "runs": {str(graph): int(count) for graph, count in runs.items()},
    "unlabelled": int(steps.executions["graph"].isna().sum()),
    "set": {n: switches.value(n) for n in ("XLA_IR_DEBUG", "XLA_HLO_DEBUG", "PT_XLA_DEBUG_LEVEL")},
    "causes": prof.compiles["cause"].astype(str).tolist(),
    "hlo": int((prof.graphs["kind"] == "hlo_optimized").sum()),
    "ops": len(prof.ops),
    "ops_with_lines": int((lines > 0).sum()),
}))
"""


@pytest.mark.parametrize("deep", [False, True])
def test_default_switches_leave_tracing_alone_and_deep_adds_op_lines(tmp_path, deep):
    """`%load_ext xlanb` sets only the switches that do not slow tracing (compile analysis,
    dump); `--deep` (XLANB_DEEP=1) adds XLA_IR_DEBUG/XLA_HLO_DEBUG for every op's line.
    Reads of values are placed at both levels (they had no place at the default level)."""
    import subprocess
    import sys

    from tests.support.helpers import clean_env

    env = clean_env(PJRT_DEVICE="CPU", **({"XLANB_DEEP": "1"} if deep else {}))
    child = tmp_path / "child.py"
    child.write_text(f"MASK_LIBRARY = {MASK_LIBRARY!r}\n" + SWITCHES_CHILD)
    done = subprocess.run(
        [sys.executable, str(child)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["set"]["PT_XLA_DEBUG_LEVEL"] == ("2" if deep else "1")
    assert seen["causes"] and seen["causes"][0] == "new graph" and seen["hlo"] >= 1
    # a value read inside a library is placed there at either level (by the read's own
    # stack; --deep's execution analysis agrees), the read after the loop on its line
    assert seen["places"][0] == ["masklib/__init__.py:5 (_check)", 3], seen["places"]
    counts = {location.rsplit(":", 1)[-1]: count for count, location in seen["read_rows"]}
    assert sorted(counts.values()) == [1, 3] and sum(counts.values()) == 4, seen["read_rows"]
    if not OPS_TRACED and not deep:
        # torch_xla 2.7: no trace, so no ops, and nothing says which graph a run ran (the
        # execution analysis is --deep's): the runs are counted, their graph left unknown
        assert seen["ops"] == 0 and seen["runs"] == {} and seen["unlabelled"] == 12, seen
        assert seen["set"]["XLA_IR_DEBUG"] is None and seen["set"]["XLA_HLO_DEBUG"] is None
        return
    assert (seen["ops"] > 0) == OPS_TRACED
    # executions told apart by graph at either level: by the execution analysis (--deep),
    # else by the device trace's runs; a graph compiled before the capture has its hash too
    assert seen["unlabelled"] == 0 and sorted(seen["runs"].values())[-2:] == [6, 6], seen
    # past the window, by the graph the window ran (rows had none, their spans had it)
    assert seen["long_runs"] == [60], seen
    assert (seen["estimated_runs"] > 0) == OPS_TRACED, seen  # torch_xla 2.7: no trace
    # the runtime prints a hash without its leading zeros
    assert all(re.fullmatch("[0-9a-f]{16,32}", graph) for graph in seen["runs"]), seen
    if deep:
        assert seen["set"]["XLA_IR_DEBUG"] == seen["set"]["XLA_HLO_DEBUG"] == "1"
        assert (seen["ops_with_lines"] > 0) == OPS_TRACED
    else:
        assert seen["set"]["XLA_IR_DEBUG"] is None and seen["set"]["XLA_HLO_DEBUG"] is None
        assert seen["ops_with_lines"] == 0


def test_static_memory_of_each_graph_from_the_post_compilation_analysis(run, shell):
    """`prof.memory` on torch_xla: each compile's inputs, outputs, intermediates and an
    estimated peak from the runtime's Post Compilation Analysis (printed in GB with 6
    decimals: ~1 kB), checked against the tensors' own sizes."""
    run("""%%xla_profile --var prof -q
a = torch.ones(128, 256, device=dev)
b = torch.ones(256, 64, device=dev)
torch_xla.sync()
c = (a @ b).relu()
torch_xla.sync()
""")
    prof = shell.user_ns["prof"]
    last = prof.compiles.iloc[-1]
    memory = prof.memory[prof.memory["graph"] == last["graph"]].set_index("kind")["bytes"]
    kilobyte = 1100  # the runtime rounds to 1e-6 GB
    assert abs(memory["inputs"] - (128 * 256 + 256 * 64) * 4) < kilobyte, memory
    assert abs(memory["outputs"] - 128 * 64 * 4) < kilobyte, memory
    assert memory["peak"] >= memory["inputs"] + memory["outputs"] - kilobyte


#: A fresh process whose torch_xla starts inside a capture: right after its first sync a plain
#: Python child is started; it prints which of xlanb's switches it inherited.
FIRST_SYNC_CHILD = """
import json, os, subprocess, sys, xlanb
xlanb.enable()
import torch, torch_xla
import torch_xla.core.xla_model as xm
switches = json.loads(os.environ["XLANB_SWITCHES"])
show = "import json, os, sys; print(json.dumps(sorted(k for k in sys.argv[1:] if k in os.environ)))"
dev = torch_xla.device()
with xlanb.profile(backend="torch_xla") as prof:
    for rows in (3, 6):
        y = (torch.randn(rows, 5).to(dev) * 2).sum()
        {sync}
    done = subprocess.run([sys.executable, "-c", show, *switches], capture_output=True, text=True)
print(json.dumps({{"set": sorted(switches), "child": json.loads(done.stdout),
                  "causes": list(prof.compiles["cause"])}}))
"""


@pytest.mark.parametrize("sync", ["torch_xla.sync()", "xm.mark_step()"])
def test_a_child_started_after_the_first_sync_inherits_no_switches(tmp_path, sync):
    """torch_xla has read its switches by its first sync: xlanb gives the user's environment back
    right after it, so a child started next in the cell inherits none (it used to, until the
    cell's end, and wrote its compiles into the parent's profile); the sync's cause is still
    read from PT_XLA_DEBUG (the wrapper sits above ``torch_xla.sync``, whose frame names it)."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("XLANB")}
    for name in json.loads(os.environ.get("XLANB_SWITCHES", "[]")):
        env.pop(name, None)
    env["XLANB_WORKDIR_ROOT"] = str(tmp_path)
    env["PJRT_DEVICE"] = "CPU"
    code = FIRST_SYNC_CHILD.format(sync=sync)
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"PT_XLA_DEBUG_FILE", "XLA_FLAGS"} <= set(found["set"]), found
    assert found["child"] == [], found
    assert found["causes"] == ["new graph", "new shape: f32[3,5] -> f32[6,5]"], found
