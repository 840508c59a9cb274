"""What importing a part of xlanb loads: a text parser does not pull in the runtimes' hooks,
and a plain ``import xlanb`` loads nothing until a name is used."""

from __future__ import annotations

import json
import subprocess
import sys


def loaded_after(statement: str) -> list[str]:
    code = (
        f"import sys\n{statement}\nimport json\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('xlanb'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out.splitlines()[-1])


def test_plain_import_loads_only_the_package():
    assert loaded_after("import xlanb") == ["xlanb"]


def test_the_graph_parsers_load_no_capture_view_or_api_module():
    loaded = loaded_after("import xlanb.graphs")
    assert any(m.startswith("xlanb.graphs.") for m in loaded)
    upper = [
        m
        for m in loaded
        if m.split(".")[1:2]
        and m.split(".")[1] in ("capture", "api", "views", "frontends", "offline", "analysis")
    ]
    assert upper == []


def test_public_names_resolve_on_first_use():
    loaded = loaded_after("import xlanb\nxlanb.compare.compare\nxlanb.FormatError")
    assert "xlanb.analysis.compare" in loaded and "xlanb.capture.recorder" not in loaded
