"""Graph files on disk: one file, or the modules of an ``--xla_dump_to`` directory (JAX,
PyTorch/XLA, TensorFlow all name them ``module_NNNN.<name>.<stage>.txt|dot``)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd

from xlanb.graphs.model import Graph
from xlanb.graphs.parse import parse

_DUMPED = re.compile(r"^module_(?P<id>\d+)\.(?P<module>.+?)\."
                     r"(?P<stage>(?:[A-Za-z0-9]+_)*(?:before|after)_optimizations)\.(?P<ext>txt|dot)$")
_SUFFIX_KINDS = {".dot": "dot", ".gv": "dot", ".mlir": "stablehlo", ".hlo": "hlo"}

#: Columns of :func:`dump_files`.
DUMP_COLUMNS = ["module_id", "module", "stage", "kind", "path"]


def parse_file(path: str | os.PathLike, kind: str | None = None) -> Graph:
    """Parse one graph file (HLO ``.txt``, ``.dot``, StableHLO ``.mlir``); the kind comes from
    ``kind``, else the suffix, else the text. The graph is named after the file."""
    path = Path(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    graph = parse(text, kind or _SUFFIX_KINDS.get(path.suffix.lower()))
    graph.name = graph.name or path.stem
    return graph


def dump_files(directory: str | os.PathLike) -> pd.DataFrame:
    """The HLO modules an ``--xla_dump_to`` directory holds, one row per file: ``module_id``,
    ``module`` (name), ``stage`` (``before_optimizations``, ``cpu_after_optimizations``, ...),
    ``kind`` (``hlo`` or ``dot``) and ``path``; sorted by module and stage. Buffer assignments,
    memory reports and LLVM/MLIR kernel files are left out."""
    rows = []
    for entry in sorted(os.scandir(directory), key=lambda e: e.name):
        match = _DUMPED.match(entry.name)
        if match and entry.is_file():
            rows.append({"module_id": int(match["id"]), "module": match["module"],
                         "stage": match["stage"], "kind": "hlo" if match["ext"] == "txt"
                         else "dot", "path": entry.path})
    frame = pd.DataFrame(rows, columns=DUMP_COLUMNS)
    return frame.sort_values(["module_id", "stage", "kind"], kind="stable").reset_index(drop=True)
