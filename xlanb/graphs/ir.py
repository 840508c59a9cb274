"""Lazy-tensor IR text: torch._lazy's ``dump_ir(..., 'text')`` / ``LTC_SAVE_TENSORS_FMT=text``
and torch_xla's ``_get_xla_tensors_text``::

    IR {
      %0 = [Float[8,4]] lazy_tensors::device_data(), device=CPU0, NodeType=...
      %7 = f32[3,8]{1,0} aten::addmm(%6, %5, %3), location=forward@linear.py:134, ROOT=0
    }

torch._lazy writes shapes as ``[Float[8,4]]``, torch_xla in HLO syntax; both become
``f32[8,4]``. ``location=fn@file:line`` (``XLA_IR_DEBUG=1``) gives the source; ``scope=``
(when present) the op_name path.
"""

from __future__ import annotations

import re

from xlanb.formats.text import closing, key_values
from xlanb.graphs.errors import ParseError
from xlanb.graphs.model import Graph, GraphBuilder
from xlanb.graphs.scopes import group_by_op_name
from xlanb.graphs.shapes import torch_shape

KIND = "ir"

_NODE = re.compile(r"\s*(%\d+)\s*=\s*")
_OPERAND = re.compile(r"(%\d+)(?:\.(\d+))?$")
_OP = re.compile(r"([A-Za-z_][\w:.\-]*)\(")
_LOCATION = re.compile(r"(?:(?P<function>.*)@)?(?P<file>[^@]*?):(?P<line>\d+)$")


def looks_like(text: str) -> bool:
    """True for IR text (an ``IR {`` block or ``%N = shape op(...)`` lines)."""
    head = text.lstrip()[:2000]
    return head.startswith("IR {") or bool(re.match(r"\s*%\d+ = (\[|\(|[a-z]+\d*\[)", head))


def parse(text: str) -> Graph:
    """Parse one IR block (the first, when the text holds several) into a :class:`Graph`."""
    builder = GraphBuilder(KIND, text)
    operands: dict[int, list[int]] = {}
    users: dict[int, list[int]] = {}
    opened = closed = False
    for lineno, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped == "IR {":
            if opened:
                break
            opened = True
            continue
        if stripped == "}":
            closed = True
            if opened:
                break
            continue
        if closed:
            break
        _node(builder, raw, lineno, operands, users)
    if not builder.node_count:
        raise ParseError(KIND, 0, "no IR node (`%N = shape op(...)`) found")
    group_by_op_name(builder, list(range(builder.node_count)), "", operands, users)
    return builder.build("IR")


def _node(
    builder: GraphBuilder,
    raw: str,
    lineno: int,
    operands: dict[int, list[int]],
    users: dict[int, list[int]],
) -> None:
    match = _NODE.match(raw)
    if not match:
        raise ParseError(KIND, lineno, "expected an IR node `%N = shape op(operands)`", raw)
    rest = raw[match.end() :]
    if rest[:1] in "[(":
        end = closing(rest, 0)
        if end < 0:
            raise ParseError(KIND, lineno, "unclosed shape", raw)
        shape_text, rest = rest[: end + 1], rest[end + 1 :].lstrip()
    else:
        shape_text, _, rest = rest.partition(" ")
    op_match = _OP.match(rest)
    if not op_match:
        raise ParseError(KIND, lineno, "expected `op(operands)` after the shape", raw)
    close_at = closing(rest, op_match.end() - 1)
    if close_at < 0:
        raise ParseError(KIND, lineno, "unclosed operand list", raw)
    arguments = rest[op_match.end() : close_at]
    tags = (
        key_values(rest[close_at + 1 :].strip().lstrip(",")) if rest[close_at + 1 :].strip() else {}
    )
    file, line, function = "", None, ""
    location = _LOCATION.match(tags.get("location", ""))
    if location:
        file, line, function = location["file"], int(location["line"]), location["function"] or ""
    node_id = match[1]
    index = builder.add_node(
        node_id,
        name=node_id,
        op=op_match[1],
        shape=torch_shape(shape_text),
        op_name=tags.get("scope", ""),
        source_file=file,
        source_line=line,
        source_function=function,
        attrs=tags,
        text=raw.strip(),
        line=lineno,
        output="ROOT" in tags,
    )
    for position, operand in enumerate(a.strip() for a in arguments.split(",") if a.strip()):
        found = _OPERAND.match(operand)
        if not found or found[1] not in builder.index:
            raise ParseError(KIND, lineno, f"operand {operand} is not a node defined above", raw)
        source = builder.index[found[1]]
        builder.add_edge(found[1], node_id, position, "data")
        operands.setdefault(index, []).append(source)
        users.setdefault(source, []).append(index)
