"""The magic itself: options, usage errors, displays, and what a plain import changes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

import xlanb
from xlanb.views.html import profile_html


def test_last_expression_value_is_returned(run):
    result = run("%%xla_profile -q\na = 20\na + 22")
    assert result.result == 42


def test_line_magic_profiles_one_statement(run, shell):
    run("%xla_profile -q --var line_prof sum(range(3))")
    assert shell.user_ns["line_prof"] is xlanb.last()
    assert xlanb.last().source == "sum(range(3))"


def test_name_and_var_options(run, shell):
    run("%%xla_profile -q -n my-cell --var named\npass")
    assert shell.user_ns["named"].name == "my-cell"


def test_profiles_are_named_after_their_cells_in_number(shell):
    result = shell.run_cell("%%xla_profile -q\npass", store_history=True)
    assert xlanb.last().name == f"cell-{result.execution_count}"
    result = shell.run_cell("%xla_profile -q sum(range(3))", store_history=True)
    assert xlanb.last().name == f"cell-{result.execution_count}"


def test_load_ext_says_what_it_found_and_set(shell):
    with capture_output() as shown:
        shell.run_line_magic("reload_ext", "xlanb")
    line = shown.outputs[0].data["text/plain"]
    assert line.startswith("xlanb ready: %%xla_profile on a cell profiles it. Runtimes: ")
    assert "Details: %xla_profile status" in line
    # each runtime found with its release, as the gate reads it (torch._lazy is torch's)
    import importlib.metadata

    jax_release = importlib.metadata.version("jax")
    torch_release = importlib.metadata.version("torch")
    assert f"jax {jax_release}" in line
    assert f"torch_lazy (torch {torch_release})" in line


def test_quiet_shows_nothing_and_default_shows_html_and_text(shell):
    with capture_output() as quiet:
        shell.run_cell("%%xla_profile -q\npass")
    assert quiet.outputs == []
    html_formatter = shell.display_formatter.formatters["text/html"]
    was_enabled, html_formatter.enabled = html_formatter.enabled, True
    active_types = shell.display_formatter.active_types
    shell.display_formatter.active_types = [*active_types, "text/html"]
    try:
        with capture_output() as shown:
            shell.run_cell("%%xla_profile\npass")
    finally:
        html_formatter.enabled = was_enabled
        shell.display_formatter.active_types = active_types
    assert len(shown.outputs) == 1
    data = shown.outputs[0].data
    assert "compiles" in data["text/plain"]
    assert "<b>compiles</b>" in data["text/html"]


def test_unknown_option_is_a_usage_error(shell):
    result = shell.run_cell("%%xla_profile --bogus\npass")
    assert isinstance(result.error_in_exec, UsageError)


def test_unknown_backend_is_a_usage_error(shell):
    result = shell.run_cell("%%xla_profile -b tensorflow\npass")
    assert isinstance(result.error_in_exec, UsageError)


def test_missing_torch_xla_says_how_to_install(shell):
    if xlanb.capture.backends.torch_xla.is_installed():
        return  # this environment has torch_xla: covered by tests/xla
    result = shell.run_cell("%%xla_profile -b torch_xla\npass")
    assert isinstance(result.error_in_exec, UsageError)
    assert "pip install torch==2.9.0 torch-xla==2.9.0" in str(result.error_in_exec)


def test_html_escapes_names_and_errors():
    prof = xlanb.Profile(
        name="<script>alert(1)</script>",
        failed=True,
        error="ValueError: </div><img src=x onerror=alert(1)>",
    )
    page = profile_html(prof)
    assert "<script>alert" not in page and "<img" not in page
    assert "&lt;script&gt;" in page


def test_plain_import_changes_nothing():
    code = textwrap.dedent("""
        import os
        before = dict(os.environ)
        import xlanb
        assert dict(os.environ) == before
        xlanb.enable()
        assert "LTC_SAVE_TENSORS_FILE" in os.environ
        assert os.environ["LTC_SAVE_TENSORS_FILE"].startswith(os.environ["XLANB_WORKDIR"])
        print("ok")
    """)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("LTC_", "PT_XLA", "XLA_", "XLANB"))
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "ok"


def test_loading_after_the_runtime_started_says_so_once():
    code = textwrap.dedent("""
        import torch, torch._lazy, torch._lazy.ts_backend
        torch._lazy.ts_backend.init()
        t = torch.ones(2, device="lazy") + 1
        torch._lazy.mark_step()
        import xlanb
        xlanb.enable()
        xlanb.enable()
    """)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("LTC_", "PT_XLA", "XLA_", "XLANB"))
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("xlanb:")]
    assert len(lines) == 1
    assert "torch_lazy started before xlanb was loaded" in lines[0]
    assert "%load_ext xlanb" in lines[0]


def test_child_process_gets_its_own_files_and_leaves_ours_alone(shell):
    from xlanb.capture import switches

    parent_file = switches.value("LTC_SAVE_TENSORS_FILE")
    code = "import os, xlanb; xlanb.enable(); print(os.environ['LTC_SAVE_TENSORS_FILE'])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    child_file = out.stdout.strip().splitlines()[-1]
    assert child_file != parent_file
    assert os.path.isdir(os.environ["XLANB_WORKDIR"])  # the child's exit removed only its own
    assert not os.path.exists(os.path.dirname(child_file))


def test_runtime_imported_inside_the_cell_gets_a_note(shell):
    code = textwrap.dedent("""
        from IPython.testing.globalipapp import start_ipython
        ip = start_ipython()
        ip.run_line_magic("load_ext", "xlanb")
        ip.run_cell("%%xla_profile -q --var p\\nimport jax.numpy as jnp\\njnp.ones(3).sum()")
        print(ip.user_ns["p"].notes)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "jax was imported during this cell, so this cell was not profiled on it" in out.stdout


def test_an_unwritable_report_path_never_replaces_the_users_exception(run, shell, tmp_path):
    target = tmp_path / "missing-dir" / "report.html"
    result = run(
        f"%%xla_profile -q --var broken_out -o {target}\nraise KeyError('mine')", expect_error=True
    )
    assert isinstance(result.error_in_exec, KeyError) and result.error_in_exec.args == ("mine",)
    prof = shell.user_ns["broken_out"]
    assert prof.failed and any(
        "could not write" in note and str(target) in note for note in prof.notes
    )
    # a cell that succeeds keeps succeeding: the write error is a note, not an exception
    run(f"%%xla_profile -q --var fine_out -o {target}\nx_fine = 1")
    assert any("could not write" in note for note in shell.user_ns["fine_out"].notes)


def test_the_report_path_is_printed_in_full(run, shell, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    run("%%xla_profile --no-graphs -o rel-report.html\nx_rel = 1")
    assert f"xlanb: wrote {tmp_path / 'rel-report.html'}" in capsys.readouterr().out
