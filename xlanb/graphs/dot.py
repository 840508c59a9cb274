"""Graphviz DOT: torch._lazy's ``render_ir_graph``, torch_xla's ``_get_xla_tensors_dot``,
``--xla_dump_hlo_as_dot`` files and JAX's ``hlo_module_to_dot_graph``.

A node's label gives its op (first line) and shape (the line that reads as one); ``cluster``
subgraphs become scopes. Edge order comes from ``i=N`` labels or ``headlabel`` when present.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

from xlanb.graphs.errors import ParseError
from xlanb.graphs.model import Graph, GraphBuilder
from xlanb.graphs.shapes import hlo_shape, mlir_type, torch_shape

KIND = "dot"

_TOKEN = re.compile(
    r"""
    (?P<space>\s+|//[^\n]*|/\*.*?\*/|^\#[^\n]*)
  | (?P<string>"(?:[^"\\]|\\.)*")
  | (?P<html><)
  | (?P<arrow>->|--)
  | (?P<punct>[{}\[\]=;,:])
  | (?P<id>-?(?:\.\d+|\d+(?:\.\d*)?)|[A-Za-z_\x80-\uffff][\w\x80-\uffff]*)
""",
    re.VERBOSE | re.DOTALL | re.MULTILINE,
)
_SHAPE_LINE = re.compile(
    r"^\(?[a-z]+\d*\[[^\]]*\]|^\[[A-Z][a-zA-Z]*\[|^tensor<"
    r"|^[A-Z][A-Za-z0-9]*\[[\d, ]*\]$"
)
_LOCATION = re.compile(r"(?:location=(?:[^@\s]*@)?|source: )(?P<file>[^\s:]+):(?P<line>\d+)")
_OPERAND_LABEL = re.compile(r"(?:i=)?(\d+)$")


def looks_like(text: str) -> bool:
    """True for DOT text (``digraph ... {`` / ``graph ... {``)."""
    return bool(re.match(r"\s*(strict\s+)?(di)?graph\b[^({]*\{", text))


class _Html(str):
    """An HTML-like label (``<...>`` in DOT): its tags are markup, not text."""


@dataclass
class _Token:
    kind: str
    value: str
    line: int


@dataclass
class _Subgraph:
    scope: str
    members: list[str] = field(default_factory=list)


def _tokens(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    position, line = 0, 1
    while position < len(text):
        match = _TOKEN.match(text, position)
        if not match:
            snippet = text[position : text.find("\n", position)]
            raise ParseError(KIND, line, "unexpected character", snippet)
        kind = match.lastgroup or ""
        if kind == "html":
            end = _html_end(text, position)
            if end < 0:
                raise ParseError(KIND, line, "unclosed HTML label `<...>`")
            html_label = _Html(text[position + 1 : end])
            tokens.append(_Token("id", html_label, line))
            line += text.count("\n", position, end + 1)
            position = end + 1
            continue
        value = match.group()
        if kind == "string":
            tokens.append(_Token("id", re.sub(r'\\(["\\])', r"\1", value[1:-1]), line))
        elif kind != "space":
            tokens.append(_Token("punct" if kind in ("punct", "arrow") else kind, value, line))
        line += value.count("\n")
        position = match.end()
    return tokens


def _html_end(text: str, start: int) -> int:
    depth = 0
    for index in range(start, len(text)):
        if text[index] == "<":
            depth += 1
        elif text[index] == ">":
            depth -= 1
            if depth == 0:
                return index
    return -1


def parse(text: str) -> Graph:
    """Parse the first graph of a DOT text into a :class:`Graph`."""
    return _Parser(text).parse()


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.position = 0
        self.builder = GraphBuilder(KIND, text)
        self.node_attrs: dict[str, dict[str, str]] = {}
        self.node_scope: dict[str, str] = {}
        self.edges: list[tuple[str, str, dict[str, str], int]] = []
        self.order: list[str] = []
        self.name = ""

    # -- tokens --------------------------------------------------------------------------
    def peek(self, offset: int = 0) -> _Token | None:
        index = self.position + offset
        return self.tokens[index] if index < len(self.tokens) else None

    def take(self, value: str | None = None) -> _Token:
        token = self.peek()
        if token is None:
            last = self.tokens[-1].line if self.tokens else 0
            raise ParseError(KIND, last, f"text ends where {value or 'more'} was expected")
        if value is not None and token.value != value:
            raise ParseError(
                KIND,
                token.line,
                f"expected {value!r}, found {token.value!r}",
                self._line(token.line),
            )
        self.position += 1
        return token

    def _line(self, line: int) -> str:
        lines = self.text.splitlines()
        return lines[line - 1] if 0 < line <= len(lines) else ""

    # -- grammar -------------------------------------------------------------------------
    def parse(self) -> Graph:
        if self.peek() and self.peek().value == "strict":  # type: ignore[union-attr]
            self.take()
        kind = self.take()
        if kind.value not in ("digraph", "graph"):
            raise ParseError(
                KIND, kind.line, "expected `digraph` or `graph`", self._line(kind.line)
            )
        if self.peek() and self.peek().kind == "id":  # type: ignore[union-attr]
            self.name = self.take().value
        self.take("{")
        self._statements(_Subgraph(""))
        self._emit()
        return self.builder.build(self.name)

    def _statements(self, subgraph: _Subgraph) -> None:
        while True:
            token = self.peek()
            if token is None:
                raise ParseError(KIND, self.tokens[-1].line, "unclosed `{`")
            if token.value == "}":
                self.take()
                return
            if token.value == ";":
                self.take()
                continue
            self._statement(subgraph)

    def _statement(self, subgraph: _Subgraph) -> None:
        token = self.peek()
        assert token is not None
        if token.value in ("graph", "node", "edge") and self._is_attr_statement():
            self.take()
            attrs = self._attrs()
            if token.value == "graph" and "label" in attrs and subgraph.scope:
                self._label_scope(subgraph.scope, attrs["label"])
            return
        if token.kind == "id" and self.peek(1) and self.peek(1).value == "=":  # type: ignore
            key = self.take().value
            self.take("=")
            value = self.take().value
            if key == "label" and subgraph.scope:
                self._label_scope(subgraph.scope, value)
            return
        left = self._operand(subgraph)
        if self.peek() and self.peek().value in ("->", "--"):  # type: ignore[union-attr]
            chain = [left]
            while self.peek() and self.peek().value in ("->", "--"):  # type: ignore
                self.take()
                chain.append(self._operand(subgraph))
            attrs = self._attrs() if self.peek() and self.peek().value == "[" else {}  # type: ignore
            for sources, targets in zip(chain, chain[1:], strict=False):
                for source in sources:
                    for target in targets:
                        self.edges.append((source, target, attrs, token.line))
            return
        if len(left) == 1 and self.peek() and self.peek().value == "[":  # type: ignore
            self.node_attrs.setdefault(left[0], {}).update(self._attrs())

    def _is_attr_statement(self) -> bool:
        following = self.peek(1)
        return following is not None and following.value == "["

    def _operand(self, subgraph: _Subgraph) -> list[str]:
        token = self.peek()
        assert token is not None
        if token.value in ("subgraph", "{"):
            return self._subgraph(subgraph)
        if token.kind != "id":
            raise ParseError(
                KIND,
                token.line,
                f"expected a node id, found {token.value!r}",
                self._line(token.line),
            )
        name = self.take().value
        while self.peek() and self.peek().value == ":":  # type: ignore[union-attr] # port
            self.take()
            self.take()
        self._declare(name, subgraph)
        return [name]

    def _subgraph(self, parent: _Subgraph) -> list[str]:
        name = ""
        if self.peek() and self.peek().value == "subgraph":  # type: ignore[union-attr]
            self.take()
            if self.peek() and self.peek().kind == "id":  # type: ignore[union-attr]
                name = self.take().value
        self.take("{")
        scope = parent.scope
        if name.startswith("cluster"):
            scope = self.builder.add_scope(name, parent=parent.scope, label=name, kind="cluster")
        inner = _Subgraph(scope)
        self._statements(inner)
        parent.members.extend(inner.members)
        return inner.members

    def _attrs(self) -> dict[str, str]:
        attrs: dict[str, str] = {}
        while self.peek() and self.peek().value == "[":  # type: ignore[union-attr]
            self.take("[")
            while self.peek() and self.peek().value != "]":  # type: ignore[union-attr]
                key = self.take().value
                value = ""
                if self.peek() and self.peek().value == "=":  # type: ignore[union-attr]
                    self.take()
                    value = self.take().value
                attrs[key] = value
                if self.peek() and self.peek().value in (",", ";"):  # type: ignore
                    self.take()
            self.take("]")
        return attrs

    def _declare(self, name: str, subgraph: _Subgraph) -> None:
        if name not in self.node_attrs:
            self.node_attrs[name] = {}
            self.order.append(name)
            self.node_scope[name] = subgraph.scope
        elif subgraph.scope and not self.node_scope.get(name):
            self.node_scope[name] = subgraph.scope
        subgraph.members.append(name)

    def _label_scope(self, scope: str, label: str) -> None:
        text = _label_lines(label)
        if text:
            self.builder.scopes[self.builder.scope_index[scope]]["label"] = " ".join(text[:2])

    # -- output --------------------------------------------------------------------------
    def _emit(self) -> None:
        builder = self.builder
        for name in self.order:
            attrs = self.node_attrs[name]
            lines = _label_lines(attrs.get("label", name)) or [name]
            shape = next((_shape(line) for line in lines[1:] if _SHAPE_LINE.match(line)), "")
            details = {k: v for k, v in attrs.items() if k in ("tooltip", "label")}
            extra: dict[str, str] = {}
            for number, line in enumerate(lines[1:], 1):
                key, eq, value = line.partition("=")
                if eq and " " not in key:
                    extra[key] = value
                elif not _SHAPE_LINE.match(line):
                    extra[f"line {number}"] = line
            where = _LOCATION.search("\n".join(lines) + "\n" + details.get("tooltip", ""))
            # HLO dot files label nodes with the instruction name (``dot.5``): the op is
            # the name without its number
            op = lines[0] if "::" in lines[0] else re.sub(r"\.\d+$", "", lines[0])
            builder.add_node(
                name,
                name=lines[0],
                op=op,
                shape=shape,
                scope=self.node_scope.get(name, ""),
                source_file=where["file"] if where else "",
                source_line=int(where["line"]) if where else None,
                attrs=extra,
                text=" | ".join(lines),
                line=0,
                output=False,
            )
        operand_count: dict[str, int] = {}
        for source, target, attrs, _line in self.edges:
            label = attrs.get("label") or attrs.get("headlabel") or ""
            operand_label = _OPERAND_LABEL.match(label.strip())
            position = int(operand_label[1]) if operand_label else operand_count.get(target, 0)
            operand_count[target] = operand_count.get(target, 0) + 1
            builder.add_edge(source, target, position, "data")
        sources = {s for s, _t, _a, _l in self.edges}
        targets = {t for _s, t, _a, _l in self.edges}
        builder.columns["output"] = [
            node_id not in sources and node_id in targets for node_id in builder.columns["id"]
        ]


def _label_lines(label: str) -> list[str]:
    if isinstance(label, _Html):
        text = re.sub(r"<br\s*/?>", "\n", label, flags=re.IGNORECASE)
        text = html.unescape(re.sub(r"<[^>]+>", "", text))
    else:
        text = re.sub(r"\\[nlr]", "\n", label)
    return [line.strip() for line in text.split("\n") if line.strip()]


def _shape(line: str) -> str:
    if line.startswith("tensor<"):
        return mlir_type(line)
    if line.startswith("["):
        return torch_shape(line)
    if line[:1].isupper():
        return torch_shape(f"[{line}]")
    return hlo_shape(line)
