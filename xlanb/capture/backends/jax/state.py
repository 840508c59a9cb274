"""The JAX backend's mutable state: one :class:`JaxState` instance, :data:`STATE`.

Nested captures share it: the listeners record into one set of buffers while at least one
capture is active, and each capture keeps where the buffers stood when it began
(:class:`Token`).
How threads share it is said on :class:`JaxState`.
"""

from __future__ import annotations

import math
import sys
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from xlanb.capture import device_trace
from xlanb.capture.backends.jax.events import (
    CallDelta,
    DispatchSample,
    Event,
    Frame,
    Read,
    Transfer,
)
from xlanb.capture.backends.jax.reuse import KeptTraces
from xlanb.formats.hlo_text import HloOpSource
from xlanb.formats.jax_text import CallbackOp

#: The dispatch samples kept per capture, for the DispatchTime percentiles; capped like the
#: runtimes' own sample buffers.
SAMPLE_LIMIT = 10_000
#: The window's first probe once its run has ended (:func:`~.hooks.output_probe`).
RAN: Any = "ran"
#: Places whose reads are told apart (each keeps its stack once); reads from more places are
#: counted with the last.
MAX_READ_PLACES = 10_000
#: Places whose host inputs are told apart; inputs from more places are counted for their
#: function and type with no stack (the totals stay exact).
MAX_TRANSFER_PLACES = 10_000
#: Programs compiled in earlier captures whose graph and op sources are remembered.
PROGRAMS_KEPT = 128
#: Functions whose compiled peak memory the session remembers (the least recent forgotten).
PEAKS_KEPT = 4096


@dataclass(eq=False, slots=True)
class CallStats:
    """One jitted function's top-level calls: the running totals of those past the samples'
    cap (the others are summed from the samples when read; mutable, unlike the events)."""

    function: Any
    count: int
    seconds: float
    #: ``time.time()`` of the first call.
    first: float
    #: The static argument positions and names, None when it has none.
    static: tuple[frozenset[int], frozenset[str]] | None
    #: A program JAX runs for eager code (its host inputs are not reported).
    eager: bool = False
    #: The stack of the function's first call in the capture (not for eager code).
    frames: tuple[Frame, ...] = ()


@dataclass(eq=False, slots=True)
class Restore:
    """What switching the capture on changed in JAX, to put back when the last capture ends."""

    #: Explain loggers raised to WARNING, with the level each had.
    logger_levels: dict[str, int] = field(default_factory=dict)
    compile_fn: Any = None
    #: Address of ``PjitFunction``'s type flags, None when the dispatch counter is off.
    flags_address: int | None = None
    #: The vectorcall bit of those flags, to put back.
    flags: int = 0
    #: ``ArrayImpl._value`` as it was, while the read counter replaces it.
    value_property: Any = None
    #: ``ArrayImpl.item`` as it was.
    item_method: Any = None
    #: JAX's device-put functions as they were, while the copy counter wraps them: (module
    #: or primitive, attribute name, the function), each put back in turn.
    device_puts: list[tuple[Any, str, Any]] = field(default_factory=list)
    #: The ``warnings`` module of ``jax._src.interpreters.mlir``, while a proxy replaces it.
    lowering_warnings: Any = None


@dataclass(eq=False)
class Token:
    """One capture: where the shared buffers stood when it began."""

    event_start: int
    #: Each transfer place's calls when the capture began.
    transfers: dict[tuple, int]
    #: Count and seconds of every function's calls when the capture began.
    calls: dict[Any, tuple[int, float]]
    notes: list[str] = field(default_factory=list)
    graphs: bool = True
    sample_start: int = 0
    trace: device_trace.Trace | None = None
    started_at: float = 0.0
    #: The thread that began the capture (JAX's explain option is switched per thread).
    thread: int = 0
    #: Each place's read count when the capture began.
    reads: dict[tuple, int] = field(default_factory=dict)
    #: The host values copied explicitly when the capture began (``JaxState.host_copies``).
    host_copies: int = 0
    #: The live arrays when the capture began (a ``hooks.LiveSnapshot``).
    live: Any = None
    #: No trace started yet: the capture reuses its cell's last trace (:mod:`..reuse`).
    reusing: bool = False
    #: A first trace whose window closed before a second one started, with its events.
    earlier: list[tuple[device_trace.Trace, Any]] = field(default_factory=list)
    #: `trace_late` starts a second window for this capture (:func:`..arm_second_window`).
    armed: bool = False


@dataclass(eq=False)
class Taken:
    """What one capture recorded, copied out of the shared buffers when it ends."""

    events: list[Event]
    transfers: list[Transfer]
    calls: list[CallDelta]
    samples: list[DispatchSample]
    #: No capture is active any more: the hooks are to be switched off.
    last: bool
    reads: list[Read] = field(default_factory=list)
    #: Host values copied to a device explicitly during the capture.
    host_copies: int = 0


@dataclass(eq=False, slots=True)
class Session:
    """What outlives the captures (for the process): touched only by ``end``, on the thread
    that ends a capture, so not under the lock."""

    #: Host-callback custom calls of each program compiled during a capture, by graph name.
    callback_ops: dict[str, list[CallbackOp]] = field(default_factory=dict)
    #: Programs compiled during a capture, by HLO module name and by program id: (graph, where
    #: each of its ops came from, its optimized HLO text: on XLA:GPU what places the kernels
    #: inside command buffers), so a later cell running them without compiling names and
    #: locates their ops (the most recent :data:`PROGRAMS_KEPT` keys).
    programs: OrderedDict[str | int, tuple[str, dict[str, HloOpSource], str]] = field(
        default_factory=OrderedDict
    )
    #: Guards ``programs``, which the workdir's janitor also fills between captures.
    programs_lock: threading.Lock = field(default_factory=threading.Lock)
    #: The ``graphs`` rows of each function's latest compile seen in a capture, by graph name,
    #: so a later capture that only runs it holds its graphs (the most recent
    #: :data:`PROGRAMS_KEPT`).
    graphs: OrderedDict[str, list[dict[str, Any]]] = field(default_factory=OrderedDict)
    compile_ids: Iterator[int] = field(default_factory=lambda: iter(range(1, sys.maxsize)))
    #: Running totals of the counters (``UncachedCompile``, ``JitDispatch``, ...).
    totals: Counter[str] = field(default_factory=Counter)
    #: Peak memory of each function's latest compile seen in a capture, for its later runs:
    #: the ``executions`` columns it fills (``peak_bytes``, and ``devices`` where JAX says).
    peaks: dict[str, dict[str, float]] = field(default_factory=dict)
    #: The static arguments (where -> repr) of each function's latest compile seen in a
    #: capture, to name the one that changed (the least recent forgotten past PEAKS_KEPT).
    statics: dict[str, dict[str, str]] = field(default_factory=dict)
    #: The programs each cell's last trace held, for the same cell run again.
    traces: KeptTraces = field(default_factory=KeptTraces)

    def remember_peak(self, name: str, compile_row: dict[str, Any]) -> None:
        """Keep the peak memory of function `name`'s compile (``peak_bytes`` of its
        `compile_row`, and its ``devices``) for its later runs; nothing without one."""
        if "peak_bytes" in compile_row:
            self.peaks.pop(name, None)
            self.peaks[name] = {
                key: compile_row[key] for key in ("peak_bytes", "devices") if key in compile_row
            }
            while len(self.peaks) > PEAKS_KEPT:
                del self.peaks[next(iter(self.peaks))]


@dataclass(eq=False, slots=True)
class JaxState:
    """Everything the JAX backend changes at run time.

    Threads: the buffers are shared. The listeners append from whatever thread runs JAX (the
    dispatch counter from the user's thread), while ``end`` (and any reader of running totals,
    e.g. ``--live``) may read from another. ``STATE.lock`` guards them: readers copy under it, and
    every writer takes it except the dispatch counter on its per-call path, which runs on every
    call of a jitted function: there the lock would cost about 0.2 us a call, a quarter of the
    counter's cost. That path writes one sample into the preallocated sample lists and then
    the count (no call in between, so no other thread runs there under the GIL); past the
    samples' cap it makes two in-place additions to the function's own :class:`CallStats`
    instead (a reader may see a call's count before its seconds). It adds an entry to ``calls``
    only under the lock, so readers can iterate over ``calls`` safely. The code holding the lock
    never calls into JAX or logging, so a listener never waits on itself. The containers are
    never replaced, only cleared, so the dispatch counter keeps references to them.
    """

    #: Guards ``active``, ``events``, ``transfers``, ``calls`` and the samples (but for the
    #: dispatch counter's per-call updates; see the class docstring).
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: At least one capture is active: the listeners record (read without the lock: a stale
    #: read only records an event the next capture drops).
    listening: bool = False
    #: What to put back in JAX, while the hooks are on.
    restore: Restore | None = None
    #: The ``compile_or_get_cached`` the wrapper calls (kept after the capture: a wrapper
    #: someone put over ours still reaches it).
    compile_original: Any = None
    #: ``PjitFunction.__call__`` as it was before the dispatch counter replaced it.
    call_original: Any = None
    #: The jitted function whose top-level call is running (set and read by the dispatch
    #: counter on the calling thread; a call made meanwhile on another thread is not counted).
    current: Any = None
    #: ``perf_counter`` when the running top-level call began (read with ``current``: the
    #: time a call that makes its program has been making it, which JAX reports only once
    #: each phase has ended).
    call_started: float = 0.0
    active: list[Token] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    #: Calls with host values by (function, shape of call, place: code and instruction of the
    #: caller's first three frames) -> [function, host values a call (Counter of types),
    #: calls, the stack when first seen].
    transfers: dict[tuple, list] = field(default_factory=dict)
    #: Reads by place and way (a key of code object ids and instructions, cheap per read) ->
    #: [how, the stack when first seen, count].
    reads: dict[tuple, list] = field(default_factory=dict)
    #: ``PjitFunction`` -> its entry (the totals of its calls past the samples' cap).
    calls: dict[Any, CallStats] = field(default_factory=dict)
    #: Host values copied to a device other than as a jitted call's inputs: by
    #: ``jax.device_put`` (from any thread) and as an eager op's operands (``jnp.asarray``
    #: runs JAX's ``stage`` op; ``x * 0.5``): a running total, added to without the lock as
    #: the dispatch counter adds its calls.
    host_copies: int = 0
    #: ``perf_counter`` at the start, seconds and function of each top-level call, the first
    #: ``sample_count`` of each list (:class:`DispatchSample` when taken): preallocated, so
    #: that a call stores three items and no tuple (a tuple a call, kept, also woke the
    #: garbage collector every 700 calls).
    sample_starts: list[float] = field(default_factory=lambda: [0.0] * SAMPLE_LIMIT)
    sample_seconds: list[float] = field(default_factory=lambda: [0.0] * SAMPLE_LIMIT)
    sample_functions: list[Any] = field(default_factory=lambda: [None] * SAMPLE_LIMIT)
    sample_count: int = 0
    #: The dispatch counter keeps the result of the call that makes ``sample_count`` this in
    #: ``probe``: the trace's window closes once that run has finished.
    probe_at: int = -1
    probe: Any = None
    #: The same for the window's fewest runs (``Trace.budget_runs``, and the run after a
    #: program compiled in the window: :func:`~.hooks.compiles.compile_hook`):
    #: the result's smallest array while its run goes on (:func:`~.hooks.output_probe`), then
    #: :data:`RAN` (the dispatch counter lets it go at the next call once it has run): a
    #: window closed on time or over its budget holds their runs.
    first_probe_at: int = -1
    first_probe: Any = None
    #: The function whose call compiled in the window: the fewest runs wait for its next
    #: call (its first run is a warm-up), at most until call :attr:`first_probe_last`.
    first_probe_function: Any = None
    first_probe_last: int = -1
    #: The result of the latest top-level call (dropped when the capture ends): still being
    #: computed then, the cell ended with runs queued on the device.
    last_result: Any = None
    #: Set by the trace's watchdog on GPU/TPU: the dispatch counter calls it on the user's
    #: thread before the next launch (the profiler is stopped where programs are launched).
    stop_here: Callable[[], None] | None = None
    #: Set by `trace_late` at a compile that starts the second window: the compile wrapper
    #: calls it once XLA has compiled (the runs queued meanwhile drain rather than being
    #: traced).
    after_compile: Callable[[], None] | None = None
    #: Seconds the compile wrapper spent in `after_compile` (waiting for queued runs): inside
    #: JAX's timing of the compile, taken out of it by the duration listener.
    compile_wait: float = 0.0
    #: Called by the compile wrapper with each program's StableHLO module before XLA compiles
    #: it (outside ``jit``'s eager ops, while graphs are kept): its text, which the
    #: read-ahead (:mod:`..ahead`) starts parsing while XLA compiles; handed to `on_compile`.
    before_compile: Callable[[Any], str | None] | None = None
    #: Called by the compile wrapper after each such compile (executable, StableHLO module,
    #: what `before_compile` returned): the read-ahead.
    on_compile: Callable[[Any, Any, str | None], None] | None = None
    #: While a capture that reuses its cell's last trace has started none: the functions that
    #: trace held (-> program key); the dispatch counter calls `trace_late` with any other
    #: before launching it (the compile wrapper with None before any compile), which starts
    #: the trace. While a capture's first trace runs: the functions it has seen, and
    #: `trace_late` starts a second window once the first has closed.
    traced_functions: dict[Any, str] | None = None
    trace_late: Callable[[Any], None] | None = None
    session: Session = field(default_factory=Session)

    # -- under the lock ----------------------------------------------------------------------
    def append_event(self, event: Event) -> None:
        with self.lock:
            self.events.append(event)

    def add_transfer_place(
        self,
        key: tuple,
        function: Any,
        found: Counter,
        stack: Callable[[], tuple[Frame, ...]],
    ) -> None:
        """The first call of a `key` (function, shape of call, place...) with host values:
        `found` per call. Past :data:`MAX_TRANSFER_PLACES`, calls count for their function and
        shape with no stack (the totals stay exact)."""
        with self.lock:
            entry = self.transfers.get(key)
            if entry is None:
                if len(self.transfers) < MAX_TRANSFER_PLACES:
                    self.transfers[key] = [function, found, 1, stack() if found else ()]
                    return
                entry = self.transfers.setdefault(key[:2], [function, found, 0, ()])
            entry[2] += 1

    def count_read(self, key: tuple, how: str, stack: Callable[[], tuple[Frame, ...]]) -> None:
        """One more read at `key` (`stack` is called the first time only)."""
        with self.lock:
            entry = self.reads.get(key)
            if entry is not None:
                entry[2] += 1
            elif len(self.reads) < MAX_READ_PLACES:
                self.reads[key] = [how, stack(), 1]

    def forget_probes(self) -> None:
        """Drop the trace window's probes: its window closed, or its capture ended."""
        self.probe_at, self.probe = -1, None
        self.first_probe_at, self.first_probe = -1, None
        self.first_probe_function = None

    def is_idle(self) -> bool:
        """No capture is active (the first one to begin switches the hooks on)."""
        with self.lock:
            return not self.active

    def clear(self) -> None:
        with self.lock:
            self._clear()

    def open(self, graphs: bool, notes: list[str]) -> Token:
        """A token for a capture beginning now (active once :meth:`activate` is called)."""
        with self.lock:
            return Token(
                len(self.events),
                {key: entry[2] for key, entry in self.transfers.items()},
                self._call_totals(),
                notes,
                graphs,
                self.sample_count,
                reads={key: entry[2] for key, entry in self.reads.items()},
                host_copies=self.host_copies,
            )

    def activate(self, token: Token) -> None:
        with self.lock:
            self.active.append(token)

    def keeps_graphs(self) -> bool:
        """Some active capture wants graphs (the compile wrapper keeps the StableHLO module)."""
        with self.lock:
            return any(token.graphs for token in self.active)

    def close(self, token: Token) -> Taken:
        """End `token`'s capture: copy out what it recorded; when it was the last one, stop
        recording and empty the buffers."""
        with self.lock:
            events = self.events[token.event_start :]
            transfers = [
                Transfer(function, kind, per_call * calls, frames, calls)
                for key, (function, found, total, frames) in self.transfers.items()
                if (calls := total - token.transfers.get(key, 0)) > 0
                for kind, per_call in found.items()
            ]
            calls = self._call_deltas(token)
            start, end = token.sample_start, self.sample_count
            samples = list(
                zip(
                    self.sample_starts[start:end],
                    self.sample_seconds[start:end],
                    self.sample_functions[start:end],
                    strict=True,
                )
            )
            reads = [
                Read(how, frames, count - token.reads.get(key, 0))
                for key, (how, frames, count) in self.reads.items()
                if count > token.reads.get(key, 0)
            ]
            host_copies = self.host_copies - token.host_copies
            if token in self.active:
                self.active.remove(token)
            last = not self.active
            if last:
                self.listening = False
                self._clear()
        samples_taken = list(map(DispatchSample._make, samples))
        return Taken(events, transfers, calls, samples_taken, last, reads, host_copies)

    def _clear(self) -> None:
        self.events.clear()
        self.transfers.clear()
        self.reads.clear()
        self.calls.clear()
        self.host_copies = 0
        count, self.sample_count = self.sample_count, 0
        self.sample_functions[:count] = [None] * count  # the functions are not kept alive

    def _call_totals(self) -> dict[Any, tuple[int, float]]:
        """Each function's calls and seconds so far: its entry's (the calls past the samples'
        cap) and its samples'."""
        totals = {key: [entry.count, entry.seconds] for key, entry in self.calls.items()}
        count = self.sample_count
        for function, seconds in zip(
            self.sample_functions[:count], self.sample_seconds[:count], strict=True
        ):
            total = totals.get(function)
            if total is None:  # its entry is being made on another thread
                total = totals[function] = [0, 0.0]
            total[0] += 1
            total[1] += seconds
        return {key: (calls, seconds) for key, (calls, seconds) in totals.items()}

    def _call_deltas(self, token: Token) -> list[CallDelta]:
        deltas = []
        totals = self._call_totals()
        for key, entry in self.calls.items():
            before_count, before_seconds = token.calls.get(key, (0, 0.0))
            count, seconds = totals[key]
            if count > before_count:
                deltas.append(
                    CallDelta(
                        entry.function,
                        count - before_count,
                        seconds - before_seconds,
                        entry.first if not before_count else math.nan,
                        entry.frames,
                    )
                )
        return deltas


#: The one instance.
STATE = JaxState()
