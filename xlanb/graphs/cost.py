"""Per-node cost estimates from shapes alone (FLOPs and output bytes), for colouring a graph by
cost and for the roofline (:mod:`xlanb.graphs.hlo_cost`). They are estimates: 2*M*N*K for
contractions (HLO ``dot`` and XLA:GPU's cuBLAS/cuBLASLt gemm custom calls, whose dimension
numbers are in their ``backend_config``), 2*output*fan-in for convolutions (cuDNN's convolution
custom calls too), one FLOP per output element for elementwise ops, one per input element for
reductions, zero for data movement."""

from __future__ import annotations

import functools
import json
import math
import re

from xlanb.graphs.ops import (
    CONTRACTIONS,
    CONVOLUTIONS,
    CUSTOM_CALLS,
    FREE,
    REDUCING_COLLECTIVES,
    REDUCTIONS,
    base_op,
)
from xlanb.graphs.shapes import ELEMENT_BYTES, element_count, leaves


def estimate(
    op: str, shape: str, attrs: dict[str, str], operand_shapes: list[str]
) -> tuple[float, float]:
    """(FLOPs, output bytes) of one node; NaN where the shapes do not tell."""
    nbytes, out, first_bytes = _shape_cost(shape)
    name = base_op(op)
    if name in FREE or name.startswith("prim"):
        return 0.0, nbytes
    if name in CONTRACTIONS:
        return 2.0 * out * _contraction_size(name, attrs, operand_shapes), nbytes
    if name in CONVOLUTIONS:
        return 2.0 * out * _kernel_fan_in(attrs, operand_shapes), nbytes
    if name in CUSTOM_CALLS:
        target = attrs.get("custom_call_target", "").strip('"')
        if target.startswith(GEMM_TARGET_PREFIX):
            return 2.0 * out * _gemm_contraction_size(attrs, operand_shapes), first_bytes
        if target.startswith(CONVOLUTION_TARGET_PREFIX):
            return 2.0 * out * _kernel_fan_in(attrs, operand_shapes), first_bytes
    if (name in REDUCTIONS or name in REDUCING_COLLECTIVES) and operand_shapes:
        return element_count(operand_shapes[0]), nbytes
    return out, nbytes


@functools.lru_cache(maxsize=4096)
def reads_attributes(op: str) -> bool:
    """Whether :func:`estimate` of ``op`` reads its attributes (contractions, convolutions,
    custom calls); the others' estimate is a function of the op, its shape and its first
    operand's shape."""
    name = base_op(op)
    return name in CONTRACTIONS or name in CONVOLUTIONS or name in CUSTOM_CALLS


@functools.lru_cache(maxsize=4096)
def _shape_cost(shape: str) -> tuple[float, float, float]:
    """(bytes of all leaves, elements of the first, bytes of the first) of a result shape."""
    found = leaves(shape)
    out = _elements(found[0][1]) if found else math.nan
    return _bytes(found), out, _first_bytes(found)


#: ``custom_call_target`` prefixes of XLA:GPU's library calls: cuBLAS/cuBLASLt matrix products
#: (``__cublas$gemm``, ``__cublas$lt$matmul``, ``__cublas$lt$matmul$f8``) and cuDNN
#: convolutions (``__cudnn$convForward``, ``__cudnn$convBackwardInput``, ...). Their results
#: are tuples of (product, workspace): only the product counts.
GEMM_TARGET_PREFIX = "__cublas$"
CONVOLUTION_TARGET_PREFIX = "__cudnn$conv"


def _gemm_contraction_size(attrs: dict[str, str], operand_shapes: list[str]) -> float:
    """K of a gemm custom call: its lhs operand's contracting dimensions, as its
    ``backend_config`` (``gemm_backend_config.dot_dimension_numbers``) names them."""
    try:
        config = json.loads(attrs.get("backend_config", ""))
        numbers = config.get("gemm_backend_config", config)["dot_dimension_numbers"]
        axes = [int(axis) for axis in numbers["lhs_contracting_dimensions"]]
    except (ValueError, KeyError, TypeError, AttributeError):
        return math.nan
    lhs = _dims(operand_shapes[0]) if operand_shapes else []
    if not axes or any(axis >= len(lhs) or lhs[axis] is None for axis in axes):
        return math.nan
    return float(math.prod(lhs[axis] or 0 for axis in axes))


def _first_bytes(found: list[tuple[str, list[int | None]]]) -> float:
    return _bytes(found[:1])


def _elements(dims: list[int | None]) -> float:
    if any(d is None for d in dims):
        return math.nan
    return float(math.prod(d for d in dims if d is not None))


def _bytes(found: list[tuple[str, list[int | None]]]) -> float:
    if not found:
        return math.nan
    total = 0.0
    for dtype, dims in found:
        size = ELEMENT_BYTES.get(dtype)
        if size is None:
            return math.nan
        total += size * _elements(dims)
    return total


def _dims(shape: str) -> list[int | None]:
    found = leaves(shape)
    return found[0][1] if found else []


def _contraction_size(name: str, attrs: dict[str, str], operand_shapes: list[str]) -> float:
    if not operand_shapes:
        return math.nan
    lhs_index = 1 if name in ("addmm", "baddbmm") else 0
    if lhs_index >= len(operand_shapes):
        return math.nan
    lhs = _dims(operand_shapes[lhs_index])
    spec = attrs.get("lhs_contracting_dims") or attrs.get("contracting_dims", "")
    axes = [int(a) for a in re.findall(r"\d+", spec.split("x")[0])] if spec else []
    if not axes:
        axes = [len(lhs) - 1] if lhs else []
    size = 1.0
    for axis in axes:
        if axis >= len(lhs) or lhs[axis] is None:
            return math.nan
        size *= lhs[axis]  # type: ignore[operator]
    return size


def _kernel_fan_in(attrs: dict[str, str], operand_shapes: list[str]) -> float:
    if len(operand_shapes) < 2:
        return math.nan
    kernel = _dims(operand_shapes[1])
    if not kernel or any(d is None for d in kernel):
        return math.nan
    out_axis = 0  # torch: OIHW
    labels = attrs.get("dim_labels", "")
    if "_" in labels:  # HLO: b01f_01io->b01f
        kernel_labels = labels.split("_")[1].split("->")[0]
        out_axis = kernel_labels.find("o")
    numbers = attrs.get("dim_numbers", "")
    if "x" in numbers:  # StableHLO: [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]
        kernel_axes = re.findall(r"\w+", numbers.split("x")[1].split("->")[0])
        out_axis = kernel_axes.index("o") if "o" in kernel_axes else 0
    if out_axis < 0 or out_axis >= len(kernel):
        return math.nan
    return math.prod(d for d in kernel if d is not None) / max(kernel[out_axis] or 1, 1)
