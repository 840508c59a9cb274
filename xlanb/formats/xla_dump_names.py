"""The names XLA gives the files of an ``--xla_dump_to`` directory (JAX, PyTorch/XLA and
TensorFlow all name them the same way)::

    module_0003.jit_step.before_optimizations.txt
    module_0003.jit_step.cpu_after_optimizations.txt
    module_0003.jit_step.cpu_after_optimizations.dot
    module_0003.jit_step.cpu_after_optimizations-buffer-assignment.txt
    module_0003.jit_step.cpu_after_optimizations-memory-usage-report.txt
    module_12603.jit_step.sm_9.0a_gpu_after_optimizations.txt  (XLA:GPU: the CUDA arch first)

Other files of a dump (LLVM IR, objects, MLIR, protos, per-pass dumps) are not module files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

BEFORE_OPTIMIZATIONS = "before_optimizations"

_MODULE_FILE = re.compile(
    r"module_(?P<id>\d+)\.(?P<module>.+?)\."
    r"(?P<stage>(?:sm_\d+\.\d+[a-z]?_)?(?:\w+_)?(?:before|after)_optimizations)"
    r"(?:-(?P<report>buffer-assignment|memory-usage-report))?\.(?P<ext>txt|dot)"
)


@dataclass(frozen=True)
class DumpFileName:
    """What the name of one file of a dump says."""

    module_id: int
    #: The module's name (``jit_step``, ``SyncTensorsGraph.61``).
    module: str
    #: ``before_optimizations`` or ``<platform>_after_optimizations`` (``cpu_...``).
    stage: str
    #: None for the module itself, else ``buffer-assignment`` or ``memory-usage-report``.
    report: str | None
    #: ``txt`` (HLO text, or a report) or ``dot``.
    ext: str

    @property
    def is_hlo(self) -> bool:
        """The module's HLO text (not a report, not a graph drawing)."""
        return self.report is None and self.ext == "txt"

    @property
    def optimized(self) -> bool:
        """After XLA's optimizations (``..._after_optimizations``)."""
        return self.stage.endswith("after_optimizations")


def dump_file_name(filename: str) -> DumpFileName | None:
    """What the name of a file in a dump directory says, or None when it is not a module file
    (see the module docstring)."""
    match = _MODULE_FILE.fullmatch(filename)
    if match is None:
        return None
    return DumpFileName(
        int(match["id"]), match["module"], match["stage"], match["report"], match["ext"]
    )
