"""Pure text helpers for the JAX backend: JAX's ``TRACING CACHE MISS`` explanations (the
short ``compiles.cause``) and HLO/StableHLO module text (input signature, node counts, host
callback instructions with their stack frames). No JAX import; nothing here keeps state."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from xlanb.formats.text import unquote

# Causes (``compiles.cause``) read from JAX's explanations.
#: The backend name of JAX rows.
BACKEND = "jax"

# Causes (``compiles.cause``) read from JAX's explanations.
NEVER_SEEN = "never seen function"
NEW_TYPES = "different input types"
#: JAX's ``different input types`` where only the arguments' mesh placement changed.
NEW_SHARDINGS = "different input shardings"
STATIC_CHANGED = "static argument changed"
NEW_PYTREE = "different input pytree"
NEW_CONTEXT = "tracing context changed"
UNEXPLAINED = "no explanation from JAX"

# Causes and fallback causes xlanb names itself.
EAGER_OP = "eager op"
DERIVED = "derived program (jax.grad/vmap/... of a jitted function)"
HOST_CALLBACK = "host_callback"
HOST_TRANSFER = "host_transfer"
#: A value read back from a jax.Array: a sync (the same cause as torch's ``.item()``).
HOST_READ = "item"

ADVICE = {
    HOST_TRANSFER: "pass a device array (jax.device_put) instead of a numpy array",
    "scalar": "pass a device array (jax.device_put) instead of a Python scalar, or mark the "
    "argument static if it takes only a few values",
    HOST_READ: "Each read waits for the array's program to finish and copies the value to the "
    "host, so the host stops running ahead of the device: keep the loss as an array and read "
    "it every N steps (or accumulate on the device and read once after the loop).",
    HOST_CALLBACK: "Each call stops the device program, copies the operands to the host, runs "
    "Python and copies the results back. Keep callbacks out of the hot "
    "function: log with jax.debug.print only while debugging, and replace "
    "pure_callback with jnp/lax code where possible.",
}

_CALLBACK_TARGETS = (
    "xla_ffi_python_cpu_callback",
    "xla_python_cpu_callback",
    "xla_ffi_python_gpu_callback",
    "xla_python_gpu_callback",
    "xla_ffi_partitioned_python_cpu_callback",
)


@dataclass
class CallbackOp:
    op: str
    frames: list[tuple[str, str, int]]
    #: The HLO instruction (``pure_callback.7``): what the device trace's events name.
    instruction: str = ""


_MISS_AT = re.compile(
    r"^TRACING CACHE MISS at (?P<file>.+?):(?P<line>\d+)(?::\d+)? "
    r"\((?P<function>.*)\):$"
)
_NEVER_SEEN_NAME = re.compile(r"^\s+(?P<name>.*) id=\d+(?: defined at .*)?$")
_FOR_NAME = re.compile(r"^\s+for (?P<name>.*?)(?: defined at .*)?$")
_TYPE_DIFF = re.compile(r"^\s+\* at (?P<arg>.+?), now (?P<new>.+?) and before (?P<old>.+?)\s*$")
#: A type as JAX's explanation prints it: ``f32[64,64]`` and its mesh axes in brackets
#: (``({})``: none; ``({Auto: ('data',)})``), maybe more after them (``{weak_type=True}``).
_PLACED_TYPE = re.compile(r"^(?P<type>[^(\s]+)\((?P<mesh>\{.*\})\)(?P<rest>.*)$")
_STATIC_DIFF = re.compile(
    r"with pytree metadata Static\(val=(?P<new>.*)\) and before <class '[^']*'> with pytree "
    r"metadata Static\(val=(?P<old>.*)\), so "
)
_CONTEXT_DIFF = re.compile(r"^\s+\* (?P<name>\S+) differs: now (?P<new>.*) and before (?P<old>.*)$")


@dataclass
class Explanation:
    name: str
    cause: str
    text: str
    frames: list[tuple[str, str, int]]


def parse_explanation(message: str) -> Explanation:
    """A ``TRACING CACHE MISS`` log message as (function name, short cause, text, frames)."""
    lines = message.splitlines()
    frames: list[tuple[str, str, int]] = []
    match = _MISS_AT.match(lines[0]) if lines else None
    if match:
        frames.append((match["function"], match["file"], int(match["line"])))
    body = lines[1:]
    name = ""
    for line in body[:3]:
        found = _NEVER_SEEN_NAME.match(line) or _FOR_NAME.match(line)
        if found and not line.strip().startswith("never seen"):
            name = found["name"]
            break
    return Explanation(name, explanation_cause(message), "\n".join(body).strip(), frames)


def explanation_cause(message: str) -> str:
    """The short cause of a cache-miss explanation: ``never seen function``, ``different input
    types: f32[4,4] -> f32[8,4]``, ``static argument changed: 2 -> 3``, ..."""
    if "never seen function" in message:
        return NEVER_SEEN
    if "different input types" in message:
        diffs = [found for line in message.splitlines() if (found := _TYPE_DIFF.match(line))]
        moved = _mesh_changes(diffs)
        if moved:
            return moved
        pairs = []
        for found in diffs:
            pair = f"{_type_text(found['old'])} -> {_type_text(found['new'])}"
            if pair not in pairs:
                pairs.append(pair)
        return f"{NEW_TYPES}: {', '.join(pairs)}" if pairs else NEW_TYPES
    if "different value of static" in message:  # JAX before 0.7
        pairs = list(dict.fromkeys(_old_static_changes(message)))
        if pairs:
            return f"{STATIC_CHANGED}: {', '.join(pairs)}"
    if "different input pytree" in message:
        statics = [
            (line, found) for line in message.splitlines() if (found := _STATIC_DIFF.search(line))
        ]
        if statics:
            pairs = list(
                dict.fromkeys(_static_change(line, s["old"], s["new"]) for line, s in statics)
            )
            return f"{STATIC_CHANGED}: {', '.join(pairs)}"
        return NEW_PYTREE
    if "Tracing context doesn't match" in message:
        names = [
            found["name"] for line in message.splitlines() if (found := _CONTEXT_DIFF.match(line))
        ]
        return f"{NEW_CONTEXT}: {', '.join(names)}" if names else NEW_CONTEXT
    lines = [line.strip() for line in message.splitlines()[1:] if line.strip()]
    return lines[-1] if lines else UNEXPLAINED


#: JAX 0.12's explanation when the keys differ in nothing it compares (a static argument).
JAX_UNEXPLAINED = "cache miss explanation unavailable"


def static_change_cause(
    now: tuple[tuple[str, str, str], ...], before: dict[str, str] | None
) -> str:
    """The cause of a recompile whose static arguments are `now` ((where, repr, class name if
    hashed by identity else "")), the function's previous compile having had `before`
    (where -> repr; None: not seen): ``static argument changed: 2 -> 3``."""
    changes = []
    for where, text, identity_class in now:
        if identity_class:
            changes.append(f"a new {identity_class} object at {where} ({IDENTITY_HASHED})")
        elif before is None or where not in before:
            changes.append(f"{where} is {_short(text)}")
        elif before[where] != text:
            changes.append(f"{_short(before[where])} -> {_short(text)}")
    return f"{STATIC_CHANGED}: {', '.join(changes)}" if changes else STATIC_CHANGED


def _mesh_changes(diffs: list[re.Match[str]]) -> str:
    """``different input shardings: {} -> {Auto: ('data',)} at w`` where each of the
    arguments JAX names (`diffs`: ``_TYPE_DIFF`` matches) kept its type and moved to other
    mesh axes (a jitted step's outputs come back on the mesh of its sharded inputs); "" where
    one's type changed."""
    moves: list[str] = []
    for found in diffs:
        old = _PLACED_TYPE.match(_hint_cut(found["old"]))
        new = _PLACED_TYPE.match(_hint_cut(found["new"]))
        if old is None or new is None or (old["type"], old["rest"]) != (new["type"], new["rest"]):
            return ""
        move = f"{old['mesh']} -> {new['mesh']}"
        if move not in moves:
            moves.append(move)
    if not moves:
        return ""
    where = diffs[0]["arg"] + (f" and {len(diffs) - 1} more" if len(diffs) > 1 else "")
    return f"{NEW_SHARDINGS}: {', '.join(moves)} at {where}"


def _hint_cut(text: str) -> str:
    """A type as JAX's explanation prints it, less a hint glued to the last line."""
    return text.split("https://", 1)[0].strip()


def _type_text(text: str) -> str:
    """A type as JAX's explanation prints it, without the noise: ``f32[4,4]({}){weak_type=
    False}https://...`` (a hint glued to the last line) is ``f32[4,4]``."""
    return _hint_cut(text).replace("({})", "").replace("{weak_type=False}", "")


_OLD_STATIC = re.compile(r"^\s+now (?P<new>.*?) and before (?P<old>.*)$")
_ONE_KWARG = re.compile(r"\{(?P<name>\w+): (?P<value>.*)\}")


def _old_static_changes(message: str) -> list[str]:
    """``2 -> 3`` of each ``key with different value of static args|kwargs:`` block, as JAX
    before 0.7 wrote them (``now 3 and before 2``; ``now {mode: 'b'} and before {mode: 'a'}``)."""
    changes = []
    lines = message.splitlines()
    for index, line in enumerate(lines[:-1]):
        if "different value of static" not in line:
            continue
        found = _OLD_STATIC.match(lines[index + 1])
        if not found or not found["old"]:
            continue
        old, new = found["old"], found["new"]
        old_kwarg, new_kwarg = _ONE_KWARG.fullmatch(old), _ONE_KWARG.fullmatch(new)
        if old_kwarg and new_kwarg and old_kwarg["name"] == new_kwarg["name"]:
            old, new = old_kwarg["value"], new_kwarg["value"]
        changes.append(_static_change("", old, new))
    return changes


def _static_change(line: str, old: str, new: str) -> str:
    """``2 -> 3``; for two instances of one class without value equality (their repr is
    ``<mod.Config object at 0x...>``: hashed by identity), what that means, and where."""
    before, after = _IDENTITY_REPR.fullmatch(old), _IDENTITY_REPR.fullmatch(new)
    if before and after and before["cls"] == after["cls"]:
        path = _INPUT_PATH.search(line)
        where = f" at {_argument(path['path'])}" if path else ""
        kind = after["cls"].rsplit(".", 1)[-1]
        return f"a new {kind} object{where} ({IDENTITY_HASHED})"
    return f"{_short(old)} -> {_short(new)}"


#: What an identity-hashed static argument means (also the finding's cue).
IDENTITY_HASHED = "hashed by identity: each new object compiles again"
_IDENTITY_REPR = re.compile(r"<(?P<cls>[\w.]+) object at 0x[0-9a-fA-F]+>")
_INPUT_PATH = re.compile(r"at input path (?P<path>\S+),")


def _argument(path: str) -> str:
    """JAX's input path as the call wrote it: ``[0][1]`` is ``args[1]``, ``[1]['cfg']``
    the keyword argument ``cfg``."""
    found = re.fullmatch(r"\[(?P<side>[01])\]\[(?P<key>[^\]]+)\](?P<rest>.*)", path)
    if not found:
        return f"input path {path}"
    if found["side"] == "0":
        return f"args[{found['key']}]{found['rest']}"
    return f"keyword {found['key'].strip(chr(39))}{found['rest']}"


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def strip_jit(name: str) -> str:
    return name[4:-1] if name.startswith("jit(") and name.endswith(")") else name


_ENTRY_LAYOUT = re.compile(r"entry_computation_layout=\{\((?P<inputs>.*?)\)->")
_LAYOUT = re.compile(r"\{[^{}]*\}")


def hlo_signature(hlo_text: str) -> str | None:
    """The input types of the compiled program, ``f32[8,4], f32[4]``."""
    found = _ENTRY_LAYOUT.search(hlo_text)
    if not found:
        return None
    return _LAYOUT.sub("", found["inputs"])


_STABLEHLO_OP = re.compile(
    r"^\s*(?:%[^=]+=\s*)?\"?(?:stablehlo|chlo|mhlo|func|sdy|shardy|"
    r"tensor|arith|math)\.[a-z_]+"
)


#: Texts whose op or instruction counts are kept (:func:`count_stablehlo_ops`, and
#: :func:`xlanb.formats.hlo_text.count_hlo_instructions`).
TEXTS_COUNTED = 16


@functools.lru_cache(maxsize=TEXTS_COUNTED)
def count_stablehlo_ops(text: str) -> int:
    """Operations in a StableHLO module (function definitions and the mesh excluded); the last
    texts' counts are kept (a program read ahead is counted again at the cell's end)."""
    count = 0
    for line in text.splitlines():
        stripped = line.lstrip()
        if stripped.startswith(("func.func", "sdy.mesh", "module")):
            continue
        if _STABLEHLO_OP.match(line) or stripped.startswith(("return ", "call @")):
            count += 1
    return count


_CALLBACK_LINE = re.compile(r'custom_call_target="(?P<target>[^"]+)"')
_OP_TYPE = re.compile(r'op_type="(?P<op>[^"]+)"')
_STACK_ID = re.compile(r"stack_frame_id=(?P<id>\d+)")
_OP_NAME_TAIL = re.compile(r'op_name="(?:[^"]*/)?(?P<op>[^"/]+)"')
_SOURCE = re.compile(r'source_file="(?P<file>[^"]+)" source_line=(?P<line>\d+)')
_INSTRUCTION = re.compile(r"\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=")


def callback_instructions(hlo_text: str) -> list[CallbackOp]:
    frames_of = stack_tables(hlo_text).frames
    ops = []
    for line in hlo_text.splitlines():
        target = _CALLBACK_LINE.search(line)
        if not target or target["target"] not in _CALLBACK_TARGETS:
            continue
        # JAX before 0.7 writes no op_type and no stack frame id: the primitive is the last
        # part of op_name, the place source_file and source_line.
        op = _OP_TYPE.search(line) or _OP_NAME_TAIL.search(line)
        stack = _STACK_ID.search(line)
        if stack:
            frames = frames_of(int(stack["id"]))
        else:
            source = _SOURCE.search(line)
            frames = [("", source["file"], int(source["line"]))] if source else []
        name = _INSTRUCTION.match(line)
        ops.append(CallbackOp(op["op"] if op else "callback", frames, name["name"] if name else ""))
    return ops


# -- stack-frame tables ------------------------------------------------------------------------
#: The tables JAX writes at the top of an HLO module text, which ``metadata={stack_frame_id=N}``
#: points into::
#:
#:     FileNames
#:     1 "/tmp/train.py"
#:     FunctionNames
#:     1 "step"
#:     FileLocations
#:     1 {file_name_id=1 function_name_id=1 line=6 end_line=6 column=4 end_column=47}
#:     StackFrames
#:     1 {file_location_id=1 parent_frame_id=1}
STACK_TABLES = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_TABLE_ENTRY = re.compile(r"(\d+)(?:\s+(.*))?")
_NUMBER_FIELD = re.compile(r"(\w+)=(\d+)")


@dataclass
class StackTables:
    """The stack-frame tables of an HLO module, read entry by entry with :meth:`add` (or all
    at once by :func:`stack_tables`)."""

    files: dict[int, str] = field(default_factory=dict)
    functions: dict[int, str] = field(default_factory=dict)
    #: Location id -> (file name id, function name id, line or None).
    locations: dict[int, tuple[int, int, int | None]] = field(default_factory=dict)
    #: Frame id -> (location id, parent frame id as printed: the parent's id + 1, 0 for none).
    parents: dict[int, tuple[int, int]] = field(default_factory=dict)

    def add(self, table: str, line: str) -> bool:
        """Read one entry line (``N ...``) of `table` (one of :data:`STACK_TABLES`); False
        when the line is not an entry."""
        found = _TABLE_ENTRY.fullmatch(line.strip())
        if found is None:
            return False
        key, value = int(found[1]), (found[2] or "").strip()
        if table == "FileNames":
            self.files[key] = unquote(value)
        elif table == "FunctionNames":
            self.functions[key] = unquote(value)
        else:
            fields = {name: int(number) for name, number in _NUMBER_FIELD.findall(value)}
            if table == "FileLocations":
                self.locations[key] = (
                    fields.get("file_name_id", 0),
                    fields.get("function_name_id", 0),
                    fields.get("line"),
                )
            else:
                self.parents[key] = (
                    fields.get("file_location_id", 0),
                    fields.get("parent_frame_id", 0),
                )
        return True

    def frames(self, frame_id: int) -> list[tuple[str, str, int]]:
        """(function, file, line) of frame `frame_id` and its callers, innermost first; frames
        whose file is unknown are left out."""
        frames, seen = [], set()
        while frame_id in self.parents and frame_id not in seen:
            seen.add(frame_id)
            location_id, parent = self.parents[frame_id]
            file_id, function_id, line = self.locations.get(location_id, (0, 0, 0))
            if file_id in self.files:
                frames.append((self.functions.get(function_id, ""), self.files[file_id], line or 0))
            frame_id = parent - 1
        return frames

    def innermost(self, frame_id: int) -> tuple[str, int | None, str]:
        """(file, line, function) of frame `frame_id` itself (``""``/None where unknown)."""
        if frame_id not in self.parents:
            return "", None, ""
        location_id, _parent = self.parents[frame_id]
        file_id, function_id, line = self.locations.get(location_id, (0, 0, None))
        return self.files.get(file_id, ""), line, self.functions.get(function_id, "")


def stack_tables(hlo_text: str) -> StackTables:
    """The stack-frame tables of an HLO module text (empty when it has none)."""
    tables = StackTables()
    table = ""
    for line in hlo_text.splitlines():
        stripped = line.strip()
        if stripped in STACK_TABLES:
            table = stripped
        elif not stripped or not (table and tables.add(table, stripped)):
            if table == "StackFrames":
                break  # the last table: the computations follow
            table = ""
    return tables
