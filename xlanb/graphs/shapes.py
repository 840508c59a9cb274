"""Shapes in one spelling: every parser writes result types the way HLO does (``f32[3,8]``,
tuples as ``(f32[2], s32[])``), so search, diff and cost work the same for every format."""

from __future__ import annotations

import functools
import math
import re

from xlanb.formats.text import split_top

_LAYOUT = re.compile(r"\{[^{}]*\}")
_COMMENT = re.compile(r"/\*.*?\*/")
_LEAF = re.compile(r"([a-z]+[0-9a-z_]*)\[([^\]]*)\]")

#: Bytes per element of HLO element types (sub-byte types count as fractions).
ELEMENT_BYTES: dict[str, float] = {
    "pred": 1,
    "s2": 0.25,
    "u2": 0.25,
    "s4": 0.5,
    "u4": 0.5,
    "s8": 1,
    "u8": 1,
    "s16": 2,
    "u16": 2,
    "s32": 4,
    "u32": 4,
    "s64": 8,
    "u64": 8,
    "f16": 2,
    "bf16": 2,
    "f32": 4,
    "f64": 8,
    "c64": 8,
    "c128": 16,
    "token": 0,
    "f8e4m3fn": 1,
    "f8e5m2": 1,
    "f8e4m3": 1,
    "f8e4m3fnuz": 1,
    "f8e5m2fnuz": 1,
    "f8e4m3b11fnuz": 1,
    "f4e2m1fn": 0.5,
}

_TORCH_DTYPES = {
    "Float": "f32",
    "Double": "f64",
    "Half": "f16",
    "BFloat16": "bf16",
    "Long": "s64",
    "Int": "s32",
    "Short": "s16",
    "Char": "s8",
    "Byte": "u8",
    "Bool": "pred",
    "ComplexFloat": "c64",
    "ComplexDouble": "c128",
}

_MLIR_ELEMENTS = {"i1": "pred", "index": "s64", "complex<f32>": "c64", "complex<f64>": "c128"}


@functools.lru_cache(maxsize=4096)
def hlo_shape(text: str) -> str:
    """``f32[3,8]{1,0}`` -> ``f32[3,8]``: layouts and ``/*index=N*/`` comments dropped."""
    text = _COMMENT.sub("", text.strip())
    while "{" in text:
        stripped = _LAYOUT.sub("", text)
        if stripped == text:
            break
        text = stripped
    return re.sub(r"\s+", " ", text).replace("( ", "(").replace(" )", ")")


def torch_shape(text: str) -> str:
    """torch._lazy's ``[Float[8,4]]`` (a list of shapes) -> ``f32[8,4]``; several -> a tuple;
    a torch_xla IR shape (already HLO syntax) loses its layout."""
    text = text.strip()
    if not text.startswith("["):
        return hlo_shape(text)
    inner = text[1:-1] if text.endswith("]") else text[1:]
    leaves = []
    for match in re.finditer(r"([A-Za-z0-9]+)\[([^\]]*)\]", inner):
        dtype = _TORCH_DTYPES.get(match[1], match[1].lower())
        leaves.append(f"{dtype}[{match[2].replace(' ', '')}]")
    if len(leaves) == 1:
        return leaves[0]
    return "(" + ", ".join(leaves) + ")"


def mlir_type(text: str) -> str:
    """An MLIR type (``tensor<2x4xf32>``, ``tensor<f32>``, ``!stablehlo.token``, a type list
    ``tensor<i32>, tensor<2x4xf32>``) -> ``f32[2,4]`` / ``(s32[], f32[2,4])``."""
    parts = split_top(text.strip(), angle=True)
    if len(parts) == 1:
        part = parts[0]
        if part.startswith("(") and part.endswith(")"):
            inner = split_top(part[1:-1], angle=True)
            return "(" + ", ".join(_mlir_leaf(p) for p in inner) + ")"
        return _mlir_leaf(part)
    return "(" + ", ".join(_mlir_leaf(p) for p in parts) + ")"


def _mlir_leaf(text: str) -> str:
    text = text.strip()
    if text.startswith("tensor<") and text.endswith(">"):
        # drop an encoding after a top-level comma
        body = next(iter(split_top(text[7:-1], angle=True)), "")
        pieces = _split_dims(body)
        element = _mlir_element(pieces[-1])
        dims = ",".join("?" if d == "?" else d for d in pieces[:-1])
        return f"{element}[{dims}]"
    if text.startswith("tuple<") and text.endswith(">"):
        return mlir_type("(" + text[6:-1] + ")")
    if "token" in text:
        return "token[]"
    if re.fullmatch(r"[a-z]+[0-9a-z_]*", text):
        return f"{_mlir_element(text)}[]"
    return text


def _split_dims(body: str) -> list[str]:
    # "2x4xf32" -> ["2", "4", "f32"]; the element type itself may hold an "x" (complex<f32>)
    pieces: list[str] = []
    depth, start = 0, 0
    for index, char in enumerate(body):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "x" and depth == 0 and re.fullmatch(r"\?|\d+", body[start:index]):
            pieces.append(body[start:index])
            start = index + 1
    pieces.append(body[start:])
    return pieces


def _mlir_element(text: str) -> str:
    text = text.strip()
    if text in _MLIR_ELEMENTS:
        return _MLIR_ELEMENTS[text]
    match = re.fullmatch(r"(u?i)(\d+)", text)
    if match:
        return ("u" if match[1] == "ui" else "s") + match[2]
    return text.lower().replace("float8", "f8")


def leaves(shape: str) -> list[tuple[str, list[int | None]]]:
    """The array leaves of a shape:
    ``(f32[2,?], s32[])`` -> ``[("f32", [2, None]), ("s32", [])]``."""
    return [(dtype, list(dims)) for dtype, dims in leaf_tuples(shape)]


@functools.lru_cache(maxsize=4096)
def leaf_tuples(shape: str) -> tuple[tuple[str, tuple[int | None, ...]], ...]:
    """:func:`leaves` as tuples, cached per shape (a big module repeats a few shapes)."""
    found = []
    for match in _LEAF.finditer(shape):
        dims: list[int | None] = []
        for dim in match[2].split(","):
            dim = dim.strip().lstrip("<=")
            if not dim:
                continue
            dims.append(int(dim) if dim.isdigit() else None)
        found.append((match[1], tuple(dims)))
    return tuple(found)


@functools.lru_cache(maxsize=4096)
def dtype_of(shape: str) -> str:
    """Element type of the first leaf (``""`` when the shape names none)."""
    match = _LEAF.search(shape)
    return match[1] if match else ""


def element_count(shape: str) -> float:
    """Elements of the first leaf; NaN when a dimension is unknown or there is no leaf."""
    found = leaves(shape)
    if not found:
        return math.nan
    dims = found[0][1]
    if any(d is None for d in dims):
        return math.nan
    return float(math.prod(d for d in dims if d is not None))
