"""What an executed HLO op computes, from its instruction in the optimized HLO text.

A fusion says what it fused: the opcodes of the computation it calls (XLA:CPU's opaque
``ynn_fusion.17`` holds a ``dot``: ``matmul``); a custom call says which library it calls
(cuBLAS/cuBLASLt ``matmul``, cuDNN ``convolution`` or fused ``attention``). The categories:
``matmul``, ``convolution``, ``attention``, ``reduction``, ``data movement``, ``collective``,
``custom call``, else ``elementwise``. The instruction's ``op_name`` (JAX:
``jit(train_step)/jvp()/attention/dot_general``, named scopes included) comes with it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from xlanb.graphs.hlo_cost import module_facts

#: Custom-call targets, by what the library computes (first match wins).
_LIBRARY = (
    ("fmha", "attention"),
    ("conv", "convolution"),
    ("cublas", "matmul"),
    ("gemm", "matmul"),
    ("matmul", "matmul"),
)
#: Opcodes inside an op, by what they make it (the first present wins).
_OPCODES = (
    (("dot", "ragged-dot"), "matmul"),
    (("convolution",), "convolution"),
    (
        (
            "all-reduce",
            "all-gather",
            "reduce-scatter",
            "all-to-all",
            "collective-permute",
            "all-reduce-start",
            "all-gather-start",
        ),
        "collective",
    ),
    (("reduce", "reduce-window", "sort"), "reduction"),
)
#: Opcodes that only move data.
_MOVES = frozenset(
    {
        "copy",
        "transpose",
        "concatenate",
        "slice",
        "dynamic-slice",
        "dynamic-update-slice",
        "gather",
        "scatter",
        "pad",
        "broadcast",
        "reshape",
        "bitcast",
        "parameter",
        "constant",
        "tuple",
        "get-tuple-element",
        "iota",
    }
)


def category_of(opcodes: Iterable[str], target: str = "") -> str:
    """The category of an op running `opcodes` (a fusion's fused opcodes, else its own), or
    of a custom call to `target`."""
    if target:
        lowered = target.lower()
        return next((kind for marker, kind in _LIBRARY if marker in lowered), "custom call")
    present = set(opcodes)
    for markers, kind in _OPCODES:
        if present & set(markers):
            return kind
    return "data movement" if present and present <= _MOVES else "elementwise"


@functools.lru_cache(maxsize=16)
def instruction_categories(hlo_text: str) -> dict[str, tuple[str, str]]:
    """Instruction name -> (its category, its ``op_name``), for every instruction of an HLO
    module's text (fusions by what they call). From the module's facts the roofline's costs
    come from too (:func:`xlanb.graphs.hlo_cost.module_facts`): a program's text is read once
    for both."""
    facts = module_facts(hlo_text)
    categories: dict[str, tuple[str, str]] = {}
    of_opcode: dict[str, str] = {}
    for name, opcode, callee, target, op_name in facts.instructions:
        if opcode == "custom-call":
            kind = category_of((), target or "custom-call")
        elif opcode == "fusion":
            kind = category_of(_fused(callee, facts.opcodes))
        elif opcode in of_opcode:
            kind = of_opcode[opcode]
        else:
            kind = of_opcode[opcode] = category_of((opcode,))
        categories[name] = (kind, op_name)
    return categories


def _fused(callee: str, opcodes: dict[str, set[str]]) -> set[str]:
    """The opcodes of computation `callee`, less its parameters (a fusion of nothing else is
    a copy)."""
    return opcodes.get(callee, set()) - {"parameter"} or {"copy"}
