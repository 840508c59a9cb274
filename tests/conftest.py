"""Shared fixtures: one real IPython shell per test process, with xlanb loaded first so the
runtimes start with the debug switches set (as a user's `%load_ext xlanb` would), and each
test marked by its folder's tier (`unit`, `runtime`, `e2e`, `xla`), so `pytest -m unit` works."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
from IPython.testing.globalipapp import start_ipython

import xlanb

# What a user's `%load_ext xlanb` does before they import a runtime: set its debug switches.
# Done here, before pytest imports any test module, so that no module or fixture can start a
# runtime (torch_xla reads its switches at import) before the switches are set.
# The torch_xla suite checks every HLO op's source line, so its environment starts with the
# costly switches too (`--deep`); the default set is checked in a child process there.
xlanb.enable(deep=importlib.util.find_spec("torch_xla") is not None)
# Every frame built with make_frame must use only the columns xlanb/core/schema.py declares
# (read on each call; inherited by the worker processes the tests start).
os.environ.setdefault("XLANB_STRICT_SCHEMA", "1")


TESTS = Path(__file__).resolve().parent
#: The folders under tests/, each a tier named by what its tests need (markers in pyproject).
TIERS = ("unit", "runtime", "e2e", "xla")


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "trace_seconds: keeps the trace window's seconds on, WINDOW_SECONDS and "
        "FIRST_WINDOW_SECONDS (tests/conftest.py)",
    )
    config.addinivalue_line(
        "markers",
        "trace_reuse: a cell run again reuses its last trace, REUSE_TRACES (tests/conftest.py)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark each test with its folder's tier, before `-m` selects by markers."""
    for item in items:
        parts = Path(item.path).resolve().relative_to(TESTS).parts
        if len(parts) > 1 and parts[0] in TIERS:
            item.add_marker(getattr(pytest.mark, parts[0]))


@pytest.fixture(scope="session", autouse=True)
def _trace_windows_by_runs_in_the_session():
    """The trace window's budget of the cell's time and its seconds close it after a number
    of runs that depends on the machine's speed and load, and tests count traced runs (steps,
    ops, bars, bytes drawn): both are off for the whole session, the profiles that module
    and session fixtures make included, and so is the reuse of a cell's last trace (tests
    run a cell again to count what it traced). Yields the settings xlanb ships with."""
    from tests.support import helpers

    shipped = helpers.trace_window_settings()
    with pytest.MonkeyPatch.context() as patch:
        helpers.trace_without_budget(patch)
        helpers.trace_without_seconds(patch)
        helpers.trace_every_run_of_a_cell(patch)
        yield shipped


@pytest.fixture(autouse=True)
def _trace_window_by_runs(request, monkeypatch, _trace_windows_by_runs_in_the_session):
    """A test marked ``trace_budget`` has the window's budget back, one marked
    ``trace_seconds`` its seconds (the tests of each, with bounds that hold on a slow
    machine); each test's windows are sized from its own cells' traces, whichever tests ran
    before it in the process."""
    from tests.support import helpers
    from xlanb.capture import device_trace

    shipped = _trace_windows_by_runs_in_the_session
    for marker, names in helpers.TRACE_WINDOW_SETTINGS.items():
        if request.node.get_closest_marker(marker) is not None:
            for name in names:
                monkeypatch.setattr(device_trace, name, shipped[name])
    helpers.trace_sizes_forgotten(monkeypatch)


@pytest.fixture(scope="session")
def shell():
    ip = start_ipython()
    ip.run_line_magic("load_ext", "xlanb")
    yield ip


@pytest.fixture
def run(shell):
    """Run a cell in the shell; fail the test with the cell's own error if it raised."""

    def run_cell(source: str, expect_error: bool = False):
        result = shell.run_cell(source)
        if not expect_error and not result.success:
            raise AssertionError(f"cell failed: {result.error_in_exec or result.error_before_exec}")
        return result

    return run_cell


LAZY_SETUP = """
import torch, torch._lazy, torch._lazy.ts_backend
torch._lazy.ts_backend.init()
dev = "lazy"
torch.manual_seed(0)
"""


@pytest.fixture(scope="session")
def lazy_runtime(shell):
    """torch._lazy's TorchScript backend, initialised once per process (a second init raises),
    with `torch` and `dev = "lazy"` in the shell's namespace; its tests are skipped where
    torch is not installed (the JAX-only environment of JAX 0.12, on Python 3.12)."""
    pytest.importorskip("torch")
    result = shell.run_cell(LAZY_SETUP)
    assert result.success, result.error_in_exec
    return shell


@pytest.fixture(scope="session")
def xlanb_kernel(tmp_path_factory):
    """The xlanb kernel spec installed into a temporary Jupyter prefix; yields its name."""
    import os

    from xlanb.frontends.kernel import install

    prefix = tmp_path_factory.mktemp("xlanb-kernel-prefix")
    install("xlanb-notebooks", "Python (xlanb notebooks)", prefix=str(prefix))
    old = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = str(prefix / "share" / "jupyter")
    yield "xlanb-notebooks"
    if old is None:
        os.environ.pop("JUPYTER_PATH", None)
    else:
        os.environ["JUPYTER_PATH"] = old
