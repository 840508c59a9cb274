"""tools/architecture.py (run by ``make lint``): what it finds in a small package written here,
and what it finds in xlanb."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import architecture


def write_package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


def test_a_cycle_through_an_import_inside_a_function_is_found(tmp_path):
    package = write_package(
        tmp_path,
        {
            "__init__.py": "",
            "core.py": "def show():\n    from pkg.views import draw\n    return draw()\n",
            "views/__init__.py": "from pkg import core\nfrom pkg.analysis import rank\n",
            "analysis.py": '"""One\nline."""\nrank = 1\n',
        },
    )
    found = architecture.problems(package)
    assert found["cycles"] == ["pkg.core <-> pkg.views"]
    assert found["views import analysis"] == ["pkg.views -> pkg.analysis"]
    assert found["in-function imports of xlanb"] == ["pkg/core.py:2 imports pkg.views"]
    assert found["long modules"] == found["long functions"] == found["long docstrings"] == []


def test_long_modules_functions_and_docstrings_are_found(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(81))
    docstring = '"""' + "\n" * 15 + '"""\n'
    files = {"__init__.py": "", "big.py": docstring + "x = 1\n" * 900}
    files |= {f"f{n}.py": f"def f{n}():\n{body}" for n in range(4)}
    found = architecture.problems(write_package(tmp_path, files))
    assert found["long modules"] == ["pkg.big: 916 lines"]
    assert len(found["long functions"]) == 4
    assert found["long docstrings"] == ["pkg.big: module docstring of 16 lines"]
    assert found["cycles"] == []


XLANB = architecture.problems()


@pytest.mark.parametrize("check", list(XLANB))
def test_xlanb_passes(check):
    assert XLANB[check] == []
