"""Facts read straight from HLO module text."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import NamedTuple

from xlanb.formats.jax_text import _STACK_ID, TEXTS_COUNTED, stack_tables
from xlanb.formats.python_frames import cell_frame_line, user_frame
from xlanb.formats.text import unquote

#: An instruction's line of a module's text, its `name` (``  ROOT %dot.1 = f32[...] ...``).
INSTRUCTION_LINE = re.compile(r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+) = ")


@functools.lru_cache(maxsize=TEXTS_COUNTED)
def count_hlo_instructions(text: str) -> int:
    """Instructions in an HLO module text (every computation, fused ones included); the last
    texts' counts are kept (a program read ahead is counted again at the cell's end)."""
    return sum(1 for line in text.splitlines() if INSTRUCTION_LINE.match(line))


class HloOpSource(NamedTuple):
    """Where an HLO instruction came from, per its ``metadata={...}``."""

    file: str
    line: int
    op_name: str
    #: The line of the stack's frame in the cell's file (the call that ran the op), or None.
    cell_line: int | None = None


_COMPUTATION = re.compile(r"^\s*(?:ENTRY\s+)?%?(?P<name>[\w.\-]+)\s.*\{\s*$")
_SOURCE_FILE = re.compile(r'source_file="(?P<file>(?:[^"\\]|\\.)*)"')
_SOURCE_LINE = re.compile(r"source_line=(?P<line>\d+)")
_OP_NAME = re.compile(r'op_name="(?P<op>(?:[^"\\]|\\.)*)"')
_CALLS = re.compile(r"(?:calls|to_apply)=%?(?P<callee>[\w.\-]+)")


#: Module texts whose sources :func:`hlo_op_sources` keeps (a program's trace is read at the end
#: of every cell that runs it; its text is the same).
SOURCES_KEPT = 32


class ParsedOps(NamedTuple):
    """What :func:`hlo_op_sources` needs of a module's text, read once for every choice of
    frame: each instruction with location metadata, in order."""

    #: (instruction, its computation, ``source_file``/``source_line`` or None, its
    #: ``stack_frame_id`` or None, its ``op_name``, the computation it calls or "").
    instructions: list[tuple[str, str, tuple[str, int] | None, int | None, str, str]]
    #: The module's stack-frame tables' lookup (JAX), or None without tables.
    frames_of: Callable[[int], list[tuple[str, str, int]]] | None


@functools.lru_cache(maxsize=SOURCES_KEPT)
def parsed_ops(text: str) -> ParsedOps:
    """The location metadata of an HLO module text's instructions (one pass over the text)."""
    frames_of = stack_tables(text).frames if "StackFrames" in text else None
    instructions: list[tuple[str, str, tuple[str, int] | None, int | None, str, str]] = []
    computation = ""
    for line in text.splitlines():
        instruction = INSTRUCTION_LINE.match(line)
        if instruction is None:
            header = _COMPUTATION.match(line)
            if header is not None:
                computation = header["name"]
            continue
        # the location is in the metadata, which the attributes (and the calls) come before
        metadata = line.find("metadata={")
        file = _SOURCE_FILE.search(line, metadata) if metadata >= 0 else None
        number = _SOURCE_LINE.search(line, metadata) if file else None
        direct = (unquote(f'"{file["file"]}"'), int(number["line"])) if file and number else None
        stacked = metadata >= 0 and frames_of is not None
        stack = _STACK_ID.search(line, metadata) if stacked else None
        callee = _CALLS.search(line) if direct is None and stack is None else None
        if direct is None and stack is None and callee is None:
            continue
        op_name = _OP_NAME.search(line, metadata) if metadata >= 0 else None
        instructions.append(
            (
                instruction["name"],
                computation,
                direct,
                int(stack["id"]) if stack is not None else None,
                unquote(f'"{op_name["op"]}"') if op_name else "",
                callee["callee"] if callee is not None else "",
            )
        )
    return ParsedOps(instructions, frames_of)


@functools.lru_cache(maxsize=SOURCES_KEPT)
def hlo_op_sources(text: str, cell_filename: str | None = None) -> dict[str, HloOpSource]:
    """Instruction name -> where it came from, per the ``metadata`` of an HLO module's text:
    ``stack_frame_id`` into the module's stack-frame tables (JAX; torch_xla's, written in from
    its proto by :mod:`xlanb.formats.hlo_proto`), else ``source_file``/``source_line``
    (torch_xla with ``XLA_HLO_DEBUG=1``, older JAX). The place is the innermost frame outside
    installed libraries (the model's line); ``cell_line`` is the stack's frame in
    the cell (`cell_filename`), the call that ran it. A fusion or call without a location of
    its own takes the first located instruction of the computation it calls. Computed once per
    text and cell (the text itself is read once for every cell): the dict is shared, read it
    only."""
    parsed = parsed_ops(text)
    frames_of = parsed.frames_of
    sources: dict[str, HloOpSource] = {}
    first_in_computation: dict[str, HloOpSource] = {}
    callers: dict[str, str] = {}
    # many instructions share a stack frame
    picked: dict[int, tuple[tuple[str, int] | None, int | None]] = {}
    # and a source (a model's layers are one code): one object each, as the collector scans
    # each one kept at every full collection
    interned: dict[HloOpSource, HloOpSource] = {}
    for name, computation, direct, stack, op_name, callee in parsed.instructions:
        located, in_cell = None, None
        if stack is not None and frames_of is not None:
            # a stack (JAX; torch_xla's proto) names the model's line past a library's
            if stack not in picked:
                frames = frames_of(stack)
                picked[stack] = (user_frame(frames, None), cell_frame_line(frames, cell_filename))
            located, in_cell = picked[stack]
        if located is None and direct is not None:
            located = direct
            if cell_filename and direct[0] == cell_filename:
                in_cell = direct[1]
        if located is not None:
            source = HloOpSource(located[0], located[1], op_name, in_cell)
            source = interned.setdefault(source, source)
            sources[name] = source
            first_in_computation.setdefault(computation, source)
        elif callee:
            callers[name] = callee
    for name, callee_name in callers.items():
        if callee_name in first_in_computation:
            sources[name] = first_in_computation[callee_name]
    return sources


def hlo_module_name(text: str) -> str:
    """The name in an HLO module text's ``HloModule <name>, ...`` line ("" if none): the
    first such line, found without splitting the text (a big program's is megabytes)."""
    if text.startswith("HloModule "):
        start = 0
    else:
        start = text.find("\nHloModule ") + 1
        if not start:
            return ""
    end = text.find("\n", start)
    line = text[start : end if end >= 0 else len(text)]
    return line.removeprefix("HloModule ").split(",", 1)[0].strip()
