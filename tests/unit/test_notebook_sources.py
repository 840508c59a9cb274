"""The shipped example notebooks are what notebooks/make_notebooks.py writes: no hand edit of
an .ipynb drifts from its source (cell ids are random, so kinds and sources are compared)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).parent.parent.parent / "notebooks"


def _sources():
    spec = importlib.util.spec_from_file_location("make_notebooks", NOTEBOOKS / "make_notebooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE = _sources()


@pytest.mark.parametrize("filename", sorted(MAKE.NOTEBOOKS))
def test_shipped_notebook_matches_its_source(filename):
    shipped = nbformat.read(NOTEBOOKS / filename, as_version=4)
    built = MAKE.build(MAKE.NOTEBOOKS[filename])
    assert [(c.cell_type, c.source) for c in shipped.cells] == [
        (c.cell_type, c.source) for c in built.cells
    ], (
        f"{filename} differs from notebooks/make_notebooks.py: run "
        "`python notebooks/make_notebooks.py` and commit the result"
    )
    assert all(not c.get("outputs") for c in shipped.cells if c.cell_type == "code")


def test_every_shipped_notebook_has_a_source():
    assert {p.name for p in NOTEBOOKS.glob("*.ipynb")} == set(MAKE.NOTEBOOKS)
