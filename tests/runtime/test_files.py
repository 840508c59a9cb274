"""Saved profiles, the text-report parser and the CLI, on real runtime output."""

from __future__ import annotations

import subprocess
import sys

import pytest

import xlanb
from xlanb.formats.metrics_report import parse_report, parse_value


def test_report_values_in_every_unit():
    assert parse_value("06m09s401ms746.001us") == (pytest.approx(369.401746001), "s")
    assert parse_value("041.773us") == (pytest.approx(41.773e-6), "s")
    assert parse_value("19.72KB") == (pytest.approx(19.72 * 1024), "bytes")
    assert parse_value("32.00") == (32.0, "count")


def test_parses_the_real_lazy_report(lazy_runtime):
    import torch._lazy
    import torch._lazy.metrics

    kept = torch.ones(3, device="lazy") * 2
    torch._lazy.mark_step()
    text = torch._lazy.metrics.metrics_report()
    report, unknown = parse_report(text)
    assert report.counters["MarkStep"] == torch._lazy.metrics.counter_value("MarkStep")
    graph_size = report.metrics["TensorsGraphSize"]
    assert graph_size.unit == "count" and graph_size.count >= 1
    assert report.metrics["DeviceLockWait"].unit == "s"
    assert set(report.metrics["DeviceLockWait"].percentiles) >= {50.0, 99.0}
    assert [line for _, line in unknown] == [
        line for line in text.splitlines() if line.startswith("TSBackendImpl")
    ]
    del kept


def test_malformed_profile_file_names_the_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"format": "xlanb-profile",\n "version": 1,\n oops}')
    with pytest.raises(xlanb.FormatError) as caught:
        xlanb.load(path)
    assert caught.value.line == 3 and str(path) in str(caught.value)
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    with pytest.raises(xlanb.FormatError, match="not an xlanb-profile file"):
        xlanb.load(other)


def test_cli_shows_and_renders_a_saved_profile(lazy_runtime, tmp_path):
    import torch._lazy

    with xlanb.profile(backend="torch_lazy", name="cli <run>") as prof:
        kept = (torch.ones(5, device="lazy") * 3).sum()
        torch._lazy.mark_step()
    path = prof.save(tmp_path / "p.xlanb.json")
    shown = subprocess.run(
        [sys.executable, "-m", "xlanb", "show", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "xlanb profile cli <run> [torch_lazy]" in shown.stdout
    assert "executions: 1" in shown.stdout
    page = tmp_path / "p.html"
    subprocess.run(
        [sys.executable, "-m", "xlanb", "html", str(path), "-o", str(page)],
        check=True,
        capture_output=True,
    )
    text = page.read_text()
    assert "cli &lt;run&gt;" in text and "cli <run>" not in text
    missing = subprocess.run(
        [sys.executable, "-m", "xlanb", "show", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 1 and "No such file" in missing.stderr
    del kept
