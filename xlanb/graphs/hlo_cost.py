"""FLOPs and bytes of each instruction of an optimized HLO module, counted from its shapes.

XLA:GPU's ``cost_analysis()`` leaves out its library calls (cuBLAS gemm custom calls), so a
program that is mostly matrix products looks idle. Here each instruction the device runs gets
the FLOPs of :func:`xlanb.graphs.cost.estimate` (2*M*N*K for ``dot`` and gemm custom calls;
a fusion, Triton gemm fusions included, the sum over the computation it calls; a ``while``
its body times the ``known_trip_count`` XLA wrote, else once) and the bytes it moves: its
operands' sizes plus its result's (a gemm's workspace left out). Instructions that launch
nothing (parameters, constants, tuples, bitcasts) cost nothing.
"""

from __future__ import annotations

import functools
import json
import math
from typing import Any, NamedTuple

from xlanb.core.gc_pause import no_cyclic_gc
from xlanb.graphs.cost import (
    CONVOLUTION_TARGET_PREFIX,
    GEMM_TARGET_PREFIX,
    estimate,
    reads_attributes,
)
from xlanb.graphs.hlo import computations
from xlanb.graphs.shapes import ELEMENT_BYTES, leaves

#: Instructions that launch no kernel and move no data of their own.
NO_KERNEL = frozenset({"parameter", "constant", "tuple", "get-tuple-element", "bitcast"})
#: Ops that call computations whose instructions run on each call ...
_CALLERS = frozenset({"fusion", "call", "while", "conditional"})
#: ... and the attributes naming those computations.
_CALLING = ("calls", "to_apply", "body", "true_computation", "false_computation")


class OpCost(NamedTuple):
    """FLOPs and bytes moved (operands read + result written) of one instruction's run."""

    flops: float
    bytes: float


class ModuleFacts(NamedTuple):
    """What the roofline and the ops' categories read of one module's text, from one read of
    it (:func:`module_facts`)."""

    #: Instruction name -> its :class:`OpCost` (see :func:`op_costs`).
    costs: dict[str, OpCost]
    #: (lhs element type, FLOPs) of each contraction whose FLOPs are known.
    contractions: list[tuple[str, float]]
    #: The entry computation's instruction names (empty without an entry).
    entry: list[str]
    #: Every instruction's (name, opcode, first computation it ``calls``, its
    #: ``custom_call_target``, its ``op_name``).
    instructions: list[tuple[str, str, str, str, str]]
    #: Computation name -> the opcodes of its instructions.
    opcodes: dict[str, set[str]]


@functools.lru_cache(maxsize=16)
def module_facts(hlo_text: str) -> ModuleFacts:
    """The :class:`ModuleFacts` of an optimized HLO text, read once: the instructions read
    are not kept (a big module's take many times what is drawn from them), what is drawn is
    (a program's categories, costs and products are asked for at the end of every cell that
    runs it)."""
    with no_cyclic_gc():  # an object or more per instruction, no cycles
        found = computations(hlo_text)
        entry = next((c for c in found if c.entry), None)
        return ModuleFacts(
            _op_costs(found),
            _contractions(found),
            [instruction.name for instruction in entry.instructions] if entry else [],
            [
                (
                    instruction.name,
                    instruction.op,
                    instruction.attrs.get("calls", "").split(",")[0].strip().lstrip("%"),
                    instruction.attrs.get("custom_call_target", "").strip('"'),
                    instruction.metadata.get("op_name", ""),
                )
                for computation in found
                for instruction in computation.instructions
            ],
            {c.name: {instruction.op for instruction in c.instructions} for c in found},
        )


def op_costs(hlo_text: str) -> dict[str, OpCost]:
    """Instruction name -> its :class:`OpCost`, for the instructions of every computation
    but those a fusion calls (their cost is the fusion's); NaN FLOPs where the shapes do not
    tell. Cached (:func:`module_facts`): the rows and the executions ask for the same module."""
    return module_facts(hlo_text).costs


def _op_costs(found: list[Any]) -> dict[str, OpCost]:
    by_name = {computation.name: computation for computation in found}
    fused = {
        callee.lstrip("%")
        for computation in found
        for instruction in computation.instructions
        if instruction.op == "fusion"
        for callee in instruction.attrs.get("calls", "").split(",")
    }
    flops_of = _ComputationFlops(by_name)
    costs: dict[str, OpCost] = {}
    for computation in found:
        if computation.name in fused:
            continue
        shapes = {instruction.name: instruction.shape for instruction in computation.instructions}
        for instruction in computation.instructions:
            if instruction.op in NO_KERNEL:
                costs[instruction.name] = OpCost(0.0, 0.0)
                continue
            operands = _operand_shapes(instruction, shapes)
            flops = flops_of.instruction(instruction, operands)
            costs[instruction.name] = OpCost(flops, _moved_bytes(instruction, operands))
    return costs


def program_cost(hlo_text: str) -> OpCost:
    """FLOPs and bytes of one run of the module: the sum over its entry computation."""
    facts = module_facts(hlo_text)
    if not facts.entry:
        return OpCost(math.nan, math.nan)
    flops = moved = 0.0
    for name in facts.entry:
        cost = facts.costs.get(name)
        if cost is not None and not math.isnan(cost.flops):
            flops += cost.flops
            moved += cost.bytes
    return OpCost(flops, moved)


def matmul_flops(hlo_text: str) -> float:
    """FLOPs of one run's matrix products and convolutions (``dot``, gemm and convolution
    custom calls, the dots inside fusions), each counted once."""
    return sum(flops for _, flops in module_facts(hlo_text).contractions)


def matmul_dtype(hlo_text: str) -> str:
    """The element type of the operands of the module's matrix products and convolutions,
    weighted by their FLOPs (``bf16``, ``f32``); ``""`` without any."""
    weights: dict[str, float] = {}
    for dtype, flops in module_facts(hlo_text).contractions:
        weights[dtype] = weights.get(dtype, 0.0) + flops
    return max(weights, key=lambda dtype: weights[dtype]) if weights else ""


def _contractions(found: list[Any]) -> list[tuple[str, float]]:
    """(lhs element type, FLOPs) of each contraction of the module whose FLOPs are known."""
    contractions = []
    for computation in found:
        shapes = {instruction.name: instruction.shape for instruction in computation.instructions}
        for instruction in computation.instructions:
            if not _is_contraction(instruction):
                continue
            operands = _operand_shapes(instruction, shapes)
            flops = estimate(instruction.op, instruction.shape, instruction.attrs, operands)[0]
            lhs = leaves(operands[0]) if operands else []
            if lhs and not math.isnan(flops):
                contractions.append((lhs[0][0], flops))
    return contractions


def _is_contraction(instruction: Any) -> bool:
    if instruction.op in ("dot", "convolution"):
        return True
    target = instruction.attrs.get("custom_call_target", "").strip('"')
    return instruction.op == "custom-call" and (
        target.startswith(GEMM_TARGET_PREFIX) or target.startswith(CONVOLUTION_TARGET_PREFIX)
    )


class _ComputationFlops:
    """FLOPs of instructions, with those of called computations summed (memoized)."""

    def __init__(self, by_name: dict[str, Any]) -> None:
        self.by_name = by_name
        self.totals: dict[str, float] = {}

    def instruction(self, instruction: Any, operands: list[str]) -> float:
        op = instruction.op
        if op not in _CALLERS:
            if reads_attributes(op):
                return estimate(op, instruction.shape, instruction.attrs, operands)[0]
            return _plain_flops(op, instruction.shape, operands[0] if operands else None)
        called = [
            name.strip().lstrip("%")
            for key in _CALLING
            if key in instruction.attrs
            for name in instruction.attrs[key].strip("{}").split(",")
        ]
        if called:
            inner = [self.computation(name) for name in called if name in self.by_name]
            if instruction.op == "conditional":
                return max(inner, default=0.0)
            return sum(inner) * (_trip_count(instruction) if instruction.op == "while" else 1)
        if instruction.op == "conditional" and "branch_computations" in instruction.attrs:
            names = instruction.attrs["branch_computations"].strip("{}").split(",")
            return max((self.computation(n.strip().lstrip("%")) for n in names), default=0.0)
        return estimate(instruction.op, instruction.shape, instruction.attrs, operands)[0]

    def computation(self, name: str) -> float:
        if name not in self.totals:
            self.totals[name] = 0.0  # a recursive call counts once
            computation = self.by_name[name]
            shapes = {i.name: i.shape for i in computation.instructions}
            total = 0.0
            for instruction in computation.instructions:
                if instruction.op in NO_KERNEL:
                    continue
                flops = self.instruction(instruction, _operand_shapes(instruction, shapes))
                total += 0.0 if math.isnan(flops) else flops
            self.totals[name] = total
        return self.totals[name]


def _trip_count(instruction: Any) -> float:
    try:
        config = json.loads(instruction.attrs.get("backend_config", ""))
        return float(config["known_trip_count"]["n"])
    except (ValueError, KeyError, TypeError):
        return 1.0


def _operand_shapes(instruction: Any, shapes: dict[str, str]) -> list[str]:
    """The shapes the operands read: element N of a tuple for ``name#N``."""
    found = []
    for position, operand in enumerate(instruction.operands):
        shape = shapes.get(operand, "")
        element = instruction.elements[position] if position < len(instruction.elements) else -1
        if element >= 0:
            parts = leaves(shape)
            shape = (
                f"{parts[element][0]}[{','.join(map(str, parts[element][1]))}]"
                if (element < len(parts) and None not in parts[element][1])
                else ""
            )
        found.append(shape)
    return found


def _moved_bytes(instruction: Any, operands: list[str]) -> float:
    """Operands' bytes plus the result's (a library call's workspace, its last tuple element
    of type s8/u8, left out)."""
    target = instruction.attrs.get("custom_call_target", "").strip('"')
    if target.startswith(("__cublas$", "__cudnn$")):
        result = leaves(instruction.shape)
        if len(result) > 1 and result[-1][0] in ("s8", "u8"):
            result = result[:-1]
        total = _size(result)
    else:
        total = _shape_bytes(instruction.shape)
    for shape in operands:
        total += _shape_bytes(shape)
    return total


@functools.lru_cache(maxsize=65536)
def _shape_bytes(shape: str) -> float:
    """Bytes of all the leaves of `shape` (NaN where a dimension is unknown)."""
    return _size(leaves(shape))


@functools.lru_cache(maxsize=65536)
def _plain_flops(op: str, shape: str, first_operand: str | None) -> float:
    """FLOPs of an op whose estimate reads no attribute (a function of its op, its shape and
    its first operand's shape: many instructions share them)."""
    return estimate(op, shape, {}, [first_operand] if first_operand is not None else [])[0]


def _size(found: list[tuple[str, list[int | None]]]) -> float:
    total = 0.0
    for dtype, dims in found:
        if None in dims:
            return math.nan
        total += ELEMENT_BYTES.get(dtype, math.nan) * math.prod(d or 0 for d in dims)
    return total
