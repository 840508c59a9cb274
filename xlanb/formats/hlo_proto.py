"""The Python stacks of an HLO module's ops, from its ``HloProto`` (``.hlo.pb``, as
``--xla_dump_hlo_as_proto`` writes it): each instruction's ``stack_frame_id`` into the module's
stack-frame index. torch_xla (``XLA_IR_DEBUG``/``XLA_HLO_DEBUG``) records every op's whole
stack there, but its XLA prints only the innermost frame (a library's line, such as
``torch/nn/modules/linear.py``) into the module's text: :func:`with_stack_frames` writes the
index into the text as newer XLA prints it (the tables JAX's modules carry)."""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from google.protobuf.message import DecodeError

from xlanb.formats.hlo_text import INSTRUCTION_LINE
from xlanb.formats.proto_schema import FIELD, ProtoFile


def _build_messages() -> dict[str, Any]:
    """The few fields of ``xla/service/hlo.proto`` and ``xla_data.proto`` read here."""
    proto = ProtoFile("xlanb/hlo_stacks.proto", "xlanb_hlo")
    rep, text, number = FIELD.LABEL_REPEATED, FIELD.TYPE_STRING, FIELD.TYPE_INT32
    message = FIELD.TYPE_MESSAGE
    proto.message("HloProto", [("hlo_module", 1, message, None, "HloModuleProto")])
    proto.message(
        "HloModuleProto",
        [
            ("computations", 3, message, rep, "HloComputationProto"),
            ("stack_frame_index", 17, message, None, "StackFrameIndexProto"),
        ],
    )
    proto.message("HloComputationProto", [("instructions", 2, message, rep, "Instruction")])
    proto.message("Instruction", [("name", 1, text), ("metadata", 7, message, None, "OpMetadata")])
    proto.message("OpMetadata", [("stack_frame_id", 15, number)])
    proto.message(
        "StackFrameIndexProto",
        [
            ("file_names", 1, text, rep),
            ("function_names", 2, text, rep),
            ("file_locations", 3, message, rep, "FileLocation"),
            ("stack_frames", 4, message, rep, "StackFrame"),
        ],
    )
    proto.message(
        "FileLocation",
        [
            ("file_name_id", 1, number),
            ("function_name_id", 2, number),
            ("line", 3, number),
            ("column", 4, number),
        ],
    )
    proto.message("StackFrame", [("file_location_id", 1, number), ("parent_frame_id", 2, number)])
    return proto.classes(["HloProto"])


_HLO_PROTO: Any = _build_messages()["HloProto"]


class ModuleStacks(NamedTuple):
    """An HLO module's stack-frame index and which frame each instruction was made in."""

    #: The index's tables as the module's text prints them (``FileNames`` ... ``StackFrames``).
    tables: str
    #: Instruction name -> its ``stack_frame_id`` (1-based, into the ``StackFrames`` table).
    frame_of: dict[str, int]


def module_stacks(data: bytes) -> ModuleStacks | None:
    """The stack-frame index of a serialized ``HloProto`` (what ``--xla_dump_hlo_as_proto``
    writes: the module, with its buffer assignment after optimizations) and its instructions'
    frames, or None when it records none. Raises ``google.protobuf.message.DecodeError`` on
    bytes that are not one."""
    module = _HLO_PROTO.FromString(data).hlo_module
    index = module.stack_frame_index
    if not index.stack_frames:
        return None
    frame_of = {
        instruction.name: instruction.metadata.stack_frame_id
        for computation in module.computations
        for instruction in computation.instructions
        if instruction.metadata.stack_frame_id
    }
    lines = ["FileNames"]
    lines += [f"{key} {_quoted(name)}" for key, name in enumerate(index.file_names, 1)]
    lines += ["", "FunctionNames"]
    lines += [f"{key} {_quoted(name)}" for key, name in enumerate(index.function_names, 1)]
    lines += ["", "FileLocations"]
    lines += [
        f"{key} {{file_name_id={where.file_name_id} function_name_id={where.function_name_id} "
        f"line={where.line} end_line={where.line} column={where.column} "
        f"end_column={where.column}}}"
        for key, where in enumerate(index.file_locations, 1)
    ]
    lines += ["", "StackFrames"]
    # the text prints a frame's parent one past its id (0: none), as XLA does
    lines += [
        f"{key} {{file_location_id={frame.file_location_id} "
        f"parent_frame_id={frame.parent_frame_id + 1}}}"
        for key, frame in enumerate(index.stack_frames, 1)
    ]
    return ModuleStacks("\n".join(lines) + "\n", frame_of)


def dumped_module_stacks(path: str) -> ModuleStacks | None:
    """:func:`module_stacks` of the ``.hlo.pb`` file at `path`; None where there is none (no
    ``--xla_dump_hlo_as_proto``) or it cannot be read whole."""
    try:
        with open(path, "rb") as handle:
            return module_stacks(handle.read())
    except (OSError, DecodeError):
        return None


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


#: ``metadata={...}``, its quoted values holding any character.
_METADATA = re.compile(r'metadata=\{[^{}"]*(?:"[^"\\]*(?:\\.[^"\\]*)*"[^{}"]*)*\}')


def with_stack_frames(text: str, stacks: ModuleStacks) -> str:
    """HLO module `text` with `stacks` written in: the tables after its ``HloModule`` line and
    ``stack_frame_id=N`` in the ``metadata={...}`` of each instruction that has a frame
    (`text` unchanged where it already has tables or no ``HloModule`` line)."""
    if "\nStackFrames\n" in text or not text.startswith("HloModule "):
        return text
    head, _, body = text.partition("\n")
    lines = body.split("\n")
    for position, line in enumerate(lines):
        found = INSTRUCTION_LINE.match(line)
        frame = stacks.frame_of.get(found["name"]) if found else None
        if frame is not None:
            lines[position] = _with_frame(line, frame)
    return f"{head}\n\n{stacks.tables}\n" + "\n".join(lines)


def _with_frame(line: str, frame: int) -> str:
    """`line` with ``stack_frame_id=frame`` added at the end of its ``metadata={...}``."""
    found = _METADATA.search(line)
    if found is None:
        return line
    end = found.end() - 1
    gap = "" if line[end - 1] == "{" else " "
    return f"{line[:end]}{gap}stack_frame_id={frame}{line[end:]}"
