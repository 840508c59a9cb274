"""``--xla_dump_to`` directories (JAX, PyTorch/XLA, TensorFlow: XLA names the files the same
way) and single HLO module files.

For each compiled module XLA writes ``module_NNNN.NAME.before_optimizations.txt`` and
``module_NNNN.NAME.<platform>_after_optimizations.txt`` (with ``--xla_dump_hlo_as_text``, the
default for JAX), and on the CPU and GPU ``...after_optimizations-buffer-assignment.txt`` and
``...-memory-usage-report.txt``; other files (LLVM IR, objects, MLIR, protos, per-pass dumps)
are ignored.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Any

from xlanb.core.errors import FormatError
from xlanb.core.profile import Profile, make_frame
from xlanb.formats.buffer_assignment import temporaries_from_text, temporary_rows
from xlanb.formats.compile_causes import CompileHistory
from xlanb.formats.hlo_text import count_hlo_instructions
from xlanb.formats.xla_dump_names import BEFORE_OPTIMIZATIONS, dump_file_name
from xlanb.offline.assemble import new_profile, with_file_findings
from xlanb.offline.detect import read_text
from xlanb.offline.findings import shape_changes

_TOTAL_BYTES = re.compile(r"^Total bytes(?: used)?: (\d+)", re.MULTILINE | re.ASCII)
_PRODUCERS = (
    ("torch_xla", ("SyncTensorsGraph", "IrToHlo"), ('op_type="xla__', 'op_type="aten__')),
    ("jax", ("jit_", "pmap_", "xmap_", "pjit_"), ('op_name="jit(', 'op_name="pmap(')),
    ("tensorflow", ("cluster_", "a_inference_", "__inference_", "_XlaRun"), ()),
)
GENERIC = "xla_dump"
#: A JAX module of at most this many instructions named ``jit_*`` is an eager single op.
EAGER_NODES = 3


@dataclass
class DumpModule:
    """The files of one dumped module."""

    module_id: int
    name: str
    hlo: str | None = None
    hlo_file: str | None = None
    optimized: str | None = None
    optimized_file: str | None = None
    buffer_assignment: str | None = None
    memory_report: str | None = None


def _read_hlo(path: str) -> str:
    text = read_text(path)
    first = next((line for line in text.split("\n") if line.strip()), "")
    if not first.startswith("HloModule "):
        number = text.split("\n").index(first) + 1 if first else 1
        raise FormatError(
            path,
            number,
            "not an HLO module in text form (expected a first line 'HloModule NAME, ...')",
        )
    return text


def scan_dump_dir(path: str | os.PathLike) -> list[DumpModule]:
    """The modules of a dump directory, in module-id order."""
    modules: dict[tuple[int, str], DumpModule] = {}
    for filename in sorted(os.listdir(path)):
        name = dump_file_name(filename)
        full = os.path.join(os.fspath(path), filename)
        if (
            name is None
            or name.ext != "txt"
            or not (name.stage == BEFORE_OPTIMIZATIONS or name.optimized)
            or not os.path.isfile(full)
        ):
            continue
        key = (name.module_id, name.module)
        module = modules.setdefault(key, DumpModule(*key))
        if name.report == "buffer-assignment":
            module.buffer_assignment = read_text(full)
        elif name.report == "memory-usage-report":
            module.memory_report = read_text(full)
        elif not name.optimized:
            module.hlo, module.hlo_file = _read_hlo(full), full
        else:
            module.optimized, module.optimized_file = _read_hlo(full), full
    found = [m for m in modules.values() if m.hlo is not None or m.optimized is not None]
    if not found:
        raise FormatError(
            path,
            0,
            "a directory without XLA dump modules (expected "
            "module_*.before_optimizations.txt files, as written with "
            "XLA_FLAGS='--xla_dump_to=DIR --xla_dump_hlo_as_text')",
        )
    return sorted(found, key=lambda m: (m.module_id, m.name))


def producer(names: list[str], texts: list[str]) -> str:
    """Which runtime wrote the modules (see the module docstring)."""
    for name, prefixes, markers in _PRODUCERS:
        if any(n.startswith(prefixes) for n in names) or any(
            marker in text for text in texts for marker in markers
        ):
            return name
    return GENERIC


def memory_bytes(module: DumpModule) -> float:
    """Total bytes of the optimized module's buffers, NaN when no report says."""
    for report in (module.memory_report, module.buffer_assignment):
        totals = _TOTAL_BYTES.findall(report or "")
        if totals:
            return float(sum(int(total) for total in totals))
    return math.nan


def _graph_rows(backend: str, module: DumpModule) -> list[dict[str, Any]]:
    rows = []
    common = {"backend": backend, "graph": module.name, "module_id": module.module_id}
    if module.hlo is not None:
        rows.append(
            {
                **common,
                "kind": "hlo",
                "text": module.hlo,
                "nodes": count_hlo_instructions(module.hlo),
                "file": module.hlo_file,
            }
        )
    if module.optimized is not None:
        rows.append(
            {
                **common,
                "kind": "hlo_optimized",
                "text": module.optimized,
                "nodes": count_hlo_instructions(module.optimized),
                "file": module.optimized_file,
                "memory_bytes": memory_bytes(module),
                "memory_report": module.memory_report,
                "buffer_assignment": module.buffer_assignment,
            }
        )
    return rows


def load_dump_dir(path: str | os.PathLike) -> Profile:
    """The Profile of an ``--xla_dump_to`` directory.

    Each module becomes:

    - ``graphs`` rows of kind ``hlo`` (before optimization) and ``hlo_optimized`` (after), with
      ``nodes`` = instruction count and extra columns ``module_id``, ``file``; optimized rows also
      have ``memory_bytes`` (the memory-usage report's total, else the buffer assignment's),
      ``memory_report`` and ``buffer_assignment`` (the reports' text);
    - one ``compiles`` row (time unknown: NaN) whose cause compares it with the last module of the
      same name: ``new shape: f32[4,3] -> f32[8,3]`` when only shapes changed. For JAX, ``eager``
      marks single-op programs (``jit_NAME`` with at most :data:`EAGER_NODES` instructions before
      optimization), which JAX compiles for each operation run outside ``jax.jit``.

    The producer is read from module names and HLO metadata: ``torch_xla`` (``SyncTensorsGraph``,
    ``xla__``/``aten__`` op types), ``jax`` (``jit_``/``pmap_`` names, ``jit(`` op names),
    ``tensorflow`` (``cluster_``, ``a_inference_``/``__inference_`` names), else ``xla_dump``.
    """
    modules = scan_dump_dir(path)
    backend = producer(
        [m.name for m in modules], [m.hlo or m.optimized or "" for m in modules[:20]]
    )
    profile = new_profile(path, backend, "xla_dump", producer=backend, modules=len(modules))
    history = CompileHistory()
    graphs, compiles = [], []
    for module in modules:
        rows = _graph_rows(backend, module)
        graphs.extend(rows)
        cause = history.cause(module.name, module.hlo or module.optimized, False)
        row = {
            "backend": backend,
            "graph": module.name,
            "cause": cause,
            "seconds": math.nan,
            "time": math.nan,
            "module_id": module.module_id,
        }
        if backend == "jax":
            row["eager"] = module.name.startswith("jit_") and rows[0]["nodes"] <= EAGER_NODES
        compiles.append(row)
    profile.graphs = make_frame("graphs", graphs)
    profile.compiles = make_frame("compiles", compiles)
    profile.temporaries = make_frame(
        "temporaries",
        [
            row
            for module in modules
            for row in temporary_rows(
                backend,
                module.name,
                temporaries_from_text(module.buffer_assignment or ""),
                module.optimized,
            )
        ],
    )
    if backend != "jax":
        return with_file_findings(profile, [])
    # diagnose's live shape rule skips JAX (it reads JAX's own explanations): say it here.
    jitted = profile.compiles[~profile.compiles["eager"].astype(bool)]
    return with_file_findings(profile, shape_changes(jitted))


def load_hlo_module(text: str, path: str | os.PathLike) -> Profile:
    """The Profile of one HLO module file: one ``graphs`` row (``hlo_optimized`` when the file
    name says ``after_optimizations``)."""
    name = text.lstrip().split("\n", 1)[0].removeprefix("HloModule ").split(",", 1)[0].strip()
    backend = producer([name], [text])
    profile = new_profile(path, backend, "hlo_module", producer=backend)
    kind = "hlo_optimized" if "after_optimizations" in os.path.basename(os.fspath(path)) else "hlo"
    profile.graphs = make_frame(
        "graphs",
        [
            {
                "backend": backend,
                "graph": name or None,
                "kind": kind,
                "text": text,
                "nodes": count_hlo_instructions(text),
                "file": os.fspath(path),
            }
        ],
    )
    return with_file_findings(profile, [])
