"""Reading a compiled program ahead, while the cell goes on (#27): what the end of a cell
reads of each program compiled in it (its optimized HLO text, static memory, costs, module
proto and temporaries) and what the display then asks of its texts (the parsed graphs the
viewer draws, the roofline's per-instruction costs) are read on one worker thread as soon
as the program compiled. The end of the cell takes the reads (waiting for one still under
way) instead of making them: the same values, read earlier. The texts' analyses land in
their own caches (:func:`xlanb.graphs.parse_once`, :mod:`xlanb.graphs.hlo_cost`). Only
the first :data:`PROGRAMS_AHEAD` programs compiled since the last capture ended are read
ahead, and only the first one's texts parsed (with what the viewer builds of a graph
alone: :mod:`xlanb.graphs.prepared`), when the profile is displayed (the viewer's first
graph: a big program's texts fill its budget); the others are read at the end.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from xlanb.analysis.op_kinds import instruction_categories
from xlanb.capture.backends.jax.hooks import executables, names
from xlanb.formats.buffer_assignment import Temporary
from xlanb.formats.hlo_text import count_hlo_instructions, hlo_op_sources
from xlanb.formats.jax_text import count_stablehlo_ops
from xlanb.graphs import parse_once
from xlanb.graphs.hlo import sharing_reads
from xlanb.graphs.hlo_cost import matmul_dtype, op_costs
from xlanb.graphs.prepared import prepare

#: Programs read ahead between two captures' ends (the viewer draws at most 4).
PROGRAMS_AHEAD = 4
#: Seconds the end of a cell waits for a read under way before it reads the program itself.
TAKE_SECONDS = 120.0
#: Texts of at most this many nodes are parsed ahead (the viewer draws no bigger graph).
PARSED_NODES = 5000


@dataclass(frozen=True)
class ProgramReads:
    """What the end of a cell reads of one loaded executable (see :mod:`.hooks.executables`)."""

    #: The optimized HLO text, or None where JAX does not give it.
    hlo_text: str | None
    #: The StableHLO text of the module the program was compiled from (None: not kept).
    stablehlo: str | None
    memory: dict[str, float]
    costs: dict[str, float]
    module: bytes | None
    temporaries: list[Temporary]


def read(executable: Any, stablehlo: str | None) -> ProgramReads:
    """The reads of `executable` made now (no text analysed)."""
    module = executables.module_proto(executable)
    return ProgramReads(
        names.hlo_text(executable),
        stablehlo,
        executables.memory(executable),
        executables.costs(executable),
        module,
        executables.temporaries(executable, module),
    )


def stablehlo_text(computation: Any) -> str:
    """The StableHLO text of a kept module (a note where it cannot be printed)."""
    try:
        return str(computation)
    except Exception as error:
        return f"(no StableHLO text: {error!r})"


class _Ahead:
    """The worker and the reads it was given, by the executable's id (the capture's events
    hold the executable until the reads are taken or dropped)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.futures: dict[int, Future[ProgramReads]] = {}
        self.submitted = 0
        self.jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self.worker: threading.Thread | None = None
        #: Parse the first program's texts (the capture's profile will be displayed).
        self.parse_first = False
        #: The cell's file name, as its code's frames name it (what the op sources match).
        self.cell_filename: str | None = None

    def before_compile(self, computation: Any) -> str | None:
        """The StableHLO text of `computation`, a program about to be compiled, printed here
        (an MLIR module is read on the thread that made it); the first program's is parsed
        for the viewer on the worker while XLA compiles (which holds no Python lock)."""
        with self.lock:
            if self.submitted >= PROGRAMS_AHEAD:
                return None
            parse = self.parse_first and self.submitted == 0
        stablehlo = stablehlo_text(computation)
        if parse:
            self._start_worker()
            self.jobs.put(lambda: _parse_stablehlo(stablehlo))
        return stablehlo

    def submit(self, executable: Any, computation: Any, stablehlo: str | None = None) -> None:
        """Read `executable` (and `computation`, its StableHLO module, whose text
        :meth:`before_compile` may have printed) ahead. A program is taken only once the
        worker runs (a thread that cannot start: read at the end)."""
        with self.lock:
            if self.submitted >= PROGRAMS_AHEAD or id(executable) in self.futures:
                return
        self._start_worker()
        if stablehlo is None and computation is not None:
            stablehlo = stablehlo_text(computation)  # on the thread that made the module
        with self.lock:
            parse = self.parse_first and self.submitted == 0
            cell_filename = self.cell_filename
            self.submitted += 1
            future: Future[ProgramReads] = Future()
            self.futures[id(executable)] = future
            self.jobs.put(lambda: _run(future, executable, stablehlo, parse, cell_filename))

    def take(self, executable: Any) -> ProgramReads | None:
        """The reads of `executable` (waiting for them), None where it was not read ahead
        or its read failed (the caller reads it again, and says why)."""
        with self.lock:
            future = self.futures.pop(id(executable), None)
        if future is None:
            return None
        try:
            return future.result(timeout=TAKE_SECONDS)
        except Exception:
            return None

    def drop(self) -> None:
        with self.lock:
            self.futures.clear()
            self.submitted = 0

    def _start_worker(self) -> None:
        with self.lock:
            if self.worker is None:
                worker = threading.Thread(target=self._work, name="xlanb-read-ahead", daemon=True)
                worker.start()
                self.worker = worker

    def _work(self) -> None:
        while True:
            self.jobs.get()()


def _run(
    future: Future[ProgramReads],
    executable: Any,
    stablehlo: str | None,
    parse: bool,
    cell_filename: str | None,
) -> None:
    try:
        reads = read(executable, stablehlo)
        warm(reads.hlo_text, stablehlo, parse, cell_filename)
    except BaseException as error:  # the end of the cell reads it again
        future.set_exception(error)
        return
    future.set_result(reads)


def _parse_stablehlo(stablehlo: str) -> None:
    """The viewer's graph of a StableHLO text, into its cache (:func:`warm` then finds it)."""
    try:
        if count_stablehlo_ops(stablehlo) <= PARSED_NODES:
            prepare(parse_once(stablehlo, "stablehlo"))
    except Exception:
        pass  # the display parses the text itself, and says why it does not parse


def warm(
    hlo_text: str | None, stablehlo: str | None, parse: bool, cell_filename: str | None = None
) -> None:
    """Analyse the texts the end of the cell and the display ask for into their caches: the
    optimized HLO's instructions' sources (the temporaries' and the ops' lines), categories
    (the trace's ops) and the roofline's costs, and (`parse`) the graphs of both texts where
    the viewer could draw them."""
    try:
        if hlo_text:
            drawn = parse and count_hlo_instructions(hlo_text) <= PARSED_NODES
            # the costs' read of a text the viewer draws is the parse's too
            with sharing_reads(hlo_text) if drawn else contextlib.nullcontext():
                hlo_op_sources(hlo_text, cell_filename)
                hlo_op_sources(hlo_text)  # as later cells that run the program name its lines
                instruction_categories(hlo_text)
                op_costs(hlo_text)
                matmul_dtype(hlo_text)
                if drawn:
                    prepare(parse_once(hlo_text, "hlo_optimized"))
        if parse and stablehlo and count_stablehlo_ops(stablehlo) <= PARSED_NODES:
            prepare(parse_once(stablehlo, "stablehlo"))
    except Exception:
        pass  # the display parses the text itself, and says why it does not parse


AHEAD = _Ahead()
