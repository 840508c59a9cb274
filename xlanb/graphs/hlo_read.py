"""HLO text read into its computations, each holding its instructions by column (name, op,
shape, operands, attributes, metadata, calls): the reading half of :mod:`xlanb.graphs.hlo`.

Where every line of a computation's body is a common one, one match over the body reads
them all and each distinct tail (attributes, JAX's common metadata) is read once; other lines
are read one by one."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field

from xlanb.formats.jax_text import STACK_TABLES, StackTables
from xlanb.formats.text import closing, key_values, split_top, unquote
from xlanb.graphs.errors import ParseError
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


def without_possessive(pattern: str) -> str:
    """`pattern` without its possessive quantifiers (``*+``, ``++``), which Python 3.10's
    ``re`` lacks: where giving back could not make a match they match the same, with more
    backtracking."""
    return pattern.replace("*+", "*").replace("++", "+")


def _possessive(pattern: str) -> str:
    """`pattern` as written from Python 3.11, :func:`without_possessive` before."""
    return pattern if sys.version_info >= (3, 11) else without_possessive(pattern)


#: JAX's common metadata body: an ``op_name`` and maybe a ``stack_frame_id``.
_JAX_METADATA = r"op_name=\"[^\"\\\n]*+\"(?: stack_frame_id=\d++)?"
#: XLA:GPU's: a ``scheduling_name`` (naming its instruction) after the ``op_name`` (and maybe
#: a ``deduplicated_name``), and maybe a ``stack_frame_id``.
_GPU_METADATA = (
    r"(?:op_name=\"[^\"\\\n]*+\"(?: deduplicated_name=\"[^\"\\\n]*+\")? )?"
    r"scheduling_name=\"[^\"\\\n]*+\"(?: stack_frame_id=\d++)?"
)


def _lines_pattern(common_metadata: str) -> re.Pattern[str]:
    """``_SIMPLE`` over a computation's body at once (each match one line, starting with two
    spaces and a name): the operands that are all plain names (``_PLAIN_OPERANDS``) in their
    own group, the others in the next; the tail up to its first ``metadata={``, then a
    `common_metadata` body closing the line, or any other metadata and what follows it.
    Possessive (``*+``) where giving back could not make a match, which saves the engine's
    backtracking records."""
    return re.compile(
        _possessive(
            r"^  (ROOT[^\S\n]+)?%?([^\s=]++) = "
            r"([^\s(){}\[\]]++\[[^\]\n]*+\](?:\{[^{}()\s]*+\})?|\([^()\s]*+(?: [^()\s]*+)*+\)) "
            r"([A-Za-z][\w\-.]*+)\((?:(%?[A-Za-z_][\w\-.]*+(?:, %?[A-Za-z_][\w\-.]*+)*+)"
            r"|([^(){}\[\]\"\n]*+))\)"
            r"([^m\n]*+(?:m(?!etadata=\{)[^m\n]*+)*+)"
            r"(?:metadata=\{(" + common_metadata + r")\}|(metadata=\{.*))?$"
        ),
        re.MULTILINE,
    )


#: The lines of JAX's modules, and of XLA:GPU's (whose every instruction's metadata differs:
#: its scheduling_name), which take the GPU's metadata bodies too.
_SIMPLE_LINES = _lines_pattern(_JAX_METADATA)
_GPU_LINES = _lines_pattern(_JAX_METADATA + "|" + _GPU_METADATA)
#: Characters at a module text's start where ``_GPU_LINES`` is told from ``_SIMPLE_LINES``.
_GPU_SNIFFED = 1 << 16
#: Line breaks of ``str.splitlines`` other than ``\n``.
_OTHER_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def _braces(depth: int) -> str:
    """A pattern of a ``{...}`` value holding quoted strings and up to `depth` levels of
    braces (XLA:GPU's ``backend_config`` JSON)."""
    # one character a step where runs cannot be possessive (Python 3.10): no backtracking
    # into a run's many splits when a value does not close
    run = r'[^{}"]++' if sys.version_info >= (3, 11) else r'[^{}"]'
    inside = run + r'|"(?:[^"\\]|\\.)*+"'
    if depth:
        inside += "|" + _braces(depth - 1)
    return r"\{(?:" + inside + r")*+\}"


#: One attribute ``key=value`` and the comma after it: see :func:`_attributes`.
_ATTRIBUTES = re.compile(
    _possessive(
        r"(([\w.\-]+)=(" + _braces(4) + r'|"(?:[^"\\]|\\.)*"|[^\s,{}"()\[\]]+)(?:,\s*|\s*$))'
    )
)

#: Attributes naming computations that nest under the instruction using them.
NESTING_KEYS = (
    "calls",
    "body",
    "condition",
    "true_computation",
    "false_computation",
    "branch_computations",
    "called_computations",
)
#: Attributes naming called computations, in the order calls are listed, and control edges.
_CALL_KEYS_ORDERED = (*NESTING_KEYS, "to_apply")
_CALL_KEYS = frozenset((*_CALL_KEYS_ORDERED, "control-predecessors"))


@dataclass(slots=True)
class Instruction:
    """One instruction as read (the columns of :class:`Computation` as an object)."""

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
class Computation:
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
    _instructions: list[Instruction] | None = field(default=None, repr=False)
    _parameters: dict[int, int] | None = field(default=None, repr=False)

    def add(self, instruction: Instruction) -> None:
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
    def instructions(self) -> list[Instruction]:
        """The instructions as objects (made once)."""
        if self._instructions is None:
            first = self.first_node
            columns = zip(
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
            self._instructions = []
            for position, (*read, parameter, elements) in enumerate(columns):
                node = first + position if first >= 0 else -1
                instruction = Instruction(*read)
                instruction.parameter, instruction.node = parameter, node
                instruction.elements = elements
                self._instructions.append(instruction)
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


def read_lines(text: str) -> tuple[list[tuple[str, int]], list[Computation], StackTables]:
    """The modules (name, line), computations and stack-frame tables of HLO text."""
    modules: list[tuple[str, int]] = []
    computations: list[Computation] = []
    tables = StackTables()
    current: Computation | None = None
    table = ""
    # XLA:GPU's optimized modules name each instruction in its metadata from the first lines on
    body_lines = _GPU_LINES if "scheduling_name=" in text[:_GPU_SNIFFED] else _SIMPLE_LINES
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
                current = Computation(match[2], bool(match[1]), lineno, max(len(modules) - 1, 0))
                index = _read_body(lines, index, current, body_lines)
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


def _read_body(
    lines: list[str], start: int, computation: Computation, body_lines: re.Pattern[str]
) -> int:
    """Read the body of `computation`, whose first line is ``lines[start]``, at once where
    each of its indented lines is a common line (one `body_lines` match each: ``_SIMPLE_LINES``
    or ``_GPU_LINES``); returns the index of the first line not read (``start`` when none
    is)."""
    end = start
    count = len(lines)
    while end < count and lines[end][:2] == "  ":
        end += 1
    for chunk in range(start, end, _CHUNK_LINES):
        chunk_end = min(chunk + _CHUNK_LINES, end)
        if not _read_chunk(lines, chunk, chunk_end, computation, body_lines):
            return chunk  # read line by line from here
    return end


#: Lines of a body matched at once: a long body's matches, held until read, are a few
#: hundred bytes a line, so its chunks reuse the memory the one before freed.
_CHUNK_LINES = 8192


def _read_chunk(
    lines: list[str], start: int, end: int, computation: Computation, body_lines: re.Pattern[str]
) -> bool:
    """Read ``lines[start:end]`` of `computation`'s body, each by one `body_lines` match,
    where each is a common line; False (nothing read) where one is not."""
    found = body_lines.findall("\n".join(lines[start:end]))
    if len(found) != end - start:
        return False
    roots, names, shape_texts, ops, plains, arguments, rests, bodies, others = zip(
        *found, strict=True
    )
    metadata_column, attrs_column = computation.metadata, computation.attrs
    calls_column, control_column = computation.calls, computation.control
    operands_column, elements_column = computation.operands, computation.elements
    parameters = computation.parameters
    rest_get, before_get = _rest_cache.get, _rest_before_metadata.get
    metadata_get, lineno = _metadata_cache.get, start
    for op, plain, argument, rest, body, other in zip(
        ops, plains, arguments, rests, bodies, others, strict=True
    ):
        lineno += 1
        if body and rest[-2:] == ", " and not other:  # the common metadata, last
            metadata = metadata_get(body)
            if metadata is None:
                quote = body.index('"', 9)
                if body[0] == "s" or len(body) > quote + 1 and body[quote + 3] != "t":
                    metadata = _gpu_metadata(body)
                else:  # op_name="NAME" and maybe " stack_frame_id=N"
                    metadata = {"op_name": body[9:quote]}
                    if len(body) > quote + 1:
                        metadata["stack_frame_id"] = body[quote + 17 :]
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
    _add_lines(computation, lines, start, end, (roots, names, shape_texts, ops))
    return True


def _add_lines(
    computation: Computation,
    lines: list[str],
    start: int,
    end: int,
    columns: tuple[tuple[str, ...], ...],
) -> None:
    """Add the columns read of ``lines[start:end]`` that need no instruction's tail: roots,
    names, shapes and ops, the line numbers and texts."""
    roots, names, shape_texts, ops = columns
    shapes = _shapes
    for shape_text in set(shape_texts).difference(shapes):
        shapes[shape_text] = hlo_shape(shape_text)
    computation.shapes += map(shapes.__getitem__, shape_texts)
    computation.names += names
    computation.ops += map(sys.intern, ops)  # few distinct: one object each
    computation.roots += map(bool, roots)
    computation.lines += range(start + 1, end + 1)
    computation.texts += map(str.strip, lines[start:end])


def _gpu_metadata(body: str) -> dict[str, str]:
    """The fields of XLA:GPU's common metadata body (``_GPU_METADATA``), read each time: its
    ``scheduling_name`` names its instruction, so no two are equal."""
    return {key: value[1:-1] if value[0] == '"' else value for key, value in _FIELD.findall(body)}


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


def _instruction(raw: str, lineno: int) -> Instruction:
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
    operands, elements = _other_operands(op, arguments, attrs, lineno, raw)
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


def without_metadata(line: str) -> str:
    """An instruction's `line` less its ``metadata={...}`` and the comma and spaces before
    it (``_METADATA.sub``, by one match where the line holds the keyword once)."""
    start = line.find("metadata={")
    found = _METADATA_BODY.match(line, start)
    if found is None or line.find("metadata={", start + 1) >= 0:
        return _METADATA.sub("", line)
    while start and line[start - 1].isspace():
        start -= 1
    if start and line[start - 1] == ",":
        start -= 1
    return line[:start] + line[found.end() :]


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
) -> Instruction:
    """The instruction; ``calls`` and ``control`` may be shared with others (read-only)."""
    if "op_type" in metadata:
        attrs["op_type"] = metadata["op_type"]
    parameter = -1
    if op == "parameter" and "parameter" in attrs and attrs["parameter"].isdigit():
        parameter = int(attrs["parameter"])
    return Instruction(
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


def _general_instruction(raw: str, lineno: int) -> Instruction:
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


def clear_caches() -> None:
    """Forget the tails, metadata and shapes read (kept while one text is read)."""
    _metadata_cache.clear()
    _rest_cache.clear()
    _tail_cache.clear()
    _shapes.clear()
    _rest_before_metadata.clear()
