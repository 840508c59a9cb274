"""Parser for the analysis blocks PyTorch/XLA writes with PT_XLA_DEBUG_LEVEL / PT_XLA_DEBUG_FILE.

Each block is a run of lines prefixed ``Compilation Analysis:`` or ``Execution Analysis:``.
:func:`parse_analysis` reads the blocks in any text (the live backend); :func:`parse_debug_text`
reads a whole ``PT_XLA_DEBUG_FILE`` strictly. Each function shows the layout it reads.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field

from xlanb.core.errors import FormatError, TruncatedRecordWarning
from xlanb.formats.python_frames import python_frame

_PREFIXES = {"Compilation Analysis:": "compile", "Execution Analysis:": "execute"}
_POST_PREFIX = "Post Compilation Analysis:"


@dataclass
class AnalysisBlock:
    kind: str  # "compile" or "execute"
    cause: str = ""
    graph_hash: str = ""
    inputs: int | None = None
    outputs: int | None = None
    #: (function, file, line), innermost first, as PyTorch/XLA prints them.
    frames: list[tuple[str, str, int]] = field(default_factory=list)
    #: A compile's Post Compilation Analysis sizes in bytes, by column (``input_bytes``, ...).
    sizes: dict[str, float] = field(default_factory=dict)

    @property
    def forced(self) -> bool:
        """A sync the user did not ask for: a tensor value was read before the step ended."""
        return "access tensor value" in self.cause or "before mark_step" in self.cause


def parse_analysis(text: str) -> list[AnalysisBlock]:
    """Every Compilation/Execution Analysis block in `text`, in order; a compile's Post
    Compilation Analysis sizes in its ``sizes`` (GB = 2**30 bytes, 6 decimals: ~1 kB).

    Each block is a run of lines prefixed ``Compilation Analysis:`` or ``Execution Analysis:``::

        Compilation Analysis: Compilation Cause
        Compilation Analysis:   user torch_xla.sync
        Compilation Analysis: Graph Info:
        Compilation Analysis:   Graph Hash: 6fc0b2fcf75b398d6c1e19b8a9c642ac
        Compilation Analysis:   Number of Graph Inputs: 1
        Compilation Analysis:   Number of Graph Outputs: 1
        Compilation Analysis: Python Frame Triggered Execution:
        Compilation Analysis:   sync (/.../torch_xla/torch_xla.py:87)
        Compilation Analysis:   <module> (/tmp/train.py:13)
    """
    return _analyses(text.splitlines())


def _analyses(lines: Iterable[str]) -> list[AnalysisBlock]:
    blocks: list[AnalysisBlock] = []
    current: AnalysisBlock | None = None
    section = ""
    for raw in lines:
        if raw.startswith(_POST_PREFIX):  # the sizes of the compile just analysed
            size = _SIZE.fullmatch(raw[len(_POST_PREFIX) :].strip())
            compiled = next((b for b in reversed(blocks) if b.kind == "compile"), None)
            if size is not None and compiled is not None:
                compiled.sizes[SIZE_COLUMNS[size[1]]] = float(size[2]) * 2**30
            continue
        kind = None
        for prefix, name in _PREFIXES.items():
            if raw.startswith(prefix):
                kind, body = name, raw[len(prefix) :]
                break
        if kind is None:
            continue
        stripped = body.strip()
        if stripped.endswith(" Cause") and stripped in ("Compilation Cause", "Execution Cause"):
            current = AnalysisBlock(kind)
            blocks.append(current)
            section = "cause"
            continue
        if current is None or current.kind != kind:
            continue
        if stripped.startswith("Graph Info"):
            section = "graph"
        elif stripped.startswith("Python Frame Triggered"):
            section = "frames"
        elif stripped.startswith(("---", "===")):
            section = ""
        elif section == "cause" and stripped:
            current.cause = f"{current.cause} {stripped}".strip()
        elif section == "graph":
            key, _, value = stripped.partition(":")
            value = value.strip()
            if key == "Graph Hash":
                current.graph_hash = value
            elif key == "Number of Graph Inputs" and value.isdigit():
                current.inputs = int(value)
            elif key == "Number of Graph Outputs" and value.isdigit():
                current.outputs = int(value)
        elif section == "frames":
            frame = python_frame(stripped)
            if frame:
                current.frames.append(frame)
    return blocks


# -- PT_XLA_DEBUG_FILE ------------------------------------------------------------------------
_PREFIXED = re.compile(
    r"(Compilation Analysis|Execution Analysis|Post Compilation Analysis|"
    r"Unexpected Execution Analysis):(?: (.*))?"
)
_KINDS = {
    "Compilation Analysis": "compile",
    "Execution Analysis": "execute",
    "Post Compilation Analysis": "post",
    "Unexpected Execution Analysis": "unexpected",
}
_COMPUTATION_HASH = re.compile(r"Computation hash: ([0-9A-Fa-f]+)\s*", re.ASCII)
_FENCE = re.compile(r"=+\s*")
_RULE = re.compile(r"-+\s*")
_GRAPH_INFO = re.compile(
    r"  (?:Graph Hash: [0-9A-Za-z]+|Number of Graph (?:Inputs|Outputs): \d+)"
    r"\s*",
    re.ASCII,
)
_FRAME = re.compile(r"  .*? \(.*:\d+\)\s*", re.ASCII)
_SIZE = re.compile(
    r"(Graph input size|Graph output size|Aliased Input size|"
    r"Intermediate tensor size|Compiled program size): (\d+(?:\.\d+)?) GB\s*",
    re.ASCII,
)
SIZE_COLUMNS = {
    "Graph input size": "input_bytes",
    "Graph output size": "output_bytes",
    "Aliased Input size": "aliased_bytes",
    "Intermediate tensor size": "intermediate_bytes",
    "Compiled program size": "program_bytes",
}
_CAUSE_TITLES = {"compile": "Compilation Cause", "execute": "Execution Cause"}


@dataclass
class DebugBlock:
    """One complete analysis block."""

    kind: str  # "compile", "execute" or "post"
    line: int
    #: The block's lines with their prefix.
    lines: list[str] = field(default_factory=list)
    #: Added to compile blocks from what follows them.
    computation_hash: str | None = None
    sizes: dict[str, float] = field(default_factory=dict)
    analysis: AnalysisBlock | None = None


def parse_debug_text(text: str, path: str | os.PathLike) -> tuple[list[DebugBlock], list[str]]:
    """The complete compile/execute blocks of a debug file (post-compilation sizes and
    computation hashes attached to their compile) and the unexpected-execution notes.

    :func:`parse_analysis` reads the blocks in any text (the live backend reads what the runtime
    appended during a cell). :func:`parse_debug_text` reads a whole ``PT_XLA_DEBUG_FILE``
    strictly: there each block is fenced, and may be followed by the computation hash and the
    Post Compilation Analysis sizes of its compile (GB = 2**30 bytes)::

        Compilation Analysis: ================================================================
        Compilation Analysis: Compilation Cause
        ...
        Compilation Analysis: ----------------------------------------------------------------
        Compilation Analysis: ================================================================

        Computation hash: 4a545aae0f1395cc791dce26c2774f0

        Post Compilation Analysis: ===========================================================
        Post Compilation Analysis: Graph input size: 1.548000 GB
        Post Compilation Analysis: Graph output size: 7.922460 GB
        ...
        Post Compilation Analysis: ===========================================================

    The fenced structure is checked line by line (a :class:`FormatError` names the first line
    that does not fit); a block the file ends inside (the process was still writing) gives a
    :class:`TruncatedRecordWarning` and is left out.
    """
    blocks: list[DebugBlock] = []
    notes: list[str] = []
    current: DebugBlock | None = None
    lines = text.split("\n")
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            if current is not None:
                raise FormatError(path, number, "blank line inside an analysis block")
            continue
        hashed = _COMPUTATION_HASH.fullmatch(line)
        if hashed:
            if current is not None:
                raise FormatError(path, number, "computation hash inside an analysis block")
            _last_compile(blocks, path, number).computation_hash = hashed[1]
            continue
        prefixed = _PREFIXED.fullmatch(line)
        if prefixed is None:
            raise FormatError(path, number, f"not a PT_XLA_DEBUG line: {line[:80]!r}")
        kind, body = _KINDS[prefixed[1]], prefixed[2] or ""
        if kind == "unexpected":
            notes.append(body.strip())
            continue
        if current is None:
            if not _FENCE.fullmatch(body):
                raise FormatError(
                    path, number, f"expected the opening '====' line of a {prefixed[1]} block"
                )
            current = DebugBlock(kind, number, [line])
            continue
        if kind != current.kind:
            raise FormatError(
                path, number, f"{prefixed[1]} line inside the block opened at line {current.line}"
            )
        current.lines.append(line)
        if _FENCE.fullmatch(body):
            _close(current, blocks, path)
            current = None
    if current is not None:
        warnings.warn(
            TruncatedRecordWarning(
                f"{os.fspath(path)}, line {current.line}: the last analysis block is incomplete "
                f"(the file ends inside it); read the {len(blocks)} complete block(s) before it"
            ),
            stacklevel=3,
        )
    return [b for b in blocks if b.kind != "post"], notes


def _last_compile(blocks: list[DebugBlock], path: str | os.PathLike, number: int) -> DebugBlock:
    for block in reversed(blocks):
        if block.kind == "compile":
            return block
        if block.kind == "execute":
            break
    raise FormatError(
        path, number, "post-compilation data without a Compilation Analysis block before it"
    )


def _prefixed_body(line: str) -> str:
    """The text after a kept block line's prefix ("" if none)."""
    prefixed = _PREFIXED.fullmatch(line)
    assert prefixed is not None  # parse_debug_text keeps only lines that matched _PREFIXED
    return prefixed[2] or ""


def _close(block: DebugBlock, blocks: list[DebugBlock], path: str | os.PathLike) -> None:
    """Check a finished block's content and keep it."""
    bodies = [_prefixed_body(line) for line in block.lines[1:-1]]
    if block.kind == "post":
        target = _last_compile(blocks, path, block.line)
        for offset, body in enumerate(bodies, start=block.line + 1):
            if _RULE.fullmatch(body):
                continue
            size = _SIZE.fullmatch(body)
            if size is None:
                raise FormatError(
                    path, offset, f"not a Post Compilation Analysis line: {body[:80]!r}"
                )
            target.sizes[SIZE_COLUMNS[size[1]]] = float(size[2]) * 2**30
        return
    if not bodies or bodies[0].strip() != _CAUSE_TITLES[block.kind]:
        raise FormatError(
            path, block.line + 1, f"expected {_CAUSE_TITLES[block.kind]!r} after the opening line"
        )
    section = "cause"
    for offset, body in enumerate(bodies[1:], start=block.line + 2):
        stripped = body.strip()
        if stripped == "Graph Info:":
            section = "graph"
        elif stripped == "Python Frame Triggered Execution:":
            section = "frames"
        elif _RULE.fullmatch(body):
            section = ""
        elif (
            section == "cause"
            and body.startswith("  ")
            and stripped not in ("Compilation Cause", "Execution Cause")
        ):
            continue
        elif section == "graph" and _GRAPH_INFO.fullmatch(body):
            continue
        elif section == "frames" and _FRAME.fullmatch(body):
            continue
        else:
            raise FormatError(
                path, offset, f"unexpected line in a {block.kind} analysis: {body[:80]!r}"
            )
    (block.analysis,) = _analyses(block.lines)  # one block: it opens with the cause title
    blocks.append(block)
