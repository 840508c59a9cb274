"""What a profiled cell displays, for two recorded profiles (a flax CNN's steady cell, a
torch._lazy cell with compiles and a value read back): its HTML, its text and its charts'
bundles are the ones the display gave before it was made cheap (goldens in
``tests/data/display/``, written by the views of commit 7fec677); the text still holds the
summary; and a front end that shows text alone gets text alone, with no HTML or SVG built.

Regenerate the goldens (only where the display changes on purpose):
``PYTHONPATH=. .venv/bin/python tests/unit/test_display_output.py``
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from IPython import get_ipython
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

from xlanb.core import seams
from xlanb.core.profile import Profile
from xlanb.views import notebook
from xlanb.views.notebook import PLOTLY_MIME, charts, display_profile

DATA = Path(__file__).resolve().parents[1] / "data" / "display"
CASES = ("flax_cnn", "torch_lazy")


def recorded(case: str) -> Profile:
    return Profile.from_dict(json.loads((DATA / f"{case}.xlanb.json").read_text()))


def shown(profile: Profile) -> dict[str, str]:
    """The profile's HTML and text, and its charts' bundles as JSON."""
    bundles = [chart._repr_mimebundle_() for chart in charts(profile)]
    return {
        "html": profile._repr_html_(),
        "txt": repr(profile),
        "charts.json": json.dumps(bundles, sort_keys=True, default=str),
    }


@pytest.mark.parametrize("case", CASES)
def test_the_display_is_the_one_before_it_was_made_cheap(case):
    for kind, text in shown(recorded(case)).items():
        assert text == (DATA / f"{case}.{kind}").read_text(), kind


def test_the_text_holds_the_summary():
    text = repr(recorded("flax_cnn"))
    lines = text.splitlines()
    assert lines[0] == "xlanb profile cell-1 [jax]"
    assert lines[1].startswith("  wall: ") and "executions: 100 " in lines[1]
    assert lines[2].startswith("  wall ") and "device " in lines[2]  # the time account
    assert any(line.startswith("  [") for line in lines)  # a finding
    top = lines.index(next(line for line in lines if line.startswith("  top ops")))
    assert len(lines[top + 1 : top + 6]) == 5 and all(
        line.startswith("    ") and " runs, first " in line for line in lines[top + 1 : top + 6]
    )
    lazy = repr(recorded("torch_lazy"))
    assert "  left the device:" in lazy and "  compiles:" in lazy


class _Counted:
    """A function that counts its calls."""

    def __init__(self, function):
        self.function, self.calls = function, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.function(*args, **kwargs)


@pytest.fixture
def counted(monkeypatch):
    """Calls of the Profile's HTML and of the charts' SVG twins."""
    html = _Counted(seams.implementation("profile_html"))
    svg = _Counted(notebook.figure_svg)
    monkeypatch.setitem(seams._IMPLEMENTATIONS, "profile_html", html)
    monkeypatch.setattr(notebook, "figure_svg", svg)
    return html, svg


def displayed(active_types: list[str] | None) -> list[dict]:
    """What display_profile sends for the flax profile, in the test process's IPython shell
    showing `active_types` (None: every type it has a formatter for, as a notebook)."""
    shell = start_ipython() or get_ipython()
    formatter = shell.display_formatter
    before = formatter.active_types
    formatter.active_types = formatter.format_types if active_types is None else active_types
    try:
        with capture_output() as captured:
            display_profile(recorded("flax_cnn"))
    finally:
        formatter.active_types = before
    return [output.data for output in captured.outputs]


def test_a_terminal_gets_text_alone_and_builds_no_html(counted):
    html, svg = counted
    outputs = displayed(["text/plain"])
    assert [set(data) for data in outputs] == [{"text/plain"}] * 3  # summary, 2 charts
    assert outputs[0]["text/plain"] == (DATA / "flax_cnn.txt").read_text()
    assert html.calls == 0 and svg.calls == 0


def test_a_notebook_gets_html_and_charts(counted):
    html, svg = counted
    outputs = displayed(None)
    assert {"text/html", "text/plain"} <= set(outputs[0])
    assert all({PLOTLY_MIME, "text/html", "text/plain"} <= set(data) for data in outputs[1:])
    assert len(outputs) == 3 and html.calls == 1 and svg.calls == 2


if __name__ == "__main__":
    for name in CASES:
        for kind, text in shown(recorded(name)).items():
            (DATA / f"{name}.{kind}").write_text(text)
