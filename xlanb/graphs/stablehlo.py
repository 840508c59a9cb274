"""StableHLO / MHLO in MLIR text: JAX's ``jit(f).lower(...).as_text()`` (with or without
``debug_info=True``) and the ``.mlir`` modules XLA dumps.

The public function (``@main``) is the top level. A private function called from one place
nests under its ``call``; one called from several places goes to a "functions" group. Ops with
regions (``while``'s cond/do, ``case`` branches, reducers, comparators) nest their regions
under the op. ``loc(...)`` gives the op_name (JAX's ``jit(f)/jvp()/dot_general``) and source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from xlanb.formats.text import closing, split_top, unquote
from xlanb.graphs.errors import ParseError
from xlanb.graphs.model import Graph, GraphBuilder
from xlanb.graphs.scopes import group_by_op_name
from xlanb.graphs.shapes import mlir_type

KIND = "stablehlo"
#: The node columns a location fills, in the order ``Locations.resolve`` gives them.
_ORIGIN_COLUMNS = ("op_name", "source_file", "source_line", "source_function")

_ALIAS = re.compile(r"\s*(#loc\d*)\s*=\s*loc\((.*)\)\s*$")
_FUNCTION = re.compile(r"(?:func\.func|func)\s+(?:public\s+|private\s+|nested\s+)*@([\w.$\-]+)\(")
_MODULE = re.compile(r"(?:builtin\.)?module\b")
_RESULTS = re.compile(r"((?:%[\w.$\-]+(?::\d+)?\s*,\s*)*%[\w.$\-]+(?::\d+)?)\s*=\s*")
_VALUE = re.compile(r"%([\w.$\-]+)(?:#(\d+))?")
_OP = re.compile(r'"([\w.]+)"|([A-Za-z_][\w.]*)')
_REGION_OPENER = re.compile(r"([A-Za-z_]\w*)\s*(\(.*\))?\s*\{$")
_BLOCK = re.compile(r"\^bb\d+(?:\((.*)\))?:$")
_ITER_ARG = re.compile(r"(%[\w.$\-]+)\s*=\s*(%[\w.$\-]+(?:#\d+)?)")
_ATTR = re.compile(
    r'\b([a-z_][\w.]*)\s*=\s*(\[[^\]]*\](?:\s*x\s*\[[^\]]*\])?|"(?:[^"\\]|\\.)*"'
    r"|[^,\s{}()<>]+(?:<[^>]*>)?)"
)
_SIGNATURE = re.compile(r'"(?:[^"\\]|\\.)*"|->| : |[()\[\]{}<>]')
_SYMBOL = re.compile(r"@([\w.$\-]+)")
_RETURNS = ("return", "func.return", "stablehlo.return", "mhlo.return", "sdy.return")


def looks_like(text: str) -> bool:
    """True for MLIR module text holding functions."""
    head = text.lstrip()[:20000]
    return bool(
        re.search(r"^\s*(module\b|func\.func\b|#loc)", head, re.MULTILINE)
        and ("func.func" in text or "stablehlo." in text or "mhlo." in text)
    )


def parse(text: str) -> Graph:
    """Parse an MLIR module of StableHLO/MHLO functions into a :class:`Graph`."""
    return _Reader(text).read()


@dataclass
class _Frame:
    kind: str  # module, function, region
    scope: str
    prefix: str  # node id prefix
    anchor: str = ""  # node id of the op owning a region
    function: str = ""
    values: dict[str, str] = field(default_factory=dict)
    last: str = ""  # id of the last op node at this level (a region opener's owner)


@dataclass
class _Function:
    name: str
    scope: str
    public: bool
    line: int
    arguments: list[str] = field(default_factory=list)
    returned: list[str] = field(default_factory=list)
    members: list[int] = field(default_factory=list)


class _LocationTable:
    """``#locN = loc(...)`` aliases and the resolution of any ``loc(...)`` to
    (op_name, file, line, function)."""

    def __init__(self, text: str) -> None:
        self.aliases: dict[str, str] = {}
        for line in text.splitlines():
            if line.startswith("#loc"):
                match = _ALIAS.match(line)
                if match:
                    self.aliases[match[1]] = match[2]
        self.cache: dict[str, tuple[str, str, int | None, str]] = {}

    def resolve(self, expression: str, depth: int = 0) -> tuple[str, str, int | None, str]:
        expression = expression.strip()
        if depth > 50 or not expression or expression == "unknown":
            return "", "", None, ""
        if expression.startswith("#loc"):
            cached = self.cache.get(expression)
            if cached is None:
                self.cache[expression] = ("", "", None, "")  # cycles resolve to nothing
                cached = self.resolve(self.aliases.get(expression, ""), depth + 1)
                self.cache[expression] = cached
            return cached
        if expression.startswith("callsite("):
            callee, _, caller = expression[9:-1].partition(" at ")
            inner = self.resolve(callee, depth + 1)
            if inner[1]:
                return inner
            outer = self.resolve(caller, depth + 1)
            return inner[0] or outer[0], outer[1], outer[2], inner[3] or outer[3]
        if expression.startswith("fused"):
            start = expression.find("[")
            for part in split_top(expression[start + 1 : expression.rfind("]")]):
                found = self.resolve(part, depth + 1)
                if found[0] or found[1]:
                    return found
            return "", "", None, ""
        if expression.startswith('"'):
            end = closing_quote(expression)
            literal = unquote(expression[: end + 1])
            rest = expression[end + 1 :]
            if rest.startswith(":"):
                line = re.match(r":(\d+)", rest)
                return "", literal, int(line[1]) if line else None, ""
            if rest.startswith("("):
                _name, file, line_number, function = self.resolve(rest[1:-1], depth + 1)
                return literal, file, line_number, function
            return literal, "", None, ""
        return "", "", None, ""


def closing_quote(text: str) -> int:
    index = 1
    while index < len(text):
        if text[index] == "\\":
            index += 2
            continue
        if text[index] == '"':
            return index
        index += 1
    return len(text) - 1


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.builder = GraphBuilder(KIND, text)
        self.locations = _LocationTable(text)
        self.frames: list[_Frame] = []
        self.functions: list[_Function] = []
        self.module = ""
        self.calls: list[tuple[str, str]] = []  # (call node id, callee)
        self.region_args: dict[str, list[tuple[str, str]]] = {}  # anchor -> (name, operand)
        self.operands: dict[int, list[int]] = {}
        self.users: dict[int, list[int]] = {}
        self.region_scopes: dict[str, tuple[str, int]] = {}  # op -> (its scope, regions so far)

    # -- driver --------------------------------------------------------------------------
    def read(self) -> Graph:
        for lineno, raw in enumerate(self.text.splitlines(), 1):
            stripped = raw.strip()
            if not stripped or stripped.startswith("//") or stripped.startswith("#"):
                continue
            self._line(stripped, lineno, raw)
        if any(frame.kind != "module" for frame in self.frames):
            open_frame = next(f for f in self.frames if f.kind != "module")
            raise ParseError(
                KIND, 0, f"unclosed {open_frame.kind} {open_frame.prefix!r} at the end of the text"
            )
        if not self.functions:
            raise ParseError(KIND, 0, "no function (`func.func @name(...)`) found")
        self._arrange()
        return self.builder.build(self.module or self.functions[0].name)

    def _line(self, stripped: str, lineno: int, raw: str) -> None:
        body, location = _split_location(stripped)
        if body.startswith("}"):
            self._close(body, location, lineno, raw)
            return
        if _MODULE.match(body) and (not self.frames or self.frames[-1].kind == "module"):
            name = _SYMBOL.search(body.split("attributes")[0])
            self.module = self.module or (name[1] if name else "module")
            if body.endswith("{"):
                self.frames.append(_Frame("module", "", ""))
            return
        function = _FUNCTION.match(body)
        if function:
            self._function(function, body, lineno, raw)
            return
        if not self.frames or self.frames[-1].kind == "module":
            return  # module-level declarations (sdy.mesh, globals)
        block = _BLOCK.match(body)
        if block:
            self._block_arguments(block[1] or "", lineno)
            return
        opener = _REGION_OPENER.match(body)
        if (
            opener
            and not body.startswith("%")
            and "=" not in body.split("(")[0]
            and not _is_op_start(body)
        ):
            owner = self.frames[-1].last
            if not owner:
                raise ParseError(KIND, lineno, "region without an op to belong to", raw)
            self._open_region(owner, opener[1], lineno)
            if opener[2]:
                self._block_arguments(opener[2][1:-1], lineno)
            return
        self._op(body, location, lineno, raw)

    # -- structure -----------------------------------------------------------------------
    def _function(self, match: re.Match[str], body: str, lineno: int, raw: str) -> None:
        name = match[1]
        open_at = match.end() - 1
        close_at = closing(body, open_at)
        if close_at < 0:
            raise ParseError(KIND, lineno, f"unclosed argument list of @{name}", raw)
        scope = self.builder.add_scope(f"@{name}", label=name, kind="function")
        function = _Function(name, scope, " private " not in f" {body} ", lineno)
        self.functions.append(function)
        frame = _Frame("function", scope, name, function=name)
        self.frames.append(frame)
        for position, argument in enumerate(split_top(body[open_at + 1 : close_at], angle=True)):
            value, _, rest = argument.partition(":")
            rest, location = _split_location(rest.strip())
            type_text = rest.split(" {")[0].strip()
            op_name, file, line, source_function = self.locations.resolve(location)
            node_id = f"{name}/{value.strip()}"
            self.builder.add_node(
                node_id,
                name=value.strip(),
                op="parameter",
                shape=mlir_type(type_text),
                scope=scope,
                op_name=op_name,
                source_file=file,
                source_line=line,
                source_function=source_function,
                attrs={"index": str(position)},
                text=argument,
                line=lineno,
            )
            frame.values[value.strip()[1:]] = node_id
            function.arguments.append(node_id)
            function.members.append(self.builder.node_count - 1)
        if not body.endswith("{"):  # a declaration without a body
            self.frames.pop()

    def _open_region(self, owner: str, label: str, lineno: int) -> None:
        parent = self.frames[-1]
        builder = self.builder
        columns, owner_index = builder.columns, builder.index[owner]
        owner_scope = columns["scope"][owner_index]
        if owner not in self.region_scopes:
            anchored = builder.add_scope(
                owner,
                parent=owner_scope,
                label=f"{columns['name'][owner_index]} {columns['op'][owner_index].split('.')[-1]}",
                kind="region",
                node=owner,
            )
            self.region_scopes[owner] = (anchored, 0)
        anchored, count = self.region_scopes[owner]
        self.region_scopes[owner] = (anchored, count + 1)
        label = label or f"region {count}"
        scope = builder.add_scope(
            f"{anchored}/{label}", parent=anchored, label=label, kind="region"
        )
        frame = _Frame("region", scope, f"{owner}/{label}", anchor=owner, function=parent.function)
        self.frames.append(frame)
        for position, (name, operand) in enumerate(self.region_args.get(owner, [])):
            node_id = f"{frame.prefix}/{name}"
            builder.add_node(
                node_id,
                name=name,
                op="parameter",
                scope=scope,
                shape=builder.columns["shape"][builder.index[operand]],
                attrs={"index": str(position)},
                text=f"{name} = {operand}",
                line=lineno,
            )
            frame.values[name[1:]] = node_id
            builder.add_edge(operand, node_id, position, "param")

    def _block_arguments(self, text: str, lineno: int) -> None:
        frame = self.frames[-1]
        for position, argument in enumerate(split_top(text, angle=True)):
            value, _, rest = argument.partition(":")
            rest, _location = _split_location(rest.strip())
            node_id = f"{frame.prefix}/{value.strip()}"
            if node_id in self.builder.index:
                continue
            self.builder.add_node(
                node_id,
                name=value.strip(),
                op="parameter",
                shape=mlir_type(rest.strip()),
                scope=frame.scope,
                attrs={"index": str(position)},
                text=argument,
                line=lineno,
            )
            frame.values[value.strip()[1:]] = node_id

    def _close(self, body: str, location: str, lineno: int, raw: str) -> None:
        if not self.frames:
            raise ParseError(KIND, lineno, "`}` without an open `{`", raw)
        frame = self.frames.pop()
        rest = body[1:].strip()
        if frame.kind != "region":
            return
        if rest.endswith("{"):  # `} do {`, `}, {`: the op's next region
            label = rest.strip(", {").strip() or ""
            self._open_region(frame.anchor, label, lineno)
            return
        columns, index = self.builder.columns, self.builder.index[frame.anchor]
        if rest.startswith(")"):  # end of a generic op's regions: `}) : (...) -> type`
            types = _signature(rest[1:])
            if types and not columns["shape"][index]:
                columns["shape"][index] = mlir_type(types)
        if location and not columns["op_name"][index] and not columns["source_file"][index]:
            # the op's own loc follows its last region
            origin = self.locations.resolve(location)
            for column, value in zip(_ORIGIN_COLUMNS, origin, strict=True):
                columns[column][index] = value

    # -- ops -------------------------------------------------------------------------------
    def _op(self, body: str, location: str, lineno: int, raw: str) -> None:
        frame = self.frames[-1]
        results: list[str] = []
        count = 1
        match = _RESULTS.match(body)
        rest = body
        if match:
            for result in match[1].split(","):
                name, _, number = result.strip()[1:].partition(":")
                results.append(name)
                count = int(number) if number else count
            count = max(count, len(results))
            rest = body[match.end() :]
        op_match = _OP.match(rest)
        if not op_match:
            raise ParseError(KIND, lineno, "expected an op (`%x = dialect.op ...`)", raw)
        op = op_match[1] or op_match[2]
        after = rest[op_match.end() :]
        if op in _RETURNS:
            self._return(frame, after, lineno, raw)
            return
        opens_region = after.rstrip().endswith("{")
        head, signature = _split_signature(after.rstrip(" ({") if opens_region else after)
        shape = ""
        if signature:
            types = _result_types(signature, count)
            shape = mlir_type(types) if types else ""
        op_name, file, line, function = self.locations.resolve(location)
        attrs = {key: value for key, value in _ATTR.findall(head)}
        symbol = _SYMBOL.search(head)
        if symbol and (op.endswith("call") or op.endswith("custom_call")):
            attrs["call_target_name" if "custom_call" in op else "callee"] = symbol[1]
        if op.endswith("constant"):
            attrs["value"] = head.strip()[:200]
        if "call_target_name" in attrs:
            attrs["call_target_name"] = unquote(attrs["call_target_name"])
        name = f"%{results[0]}" if results else op.split(".")[-1]
        node_id = f"{frame.prefix}/{name}" if results else f"{frame.prefix}/{name}@{lineno}"
        index = self.builder.add_node(
            node_id,
            name=name,
            op=op,
            shape=shape,
            scope=frame.scope,
            op_name=op_name,
            source_file=file,
            source_line=line,
            source_function=function,
            attrs=attrs,
            text=raw.strip(),
            line=lineno,
        )
        if frame.kind == "function":
            self.functions[-1].members.append(index)
        for result in results:
            frame.values[result] = node_id
        iter_args = _ITER_ARG.findall(head)
        operand_text = _ITER_ARG.sub(lambda m: m[2], head)
        if iter_args:
            self.region_args[node_id] = [
                (left, self._lookup(right, lineno, raw)) for left, right in iter_args
            ]
        for position, value in enumerate(_VALUE.finditer(operand_text)):
            source = self._lookup(value.group(), lineno, raw)
            self.builder.add_edge(source, node_id, position, "data")
            self.operands.setdefault(index, []).append(self.builder.index[source])
            self.users.setdefault(self.builder.index[source], []).append(index)
        if "callee" in attrs:
            self.calls.append((node_id, attrs["callee"]))
        frame.last = node_id
        if opens_region:
            self._open_region(node_id, "", lineno)

    def _return(self, frame: _Frame, after: str, lineno: int, raw: str) -> None:
        head, _signature_text = _split_signature(after)
        values = [self._lookup(v.group(), lineno, raw) for v in _VALUE.finditer(head)]
        builder = self.builder
        if frame.kind == "function":
            self.functions[-1].returned = values
            for value in values:
                builder.columns["output"][builder.index[value]] = True
        elif frame.anchor:
            for position, value in enumerate(values):
                builder.add_edge(value, frame.anchor, position, "root")

    def _lookup(self, token: str, lineno: int, raw: str) -> str:
        name = token.lstrip("%").split("#")[0]
        for frame in reversed(self.frames):
            if name in frame.values:
                return frame.values[name]
            if frame.kind == "function":
                break
        raise ParseError(KIND, lineno, f"%{name} is not defined before its use", raw)

    # -- nesting ---------------------------------------------------------------------------
    def _arrange(self) -> None:
        """Top-level function's nodes to the top level, op_name groups, functions called
        once under their call, the others in a "functions" group."""
        builder = self.builder
        main = next(
            (f for f in self.functions if f.name == "main"),
            next((f for f in self.functions if f.public), self.functions[0]),
        )
        call_sites: dict[str, list[str]] = {}
        for call, callee in self.calls:
            call_sites.setdefault(callee, []).append(call)
        by_name = {f.name: f for f in self.functions}
        self._move_scope(main.scope, "")
        group_by_op_name(builder, main.members, "", self.operands, self.users)
        shared = ""
        pending = [f for f in self.functions if f is not main]
        for function in pending:
            scope = builder.scopes[builder.scope_index[function.scope]]
            sites = call_sites.get(function.name, [])
            if len(sites) == 1 and function.name in by_name:
                call_id = builder.columns["id"][builder.index[sites[0]]]
                scope.update(kind="function", node=call_id, label=function.name)
                for position, operand in enumerate(self._operands_of(call_id)):
                    if position < len(function.arguments):
                        builder.add_edge(operand, function.arguments[position], position, "param")
                for position, value in enumerate(function.returned):
                    builder.add_edge(value, call_id, position, "root")
            else:
                if not shared:
                    shared = builder.add_scope("functions", label="functions", kind="group")
                scope["parent"] = shared
                scope["kind"] = "computation"
            group_by_op_name(builder, function.members, function.scope, self.operands, self.users)
        for scope in builder.scopes:  # anchored scopes sit where their op was grouped
            if scope["node"]:
                scope["parent"] = builder.columns["scope"][builder.index[scope["node"]]]
        self._merge_single_regions()

    def _operands_of(self, node_id: str) -> list[str]:
        ids = self.builder.columns["id"]
        return [ids[i] for i in self.operands.get(self.builder.index[node_id], [])]

    def _move_scope(self, scope_id: str, target: str) -> None:
        """Dissolve scope ``scope_id`` into ``target``."""
        builder = self.builder
        scope_of = builder.columns["scope"]
        builder.columns["scope"] = [target if s == scope_id else s for s in scope_of]
        for scope in builder.scopes:
            if scope["parent"] == scope_id:
                scope["parent"] = target
        builder.scopes = [s for s in builder.scopes if s["id"] != scope_id]
        builder.scope_index = {s["id"]: i for i, s in enumerate(builder.scopes)}

    def _merge_single_regions(self) -> None:
        """An op with one region (a reducer, a comparator) shows the region's ops directly."""
        children: dict[str, list[str]] = {}
        for scope in self.builder.scopes:
            children.setdefault(scope["parent"], []).append(scope["id"])
        for scope in list(self.builder.scopes):
            if scope["kind"] == "region" and scope["node"]:
                inner = children.get(scope["id"], [])
                if len(inner) == 1:
                    self._move_scope(inner[0], scope["id"])


def _is_op_start(body: str) -> bool:
    op = _OP.match(body)
    return bool(op and op.group(2) and "." in op.group(2))


def _split_location(text: str) -> tuple[str, str]:
    """``op ... loc(#loc3)`` -> (``op ...``, ``#loc3``); text without a trailing loc as is."""
    if not text.endswith(")"):
        return text, ""
    start = text.rfind("loc(")
    while start > 0:
        if text[start - 1] in " \t" and closing(text, start + 3) == len(text) - 1:
            return text[:start].rstrip(), text[start + 4 : -1]
        start = text.rfind("loc(", 0, start)
    return text, ""


def _split_signature(text: str) -> tuple[str, str]:
    """``%a, %b {attr} : (types) -> type`` -> (``%a, %b {attr}``, ``(types) -> type``)."""
    depth = 0
    for match in _SIGNATURE.finditer(text):
        token = match.group()
        if token in "([{<":
            depth += 1
        elif token in ")]}>":
            depth -= 1
        elif token == " : " and depth == 0:
            return text[: match.start()], text[match.end() :].strip()
    return text, ""


def _signature(text: str) -> str:
    _head, signature = _split_signature(
        " " + text.strip() if text.strip().startswith(":") else text
    )
    return _result_types(signature, 1) if signature else ""


def _result_types(signature: str, count: int) -> str:
    """Result types of a signature: after the top-level ``->``, else the last ``count``."""
    depth = 0
    for match in _SIGNATURE.finditer(signature):
        token = match.group()
        if token in "([{<":
            depth += 1
        elif token in ")]}>":
            depth -= 1
        elif token == "->" and depth == 0:
            result = signature[match.end() :].strip()
            if result.startswith("(") and closing(result, 0, angle=True) == len(result) - 1:
                result = result[1:-1]
            return result
    types = split_top(signature, angle=True)
    return ", ".join(types[-count:]) if types else ""
