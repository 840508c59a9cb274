"""Helpers for tests: the environment of child processes, executing notebooks in a real
Jupyter kernel."""

from __future__ import annotations

import importlib.util
import math
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]


def load_tool(name: str) -> ModuleType:
    """One of the repository's `tools/NAME.py` scripts, as a module (they are not a package)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without xlanb's, XLA's and the launchers' variables (so a child makes
    its own debug files and derives its own rank and run id), this checkout on PYTHONPATH,
    plus `extra`."""
    dropped = (
        "XLA_",
        "LTC_",
        "PT_XLA_",
        "XLANB_",
        "TORCHELASTIC_",
        "RANK",
        "WORLD_SIZE",
        "LOCAL_RANK",
        "LOCAL_WORLD_SIZE",
        "MASTER_",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env["PYTHONPATH"] = str(ROOT)
    return {**env, **extra}


def free_port() -> int:
    """A TCP port on localhost that is free now (for a server or a distributed run)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def buckets(prof: Any) -> dict[str, float]:
    """The profile's time account as {bucket: seconds}."""
    return dict(zip(prof.breakdown["bucket"], prof.breakdown["seconds"], strict=True))


def run_notebook(
    cells: list[str], timeout: int = 300, kernel_name: str = "python3", env: dict | None = None
):
    """Execute code cells in a fresh kernel; return the executed notebook."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    client = NotebookClient(notebook, timeout=timeout, kernel_name=kernel_name)
    if env is not None:
        client.km.env = env
    client.execute()
    return notebook


def outputs_of(cell, mime: str = "text/html") -> str:
    """Every output of `mime` (and stream text) in a cell, joined."""
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            parts.append(output.get("text", ""))
        elif mime in output.get("data", {}):
            parts.append(output["data"][mime])
    return "\n".join(parts)


def execute_notebook_file(path, kernel_name: str, workdir, timeout: int = 600):
    """Execute an .ipynb file in `kernel_name` with `workdir` as its directory."""
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name=kernel_name,
        resources={"metadata": {"path": str(workdir)}},
    ).execute()
    return notebook


def profile_texts(notebook) -> dict[str, str]:
    """The text summary of every profile shown in a notebook, by profile name."""
    found = {}
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            text = output.get("data", {}).get("text/plain", "")
            if text.startswith("xlanb profile "):
                title = text.split("\n", 1)[0].removeprefix("xlanb profile ")
                found[title.rsplit(" [", 1)[0]] = text
    return found


def packed_graphs(html: str) -> list[dict]:
    """The graph viewers' payloads in `html` (packed: gzip, base64), decoded; one sent as a
    patch of another on the page (a report's, ``data-base``) rebuilt."""
    import base64
    import gzip
    import json
    import re

    found = re.findall(
        r'<script type="application/x-xlanb-gzip-base64"(?: id="([^"]+)")?'
        r'(?: data-base="([^"]+)")?>([^<]*)</script>',
        html,
    )
    by_id: dict[str, dict] = {}
    payloads = []
    for script_id, base, text in found:
        if script_id == "xlanb-plotly":  # a report's plotly.js, packed the same way
            continue
        data = json.loads(gzip.decompress(base64.b64decode(text)))
        if base:
            data = applied_patch(by_id[base], data)
        if script_id:
            by_id[script_id] = data
        payloads.append(data)
    return payloads


def applied_patch(base: Any, patch: dict[str, Any]) -> Any:
    """`base` changed by a payload patch: what the viewer's ``applyPatch`` (static/ui.js)
    does, to read a patch here."""
    if "v" in patch:
        return patch["v"]
    if "k" in patch:
        out = dict(base)
        out.update({key: applied_patch(base.get(key), part) for key, part in patch["k"].items()})
        for key in patch.get("drop", []):
            del out[key]
        return out
    out = (base + [None] * patch["a"])[: patch["a"]]
    for index, value in zip(patch["s"][::2], patch["s"][1::2], strict=True):
        out[index] = value
    return out


def check_unprofiled_compiles_are_remembered(
    run, shell, sync: str, new_shape: str, columns: int = 9, pause: float = 0.0
) -> None:
    """A step defined in a cell run without profiling and warmed up there at batch 8 (twice:
    the first graph also holds what earlier cells left pending); `sync` ends the step. Its
    batch-16 compile in a profiled cell must be `new_shape` of the warm-up's graph (it was
    "new graph": compiles outside profiled cells were forgotten). `pause`: seconds the
    warm-up cell goes on after its compiles (xlanb's janitor empties its files meanwhile)."""
    run(f"""
import time
def warm_step(batch):
    out = (torch.randn(batch, {columns}).to(dev) * 3).sum()
    {sync}
    return out
warm_step(8)
warm_step(8)
time.sleep({pause})
""")
    run("%%xla_profile --var prof\nwarm_step(16)")
    causes = list(shell.user_ns["prof"].compiles["cause"])
    assert causes == [new_shape], causes


def scan_callback_source(name: str, factor: int, length: int) -> str:
    """A jitted function `name` whose `lax.scan` of `length` steps calls a pure_callback that
    multiplies by `factor` (the body divides it back)."""
    return f"""
def _times_{factor}(v):
    return np.asarray(v) * {factor}
@jax.jit
def {name}(x):
    def body(c, _):
        y = jax.pure_callback(_times_{factor}, jax.ShapeDtypeStruct(c.shape, c.dtype), c)
        return y / {factor}, None
    return jax.lax.scan(body, x, None, length={length})[0]
"""


def union_seconds(spans: Any, prof: Any) -> float:
    """Seconds of the union of `spans` within the capture."""
    start, end = prof.started_at, prof.started_at + prof.wall_seconds
    covered, last = 0.0, start
    for begin, seconds in sorted(zip(spans["start"], spans["seconds"], strict=True)):
        lo, hi = max(begin, last), min(begin + seconds, end)
        if hi > lo:
            covered += hi - lo
            last = hi
    return covered


def assert_one_at_a_time(spans: Any) -> None:
    """A device runs its programs in turn: `spans` never overlap (to the 0.24 µs that float64
    epoch seconds resolve: back-to-back spans share an end and a start)."""
    spans = spans.sort_values("start")
    starts = spans["start"].to_numpy()
    ends = starts + spans["seconds"].to_numpy()
    assert (starts[1:] >= ends[:-1] - 5e-7).all(), spans


@contextmanager
def trace_stop_times() -> Iterator[list[float]]:
    """The times (epoch s) at which each device trace's early stop returned: no run launched
    after that is in the trace."""
    from xlanb.capture import device_trace

    times: list[float] = []
    stop_early = device_trace.Trace.stop_early

    def noting_when_it_stopped(self, note=None):
        try:
            return stop_early(self, note)
        finally:
            times.append(time.time())

    device_trace.Trace.stop_early = noting_when_it_stopped
    try:
        yield times
    finally:
        device_trace.Trace.stop_early = stop_early


#: The trace window's settings that close it on the machine's time, by the marker that keeps
#: them on in a test (tests/conftest.py turns them off for the others).
TRACE_WINDOW_SETTINGS = {
    "trace_budget": ("TRACE_BUDGET_SHARE",),
    "trace_seconds": ("WINDOW_SECONDS", "FIRST_WINDOW_SECONDS"),
    "trace_reuse": ("REUSE_TRACES",),
}


def trace_window_settings() -> dict[str, float]:
    """The current values of :data:`TRACE_WINDOW_SETTINGS` in xlanb's device trace module."""
    from xlanb.capture import device_trace

    names = [name for group in TRACE_WINDOW_SETTINGS.values() for name in group]
    return {name: getattr(device_trace, name) for name in names}


def trace_without_budget(monkeypatch: Any) -> None:
    """Turn off the trace window's budget of the cell's time for a test of what traced runs
    give (steps, ops by line): its few runs are then all traced, whatever the machine's load."""
    from xlanb.capture import device_trace

    monkeypatch.setattr(device_trace, "TRACE_BUDGET_SHARE", math.inf)


def trace_every_run_of_a_cell(monkeypatch: Any) -> None:
    """Trace a cell run again as on its first run, instead of reusing its last trace: tests
    that run a cell twice count what the second run traced."""
    from xlanb.capture import device_trace

    monkeypatch.setattr(device_trace, "REUSE_TRACES", False)


#: A window's time limit that never closes it.
NO_WINDOW_SECONDS = math.inf


def trace_without_seconds(monkeypatch: Any) -> None:
    """Turn off the trace window's seconds (:data:`~xlanb.capture.device_trace.WINDOW_SECONDS`
    from the first run, and :data:`~xlanb.capture.device_trace.FIRST_WINDOW_SECONDS` of runs
    on a cell's first trace): the window then closes on its count of runs alone (or its
    events per run, known from an earlier trace of the same cell), and holds the same runs
    on a slow or loaded machine as on a fast one."""
    from xlanb.capture import device_trace

    monkeypatch.setattr(device_trace, "WINDOW_SECONDS", NO_WINDOW_SECONDS)
    monkeypatch.setattr(device_trace, "FIRST_WINDOW_SECONDS", NO_WINDOW_SECONDS)


def trace_sizes_forgotten(monkeypatch: Any) -> None:
    """Forget the events per run that earlier traces measured (they size the window of a cell
    run again): a test's windows then depend on its own cells only, not on which tests ran
    before it in the process."""
    from xlanb.capture import device_trace

    monkeypatch.setattr(device_trace._STATE, "events_per_run", {})


def deep_mlp_profile(name: str, calls: int) -> Any:
    """A real JAX profile (``xlanb.profile``) of `calls` gradient steps of a 120-layer MLP: a
    big graph, and hundreds of ops a run."""
    import jax
    import jax.numpy as jnp

    import xlanb

    def deep_mlp(weights, x):
        for w in weights:
            x = jnp.tanh(x @ w)
        return (x**2).sum()

    weights = [jnp.eye(16) * (1 + i / 100) for i in range(120)]
    step = jax.jit(jax.grad(deep_mlp))
    x = jnp.ones((8, 16))
    with xlanb.profile(backend="jax", name=name) as prof:
        for _ in range(calls):
            grads = step(weights, x)
        jax.block_until_ready(grads)
    return prof


def torch_xla_mlp_cell(prefix: str, inputs: int, hidden: int, batch: int) -> str:
    """A cell defining a two-layer torch_xla MLP, its SGD optimizer, a batch and ``step()``
    (one training step and a sync), each name starting with `prefix`."""
    p = prefix
    return f"""import torch, torch_xla
{p}dev = torch_xla.device()
{p}model = torch.nn.Sequential(torch.nn.Linear({inputs}, {hidden}), torch.nn.Tanh(),
                               torch.nn.Linear({hidden}, 16)).to({p}dev)
{p}opt = torch.optim.SGD({p}model.parameters(), lr=0.01)
{p}x = torch.randn({batch}, {inputs}, device={p}dev)
def {p}step():
    {p}opt.zero_grad()
    loss = (({p}model({p}x) - 1.0) ** 2).mean()
    loss.backward()
    {p}opt.step()
    torch_xla.sync()"""
