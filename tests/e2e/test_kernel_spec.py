"""The xlanb kernel: installed into a temporary prefix, started by jupyter_client, with the
debug switches set before any runtime starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.helpers import outputs_of, run_notebook


@pytest.fixture(scope="module")
def kernel_prefix(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("jupyter-prefix")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "xlanb",
            "kernel",
            "install",
            "--prefix",
            str(prefix),
            "--name",
            "xlanb-test",
            "--display-name",
            "Python (xlanb test)",
            "--env",
            "PT_XLA_DEBUG_LEVEL=2",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "installed kernel 'xlanb-test'" in out.stdout
    old = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = str(prefix / "share" / "jupyter")
    yield prefix
    if old is None:
        del os.environ["JUPYTER_PATH"]
    else:
        os.environ["JUPYTER_PATH"] = old


def test_spec_is_listed_and_can_be_removed(kernel_prefix):
    listed = subprocess.run(
        [sys.executable, "-m", "xlanb", "kernel", "list"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "xlanb-test\t" in listed
    spec = json.loads((kernel_prefix / "share/jupyter/kernels/xlanb-test/kernel.json").read_text())
    assert spec["argv"][0] == sys.executable
    assert spec["env"]["PT_XLA_DEBUG_LEVEL"] == "2"
    assert "torch_lazy" in spec["metadata"]["xlanb"]["runtimes"]
    kernelspecs = subprocess.run(
        [sys.executable, "-m", "jupyter", "kernelspec", "list"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "xlanb-test" in kernelspecs


def test_deep_kernel_asks_for_the_costly_switches(tmp_path):
    from xlanb.frontends.kernel import main as kernel_main

    assert kernel_main(["install", "--prefix", str(tmp_path), "--name", "k-deep", "--deep"]) == 0
    spec = json.loads((tmp_path / "share/jupyter/kernels/k-deep/kernel.json").read_text())
    assert spec["env"]["XLANB_DEEP"] == "1"
    assert kernel_main(["install", "--prefix", str(tmp_path), "--name", "k-plain"]) == 0
    plain = json.loads((tmp_path / "share/jupyter/kernels/k-plain/kernel.json").read_text())
    assert "XLANB_DEEP" not in plain["env"]


def test_kernel_sets_switches_before_runtimes_start_and_profiles(kernel_prefix):
    notebook = run_notebook(
        [
            "import os, sys\n"
            "print(sorted(m for m in ('torch', 'jax', 'torch_xla') if m in sys.modules))\n"
            "print(os.environ['LTC_SAVE_TENSORS_FILE'].startswith(os.environ['XLANB_WORKDIR']))\n"
            "print(os.environ['PT_XLA_DEBUG_LEVEL'])",
            "import torch, torch._lazy, torch._lazy.ts_backend\ntorch._lazy.ts_backend.init()\n"
            "w = torch.randn(3, 3, device='lazy')\ntorch._lazy.mark_step()",
            "%%xla_profile --var prof\n"
            "for b in [2, 5]:\n"
            "    y = (torch.randn(b, 3).to('lazy') @ w).sum()\n"
            "    torch._lazy.mark_step()",
            "print(list(prof.compiles['cause']), list(prof.compiles['cell_line']))",
        ],
        kernel_name="xlanb-test",
    )
    first = outputs_of(notebook.cells[0], "text/plain").splitlines()
    assert first == ["[]", "True", "2"]  # no runtime yet, switches set, --env wins
    html = outputs_of(notebook.cells[2], "text/html")
    assert "new shape: Float[2,3] -&gt; Float[5,3]" in html
    assert outputs_of(notebook.cells[3], "text/plain").strip() == (
        "['new graph', 'new shape: Float[2,3] -> Float[5,3]'] [4, 4]"
    )


def test_profile_all_kernel_and_missing_runtime_message(kernel_prefix, tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "xlanb",
            "kernel",
            "install",
            "--prefix",
            str(kernel_prefix),
            "--name",
            "xlanb-all",
            "--profile-all",
            "--env",
            "XLANB_KERNEL_RUNTIMES=torch_lazy,torch_xla_gone,jax",
        ],
        check=True,
        capture_output=True,
    )
    spec_path = kernel_prefix / "share/jupyter/kernels/xlanb-all/kernel.json"
    spec = json.loads(spec_path.read_text())
    # Pretend torch_xla was installed when the spec was made, and is gone now.
    spec["env"]["XLANB_KERNEL_RUNTIMES"] = "torch_lazy,torch_xla"
    spec_path.write_text(json.dumps(spec))
    notebook = run_notebook(
        [
            "import torch, torch._lazy, torch._lazy.ts_backend\ntorch._lazy.ts_backend.init()",
            "v = torch.ones(2, 2, device='lazy').sum()\ntorch._lazy.mark_step()",
            "x = 1 + 1",
        ],
        kernel_name="xlanb-all",
    )
    first = outputs_of(notebook.cells[0], "text/plain")
    if "torch_xla" in sys.modules or _has("torch_xla"):
        pytest.skip(
            "torch_xla is installed in this environment, so the spec's runtime is "
            "not missing (tests/xla covers that environment)"
        )
    assert first.count("xlanb kernel: torch_xla no longer installed") == 1
    assert "pip install torch==2.9.0 torch-xla==2.9.0" in first
    assert "xlanb: 1 compile (" in outputs_of(notebook.cells[1], "text/plain") + outputs_of(
        notebook.cells[1], "text/html"
    )
    assert notebook.cells[2].outputs == []


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None
