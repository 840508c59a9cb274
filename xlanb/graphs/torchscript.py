"""TorchScript graphs: torch._lazy's TorchScript backend (``dump_ir(..., 'backend')``,
``LTC_SAVE_TENSORS_FMT=backend``) and ``torch.jit`` graphs::

    graph(%p0 : Tensor,
          %p1 : Tensor):
      %2 : Tensor = aten::detach_copy[source="/x.py <module> 10"](%p1)
      %7 : Tensor = prim::If(%c) # /x.py:6:4
        block0():
          -> (%2)
      return (%7)

Blocks of ``prim::If``/``prim::Loop`` become scopes under their node.
"""

from __future__ import annotations

import re

from xlanb.formats.text import closing, split_top, unquote
from xlanb.graphs.errors import ParseError
from xlanb.graphs.model import Graph, GraphBuilder
from xlanb.graphs.shapes import torch_shape

KIND = "torchscript"

_VALUE = re.compile(r"%[\w.]+")
_OP = re.compile(r"([A-Za-z_][\w:.]*)")
_BLOCK = re.compile(r"block(\d+)\((.*)\):$")
_SOURCE_ATTR = re.compile(r"(?P<file>.+) (?P<function>\S+) (?P<line>\d+)$")
_SOURCE_COMMENT = re.compile(r"(?P<file>[^\s:]+):(?P<line>\d+)(?::\d+)?")


def looks_like(text: str) -> bool:
    """True for a TorchScript graph (``graph(%x : Tensor, ...):``)."""
    return bool(re.match(r"\s*graph\s*\(\s*(%|\))", text))


def parse(text: str) -> Graph:
    """Parse a TorchScript graph into a :class:`Graph`."""
    return _Reader(text).read()


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.builder = GraphBuilder(KIND, text)
        self.values: dict[str, str] = {}  # value name -> node id
        self.blocks: list[tuple[int, str, str]] = []  # (indent, scope, anchor node id)

    def read(self) -> Graph:
        lines = self.text.splitlines()
        lineno = self._header(lines)
        for number in range(lineno, len(lines)):
            raw = lines[number]
            stripped = raw.strip()
            if not stripped:
                continue
            indent = len(raw) - len(raw.lstrip())
            while self.blocks and indent <= self.blocks[-1][0]:
                self.blocks.pop()
            self._line(stripped, number + 1, indent, raw)
        return self.builder.build("graph")

    def _header(self, lines: list[str]) -> int:
        start = next((i for i, line in enumerate(lines) if line.strip()), 0)
        header = ""
        for number in range(start, len(lines)):
            header += lines[number].strip() + " "
            if header.rstrip().endswith("):"):
                inside = header[header.index("(") + 1 : header.rstrip().rindex(")")]
                for argument in split_top(inside):
                    name = argument.split(":")[0].strip()
                    if not _VALUE.fullmatch(name):
                        raise ParseError(
                            KIND, number + 1, f"graph input {argument!r}", lines[number]
                        )
                    self.values[name] = name
                    self.builder.add_node(
                        name,
                        name=name,
                        op="input",
                        shape=_type(argument),
                        attrs=_type_attr(argument),
                        text=argument,
                        line=number + 1,
                    )
                return number + 1
        raise ParseError(
            KIND,
            start + 1,
            "graph header `graph(...):` is never closed",
            lines[start] if lines else "",
        )

    @property
    def scope(self) -> str:
        return self.blocks[-1][1] if self.blocks else ""

    def _line(self, stripped: str, lineno: int, indent: int, raw: str) -> None:
        builder = self.builder
        if stripped.startswith("return"):
            for value in _VALUE.findall(stripped):
                if value in self.values:
                    builder.columns["output"][builder.index[self.values[value]]] = True
            return
        if stripped.startswith("->"):
            anchor = self.blocks[-1][2] if self.blocks else ""
            for value in _VALUE.findall(stripped):
                if value in self.values and anchor:
                    builder.add_edge(self.values[value], anchor, 0, "root")
            return
        block = _BLOCK.match(stripped)
        if block:
            self._block(block, lineno, indent, raw)
            return
        self._node(stripped, lineno, raw)

    def _block(self, block: re.Match[str], lineno: int, indent: int, raw: str) -> None:
        builder = self.builder
        if not builder.node_count:
            raise ParseError(KIND, lineno, "block outside any node", raw)
        anchor = {column: values[-1] for column, values in builder.columns.items()}
        anchored = next((s["id"] for s in builder.scopes if s["node"] == anchor["id"]), None)
        if anchored is None:
            anchored = builder.add_scope(
                anchor["id"],
                parent=anchor["scope"],
                label=f"{anchor['op']} {anchor['name']}",
                kind="block",
                node=anchor["id"],
            )
        scope = builder.add_scope(
            f"{anchored}/block{block[1]}", parent=anchored, label=f"block{block[1]}", kind="block"
        )
        self.blocks.append((indent, scope, anchor["id"]))
        for argument in split_top(block[2]):
            name = argument.split(":")[0].strip()
            if _VALUE.fullmatch(name):
                self.values[name] = name
                builder.add_node(
                    name,
                    name=name,
                    op="input",
                    shape=_type(argument),
                    attrs=_type_attr(argument),
                    scope=scope,
                    text=argument,
                    line=lineno,
                )

    def _node(self, stripped: str, lineno: int, raw: str) -> None:
        code, _, comment = stripped.partition(" # ")
        outputs_text, eq, expression = code.partition(" = ")
        if not eq:
            outputs_text, expression = "", code
        outputs = [part.split(":")[0].strip() for part in split_top(outputs_text)]
        op_match = _OP.match(expression)
        if not op_match or any(not _VALUE.fullmatch(o) for o in outputs):
            raise ParseError(KIND, lineno, "expected `%out : Type = op[attrs](operands)`", raw)
        position = op_match.end()
        attrs: dict[str, str] = {}
        if expression[position : position + 1] == "[":
            end = closing(expression, position)
            if end < 0:
                raise ParseError(KIND, lineno, "unclosed attribute list", raw)
            for part in split_top(expression[position + 1 : end]):
                key, _, value = part.partition("=")
                attrs[key.strip()] = unquote(value.strip())
            position = end + 1
        if expression[position : position + 1] != "(":
            raise ParseError(KIND, lineno, "expected `(operands)`", raw)
        end = closing(expression, position)
        if end < 0:
            raise ParseError(KIND, lineno, "unclosed operand list", raw)
        node_id = outputs[0] if outputs else f"{op_match[1]}@{lineno}"
        file, line, function = _source(attrs.pop("source", ""), comment)
        shape = _type(split_top(outputs_text)[0]) if outputs else ""
        if outputs:
            attrs.update(_type_attr(split_top(outputs_text)[0]))
        self.builder.add_node(
            node_id,
            name=node_id,
            op=op_match[1],
            shape=shape,
            scope=self.scope,
            source_file=file,
            source_line=line,
            source_function=function,
            attrs=attrs,
            text=stripped,
            line=lineno,
        )
        for index, operand in enumerate(_VALUE.findall(expression[position:end])):
            if operand not in self.values:
                raise ParseError(KIND, lineno, f"operand {operand} is not defined above", raw)
            self.builder.add_edge(self.values[operand], node_id, index, "data")
        for output in outputs:
            self.values[output] = node_id


def _type_attr(declaration: str) -> dict[str, str]:
    kind = declaration.partition(":")[2].strip()
    return {"type": kind} if kind else {}


def _type(declaration: str) -> str:
    """``%x : Float(8, 4, strides=...)`` -> ``f32[8,4]``; ``""`` for types without a shape
    (``Tensor``, ``int``): those stay in ``attrs["type"]``."""
    _, _, kind = declaration.partition(":")
    kind = kind.strip()
    match = re.match(r"(Float|Double|Half|BFloat16|Long|Int|Bool)\(([\d, ]*)", kind)
    if match:
        return torch_shape(f"[{match[1]}[{match[2].replace(' ', '').strip(',')}]]")
    return ""


def _source(attribute: str, comment: str) -> tuple[str, int | None, str]:
    match = _SOURCE_ATTR.match(attribute.strip())
    if match:
        return match["file"], int(match["line"]), match["function"]
    found = _SOURCE_COMMENT.search(comment)
    if found:
        return found["file"], int(found["line"]), ""
    return "", None, ""
