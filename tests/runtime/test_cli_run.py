"""`xlanb run` (a script under the profiler) and `xlanb report`/`show`/`html` on every input
format, as a user runs them from a shell."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import xlanb
from tests.support.helpers import clean_env
from xlanb.frontends import cli

XLA = Path(__file__).parent.parent / "data" / "torch_xla"
DATA = Path(__file__).parent.parent / "data"


def _script(directory: Path, source: str, name: str = "job.py") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(source))
    return path


def test_run_passes_arguments_and_exit_status_and_writes_the_report(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _script(tmp_path, "VALUE = 41\n", "helper.py")
    script = _script(
        tmp_path,
        """\
        import sys
        import helper
        print("args", sys.argv[1:], __name__, helper.VALUE + 1)
        sys.exit(int(sys.argv[1]))
        """,
    )
    with pytest.raises(SystemExit) as caught:
        cli.main(["run", "--save", "p.json", "--progress-every", "0", str(script), "3", "--x"])
    assert caught.value.code == 3
    prof = xlanb.load(tmp_path / "p.json")
    assert prof.failed and prof.error == "SystemExit: 3"
    assert prof.source == script.read_text() and prof.name == "job.py"
    assert (tmp_path / "job.xlanb.html").read_text().startswith("<!DOCTYPE html>")
    assert sys.argv[0] != str(script)  # restored


def test_run_exit_zero_is_success(tmp_path, capsys):
    script = _script(tmp_path, "import sys\nprint('hi', sys.argv[1:])\nsys.exit(0)\n")
    with pytest.raises(SystemExit) as caught:
        cli.main(
            [
                "run",
                "-o",
                str(tmp_path / "r.html"),
                "--save",
                str(tmp_path / "p.json"),
                "--progress-every",
                "0",
                str(script),
                "a b",
            ]
        )
    assert caught.value.code == 0
    assert "hi ['a b']" in capsys.readouterr().out
    assert not xlanb.load(tmp_path / "p.json").failed


def test_run_script_exception_propagates_after_the_report(tmp_path):
    script = _script(
        tmp_path,
        """\
        def fail():
            raise KeyError("missing key")
        fail()
        """,
    )
    result = subprocess.run(
        [sys.executable, "-m", "xlanb", "run", "-o", "r.html", "--save", "p.json", str(script)],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert "KeyError: 'missing key'" in result.stderr and "job.py" in result.stderr
    assert f"xlanb: wrote {tmp_path / 'r.html'}" in result.stderr  # the full path
    prof = xlanb.load(tmp_path / "p.json")
    assert prof.failed and prof.error == "KeyError: 'missing key'"


#: A script that runs until the progress line has been written twice (capsys's stderr holds
#: what was written), however late a loaded machine wakes the progress thread.
UNTIL_TWO_PROGRESS_LINES = """\
import sys, time
deadline = time.monotonic() + 60
while sys.stderr.getvalue().count("xlanb run: job.py") < 2 and time.monotonic() < deadline:
    time.sleep(0.05)
"""


def test_run_prints_a_progress_line(tmp_path, capsys):
    script = _script(tmp_path, UNTIL_TWO_PROGRESS_LINES)
    cli.main(["run", "-o", str(tmp_path / "r.html"), "--progress-every", "0.2", str(script)])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("xlanb run: job.py")]
    assert len(lines) >= 2, err
    assert f"xlanb: wrote {tmp_path / 'r.html'}" in err


def test_run_profiles_torch_lazy_with_script_lines(tmp_path):
    pytest.importorskip("torch")
    script = _script(
        tmp_path,
        """\
        import torch, torch._lazy, torch._lazy.ts_backend
        torch._lazy.ts_backend.init()
        x = torch.randn(8, 4, device="lazy")
        for _ in range(3):
            y = (x @ x.T).relu().sum()
            torch._lazy.mark_step()
        kept = x[x > 0]
        """,
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "xlanb",
            "run",
            "--save",
            "p.json",
            "--trace",
            "t.json",
            str(script),
        ],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    prof = xlanb.load(tmp_path / "p.json")
    assert prof.backends == ["torch_lazy"] and not prof.failed
    synced = prof.compiles[prof.compiles["trigger"] == "mark_step"]
    assert set(synced["cell_line"]) == {6}
    assert list(prof.fallbacks["op"]) == ["aten::index.Tensor"]
    assert list(prof.fallbacks["cell_line"]) == [7]
    assert (tmp_path / "t.json").exists() and (tmp_path / "job.xlanb.html").exists()


def test_run_profiles_jax_from_its_import(tmp_path):
    pytest.importorskip("jax")
    script = _script(
        tmp_path,
        """\
        import jax, jax.numpy as jnp
        @jax.jit
        def double_sum(x):
            return (x * 2).sum()
        for n in (3, 4, 4):
            double_sum(jnp.ones(n))
        """,
    )
    result = subprocess.run(
        [sys.executable, "-m", "xlanb", "run", "--save", "p.json", str(script)],
        cwd=tmp_path,
        env={**clean_env(), "JAX_PLATFORMS": "cpu"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    prof = xlanb.load(tmp_path / "p.json")
    assert prof.backends == ["jax"]
    jitted = prof.compiles[prof.compiles["graph"] == "jit(double_sum)"]
    assert list(jitted["cell_line"]) == [6, 6]
    assert jitted["cause"].iloc[1] == "different input types: f32[3] -> f32[4]"


def test_run_missing_script_and_unknown_backend(tmp_path, capsys):
    assert cli.main(["run", str(tmp_path / "nope.py")]) == 2
    assert "no such script" in capsys.readouterr().err
    script = _script(tmp_path, "print('never')\n")
    assert cli.main(["run", "--backend", "tpu_magic", str(script)]) == 2
    err = capsys.readouterr()
    assert "unknown backend 'tpu_magic'" in err.err and "never" not in err.out


# -- report, show, html ------------------------------------------------------------------------
def test_report_of_one_input_is_its_page(tmp_path, capsys):
    out = tmp_path / "one.html"
    assert cli.main(["report", str(XLA / "report.txt"), "-o", str(out)]) == 0
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "report.txt" in page
    assert "<h2>Comparison</h2>" not in page and "aten::nonzero" in page
    # its title once on the page (it was the heading and the summary's title again)
    body = page.split("<body>", 1)[1]
    assert body.count("xlanb profile report.txt [torch_xla]") == 1


def test_report_of_several_inputs_compares_consecutive_pairs(tmp_path):
    hostile = tmp_path / "<b onclick='x'>evil&.txt"
    hostile.write_text((XLA / "report.txt").read_text())
    out = tmp_path / "all.html"
    inputs = [XLA / "metrics.txt", XLA / "report.txt", hostile, XLA / "report.txt"]
    # several runs are sections of one page; compared only when asked
    assert cli.main(["report", *map(str, inputs), "-o", str(out)]) == 0
    assert "<h2>Comparison</h2>" not in out.read_text()
    assert cli.main(["report", "--compare", *map(str, inputs), "-o", str(out)]) == 0
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>") and "<h2>Comparison</h2>" in page
    assert page.split("<body>", 1)[1].count("xlanb profile metrics.txt [torch_xla]") == 1
    assert "<b onclick" not in page and "&lt;b onclick=" in page
    for name in ("metrics.txt", "report.txt", "report.txt&#x27;"):  # the same name twice
        assert name in page


def test_one_runs_files_are_one_profile_not_a_comparison(tmp_path, capsys):
    """The metrics file, debug file, dump and report that one torch_xla run wrote."""
    files = [XLA / "metrics.txt", XLA / "debug.txt", XLA / "dump", XLA / "report.txt"]
    out = tmp_path / "run.html"
    assert cli.main(["report", *map(str, files), "-o", str(out)]) == 0
    page = out.read_text()
    assert "<h2>Comparison</h2>" not in page
    assert "metrics.txt + debug.txt + dump + report.txt" in page
    # its charts: the metrics file's steps that compiled or ran once are exact samples
    assert page.count("class='xlanb-report-chart'") >= 1
    three = tmp_path / "three.html"  # the command: metrics file, debug file, dump
    files = files[:3]
    assert cli.main(["report", *map(str, files), "-o", str(three)]) == 0
    assert "<h2>Comparison</h2>" not in three.read_text()
    assert three.read_text().count("class='xlanb-report-chart'") >= 1
    files = [XLA / "metrics.txt", XLA / "debug.txt", XLA / "dump", XLA / "report.txt"]
    assert cli.main(["show", *map(str, files)]) == 0
    shown = capsys.readouterr().out
    assert shown.count("xlanb profile ") == 1 and "wall: - |" in shown and "0 µs" not in shown
    prof = xlanb.load(*files)
    assert len(prof.compiles) == 7 and prof.compiles["cause"].str.startswith("forced").sum() == 2
    assert len(prof.graphs) and len(prof.steps) and prof.summary()["syncs"] == 1
    # the metrics file timed the first five compiles; the report's total shares the rest
    assert not prof.compiles["seconds_estimated"].iloc[:5].any()
    assert prof.compiles["seconds"].sum() == pytest.approx(
        xlanb.load(XLA / "report.txt").compiles["seconds"].sum()
    )
    with pytest.raises(ValueError, match="not one run's"):
        xlanb.load(XLA / "report.txt", XLA / "report.txt")


def test_show_and_html_read_every_format(tmp_path, capsys):
    assert (
        cli.main(
            [
                "show",
                str(XLA / "debug.txt"),
                str(DATA / "troubleshooting_report.txt"),
                str(XLA / "live.xlanb.json"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "debug.txt" in out and "troubleshooting_report.txt" in out
    assert cli.main(["html", str(DATA / "jax_dump"), "-o", str(tmp_path / "d.html")]) == 0
    assert (tmp_path / "d.html").read_text().startswith("<!DOCTYPE html>")


def test_report_of_a_bad_input_says_which_line(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("Metric: CompileTime\n  TotalSamples: x\n")
    assert cli.main(["report", str(bad), "-o", str(tmp_path / "r.html")]) == 1
    assert f"xlanb: {bad}, line 2: bad TotalSamples value" in capsys.readouterr().err
