"""The XLA dump JAX gets on a machine with an accelerator plugin (XLA:GPU's compiled memory
stats hold no buffer assignment: temporaries come from the dump), and none on CPU."""

from __future__ import annotations

import importlib
import os

import pytest

from xlanb.capture.backends import jax as jax_backend


def test_a_cpu_only_install_gets_no_dump(tmp_path, monkeypatch):
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    assert jax_backend.accelerator_plugin() is None
    assert jax_backend.debug_switches(str(tmp_path)) == {}
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize("platforms", ["", "cuda,cpu"])
def test_a_cuda_plugin_gets_an_xla_dump_into_the_workdir(tmp_path, monkeypatch, platforms):
    """The plugin's package layout (`jax_plugins/xla_cuda13`, as jax-cuda13-plugin installs
    it) is enough: nothing is imported."""
    plugin = tmp_path / "site" / "jax_plugins" / "xla_cuda13"
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text("raise ImportError('never imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("JAX_PLATFORMS", platforms)
    importlib.invalidate_caches()
    assert jax_backend.accelerator_plugin() == "jax_plugins.xla_cuda13"
    workdir = tmp_path / "workdir"
    workdir.mkdir()
    switches = jax_backend.debug_switches(str(workdir))
    dump = workdir / "xla_dump"
    assert switches == {"XLA_FLAGS": f"--xla_dump_to={dump} --xla_dump_hlo_as_text"}
    assert dump.is_dir()
    assert jax_backend.SWITCH_NAMES == ("XLA_FLAGS",)
