"""XLA:GPU kernels inside command buffers (CUDA graphs), placed on their HLO instructions.

Inside a command buffer every kernel event says ``hlo_op=command_buffer_N``; its *name* is
the kernel: XLA's own kernels are named after a fusion (``.N`` written ``_N``; identical
fusions share the first one's kernel), library calls by cuBLAS/cuDNN (``sm90_xmma_gemm...``),
copies ``memcpy*`` and memsets ``Memset``. The optimized HLO's entry computation lists the
instructions in the order they run, so each run's kernels are aligned, in order, with that
list (a small edit-distance alignment): a fusion kernel goes to a fusion of its name (else of
its family), a library kernel to a custom call (several kernels of one call stay on it), a
copy to a copy. A kernel that cannot be placed is ``command_buffer_N (unattributed)``, never
another op's.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

#: The prefix of the ``hlo_op`` of kernels that ran inside a command buffer.
COMMAND_BUFFER = "command_buffer"
#: Appended to a command buffer's name for its kernels that no instruction could take.
UNATTRIBUTED = " (unattributed)"

_INSTRUCTION = re.compile(
    r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+) = (?:\([^=]*?\)|\S+) (?P<opcode>[\w\-]+)\("
)
_TARGET = re.compile(r'custom_call_target="(?P<target>[^"]*)"')
_OP_NAME = re.compile(r'op_name="(?P<op>(?:[^"\\]|\\.)*)"')
_SUFFIX = re.compile(r"[._]\d+$")
#: Opcodes that launch nothing on the device.
_NO_KERNEL = frozenset(
    {"parameter", "constant", "get-tuple-element", "tuple", "bitcast", "after-all", "iota"}
)

# alignment costs: a kernel no instruction takes costs more than any placement
_SKIP_COMMAND, _SKIP_KERNEL, _FAMILY, _MEMSET, _EXTEND = 1.0, 10.0, 0.3, 0.2, 0.1


class Command(NamedTuple):
    """An instruction of the entry computation that may launch kernels, in run order."""

    name: str
    opcode: str
    #: ``custom_call_target`` of a custom call, else "".
    target: str
    #: The ``op_name`` of its metadata (JAX: ``jit(step)/jvp()/dot_general``), else "".
    op_name: str = ""


def family(name: str) -> str:
    """A kernel's or instruction's name without its number (``loop_add_fusion_2`` and
    ``loop_add_fusion.1`` are both ``loop_add_fusion``)."""
    return _SUFFIX.sub("", name)


@functools.lru_cache(maxsize=16)
def entry_commands(hlo_text: str) -> tuple[Command, ...]:
    """The instructions of the module's ENTRY computation that may launch kernels, in the
    order of the (scheduled) text."""
    commands: list[Command] = []
    inside = False
    for line in hlo_text.splitlines():
        if line.startswith("ENTRY"):
            inside = True
            continue
        if inside and line.startswith("}"):
            break
        match = _INSTRUCTION.match(line) if inside else None
        if match is None or match["opcode"] in _NO_KERNEL:
            continue
        target = _TARGET.search(line) if match["opcode"] == "custom-call" else None
        op_name = _OP_NAME.search(line)
        commands.append(
            Command(
                match["name"],
                match["opcode"],
                target["target"] if target else "",
                op_name["op"] if op_name else "",
            )
        )
    return tuple(commands)


def _kernel_kind(name: str, hlo_op: str, families: set[str]) -> str:
    if not hlo_op.startswith(COMMAND_BUFFER):
        return "anchored"
    if name.lower().startswith("memcpy"):
        return "copy"
    if name.startswith("Memset"):
        return "memset"
    return "xla" if family(name) in families else "library"


def _match_cost(kind: str, name: str, hlo_op: str, command: Command) -> float:
    """The cost of kernel (`kind`, `name`, `hlo_op`) being the first of `command`'s."""
    if kind == "anchored":
        return 0.0 if hlo_op == command.name else math.inf
    if kind == "xla":
        if command.opcode != "fusion":
            return math.inf
        if command.name.replace(".", "_") == name:
            return 0.0
        return _FAMILY if family(command.name) == family(name) else math.inf
    if kind == "copy":
        return 0.0 if command.opcode == "copy" else math.inf
    if kind == "memset":
        return _MEMSET if command.opcode in ("custom-call", "fusion") else math.inf
    return 0.0 if command.opcode == "custom-call" else math.inf


def _extend_cost(kind: str, command: Command) -> float:
    """The cost of one more kernel of `kind` for `command` (a library call runs several)."""
    if command.opcode == "custom-call" and kind in ("library", "memset"):
        return _EXTEND
    return math.inf


def align(kernels: Sequence[tuple[str, str]], commands: Sequence[Command]) -> list[int]:
    """For each kernel (name, hlo_op) of one run, in run order, the index of the command it
    belongs to, or -1: the cheapest in-order alignment."""
    families = {family(command.name) for command in commands if command.opcode == "fusion"}
    kinds = [_kernel_kind(name, op, families) for name, op in kernels]
    n, m = len(kernels), len(commands)
    # free[i, j]: i kernels and j commands used, command j-1 took no kernel i-1;
    # held[i, j]: kernel i-1 went to command j-1 (which may take more)
    free = np.full((n + 1, m + 1), math.inf)
    held = np.full((n + 1, m + 1), math.inf)
    free[0, 0] = 0.0
    for i in range(n + 1):
        for j in range(m + 1):
            best = min(free[i, j], held[i, j])
            if j < m:  # command j launched nothing here
                free[i, j + 1] = min(free[i, j + 1], best + _SKIP_COMMAND)
            if i == n:
                continue
            kind, (name, op) = kinds[i], kernels[i]
            free[i + 1, j] = min(free[i + 1, j], best + _SKIP_KERNEL)
            if j < m:
                cost = _match_cost(kind, name, op, commands[j])
                held[i + 1, j + 1] = min(held[i + 1, j + 1], best + cost)
            if j > 0 and held[i, j] < math.inf:
                extended = held[i, j] + _extend_cost(kind, commands[j - 1])
                held[i + 1, j] = min(held[i + 1, j], extended)
    return _trace_back(free, held, kinds, kernels, commands)


def _trace_back(
    free: np.ndarray,
    held: np.ndarray,
    kinds: list[str],
    kernels: Sequence[tuple[str, str]],
    commands: Sequence[Command],
) -> list[int]:
    n, m = len(kernels), len(commands)
    placed = [-1] * n
    i, j, in_held = n, m, bool(held[n, m] < free[n, m])
    while i > 0 or j > 0:
        here = held[i, j] if in_held else free[i, j]
        if in_held:
            kind, (name, op) = kinds[i - 1], kernels[i - 1]
            placed[i - 1] = j - 1
            before = min(free[i - 1, j - 1], held[i - 1, j - 1])
            if math.isclose(before + _match_cost(kind, name, op, commands[j - 1]), here):
                i, j, in_held = i - 1, j - 1, bool(held[i - 1, j - 1] <= free[i - 1, j - 1])
            else:  # extended command j-1
                i, in_held = i - 1, True
            continue
        if j > 0 and math.isclose(min(free[i, j - 1], held[i, j - 1]) + _SKIP_COMMAND, here):
            j, in_held = j - 1, bool(held[i, j - 1] <= free[i, j - 1])
        else:  # kernel i-1 placed nowhere
            i, in_held = i - 1, bool(held[i - 1, j] <= free[i - 1, j])
    return placed


def attribute(kernels: pd.DataFrame, hlo_text: str) -> pd.Series:
    """The ``hlo_op`` of each of one program's kernel events (``name``, ``hlo_op``,
    ``run_id``, ``start_ns``), with those inside command buffers placed on their instruction
    by :func:`align` per run (kernels without a run id form one run)."""
    ops = kernels["hlo_op"].astype(object).copy()
    inside = ops.astype(str).str.startswith(COMMAND_BUFFER)
    if not inside.any():
        return ops
    commands = entry_commands(hlo_text)
    runs = kernels["run_id"].astype("Int64").fillna(-1)
    cache: dict[tuple[tuple[str, str], ...], list[int]] = {}
    for _, run in kernels.groupby(runs, sort=False):
        run = run.sort_values("start_ns", kind="stable")
        sequence = tuple(zip(run["name"].astype(str), run["hlo_op"].astype(str), strict=True))
        if sequence not in cache:
            cache[sequence] = align(sequence, commands)
        for index, (_, op), where in zip(run.index, sequence, cache[sequence], strict=True):
            if op.startswith(COMMAND_BUFFER):
                ops[index] = commands[where].name if where >= 0 else op + UNATTRIBUTED
    return ops
