"""HLO text (``HloModule ...``): torch_xla's ``_get_xla_tensors_hlo``, JAX's
``compile().as_text()``, and the ``*.txt`` modules of any ``--xla_dump_to`` directory (JAX,
PyTorch/XLA, TensorFlow).

Called computations become scopes: a fusion's fused computation, a call's or while's body and
condition, a conditional's branches nest under the instruction that calls them (collapsed they
show as that instruction). Computations used from several places (reducers, shared bodies) go
to one "called computations" group. Inside every computation but a fusion, instructions are
grouped by their ``op_name`` path.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import itertools
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xlanb.formats.jax_text import STACK_TABLES, StackTables
from xlanb.formats.text import closing, key_values, split_top, unquote
from xlanb.graphs.adjacency import Adjacent
from xlanb.graphs.errors import ParseError
from xlanb.graphs.model import Graph, GraphBuilder
from xlanb.graphs.scopes import group_by_op_name
from xlanb.graphs.shapes import hlo_shape

KIND = "hlo"

_INSTRUCTION = re.compile(r"\s*(ROOT\s+)?%?([^\s=]+)\s*=\s*")
_COMPUTATION = re.compile(r"(ENTRY\s+)?%?([^\s(]+)\s*(.*?)\{\s*$")
_OPCODE = re.compile(r"([A-Za-z][\w\-.]*)\(")
_METADATA = re.compile(r',?\s*metadata=\{((?:[^{}"]|"(?:[^"\\]|\\.)*")*)\}')
#: ``_METADATA`` from its keyword on: matched where ``str.find`` found the keyword.
_METADATA_BODY = re.compile(r'metadata=\{([^{}"]*(?:"[^"\\]*(?:\\.[^"\\]*)*"[^{}"]*)*)\}')
#: Operands that are all plain names (``%a, %b``): split on ``", "`` without a match each.
_PLAIN_OPERANDS = re.compile(r"%?[A-Za-z_][\w\-.]*(?:, %?[A-Za-z_][\w\-.]*)*")
_FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|[^\s}]+)')
#: The common metadata body, JAX's: an op_name without escapes, and maybe a stack frame id.
_COMMON_METADATA = re.compile(r'op_name="([^"\\]*)"(?: stack_frame_id=(\d+))?')
_COMMENT = re.compile(r"/\*.*?\*/")
#: An operand: a name, or ``name#N`` (the dump's spelling of element N of a tuple result).
_NAME = re.compile(r"%?([A-Za-z_][\w\-.]*)(?:#(\d+))?$")
_CALLED = re.compile(r"%?([A-Za-z_][\w\-.]*)")
#: The common instruction line in one match: a shape without brackets inside its layout (or a
#: flat tuple), an opcode, operands that are plain names; anything else takes the general path.
_SIMPLE = re.compile(
    r"\s*(ROOT\s+)?%?([^\s=]+) = "
    r"([^\s(){}\[\]]+\[[^\]]*\](?:\{[^{}()\s]*\})?|\([^()\s]*(?: [^()\s]*)*\)) "
    r"([A-Za-z][\w\-.]*)\(([^(){}\[\]\"]*)\)(.*)$"
)
#: ``_SIMPLE`` over a computation's body at once (each match one line, starting with two
#: spaces and a name): the operands that are all plain names (``_PLAIN_OPERANDS``) in their
#: own group, the others in the next.
_SIMPLE_LINES = re.compile(
    r"^  (ROOT[^\S\n]+)?%?([^\s=]+) = "
    r"([^\s(){}\[\]]+\[[^\]\n]*\](?:\{[^{}()\s]*\})?|\([^()\s]*(?: [^()\s]*)*\)) "
    r"([A-Za-z][\w\-.]*)\((?:(%?[A-Za-z_][\w\-.]*(?:, %?[A-Za-z_][\w\-.]*)*)"
    r"|([^(){}\[\]\"\n]*))\)"
    # the tail: up to its first ``metadata={``, then JAX's common metadata body closing the
    # line (op_name and stack frame id apart), or any other metadata and what follows it
    r"([^m\n]*(?:m(?!etadata=\{)[^m\n]*)*)"
    r"(?:metadata=\{(op_name=\"([^\"\\\n]*)\"(?: stack_frame_id=(\d+))?)\}|(metadata=\{.*))?$",
    re.MULTILINE,
)
#: Line breaks of ``str.splitlines`` other than ``\n``.
_OTHER_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"

#: One attribute ``key=value`` and the comma after it: see :func:`_attributes`.
_ATTRIBUTES = re.compile(
    r'(([\w.\-]+)=(\{[^{}"]*\}|"(?:[^"\\]|\\.)*"|[^\s,{}"()\[\]]+)(?:,\s*|\s*$))'
)

#: Attributes naming computations that nest under the instruction using them.
_NESTING_KEYS = (
    "calls",
    "body",
    "condition",
    "true_computation",
    "false_computation",
    "branch_computations",
    "called_computations",
)
#: Attributes naming called computations, in the order calls are listed, and control edges.
_CALL_KEYS_ORDERED = (*_NESTING_KEYS, "to_apply")
_CALL_KEYS = frozenset((*_CALL_KEYS_ORDERED, "control-predecessors"))
_NESTING_TO_APPLY = ("call", "async-start", "custom-call")
_SCOPE_KINDS = {
    "fusion": "fusion",
    "while": "while",
    "conditional": "conditional",
    "call": "call",
    "async-start": "call",
    "custom-call": "call",
}


@dataclass(slots=True)
class _Instruction:
    name: str
    op: str
    shape: str
    operands: list[str]
    attrs: dict[str, str]
    metadata: dict[str, str]
    calls: list[tuple[str, str]]
    control: list[str]
    root: bool
    line: int
    text: str
    parameter: int = -1
    node: int = -1  # index in the builder
    #: Per operand, the tuple element it reads (``name#N``), -1 for the whole result (and
    #: for operands past the list's end).
    elements: list[int] = field(default_factory=list)


#: The elements of operands that each read a whole result (shared: read-only).
_WHOLE_RESULTS: list[int] = []


@dataclass
class _Computation:
    """A computation's instructions by column (the k-th instruction's name is ``names[k]``),
    in text order; :attr:`instructions` makes them objects when asked."""

    name: str
    entry: bool
    line: int
    module: int
    names: list[str] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)
    shapes: list[str] = field(default_factory=list)
    operands: list[list[str]] = field(default_factory=list)
    elements: list[list[int]] = field(default_factory=list)
    attrs: list[dict[str, str]] = field(default_factory=list)
    metadata: list[dict[str, str]] = field(default_factory=list)
    calls: list[list[tuple[str, str]]] = field(default_factory=list)
    control: list[list[str]] = field(default_factory=list)
    roots: list[bool] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    parameters: list[int] = field(default_factory=list)
    #: The node index of the first instruction in the graph being built (-1: none yet).
    first_node: int = -1
    _instructions: list[_Instruction] | None = field(default=None, repr=False)
    _parameters: dict[int, int] | None = field(default=None, repr=False)

    def add(self, instruction: _Instruction) -> None:
        """Append an instruction read on its own."""
        self.names.append(instruction.name)
        self.ops.append(instruction.op)
        self.shapes.append(instruction.shape)
        self.operands.append(instruction.operands)
        self.elements.append(instruction.elements)
        self.attrs.append(instruction.attrs)
        self.metadata.append(instruction.metadata)
        self.calls.append(instruction.calls)
        self.control.append(instruction.control)
        self.roots.append(instruction.root)
        self.lines.append(instruction.line)
        self.texts.append(instruction.text)
        self.parameters.append(instruction.parameter)

    @property
    def instructions(self) -> list[_Instruction]:
        """The instructions as objects (made once)."""
        if self._instructions is None:
            first = self.first_node
            self._instructions = [
                _Instruction(*fields, first + k if first >= 0 else -1, elements)
                for k, (*fields, elements) in enumerate(
                    zip(
                        self.names,
                        self.ops,
                        self.shapes,
                        self.operands,
                        self.attrs,
                        self.metadata,
                        self.calls,
                        self.control,
                        self.roots,
                        self.lines,
                        self.texts,
                        self.parameters,
                        self.elements,
                        strict=True,
                    )
                )
            ]
        return self._instructions

    def parameter(self, number: int) -> int | None:
        """The position of the (first) instruction that is parameter `number`."""
        if self._parameters is None:
            self._parameters = {}
            for position, parameter in enumerate(self.parameters):
                if parameter >= 0:
                    self._parameters.setdefault(parameter, position)
        return self._parameters.get(number)

    def root(self) -> int | None:
        """The position of the root instruction (the last without one)."""
        try:
            return self.roots.index(True)
        except ValueError:
            return len(self.names) - 1 if self.names else None


def looks_like(text: str) -> bool:
    """True for HLO module text."""
    head = text.lstrip()[:4000]
    return head.startswith("HloModule") or bool(
        re.search(r"^(ENTRY\s+)?%?[\w.\-]+ \(.*\) -> .*\{\s*$", head, re.MULTILINE)
        and re.search(r"^\s+(ROOT\s+)?%?[\w.\-]+ = \S+", head, re.MULTILINE)
    )


def parse(text: str) -> Graph:
    """Parse HLO text (one or more ``HloModule`` blocks) into a :class:`Graph`."""
    modules, computations, tables = _read(text)
    builder = GraphBuilder(KIND, text)
    neighbours = _add_nodes(builder, modules, computations, tables)
    _assign_scopes(builder, modules, computations, neighbours)
    name = modules[0][0] if modules else (computations[-1].name if computations else "")
    return builder.build(name)


# -- reading ------------------------------------------------------------------------------
def computations(text: str) -> list[_Computation]:
    """The computations of HLO text, each with its instructions (name, op, shape, operands,
    attrs) as read, without building a graph: for :mod:`xlanb.graphs.hlo_cost`, which keeps
    what it draws from them, not them."""
    return _read(text)[1]


_Read = tuple[list[tuple[str, int]], list[_Computation], StackTables]
#: Reads shared while :func:`sharing_reads` runs: text -> (the thread sharing it, its read, or
#: None before the first).
_SHARED_READS: dict[str, tuple[int, _Read | None]] = {}


@contextlib.contextmanager
def sharing_reads(text: str) -> Iterator[None]:
    """Within the block, :func:`parse` and :func:`computations` of `text` on this thread share
    one read of it (the read-ahead worker asks for a program's costs and then its graph); the
    read is dropped after the block. Parsing sets each instruction's node index, which
    :func:`computations`' users do not read; another thread reads the text anew."""
    _SHARED_READS[text] = (threading.get_ident(), None)
    try:
        yield
    finally:
        _SHARED_READS.pop(text, None)


def _read(text: str) -> _Read:
    shared = _SHARED_READS.get(text)
    if shared is None or shared[0] != threading.get_ident():
        return _read_once(text)
    found = shared[1]
    if found is None:
        found = _read_once(text)
        _SHARED_READS[text] = (shared[0], found)
    return found


def _read_once(text: str) -> _Read:
    try:
        return _read_lines(text)
    finally:
        _metadata_cache.clear()
        _rest_cache.clear()
        _tail_cache.clear()
        _shapes.clear()
        _rest_before_metadata.clear()


def _read_lines(text: str) -> tuple[list[tuple[str, int]], list[_Computation], StackTables]:
    modules: list[tuple[str, int]] = []
    computations: list[_Computation] = []
    tables = StackTables()
    current: _Computation | None = None
    table = ""
    other_breaks = any(mark in text for mark in _OTHER_BREAKS)
    lines = text.splitlines() if other_breaks else text.split("\n")
    count = len(lines)
    index = 0
    while index < count:
        raw = lines[index]
        index += 1
        lineno = index
        if current is not None and raw[:2] == "  " and (raw[2:3].isalpha() or raw[2:3] == "%"):
            current.add(_instruction(raw, lineno))  # the common line
            continue
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped or stripped.startswith("//") or stripped.startswith("#"):
            table = "" if not stripped else table
            continue
        if current is None:
            if line.startswith("HloModule"):
                name = line[len("HloModule") :].strip().split(",")[0].strip()
                modules.append((name, lineno))
            elif stripped in STACK_TABLES:
                table = stripped
            elif table and stripped[0].isdigit():
                if not tables.add(table, stripped):
                    raise ParseError(
                        KIND, lineno, f"expected an entry `N value` of the {table} table", raw
                    )
            elif line.endswith("{") and (match := _COMPUTATION.match(line)):
                current = _Computation(match[2], bool(match[1]), lineno, max(len(modules) - 1, 0))
                index = _read_body(lines, index, current)
            else:
                raise ParseError(
                    KIND,
                    lineno,
                    "expected `HloModule`, a computation header "
                    "`name (params) -> shape {` or a table",
                    raw,
                )
            continue
        if stripped == "}":
            computations.append(current)
            current = None
            continue
        current.add(_instruction(raw, lineno))
    if current is not None:
        raise ParseError(
            KIND, current.line, f"computation {current.name} is never closed (no `}}`)"
        )
    if not computations:
        raise ParseError(KIND, 0, "no computation found")
    return modules, computations, tables


def _read_body(lines: list[str], start: int, computation: _Computation) -> int:
    """Read the body of `computation`, whose first line is ``lines[start]``, at once where
    each of its indented lines is a common line (one ``_SIMPLE_LINES`` match each); returns
    the index of the first line not read (``start`` when none is)."""
    end = start
    count = len(lines)
    while end < count and lines[end][:2] == "  ":
        end += 1
    if end == start:
        return start
    found = _SIMPLE_LINES.findall("\n".join(lines[start:end]))
    if len(found) != end - start:
        return start  # read line by line
    roots, names, shape_texts, ops, plains, arguments, rests, bodies, op_names, frames, others = (
        zip(*found, strict=True)
    )
    metadata_column, attrs_column = computation.metadata, computation.attrs
    calls_column, control_column = computation.calls, computation.control
    operands_column, elements_column = computation.operands, computation.elements
    parameters = computation.parameters
    rest_get, before_get = _rest_cache.get, _rest_before_metadata.get
    metadata_get = _metadata_cache.get
    lineno = start
    for op, plain, argument, rest, body, op_name, frame, other in zip(
        ops, plains, arguments, rests, bodies, op_names, frames, others, strict=True
    ):
        lineno += 1
        if body and rest[-2:] == ", " and not other:  # the common metadata, last
            metadata = metadata_get(body)
            if metadata is None:
                metadata = {"op_name": op_name}
                if frame:
                    metadata["stack_frame_id"] = frame
                _remember(body, metadata)
            rest_read = before_get(rest)
            if rest_read is None:
                rest_read = _read_rest(_rest_before_metadata, rest, rest[:-2])
            tail_attrs, calls, control = rest_read
        elif not body and not other:
            metadata = _NO_METADATA
            rest_read = rest_get(rest)
            if rest_read is None:
                rest_read = _read_rest(_rest_cache, rest, rest)
            tail_attrs, calls, control = rest_read
        else:
            tail = rest + (f"metadata={{{body}}}" if body else other)
            read = _tail_cache.get(tail)
            if read is None:
                read = _read_tail(tail)
            metadata, tail_attrs, calls, control = read
        attrs = dict(tail_attrs) if tail_attrs else {}
        parameter = -1
        if plain and op != "parameter" and op != "constant":
            operands_column.append(plain.replace("%", "").split(", "))  # "%" only starts a name
            elements_column.append(_WHOLE_RESULTS)
        else:
            operands, elements = _other_operands(
                op, plain or argument, attrs, lineno, lines[lineno - 1]
            )
            operands_column.append(operands)
            elements_column.append(elements)
            if op == "parameter" and attrs["parameter"].isdigit():
                parameter = int(attrs["parameter"])
        if "op_type" in metadata:
            attrs["op_type"] = metadata["op_type"]
        attrs_column.append(attrs)
        metadata_column.append(metadata)
        calls_column.append(calls)
        control_column.append(control)
        parameters.append(parameter)
    shapes = _shapes
    for shape_text in set(shape_texts).difference(shapes):
        shapes[shape_text] = hlo_shape(shape_text)
    computation.shapes += map(shapes.__getitem__, shape_texts)
    computation.names += names
    computation.ops += ops
    computation.roots += map(bool, roots)
    computation.lines += range(start + 1, end + 1)
    computation.texts += map(str.strip, lines[start:end])
    return end


def _read_rest(
    cache: dict[str, _Rest], key: str, rest: str
) -> tuple[dict[str, str], list[tuple[str, str]], list[str]]:
    """The attributes, calls and control predecessors of an instruction's tail without its
    metadata (`rest`), kept in `cache` under `key` while one text is read."""
    attrs = _attributes(rest) if rest else {}
    read = (attrs, *_calls(attrs))
    if len(cache) > _METADATA_KEPT:
        cache.clear()
    cache[key] = read
    return read


#: :data:`_rest_cache` of the common lines whose tail ends in JAX's common metadata, by their
#: tail up to it (the ``", "`` before it included).
_rest_before_metadata: dict[str, _Rest] = {}


#: Each shape as written -> :func:`hlo_shape` of it, while one text is read.
_shapes: dict[str, str] = {}


def _other_operands(
    op: str, arguments: str, attrs: dict[str, str], lineno: int, raw: str
) -> tuple[list[str], list[int]]:
    """The operands of a common line whose operands are not all plain names (and of every
    parameter and constant, whose argument goes into `attrs`), and the tuple element each
    reads."""
    operands: list[str] = []
    elements: list[int] = []
    if op == "parameter":
        attrs["parameter"] = arguments.strip()
    elif op == "constant":
        attrs["value"] = arguments if len(arguments) <= 200 else arguments[:197] + "..."
    else:
        if "/*" in arguments:
            arguments = _COMMENT.sub("", arguments)
        for operand in arguments.split(","):
            if not operand.strip():
                continue
            found_name = _NAME.match(operand.split()[-1])
            if found_name is None:
                raise ParseError(KIND, lineno, f"operand {operand!r} of {op} is not a name", raw)
            operands.append(found_name[1])
            elements.append(int(found_name[2]) if found_name[2] else -1)
    return operands, elements


def _instruction(raw: str, lineno: int) -> _Instruction:
    simple = _SIMPLE.match(raw)
    if simple is None:
        return _general_instruction(raw, lineno)
    root, name, shape_text, op, arguments, tail = simple.groups()
    read = _tail_cache.get(tail)
    if read is None:
        read = _read_tail(tail)
    metadata, tail_attrs, calls, control = read
    attrs = dict(tail_attrs)
    if _PLAIN_OPERANDS.fullmatch(arguments) and op != "parameter" and op != "constant":
        plain = arguments.replace("%", "").split(", ")  # a "%" only starts a name
        return _finish(
            name,
            op,
            shape_text,
            plain,
            _WHOLE_RESULTS,
            attrs,
            metadata,
            root,
            lineno,
            raw,
            calls,
            control,
        )
    operands: list[str] = []
    elements: list[int] = []
    if op == "parameter":
        attrs["parameter"] = arguments.strip()
    elif op == "constant":
        attrs["value"] = arguments if len(arguments) <= 200 else arguments[:197] + "..."
    else:
        if "/*" in arguments:
            arguments = _COMMENT.sub("", arguments)
        for operand in arguments.split(","):
            if not operand.strip():
                continue
            found_name = _NAME.match(operand.split()[-1])
            if found_name is None:
                raise ParseError(KIND, lineno, f"operand {operand!r} of {op} is not a name", raw)
            operands.append(found_name[1])
            elements.append(int(found_name[2]) if found_name[2] else -1)
    return _finish(
        name, op, shape_text, operands, elements, attrs, metadata, root, lineno, raw, calls, control
    )


def _read_tail(tail: str) -> _Tail:
    """What an instruction's tail (after its operands) holds: its metadata, its attributes
    (read-only: each instruction takes a copy), the computations it calls and its control
    predecessors. Equal tails, and equal tails without their metadata, are read once while
    one text is read."""
    metadata: dict[str, str] = _NO_METADATA
    rest = tail
    if "metadata={" in tail:
        metadata, rest = _metadata(tail)
    rest_read = _rest_cache.get(rest)
    if rest_read is None:
        attrs = _attributes(rest) if rest else {}
        rest_read = _rest_cache[rest] = (attrs, *_calls(attrs))
    if len(_tail_cache) > _METADATA_KEPT:
        _tail_cache.clear()
        _rest_cache.clear()
    read = _tail_cache[tail] = (metadata, *rest_read)
    return read


#: An instruction's metadata, attributes, calls and control predecessors, read from its tail.
_Tail = tuple[dict[str, str], dict[str, str], list[tuple[str, str]], list[str]]
_tail_cache: dict[str, _Tail] = {}
#: An instruction's attributes, calls and control predecessors.
_Rest = tuple[dict[str, str], list[tuple[str, str]], list[str]]
#: An instruction's attributes, calls and control predecessors, by its tail without metadata.
_rest_cache: dict[str, _Rest] = {}


def _calls(attrs: dict[str, str]) -> tuple[list[tuple[str, str]], list[str]]:
    """The (attribute, computation) pairs an instruction calls, and its control predecessors."""
    calls: list[tuple[str, str]] = []
    control: list[str] = []
    if attrs and not _CALL_KEYS.isdisjoint(attrs):
        for key in _CALL_KEYS_ORDERED:
            if key in attrs:
                calls.extend((key, called) for called in _CALLED.findall(attrs[key]))
        if "control-predecessors" in attrs:
            control = _CALLED.findall(attrs["control-predecessors"])
    return calls, control


#: The metadata of an instruction without any (shared: read-only).
_NO_METADATA: dict[str, str] = {}


def _metadata(tail: str) -> tuple[dict[str, str], str]:
    """The ``metadata={...}`` fields of an instruction's tail, and the tail without them.
    Equal metadata texts share one dict (read-only) while one text is read."""
    start = tail.find("metadata={")
    if start >= 2 and tail[-1] == "}" and tail.startswith(", ", start - 2):  # the common case
        body = tail[start + 10 : -1]
        metadata = _metadata_cache.get(body)
        if metadata is None and (metadata := _common_metadata(body)) is not None:
            _remember(body, metadata)
        if metadata is not None:
            return metadata, tail[: start - 2]
    found = _METADATA_BODY.match(tail, start)
    if found is None:
        searched = _METADATA.search(tail)
        if searched is None:
            return _NO_METADATA, tail
        body, start, end = searched[1], searched.start(), searched.end()
    else:
        body, end = found[1], found.end()
        while start and tail[start - 1] in " \t":
            start -= 1
        if start and tail[start - 1] == ",":
            start -= 1
    metadata = _metadata_cache.get(body)
    if metadata is None:
        metadata = _common_metadata(body) or {
            k: v[1:-1] if v[-1] == v[0] == '"' != v and "\\" not in v else unquote(v)
            for k, v in _FIELD.findall(body)
        }
        _remember(body, metadata)
    return metadata, tail[:start] + tail[end:]


def _common_metadata(body: str) -> dict[str, str] | None:
    """The fields of JAX's common metadata body, None for another."""
    common = _COMMON_METADATA.fullmatch(body)
    if common is None:
        return None
    metadata = {"op_name": common[1]}
    if common[2] is not None:
        metadata["stack_frame_id"] = common[2]
    return metadata


def _remember(body: str, metadata: dict[str, str]) -> None:
    """Keep `metadata` for equal bodies (at most :data:`_METADATA_KEPT` at once)."""
    if len(_metadata_cache) > _METADATA_KEPT:
        _metadata_cache.clear()
    _metadata_cache[body] = metadata


_METADATA_KEPT = 1 << 20
_metadata_cache: dict[str, dict[str, str]] = {}


def _attributes(tail: str) -> dict[str, str]:
    """``key_values`` of an instruction's attributes, by one regex where each value is a name,
    a number, a quoted string or braces without braces inside (the common case)."""
    text = tail.strip().lstrip(",").strip()
    if not text:
        return {}
    found = _ATTRIBUTES.findall(text)
    if sum(len(whole) for whole, _key, _value in found) == len(text):
        return {key: value for _whole, key, value in found}
    return key_values(text)


def _finish(
    name: str,
    op: str,
    shape_text: str,
    operands: list[str],
    elements: list[int],
    attrs: dict[str, str],
    metadata: dict[str, str],
    root: str | None,
    lineno: int,
    raw: str,
    calls: list[tuple[str, str]],
    control: list[str],
) -> _Instruction:
    """The instruction; ``calls`` and ``control`` may be shared with others (read-only)."""
    if "op_type" in metadata:
        attrs["op_type"] = metadata["op_type"]
    parameter = -1
    if op == "parameter" and "parameter" in attrs and attrs["parameter"].isdigit():
        parameter = int(attrs["parameter"])
    return _Instruction(
        name,
        op,
        hlo_shape(shape_text),
        operands,
        attrs,
        metadata,
        calls,
        control,
        bool(root),
        lineno,
        raw.strip(),
        parameter,
        elements=elements,
    )


def _general_instruction(raw: str, lineno: int) -> _Instruction:
    match = _INSTRUCTION.match(raw)
    if not match:
        raise ParseError(KIND, lineno, "expected an instruction `name = shape opcode(...)`", raw)
    rest = raw[match.end() :]
    metadata: dict[str, str] = {}
    found = _METADATA.search(rest)
    if found:
        metadata = {k: unquote(v) for k, v in _FIELD.findall(found[1])}
        rest = rest[: found.start()] + rest[found.end() :]
    if rest.startswith("("):
        end = closing(rest, 0)
        if end < 0:
            raise ParseError(KIND, lineno, "unclosed tuple shape", raw)
        shape_text, rest = rest[: end + 1], rest[end + 1 :].lstrip()
    else:
        shape_text, _, rest = rest.partition(" ")
    op_match = _OPCODE.match(rest)
    if not op_match:
        raise ParseError(KIND, lineno, "expected `opcode(operands)` after the shape", raw)
    op = op_match[1]
    open_at = op_match.end() - 1
    close_at = rest.find(")", open_at)
    if close_at < 0 or any(c in rest[open_at + 1 : close_at] for c in '({"'):
        close_at = closing(rest, open_at)
    if close_at < 0:
        raise ParseError(KIND, lineno, f"unclosed operand list of {op}", raw)
    arguments = rest[open_at + 1 : close_at]
    tail = rest[close_at + 1 :].strip().lstrip(",")
    attrs = key_values(tail) if tail.strip() else {}
    operands: list[str] = []
    elements: list[int] = []
    if op == "parameter":
        attrs["parameter"] = arguments.strip()
    elif op == "constant":
        attrs["value"] = arguments if len(arguments) <= 200 else arguments[:197] + "..."
    else:
        for operand in split_top(_COMMENT.sub("", arguments)):
            token = operand.split()[-1]
            name = _NAME.match(token)
            if name is None:
                raise ParseError(KIND, lineno, f"operand {operand!r} of {op} is not a name", raw)
            operands.append(name[1])
            elements.append(int(name[2]) if name[2] else -1)
    calls, control = _calls(attrs)
    return _finish(
        match[2],
        op,
        shape_text,
        operands,
        elements,
        attrs,
        metadata,
        match[1],
        lineno,
        raw,
        calls,
        control,
    )


# -- nodes and edges ----------------------------------------------------------------------
def _add_nodes(
    builder: GraphBuilder,
    modules: list[tuple[str, int]],
    computations: list[_Computation],
    tables: StackTables,
) -> _Neighbours:
    """Nodes and edges; returns each node's operand nodes and user nodes (data edges)."""
    by_name: dict[str, int] | None = None
    if any(c.names for c in computations):
        columns = _node_columns(computations, tables)
        names = columns["name"]
        unique = len(modules) <= 1 and len(set(names)) == len(names)
        columns["id"] = names if unique else _node_ids(modules, computations, names)
        start = builder.add_nodes(columns)
        for computation in computations:
            computation.first_node = start
            start += len(computation.names)
        if unique:
            by_name = builder.index  # each node's id is its name
    return _add_edges(builder, computations, by_name)


def _node_columns(computations: list[_Computation], tables: StackTables) -> dict[str, list[Any]]:
    """The instructions' node columns but ``id``, each made in one pass."""
    innermost = functools.lru_cache(maxsize=None)(tables.innermost)
    chain = itertools.chain.from_iterable
    metadata = list(chain(c.metadata for c in computations))
    keys = list(map(id, metadata))
    distinct = dict(zip(keys, metadata, strict=True))  # equal texts share one dict
    origins = {key: _source(meta, innermost) for key, meta in distinct.items()}
    op_names, files, lines, functions = zip(*map(origins.__getitem__, keys), strict=True)
    return {
        "name": list(chain(c.names for c in computations)),
        "op": list(chain(c.ops for c in computations)),
        "shape": list(chain(c.shapes for c in computations)),
        "op_name": list(op_names),
        "source_file": list(files),
        "source_line": list(lines),
        "source_function": list(functions),
        "attrs": list(chain(c.attrs for c in computations)),
        "text": list(chain(c.texts for c in computations)),
        "line": list(chain(c.lines for c in computations)),
        "output": list(chain(c.roots for c in computations)),
    }


class _Edges:
    """Edges by column (node indexes of their ends), in the order they are added."""

    def __init__(self) -> None:
        self.sources: list[int] = []
        self.targets: list[int] = []
        self.operands: list[int] = []
        self.kinds: list[str] = []

    def add_data(self, sources: list[int], targets: list[int], operands: list[int]) -> None:
        self.sources += sources
        self.targets += targets
        self.operands += operands
        self.kinds += ["data"] * len(sources)

    def add_control(self, source: int, target: int) -> None:
        self.sources.append(source)
        self.targets.append(target)
        self.operands.append(-1)
        self.kinds.append("control")


def _add_edges(
    builder: GraphBuilder, computations: list[_Computation], by_name: dict[str, int] | None
) -> _Neighbours:
    """Data and control edges; each node's operand nodes and user nodes (data edges).
    `by_name`: each node by its name, where names are unique."""
    edges = _Edges()
    if by_name is not None and not any(any(c.control) for c in computations):
        at_once = _data_edges_at_once(computations, by_name)
        if at_once is not None:
            edges.add_data(*at_once)
            builder.add_resolved_edges(edges.sources, edges.targets, edges.operands, edges.kinds)
            return _neighbours(edges, builder.node_count)
    for computation in computations:
        first = computation.first_node
        nodes = dict(zip(computation.names, itertools.count(first)))
        if any(computation.control):
            _add_edges_in_turn(computation, nodes, edges)
            continue
        operands = computation.operands
        names = list(itertools.chain.from_iterable(operands))
        if not names:
            continue
        try:
            sources = list(map(nodes.__getitem__, names))
        except KeyError:
            for position in range(len(operands)):
                _operand_nodes(computation, position, nodes)
            raise
        counts = np.fromiter(map(len, operands), dtype=np.int64, count=len(operands))
        targets = np.repeat(np.arange(first, first + len(operands), dtype=np.int64), counts)
        starts = np.cumsum(counts) - counts
        positions = np.arange(len(names), dtype=np.int64) - np.repeat(starts, counts)
        edges.add_data(sources, targets.tolist(), positions.tolist())
    builder.add_resolved_edges(edges.sources, edges.targets, edges.operands, edges.kinds)
    return _neighbours(edges, builder.node_count)


def _data_edges_at_once(
    computations: list[_Computation], by_name: dict[str, int]
) -> tuple[list[int], list[int], list[int]] | None:
    """The data edges of all computations (sources, targets, operand positions), each operand
    looked up by its name among all nodes; None where one is not in its user's computation
    (each computation is then read on its own)."""
    operands = list(itertools.chain.from_iterable(c.operands for c in computations))
    names = list(itertools.chain.from_iterable(operands))
    if not names:
        return [], [], []
    try:
        sources = np.fromiter(map(by_name.__getitem__, names), dtype=np.int64, count=len(names))
    except KeyError:
        return None
    start, count = computations[0].first_node, len(operands)
    sizes = np.fromiter((len(c.names) for c in computations), dtype=np.int64)
    owners = np.repeat(np.arange(len(computations), dtype=np.int64), sizes)
    counts = np.fromiter(map(len, operands), dtype=np.int64, count=count)
    targets = np.repeat(np.arange(start, start + count, dtype=np.int64), counts)
    inside = sources - start
    if (inside < 0).any() or (inside >= count).any():
        return None
    if (owners[inside] != owners[targets - start]).any():
        return None
    positions = np.arange(len(names), dtype=np.int64) - np.repeat(
        np.cumsum(counts) - counts, counts
    )
    return sources.tolist(), targets.tolist(), positions.tolist()


def _add_edges_in_turn(computation: _Computation, nodes: dict[str, int], edges: _Edges) -> None:
    """:func:`_add_edges` of a computation with control edges: each instruction's data edges,
    then its control edges."""
    first = computation.first_node
    for position, (operands, control) in enumerate(
        zip(computation.operands, computation.control, strict=True)
    ):
        node = first + position
        if operands:
            sources = _operand_nodes(computation, position, nodes)
            edges.add_data(sources, [node] * len(sources), list(range(len(sources))))
        for predecessor in control:
            if predecessor in nodes:
                edges.add_control(nodes[predecessor], node)


#: Each node's operand nodes and user nodes (along data edges).
_Neighbours = tuple[Adjacent, Adjacent]


def _neighbours(edges: _Edges, count: int) -> _Neighbours:
    sources = np.array(edges.sources, dtype=np.int64)
    targets = np.array(edges.targets, dtype=np.int64)
    if "control" in edges.kinds:
        data = np.array(edges.kinds, dtype=object) == "data"
        sources, targets = sources[data], targets[data]
    return Adjacent(targets, sources, count), Adjacent(sources, targets, count)


def _operand_nodes(computation: _Computation, position: int, nodes: dict[str, int]) -> list[int]:
    """The nodes of the operands of `computation`'s instruction at `position`."""
    try:
        return [nodes[operand] for operand in computation.operands[position]]
    except KeyError as missing:
        raise ParseError(
            KIND,
            computation.lines[position],
            f"operand %{missing.args[0]} of {computation.names[position]} is not defined in "
            f"computation {computation.name}",
            computation.texts[position],
        ) from None


def _node_ids(
    modules: list[tuple[str, int]], computations: list[_Computation], names: list[str]
) -> list[str]:
    """Each instruction's node id (``names``: the instructions' names, in text order): the
    name, prefixed by its computation's where the name is not unique in its module, and by
    its module's when the text holds several."""
    counts = collections.Counter((c.module, name) for c in computations for name in c.names)
    ids: list[str] = []
    for computation in computations:
        module = computation.module
        prefix = f"{modules[module][0]}/" if len(modules) > 1 else ""
        ids += [
            prefix + (f"{computation.name}/{name}" if counts[(module, name)] > 1 else name)
            for name in computation.names
        ]
    return ids


def _source(
    meta: dict[str, str], innermost: Callable[[int], tuple[str, int | None, str]]
) -> tuple[str, str, int | None, str]:
    """(op_name, source file, line, function) that metadata names."""
    if not meta:
        return "", "", None, ""
    frame = meta.get("stack_frame_id", "")
    if len(meta) == 2 and "op_name" in meta and frame.isdigit():  # JAX's common metadata
        return meta["op_name"], *innermost(int(frame))
    file, line, function = meta.get("source_file", ""), None, ""
    source_line = meta.get("source_line", "")
    if source_line.isdigit():
        line = int(source_line)
    if not file and meta.get("stack_frame_id", "").isdigit():
        file, line, function = innermost(int(meta["stack_frame_id"]))
    return meta.get("op_name", ""), file, line, function


# -- scopes -------------------------------------------------------------------------------
def _assign_scopes(
    builder: GraphBuilder,
    modules: list[tuple[str, int]],
    computations: list[_Computation],
    neighbours: _Neighbours,
) -> None:
    by_name: dict[tuple[int, str], _Computation] = {(c.module, c.name): c for c in computations}
    uses: dict[int, list[tuple[int, str]]] = {}  # callee -> (calling node, attribute)
    for computation in computations:
        for position, calls in enumerate(computation.calls):
            for key, called in calls:
                callee = by_name.get((computation.module, called))
                if callee is None:
                    raise ParseError(
                        KIND,
                        computation.lines[position],
                        f"{key}={called}: no computation named {called}",
                        computation.texts[position],
                    )
                uses.setdefault(id(callee), []).append((computation.first_node + position, key))
    ops = builder.columns["op"]
    nested: dict[int, list[tuple[str, _Computation]]] = {}  # instruction node -> callees
    nested_ids: set[int] = set()
    for computation in computations:
        found = uses.get(id(computation), [])
        if len(found) != 1:
            continue
        node, key = found[0]
        if key in _NESTING_KEYS or (key == "to_apply" and ops[node] in _NESTING_TO_APPLY):
            nested.setdefault(node, []).append((key, computation))
            nested_ids.add(id(computation))
    operands, users = neighbours
    placer = _Placer(builder, nested, operands, users)
    for module_index in range(max(len(modules), 1)):
        in_module = [c for c in computations if c.module == module_index]
        if not in_module:
            continue
        base = ""
        if len(modules) > 1:
            base = builder.add_scope(
                modules[module_index][0], label=modules[module_index][0], kind="module"
            )
        entry = next((c for c in in_module if c.entry), in_module[-1])
        placer.place(entry, base, group=True)
        others = [c for c in in_module if c is not entry and id(c) not in nested_ids]
        if others:
            group = builder.add_scope(
                f"{base}/called computations" if base else "called computations",
                parent=base,
                label="called computations",
                kind="group",
            )
            for computation in others:
                scope = builder.add_scope(
                    f"{group}/{computation.name}",
                    parent=group,
                    label=computation.name,
                    kind="computation",
                )
                placer.place(computation, scope, group=True)


class _Placer:
    """Puts each computation's nodes into scopes, top-down from the entry computation."""

    def __init__(
        self,
        builder: GraphBuilder,
        nested: dict[int, list[tuple[str, _Computation]]],
        operands: Adjacent,
        users: Adjacent,
    ) -> None:
        self.builder = builder
        self.nested = nested
        self.operands = operands
        self.users = users

    def place(self, computation: _Computation, scope: str, group: bool) -> None:
        builder = self.builder
        first = computation.first_node
        members = list(range(first, first + len(computation.names)))
        builder.columns["scope"][first : first + len(members)] = [scope] * len(members)
        if group:
            group_by_op_name(builder, members, scope, self.operands, self.users)
        nested = self.nested
        for node in members:
            callees = nested.get(node)
            if callees:
                self._nest(node, callees)

    def _nest(self, caller: int, callees: list[tuple[str, _Computation]]) -> None:
        """Scopes for the computations the node `caller` calls."""
        builder = self.builder
        parent = builder.columns["scope"][caller]
        name, op = builder.columns["name"][caller], builder.columns["op"][caller]
        kind = _SCOPE_KINDS.get(op, "call")
        anchored = builder.add_scope(
            f"{parent}/{name}" if parent else name,
            parent=parent,
            label=name,
            kind=kind,
            node=builder.columns["id"][caller],
        )
        branches = [c for k, c in callees if k == "branch_computations"]
        for key, callee in callees:
            scope = anchored
            if len(callees) > 1:
                label = key if key != "branch_computations" else f"branch {branches.index(callee)}"
                scope = builder.add_scope(
                    f"{anchored}/{label}",
                    parent=anchored,
                    label=f"{label}: {callee.name}",
                    kind="computation",
                )
            self.place(callee, scope, group=op != "fusion")
            self._bind(caller, key, callee, branches)

    def _bind(
        self, caller: int, key: str, callee: _Computation, branches: list[_Computation]
    ) -> None:
        """Edges from the caller's operands to the callee's parameters, and from the callee's
        root back to the caller."""
        builder = self.builder
        ids = builder.columns["id"]
        caller_id = ids[caller]
        operand_ids = [ids[i] for i in self.operands.get(caller, [])]
        if key in ("body", "condition"):
            pairs = [(0, 0)]
        elif key == "branch_computations":
            pairs = [(branches.index(callee) + 1, 0)]
        elif key == "true_computation":
            pairs = [(1, 0)]
        elif key == "false_computation":
            pairs = [(2, 0)]
        else:
            pairs = [(i, i) for i in range(len(operand_ids))]
        for operand, number in pairs:
            parameter = callee.parameter(number)
            if parameter is not None and operand < len(operand_ids):
                builder.add_edge(
                    operand_ids[operand], ids[callee.first_node + parameter], operand, "param"
                )
        root = callee.root()
        if root is not None:
            builder.add_edge(ids[callee.first_node + root], caller_id, 0, "root")
