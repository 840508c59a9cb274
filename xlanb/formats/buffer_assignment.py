"""The largest temporary buffers of a compiled XLA program, from its buffer assignment.

Two sources, one answer (:class:`Temporary` rows, largest first):

- the text XLA dumps beside the optimized module, ``<module>.cpu_after_optimizations-buffer-
  assignment.txt`` (``sm_9.0a_gpu_after_optimizations`` on XLA:GPU, where JAX hands over no
  serialized assignment; torch_xla's dump at the default level; any ``--xla_dump_to`` with
  ``--xla_dump_hlo_as_text``): ``allocation N: size S, <kinds>:`` then one ``value: <id name
  {shape index} @index> (size=..,offset=..): shape`` line per buffer placed in it;
- the ``BufferAssignmentProto`` JAX hands over with a loaded executable's compiled memory stats
  (``serialized_buffer_assignment_proto``), whose buffers name their instruction by its 64-bit
  unique id only: the ``HloModuleProto`` (``as_serialized_hlo_module_proto()``) gives the
  names. Decoded with hand-written descriptors of the fields read (``xla/service/hlo.proto``,
  jaxlib 0.10.2) in a private pool, as :mod:`xlanb.formats.xspace` does.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any, NamedTuple

from google.protobuf.message import DecodeError

from xlanb.formats.hlo_text import hlo_op_sources
from xlanb.formats.proto_schema import FIELD, ProtoFile
from xlanb.formats.xla_dump_names import dump_file_name

#: Temporaries kept per program (largest first).
TEMPORARIES_KEPT = 5


class Temporary(NamedTuple):
    """One temporary buffer: the HLO instruction that defines it, its shape and size.

    A temporary is a buffer of an allocation that is not an entry parameter, a constant,
    thread-local (scalars of a loop body) or live out (the outputs, and buffers that reuse
    their memory). Buffers of one allocation share its memory at their offsets: their sizes
    overlap in time, so the list says what is big, not what adds up.
    """

    op: str
    opcode: str
    shape: str
    bytes: int


# -- text ------------------------------------------------------------------------------------
_ALLOCATION = re.compile(r"^allocation (?P<index>\d+): size (?P<size>\d+)(?P<kinds>.*):\s*$")
_VALUE = re.compile(
    r"^\s*value: <\d+ (?P<op>[^ >{]+)(?:\{[^}]*\})? @(?P<index>[\d,]*)> "
    r"\(size=(?P<size>\d+),offset=\d+\): (?P<shape>.*)$"
)
_NOT_TEMPORARY = ("parameter", "maybe-live-out", "constant", "thread-local", "output shape")
_LAYOUT = re.compile(r"\{[^{}]*\}")


def temporaries_from_text(text: str, limit: int = TEMPORARIES_KEPT) -> list[Temporary]:
    """The `limit` largest temporaries of a dumped buffer assignment's text (opcode unknown:
    empty)."""
    found: list[Temporary] = []
    temporary = False
    for line in text.splitlines():
        allocation = _ALLOCATION.match(line)
        if allocation is not None:
            temporary = not any(kind in allocation["kinds"] for kind in _NOT_TEMPORARY)
            continue
        if line.startswith("Total bytes used"):
            break  # the "Used values" listing that follows repeats every buffer
        value = _VALUE.match(line) if temporary else None
        if value is not None:
            shape = _LAYOUT.sub("", value["shape"]).strip()
            found.append(Temporary(value["op"], "", shape, int(value["size"])))
    return _largest(found, limit)


def temporaries_from_dump(
    folder: str | os.PathLike, module_id: int, limit: int = TEMPORARIES_KEPT
) -> list[Temporary]:
    """The `limit` largest temporaries of the program whose module id (JAX: the device
    trace's ``program_id``) is `module_id`, from its optimized buffer assignment in the
    ``--xla_dump_to`` folder `folder`; [] when the folder has none. Reads that file only."""
    for name in dump_file_names(folder, module_id):
        found = dump_file_name(name)
        if found is not None and found.optimized and found.report == "buffer-assignment":
            try:
                with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as file:
                    return temporaries_from_text(file.read(), limit)
            except OSError:
                return []
    return []


def dumped_temporaries(
    folder: str | os.PathLike, module_id: int | None, hlo_text: str, limit: int = TEMPORARIES_KEPT
) -> list[Temporary]:
    """The temporaries of one program from a dump folder: by its module id, else by its
    optimized HLO text (:func:`dump_module_id`); [] when the folder does not hold it."""
    if module_id is None:
        module_id = dump_module_id(folder, hlo_text)
    return temporaries_from_dump(folder, module_id, limit) if module_id is not None else []


def dump_module_id(folder: str | os.PathLike, hlo_text: str) -> int | None:
    """The module id, in a dump folder, of the program whose optimized HLO is `hlo_text` (as
    ``compiled.as_text()`` prints it): the latest dumped module of the same name and entry
    layout (its header line); None when the folder has none. For a program whose module
    proto, and so its id, JAX does not hand over."""
    header = _module_header(hlo_text.split("\n", 1)[0])
    if header is None:
        return None
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    found = None
    for name in names:
        parsed = dump_file_name(name)
        if parsed is None or not (parsed.optimized and parsed.is_hlo) or parsed.module != header[0]:
            continue
        try:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as file:
                first = file.readline()
        except OSError:
            continue
        if _module_header(first) == header and (found is None or parsed.module_id > found):
            found = parsed.module_id
    return found


_LAYOUT_KEY = "entry_computation_layout={"


def _module_header(line: str) -> tuple[str, str] | None:
    """(module name, entry layout) of an ``HloModule`` line."""
    if not line.startswith("HloModule "):
        return None
    name = line[len("HloModule ") :].split(",")[0].split()[0]
    start = line.find(_LAYOUT_KEY)
    if start < 0:
        return None
    depth, index = 1, start + len(_LAYOUT_KEY)
    while index < len(line) and depth:
        depth += {"{": 1, "}": -1}.get(line[index], 0)
        index += 1
    return name, line[start:index]


def dump_file_names(folder: str | os.PathLike, module_id: int) -> list[str]:
    """The names of the files of module `module_id` in a dump folder (none when unreadable)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    prefix = f"module_{module_id:04d}."
    return sorted(name for name in names if name.startswith(prefix))


def _largest(found: list[Temporary], limit: int) -> list[Temporary]:
    found.sort(key=lambda temporary: -temporary.bytes)
    return found[:limit]


# -- protos ----------------------------------------------------------------------------------
_PACKAGE = "xlanb.xla"
_F = FIELD


@functools.cache
def _messages() -> dict[str, Any]:
    """The message classes, built on first use (most profiles never read a buffer assignment)."""
    proto = ProtoFile("xlanb/buffer_assignment.proto", _PACKAGE)
    message = proto.message
    opt, rep = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
    int64, boolean, string = _F.TYPE_INT64, _F.TYPE_BOOL, _F.TYPE_STRING
    msg = _F.TYPE_MESSAGE

    message(
        "BufferAssignment",
        [
            ("logical_buffers", 1, msg, rep, "LogicalBuffer"),
            ("buffer_allocations", 3, msg, rep, "BufferAllocation"),
        ],
    )
    message(
        "LogicalBuffer",
        [("id", 1, int64, opt), ("size", 2, int64, opt), ("defined_at", 3, msg, opt, "Location")],
    )
    message("Location", [("shape_index", 3, int64, rep), ("instruction_id", 4, int64, opt)])
    message(
        "BufferAllocation",
        [
            ("index", 1, int64, opt),
            ("size", 2, int64, opt),
            ("is_thread_local", 3, boolean, opt),
            ("is_entry_computation_parameter", 5, boolean, opt),
            ("maybe_live_out", 7, boolean, opt),
            ("assigned", 9, msg, rep, "Assigned"),
            ("is_constant", 12, boolean, opt),
        ],
    )
    message("Assigned", [("logical_buffer_id", 1, int64, opt), ("size", 3, int64, opt)])
    message("HloModule", [("computations", 3, msg, rep, "HloComputation")])
    message("HloModuleId", [("id", 5, int64, opt)])
    message("HloComputation", [("instructions", 2, msg, rep, "HloInstruction")])
    message(
        "HloInstruction",
        [
            ("name", 1, string, opt),
            ("opcode", 2, string, opt),
            ("shape", 3, msg, opt, "Shape"),
            ("id", 35, int64, opt),
        ],
    )
    message(
        "Shape",
        [
            ("element_type", 2, _F.TYPE_INT32, opt),
            ("dimensions", 3, int64, rep),
            ("tuple_shapes", 4, msg, rep, "Shape"),
        ],
    )
    return proto.classes(("BufferAssignment", "HloModule", "HloModuleId"))


#: ``xla.PrimitiveType`` numbers -> the dtype names the HLO text uses.
_ELEMENT_TYPES = {
    1: "pred",
    2: "s8",
    3: "s16",
    4: "s32",
    5: "s64",
    6: "u8",
    7: "u16",
    8: "u32",
    9: "u64",
    10: "f16",
    11: "f32",
    12: "f64",
    15: "c64",
    16: "bf16",
    18: "c128",
    21: "s4",
    22: "u4",
}


def temporaries_from_proto(
    assignment: bytes, module: bytes, limit: int = TEMPORARIES_KEPT
) -> list[Temporary]:
    """The `limit` largest temporaries of a serialized ``BufferAssignmentProto``, named through
    the serialized ``HloModuleProto`` of the same executable; [] when either does not parse."""
    try:
        buffers = _messages()["BufferAssignment"].FromString(assignment)
    except DecodeError:
        return []
    defined = {buffer.id: buffer for buffer in buffers.logical_buffers}
    temporary: list[Any] = []
    for allocation in buffers.buffer_allocations:
        if (
            allocation.is_thread_local
            or allocation.is_entry_computation_parameter
            or allocation.maybe_live_out
            or allocation.is_constant
        ):
            continue
        temporary.extend(
            defined[assigned.logical_buffer_id]
            for assigned in allocation.assigned
            if assigned.logical_buffer_id in defined
        )
    if not temporary:
        return []
    temporary.sort(key=lambda buffer: -buffer.size)
    temporary = temporary[:limit]
    wanted = {buffer.defined_at.instruction_id for buffer in temporary}
    try:
        instructions = _instructions(module, wanted)
    except DecodeError:
        return []
    found = []
    for buffer in temporary:
        instruction = instructions.get(buffer.defined_at.instruction_id)
        if instruction is None:
            continue
        shape = _shape_at(instruction.shape, list(buffer.defined_at.shape_index))
        found.append(Temporary(instruction.name, instruction.opcode, shape, int(buffer.size)))
    return found


def hlo_module_id(module: bytes) -> int | None:
    """The id of a serialized ``HloModuleProto``: the device trace's ``program_id`` of its
    runs (JAX); None when it does not parse."""
    try:
        return int(_messages()["HloModuleId"].FromString(module).id)
    except DecodeError:
        return None


def _instructions(module: bytes, wanted: set[int]) -> dict[int, Any]:
    """Instruction id -> instruction, for the `wanted` ids."""
    found = {}
    for computation in _messages()["HloModule"].FromString(module).computations:
        for instruction in computation.instructions:
            if instruction.id in wanted:
                found[instruction.id] = instruction
    return found


def _shape_at(shape: Any, index: list[int]) -> str:
    """`f32[256,256]` of the buffer at `index` in an instruction's (maybe tuple) shape."""
    for position in index:
        if position >= len(shape.tuple_shapes):
            return ""
        shape = shape.tuple_shapes[position]
    if shape.tuple_shapes:
        return f"({', '.join(_shape_at(part, []) for part in shape.tuple_shapes)})"
    element = _ELEMENT_TYPES.get(shape.element_type, f"type{shape.element_type}")
    return f"{element}[{','.join(map(str, shape.dimensions))}]"


def temporary_rows(
    backend: str,
    graph: str,
    temporaries: list[Temporary],
    hlo_text: str | None,
    cell_filename: str | None = None,
    cell_line_offset: int = 0,
) -> list[dict[str, Any]]:
    """``temporaries`` rows of one program, each located by its instruction's HLO metadata in
    `hlo_text` (the optimized module) where it has one (a CPU thunk's ``.clone`` as its
    instruction); ``cell_line`` where that is the cell (`cell_filename`)."""
    sources = hlo_op_sources(hlo_text, cell_filename) if hlo_text else {}
    rows = []
    for temporary in temporaries:
        source = sources.get(temporary.op) or sources.get(temporary.op.removesuffix(".clone"))
        cell_line = None
        if source is not None and cell_filename is not None:
            cell_line = source.line if source.file == cell_filename else source.cell_line
        row: dict[str, Any] = {
            "backend": backend,
            "graph": graph,
            "op": temporary.op,
            "shape": temporary.shape,
            "bytes": float(temporary.bytes),
            "source_file": source.file if source else None,
            "source_line": source.line if source else None,
            "cell_line": cell_line + cell_line_offset if cell_line is not None else None,
        }
        if temporary.opcode:
            row["opcode"] = temporary.opcode
        rows.append(row)
    return rows
