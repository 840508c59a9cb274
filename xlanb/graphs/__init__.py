"""IR/HLO/DOT text -> one graph model (:class:`Graph`: nodes, edges, scopes as DataFrames).

    >>> from xlanb import graphs
    >>> graph = graphs.parse(jax.jit(f).lower(x).compile().as_text())   # kind detected
    >>> graph.nodes[["name", "op", "shape", "source_file", "source_line"]]
    >>> graph                       # in a notebook: the interactive viewer
    >>> graphs.diff(before, after).summary

Formats (``kind``): ``hlo`` (HLO text: torch_xla, JAX, TensorFlow, ``--xla_dump_to``),
``stablehlo`` (MLIR StableHLO/MHLO), ``ir`` (torch._lazy / torch_xla IR text),
``torchscript`` (torch._lazy's TorchScript backend graphs), ``dot`` (Graphviz).
"""

from __future__ import annotations

from xlanb.graphs.diff import GraphDiff, diff
from xlanb.graphs.dump import dump_files, parse_file
from xlanb.graphs.errors import ParseError
from xlanb.graphs.model import EDGE_COLUMNS, NODE_COLUMNS, SCOPE_COLUMNS, Graph
from xlanb.graphs.parse import KINDS, detect_kind, parse, parse_once

__all__ = [
    "EDGE_COLUMNS",
    "KINDS",
    "NODE_COLUMNS",
    "SCOPE_COLUMNS",
    "Graph",
    "GraphDiff",
    "ParseError",
    "detect_kind",
    "diff",
    "dump_files",
    "parse",
    "parse_once",
    "parse_file",
]
