"""Python frames as the torch runtimes print them, and which one to blame."""

from __future__ import annotations

import functools
import os
import re
import sys
import sysconfig
from collections.abc import Mapping, Sequence
from typing import Any

#: Where installed libraries live: frames there (and in xlanb itself) are not the user's code.
_SITE_MARKERS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
_XLANB_DIR = os.sep + "xlanb" + os.sep
#: How far up from a file's directory an install directory is looked for.
_INSTALL_DEPTH = 8


@functools.lru_cache(maxsize=4096)
def _install_root(directory: str) -> str | None:
    """The install directory above `directory` (ending in a separator), or None: a
    ``site-packages``, or an import path entry holding an installed distribution's
    ``*.dist-info`` (a ``pip install --target`` directory on ``PYTHONPATH``)."""
    for marker in _SITE_MARKERS:
        if marker in directory + os.sep:
            return (directory + os.sep).rsplit(marker, 1)[0] + marker
    for standard in _standard_library():
        if (directory + os.sep).startswith(standard):
            return standard
    entries = {os.path.abspath(entry) for entry in sys.path if entry}
    parent = directory
    for _ in range(_INSTALL_DEPTH):
        parent, child = os.path.split(parent)
        if not child:
            return None
        if parent in entries and _holds_distributions(parent):
            return parent.rstrip(os.sep) + os.sep
    return None


@functools.cache
def _standard_library() -> tuple[str, ...]:
    """Python's own library directories (ending in a separator): ``contextlib`` there is no
    more the user's code than an installed library (a venv's are its base Python's)."""
    paths = sysconfig.get_paths()
    found = {os.path.abspath(paths[key]) for key in ("stdlib", "platstdlib") if paths.get(key)}
    return tuple(path.rstrip(os.sep) + os.sep for path in sorted(found))


@functools.lru_cache(maxsize=1024)
def _holds_distributions(directory: str) -> bool:
    try:
        return any(name.endswith(".dist-info") for name in os.listdir(directory))
    except OSError:
        return False


#: The file ipykernel compiles a cell as (``/tmp/ipykernel_<pid>/<hash>.py``).
_KERNEL_CELL_FILE = re.compile(r"ipykernel_\d+[/\\]\d+\.py$")


def is_cell_file(filename: str) -> bool:
    """Whether `filename` is a notebook cell's: IPython's ``<ipython-input-...>`` or the
    temporary file ipykernel compiles a cell as; people know it as the cell, not a path."""
    return filename.startswith("<") or _KERNEL_CELL_FILE.search(filename) is not None


def library_root(filename: str) -> str | None:
    """The install directory of the installed library `filename` belongs to, or None (the
    user's own code, or a file that is not on disk: a cell)."""
    if filename.startswith("<"):
        return None
    return _install_root(os.path.dirname(filename))


def _in_library(filename: str) -> bool:
    return _XLANB_DIR in filename or library_root(filename) is not None


# "  train_step (/tmp/train.py:13)": how PyTorch/XLA and torch._lazy print a Python frame.
_PYTHON_FRAME = re.compile(r"^\s*(?P<function>.*?) \((?P<file>.*):(?P<line>\d+)\)\s*$")


def python_frame(line: str) -> tuple[str, str, int] | None:
    """(function, file, line) of a Python frame as the torch runtimes print it, or None."""
    match = _PYTHON_FRAME.match(line)
    return (match["function"], match["file"], int(match["line"])) if match else None


def user_frame(
    frames: Sequence[tuple[str, str, int]], cell_filename: str | None
) -> tuple[str, int] | None:
    """Pick the frame to blame from (function, file, line) frames, innermost first: the cell's
    own frame if present, else the innermost frame outside installed libraries."""
    line = cell_frame_line(frames, cell_filename)
    if cell_filename and line is not None:
        return cell_filename, line
    found = user_code_frame(frames)
    return (found[1], found[2]) if found else None


def user_code_frame(frames: Sequence[tuple[str, str, int]]) -> tuple[str, str, int] | None:
    """The innermost of (function, file, line) `frames` outside installed libraries."""
    for frame in frames:
        if not _in_library(frame[1]):
            return frame
    return None


def cell_frame_line(
    frames: Sequence[tuple[str, str, int]], cell_filename: str | None
) -> int | None:
    """The line of the innermost of (function, file, line) `frames` in the cell's file."""
    if cell_filename:
        for _function, filename, line in frames:
            if filename == cell_filename:
                return line
    return None


def place_name(
    filename: str,
    line: int,
    cell_filename: str | None = None,
    cell_line_offset: int = 0,
    cell_numbers: Mapping[str, int] | None = None,
) -> str:
    """A source line as people know it: ``cell line N`` in the profiled cell (counted as the
    editor does), ``In[3] line N`` in another notebook cell (`cell_numbers`: IPython's file
    name -> execution count), ``another cell, line N`` where that is unknown, else
    ``file:line`` (an installed library's file from its install directory:
    ``torch/nn/modules/linear.py:134``)."""
    if cell_filename and filename == cell_filename:
        return f"cell line {line + cell_line_offset}"
    if is_cell_file(filename):
        number = (cell_numbers or {}).get(filename)
        return f"In[{number}] line {line}" if number else f"another cell, line {line}"
    root = library_root(filename)
    return f"{filename.removeprefix(root) if root else filename}:{line}"


def frame_location(
    frames: Sequence[tuple[str, str, int]],
    cell_filename: str | None = None,
    cell_line_offset: int = 0,
) -> dict[str, Any]:
    """``location`` (file:line) and ``cell_line`` (as the editor numbers it, or None)."""
    picked = user_frame(frames, cell_filename)
    if picked is None:
        return {"location": None, "cell_line": None}
    filename, line = picked
    in_cell = bool(cell_filename) and filename == cell_filename
    return {
        "location": f"{filename}:{line}",
        "cell_line": line + cell_line_offset if in_cell else None,
    }


#: The runtimes' own machinery: a read's frames start there (``Tensor.item``, ``sync``).
_RUNTIME_PARTS = (
    os.sep + "torch_xla" + os.sep,
    os.sep + "torch" + os.sep + "_",
    _XLANB_DIR,
)


def read_place(
    frames: Sequence[tuple[str, str, int]],
    cell_filename: str | None = None,
    cell_line_offset: int = 0,
    cell_numbers: Mapping[str, int] | None = None,
) -> str | None:
    """Where a value was read, from the runtime's own stack (innermost first): the innermost
    frame outside the runtime's machinery, as ``file:line (function)``, an installed
    library's file relative to its install directory (``site-packages`` or a ``pip install
    --target`` one: ``transformers/masking_utils.py:255 (sdpa_mask)``), a notebook cell's
    named as a cell (:func:`place_name`: ``In[3] line 11 (train_step)``) but for the profiled
    cell's own top level (`cell_filename`), named ``cell line N`` by its reader."""
    for function, filename, line in frames:
        if any(part in filename for part in _RUNTIME_PARTS):
            continue
        if is_cell_file(filename) and not (filename == cell_filename and function == "<module>"):
            where = place_name(filename, line, cell_filename, cell_line_offset, cell_numbers)
            return f"{where} ({function})"
        root = library_root(filename)
        if root is not None:
            filename = filename[len(root) :]
        return f"{filename}:{line} ({function})"
    return None


#: How :func:`read_place` and :func:`place_name` begin a notebook cell's place.
CELL_PLACES = ("cell line ", "In[", "another cell, ")


def is_library_place(place: str) -> bool:
    """Whether a :func:`read_place` is in an installed library (written relative to its
    install directory; the user's files are absolute, cells named as cells)."""
    return not (os.path.isabs(place) or place.startswith(("<", *CELL_PLACES)))


def in_library(frames: Sequence[tuple[str, str, int]]) -> bool:
    """Whether the read's place (:func:`read_place`) is inside an installed library."""
    for _function, filename, _line in frames:
        if not any(part in filename for part in _RUNTIME_PARTS):
            return library_root(filename) is not None
    return False
