"""XLA:GPU kernels inside command buffers (CUDA graphs), placed on their HLO instructions.

Inside a command buffer every kernel event says ``hlo_op=command_buffer_N``; its *name* is
the kernel: XLA's own kernels are named after a fusion (``.N`` written ``_N``; identical
fusions share the first one's kernel), library calls by cuBLAS/cuDNN (``sm90_xmma_gemm...``),
copies ``memcpy*`` and memsets ``Memset``. The optimized HLO's entry computation lists the
instructions in the order they run, so each run's kernels are aligned, in order, with that
list (an edit-distance alignment, a row of its table at a time in numpy; greedy in order for
runs too long for the table; kept for the next capture's runs): a fusion kernel goes to a
fusion of its name (else of its family), a library kernel to a custom call (several kernels of
one call stay on it), a copy to a copy. A kernel that cannot be placed is
``command_buffer_N (unattributed)``, never another op's.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from xlanb.analysis.trace_summary import starting_with

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

# alignment costs, whole numbers so that sums are exact: a kernel no instruction takes costs
# more than any placement
_SKIP_COMMAND, _SKIP_KERNEL, _FAMILY, _MEMSET, _EXTEND = 10.0, 100.0, 3.0, 2.0, 1.0
#: Above this many kernel x command cells a run is placed greedily (:func:`_align_greedy`):
#: the alignment's tables would not fit in memory.
ALIGN_CELLS = 4_000_000
#: How far ahead of its last placement a greedy kernel looks for its command.
_GREEDY_LOOKAHEAD = 64
#: Alignments kept across captures: a steady cell's runs launch the kernels an earlier
#: capture's runs of the same program did.
_ALIGNED_KEPT = 64


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


class _Costs(NamedTuple):
    """What aligning one run's kernels with a program's commands costs, as arrays."""

    #: [i, j]: kernel i being the first (or only) kernel of command j.
    match: np.ndarray
    #: [i, j]: kernel i being one more kernel of command j (a library call runs several).
    extend: np.ndarray


def _costs(kernels: Sequence[tuple[str, str]], commands: Sequence[Command]) -> _Costs:
    opcodes = np.array([command.opcode for command in commands], dtype=object)
    fusion, copy = opcodes == "fusion", opcodes == "copy"
    custom_call = opcodes == "custom-call"
    families = {family(command.name) for command in commands if command.opcode == "fusion"}
    codes: dict[str, int] = {}

    def coded(names: Sequence[str]) -> np.ndarray:
        return np.fromiter((codes.setdefault(name, len(codes)) for name in names), np.int64)

    names = coded([command.name for command in commands])
    kernel_names = coded([command.name.replace(".", "_") for command in commands])
    command_families = coded([family(command.name) for command in commands])
    n, m = len(kernels), len(commands)
    match = np.full((n, m), math.inf)
    extend = np.full((n, m), math.inf)
    kinds = np.array([_kernel_kind(name, op, families) for name, op in kernels], dtype=object)
    for kind in ("anchored", "xla", "copy", "memset", "library"):
        rows = np.flatnonzero(kinds == kind)
        if not len(rows):
            continue
        picked = [kernels[i] for i in rows.tolist()]
        if kind == "anchored":
            ops = coded([op for _, op in picked])[:, None]
            match[rows] = np.where(names[None, :] == ops, 0.0, math.inf)
        elif kind == "xla":
            exact = kernel_names[None, :] == coded([name for name, _ in picked])[:, None]
            same = command_families[None, :] == coded([family(name) for name, _ in picked])[:, None]
            match[rows] = np.where(fusion & exact, 0.0, np.where(fusion & same, _FAMILY, math.inf))
        elif kind == "copy":
            match[rows] = np.where(copy, 0.0, math.inf)
        elif kind == "memset":
            match[rows] = np.where(custom_call | fusion, _MEMSET, math.inf)
            extend[rows] = np.where(custom_call, _EXTEND, math.inf)
        else:
            match[rows] = np.where(custom_call, 0.0, math.inf)
            extend[rows] = np.where(custom_call, _EXTEND, math.inf)
    return _Costs(match, extend)


def align(kernels: Sequence[tuple[str, str]], commands: Sequence[Command]) -> list[int]:
    """For each kernel (name, hlo_op) of one run, in run order, the index of the command it
    belongs to, or -1: the cheapest in-order alignment (greedy past :data:`ALIGN_CELLS`)."""
    if not kernels:
        return []
    if len(kernels) * (len(commands) + 1) > ALIGN_CELLS:
        return _align_greedy(_costs(kernels, commands))
    return list(_aligned(tuple(kernels), tuple(commands)))


@functools.lru_cache(maxsize=_ALIGNED_KEPT)
def _aligned(kernels: tuple, commands: tuple) -> tuple[int, ...]:
    return tuple(_align_tables(_costs(kernels, commands)))


def _align_tables(costs: _Costs) -> list[int]:
    """The dynamic programme, a row (kernel) at a time in numpy.

    free[i, j]: i kernels and j commands used, command j-1 took no kernel i-1; held[i, j]:
    kernel i-1 went to command j-1 (which may take more). Along a row, skipping commands adds
    up: best[j] = min over k <= j of (a[k] + SKIP * (j - k)), a running minimum."""
    match, extend = costs
    n, m = match.shape
    free = np.full((n + 1, m + 1), math.inf)
    held = np.full((n + 1, m + 1), math.inf)
    steps = np.arange(m + 1) * _SKIP_COMMAND
    base = np.full(m + 1, math.inf)
    base[0] = 0.0
    for i in range(n + 1):
        best = np.minimum.accumulate(np.minimum(base, held[i]) - steps) + steps
        free[i] = base
        free[i, 1:] = np.minimum(base[1:], best[:-1] + _SKIP_COMMAND)
        if i == n:
            break
        base = best + _SKIP_KERNEL
        held[i + 1, 1:] = np.minimum(best[:-1] + match[i], held[i, 1:] + extend[i])
    return _trace_back(free, held, match)


def _trace_back(free: np.ndarray, held: np.ndarray, match: np.ndarray) -> list[int]:
    n, m = match.shape
    placed = [-1] * n
    i, j, in_held = n, m, bool(held[n, m] < free[n, m])
    while i > 0 or j > 0:
        here = held[i, j] if in_held else free[i, j]
        if in_held:
            placed[i - 1] = j - 1
            before = min(free[i - 1, j - 1], held[i - 1, j - 1])
            if before + match[i - 1, j - 1] == here:
                i, j, in_held = i - 1, j - 1, bool(held[i - 1, j - 1] <= free[i - 1, j - 1])
            else:  # extended command j-1
                i, in_held = i - 1, True
            continue
        if j > 0 and min(free[i, j - 1], held[i, j - 1]) + _SKIP_COMMAND == here:
            j, in_held = j - 1, bool(held[i, j - 1] <= free[i, j - 1])
        else:  # kernel i-1 placed nowhere
            i, in_held = i - 1, bool(held[i - 1, j] <= free[i - 1, j])
    return placed


def _align_greedy(costs: _Costs) -> list[int]:
    """In order, each kernel on the cheapest command among the next
    :data:`_GREEDY_LOOKAHEAD` (the nearest of equals), else one more kernel of the command
    before it, else nowhere: a run too long for the tables."""
    match, extend = costs
    n, m = match.shape
    placed = [-1] * n
    j = 0  # the first command not yet taken
    for i in range(n):
        window = match[i, j : j + _GREEDY_LOOKAHEAD]
        if j > 0 and placed[i - 1] == j - 1 and extend[i, j - 1] < math.inf:
            placed[i] = j - 1
        elif len(window) and window.min() < math.inf:
            j += int(window.argmin())
            placed[i] = j
            j += 1
    return placed


def attribute(kernels: pd.DataFrame, hlo_text: str) -> pd.Series:
    """The ``hlo_op`` of each of one program's kernel events (``name``, ``hlo_op``,
    ``run_id``, ``start_ns``), with those inside command buffers placed on their instruction
    by :func:`align` per run (kernels without a run id form one run)."""
    ops = kernels["hlo_op"].astype(object).to_numpy(copy=True)
    if not starting_with(kernels["hlo_op"], COMMAND_BUFFER).any():
        return pd.Series(ops, index=kernels.index, dtype=object)
    names = kernels["name"].astype(object).to_numpy()
    commands = entry_commands(hlo_text)
    runs = kernels["run_id"].astype("Int64").fillna(-1).to_numpy(dtype=np.int64)
    starts = kernels["start_ns"].to_numpy()
    order = np.lexsort((starts, runs))  # each run's kernels, in time order
    bounds = np.flatnonzero(np.diff(runs[order])) + 1
    cache: dict[tuple[tuple[str, str], ...], list[int]] = {}
    for positions in np.split(order, bounds):
        sequence = tuple(zip(names[positions].astype(str), ops[positions].astype(str), strict=True))
        if sequence not in cache:
            cache[sequence] = align(sequence, commands)
        for position, (_, op), where in zip(
            positions.tolist(), sequence, cache[sequence], strict=True
        ):
            if op.startswith(COMMAND_BUFFER):
                ops[position] = commands[where].name if where >= 0 else op + UNATTRIBUTED
    return pd.Series(ops, index=kernels.index, dtype=object)
