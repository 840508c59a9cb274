"""``PT_XLA_DEBUG_FILE`` as a Profile: the analyses PyTorch/XLA writes with
``PT_XLA_DEBUG_LEVEL`` 1 (one per compile) or 2 (also one per execution), read by
:func:`xlanb.formats.pt_xla_debug.parse_debug_text` (format described there); each
compile gets its computation hash and Post Compilation Analysis sizes."""

from __future__ import annotations

import math
import os
from typing import Any

from xlanb.core.profile import Profile, make_frame
from xlanb.formats.compile_causes import FORCED_SYNC, NEW_GRAPH
from xlanb.formats.pt_xla_debug import SIZE_COLUMNS, parse_debug_text
from xlanb.formats.python_frames import frame_location
from xlanb.offline.assemble import new_profile, with_file_findings
from xlanb.offline.findings import graphs_per_line

BACKEND = "torch_xla"


def load_debug_file(text: str, path: str | os.PathLike) -> Profile:
    """The Profile of a PT_XLA_DEBUG_FILE: one compiles row per Compilation Analysis, one
    executions row per Execution Analysis (times are not in the file: NaN)."""
    blocks, notes = parse_debug_text(text, path)
    profile = new_profile(path, BACKEND, "pt_xla_debug_file")
    profile.notes.extend(f"torch_xla: {note}" for note in notes if note)
    compiles, executions = [], []
    for block in blocks:
        analysis = block.analysis
        assert analysis is not None
        where = frame_location(analysis.frames)
        common: dict[str, Any] = {
            "backend": BACKEND,
            "graph": analysis.graph_hash or None,
            "seconds": math.nan,
            "time": math.nan,
            "trigger": analysis.cause or None,
            **where,
            "inputs": analysis.inputs,
            "outputs": analysis.outputs,
            "stack": "\n".join(
                f"{function} ({filename}:{line})" for function, filename, line in analysis.frames
            )
            or None,
            "debug_line": block.line,
        }
        if block.kind == "compile":
            cause = (
                f"{FORCED_SYNC} (a tensor value was read before the step ended)"
                if analysis.forced
                else NEW_GRAPH
            )
            compiles.append(
                {
                    **common,
                    "cause": cause,
                    "computation_hash": block.computation_hash,
                    **{c: block.sizes.get(c, math.nan) for c in SIZE_COLUMNS.values()},
                }
            )
        else:
            executions.append({**common, "count": 1})
    profile.compiles = make_frame("compiles", compiles)
    profile.executions = make_frame("executions", executions)
    return with_file_findings(profile, graphs_per_line(profile.compiles))
