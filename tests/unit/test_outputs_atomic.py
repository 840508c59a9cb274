"""Every output xlanb writes replaces the old file whole (issue: reports and traces were
written in place, so a `kill -9` mid-write left a 0-byte file where the good report was)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from xlanb.core.profile import Profile
from xlanb.core.schema import make_frame
from xlanb.graphs import parse


def _profile() -> Profile:
    compiles = [
        {
            "backend": "jax",
            "graph": f"jit(f{i})",
            "cause": "never seen function",
            "seconds": 0.01,
            "time": 1.0 + i,
        }
        for i in range(50)
    ]
    return Profile(
        name="atomic",
        backends=["jax"],
        started_at=1.0,
        wall_seconds=2.0,
        compiles=make_frame("compiles", compiles),
    )


WRITERS = {
    "report": lambda path: _profile().to_html(path),
    "chrome trace": lambda path: _profile().to_chrome_trace(path),
    "saved profile": lambda path: _profile().save(path),
    "graph page": lambda path: parse(
        "HloModule m\nENTRY e {\n  ROOT %p = f32[] parameter(0)\n}\n", kind="hlo"
    ).to_html(path),
}


@pytest.mark.parametrize("what", sorted(WRITERS))
def test_an_output_is_replaced_whole_never_rewritten_in_place(what, tmp_path):
    path = tmp_path / "out"
    WRITERS[what](path)
    first, old = os.stat(path).st_ino, path.read_bytes()
    with open(path, "rb") as reader:  # a reader of the old file keeps reading it whole
        WRITERS[what](path)
        assert reader.read() == old
    assert os.stat(path).st_ino != first, f"the {what} was rewritten in place"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no temporary file left


WRITER_SCRIPT = """
import sys
from xlanb.core.profile import Profile
from xlanb.core.schema import make_frame
rows = [{"backend": "jax", "graph": f"jit(f{i})" * 20, "cause": "x" * 200, "seconds": 0.01,
         "time": 1.0 + i} for i in range(3000)]
profile = Profile(name="big", backends=["jax"], started_at=1.0, wall_seconds=2.0,
                  compiles=make_frame("compiles", rows))
print("ready", flush=True)
while True:
    profile.to_html(sys.argv[1])
"""


def test_a_report_writer_killed_mid_write_leaves_the_old_report_whole(tmp_path):
    path = tmp_path / "report.html"
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER_SCRIPT, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 60
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        for delay in (0.13, 0.29, 0.07, 0.41, 0.19):
            time.sleep(delay)
            assert path.read_text(encoding="utf-8").rstrip().endswith("</html>")
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        text = path.read_text(encoding="utf-8")
        assert text.rstrip().endswith("</html>"), f"{len(text)} bytes left, cut short"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)


def test_bidi_controls_in_user_names_never_reach_a_page_raw(tmp_path):
    """A U+202E in a function or graph name used to reverse xlanb's own text after it on the
    page: every output writes bidirectional controls out as visible escapes."""
    from xlanb.core.profile import Profile
    from xlanb.core.schema import make_frame
    from xlanb.views.graph_viewer.payload import json_for_script

    name = "train\u202estep"
    profile = Profile(name=f"cell \u2067{name}", backends=["jax"], started_at=1.7e9)
    profile.wall_seconds = 1.0
    profile.compiles = make_frame(
        "compiles",
        [
            {
                "backend": "jax",
                "graph": f"jit({name})",
                "cause": f"new graph {name}",
                "seconds": 0.5,
                "time": 1.7e9,
            }
        ],
    )
    profile.notes = [f"note about {name}"]
    page = profile.to_html()
    for control in ("\u202e", "\u2067"):
        assert control not in page
    assert "train\\u202estep" in page and "\\u2067" in page
    script = json_for_script({"nodes": [name]})
    assert "\u202e" not in script
    import json

    assert json.loads(script)["nodes"] == ["train\\u202estep"]
