"""The XLA profiler's own trace around a capture (JAX and torch_xla): the profiler session,
its window and the watchdog that closes it.

One trace at a time per process (the XLA profiler allows one session): the outermost capture
that asks for one owns it; a nested capture reads the same trace's events for its own span
when its owner stops, and otherwise goes without. Traces are written into xlanb's workdir,
read with :mod:`xlanb.formats.xspace` and removed at once. The trace covers a *window*: a
cell's first :data:`WINDOW_RUNS` runs (or :data:`WINDOW_SECONDS`), fewer once the same code
is known to run big programs (:func:`window_limit`, about :data:`WINDOW_EVENTS` events), or
:data:`FIRST_WINDOW_SECONDS` of runs before that is known; a watchdog thread stops it and
reads its events while the cell goes on. ``runs=None`` traces the whole capture. What the
events mean (ops, one ``device`` span per run) and the estimate of the runs after the window
are :mod:`xlanb.analysis.device_time`'s; the README says why and what it costs.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from xlanb.analysis.device_time import MEMORY_METRIC as MEMORY_METRIC
from xlanb.analysis.device_time import RUN_GAP_NS as RUN_GAP_NS
from xlanb.analysis.device_time import Summary as Summary
from xlanb.analysis.device_time import _programs as _programs
from xlanb.analysis.device_time import memory_samples as memory_samples
from xlanb.analysis.device_time import rows as rows
from xlanb.analysis.device_time import summarize, whole_runs_in
from xlanb.analysis.run_labels import label_runs as label_runs
from xlanb.capture import workdir
from xlanb.capture.runtime_stderr import runtime_noise_dropped
from xlanb.core.schema import REUSED_TRACE, SECOND_WINDOW, WHOLE_TRACE
from xlanb.formats.xspace import XSpaceError, find_xspace_files, parse_xspace, read_xspace

#: Traces larger than this are not read (a note says so): reading 200 MB takes seconds.
MAX_TRACE_BYTES = 200 * 1024 * 1024

#: Default window: the trace stops after this many program runs in the capture ...
WINDOW_RUNS = 50
#: ... or this many seconds after the first run, whichever comes first (big programs: few runs,
#: many events; a long compile before the first run does not close it).
WINDOW_SECONDS = 10.0
#: How often the watchdog looks at the run count ...
POLL_SECONDS = 0.005
#: ... and at least how often at the runtime's total run time, for a window of unknown runs.
BUSY_POLL_SECONDS = 0.05
#: ... or, once the runtime's runs are known to be big (from the traces read before), after
#: about this many trace events: stopping the profiler and reading its events both cost a few
#: µs an event (a 12-layer transformer step is ~3,000), so a window of 50 big runs would add
#: a second to the end of the cell. Never fewer than :data:`MIN_WINDOW_RUNS` runs.
WINDOW_EVENTS = 20_000
MIN_WINDOW_RUNS = 5
#: ... and before that is known (a cell's first trace), once the runs have taken this long
#: (the runtime's own run time where it counts one, else the wall time from the first run),
#: after at least :data:`MIN_WINDOW_RUNS` runs. Models' big runs record ~15,000 trace events
#: a second of run time on XLA:CPU (measured: a 12-layer JAX transformer step, 2,950 events in
#: 210 ms; a 4-layer torch_xla encoder step, 5,400 in 370 ms), so a second of them is about
#: :data:`WINDOW_EVENTS` events; runs of many tiny ops record more (a chain of 300 32x32
#: matmuls: 160,000 a second) and stay bounded by the window's runs until a trace has
#: measured them.
FIRST_WINDOW_SECONDS = 1.0
#: ... and, after at least :data:`MIN_BUDGET_RUNS` runs, once the trace's cost so far (its
#: traced wall time times :data:`TRACED_SLOWDOWN`) reaches this share of the capture's wall
#: time so far: a short cell pays for a few traced runs only, a cell that compiled for a
#: while before its first run traces more of them (its runs after the window are estimated).
TRACE_BUDGET_SHARE = 0.03
#: How much slower a traced run is than an untraced one, as a share of its wall time (the
#: profiler records every thunk of a run on XLA:CPU).
TRACED_SLOWDOWN = 0.4
MIN_BUDGET_RUNS = 2

#: Codes remembered (the oldest forgotten first).
KEPT_SIZES = 256

#: A cell run again whose programs were all traced by the last run of the same cell is not
#: traced again (its per-op times and run times are that trace's, its runs estimated from it):
#: a trace of a steady cell costs its fixed stop and read whatever its window
#: (:mod:`xlanb.capture.backends.jax.reuse`). A compile, or a program the last trace did not
#: hold, starts the trace there.
REUSE_TRACES = True


@dataclass(eq=False)
class _TraceState:
    """This module's mutable state, one instance (:data:`_STATE`). ``lock`` guards ``running``
    and ``counter`` (the watchdog thread and the capture's thread both end traces)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    #: The trace running in this process (the profiler allows one session), if any.
    running: Trace | None = None
    #: Traces started so far, for their directory names.
    counter: int = 0
    #: Runtimes whose version cannot trace (a missing API), with why: said once, not retried.
    unable: dict[str, str] = field(default_factory=dict)
    #: Size of the last trace read, in bytes (``bench/overhead.py`` reports it per 1,000 steps).
    last_trace_bytes: int = 0
    #: Trace events per program run of the last trace of each (runtime, code captured): what
    #: sizes the next window of the same code (a cell run again runs the same programs).
    events_per_run: dict[tuple[str, str], float] = field(default_factory=dict)


_STATE = _TraceState()


def runs_known(runtime: str, source: str) -> bool:
    """Whether an earlier trace of the code `source` measured its events per run."""
    return (runtime, source) in _STATE.events_per_run


def window_limit(runtime: str, window_runs: int, source: str = "") -> int:
    """The runs a window of at most `window_runs` traces on `runtime` for the code `source`:
    fewer when the last trace of that code had big runs (about :data:`WINDOW_EVENTS` events,
    at least :data:`MIN_WINDOW_RUNS` runs)."""
    per_run = _STATE.events_per_run.get((runtime, source))
    if not per_run:
        return window_runs
    return max(min(window_runs, int(WINDOW_EVENTS / per_run)), min(MIN_WINDOW_RUNS, window_runs))


@dataclass
class Trace:
    """A running trace, owned by the capture that started it."""

    runtime: str
    directory: str
    #: Stops the profiler; returns the serialized XSpace, or None when it wrote a file.
    stop: Callable[[], bytes | None]
    notes: list[str] = field(default_factory=list)
    #: When the trace started (epoch s).
    started_at: float = 0.0
    #: Where a trace started at a compile inside a call: that call's place among the
    #: capture's sampled calls (its run is this trace's, not an earlier window's).
    first_call: int | None = None
    #: Set when the profiler was stopped before the capture ended: the window closed, or the
    #: user started a trace of their own; ``early_data`` holds what it returned.
    yielded: bool = False
    early_data: bytes | None = None
    #: When the trace stopped early (epoch s), else None (it covers the whole capture).
    stopped_at: float | None = None
    #: The window closed on its run or time limit (not because the user started a trace).
    window_closed: bool = False
    #: What the capture's `snapshot` callable returned when the window closed (e.g. the
    #: runtime's execute-time totals, to split them into the window and the rest).
    snapshot_at_stop: Any = None
    #: The runs the window holds at most (None: the whole capture).
    window_runs: int | None = None
    #: The runtime's run count (and its value at the start), to size the next window.
    runs: Callable[[], int] | None = None
    runs_at_start: int = 0
    #: Runs traced when the window closed (None while it is open).
    runs_traced: int | None = None
    #: The events of a window that closed early, read on the watchdog thread while the cell
    #: went on (None otherwise).
    early_events: Any = None
    #: When the capture started (epoch s; set by its backend): a window read early is
    #: summarized from there (:func:`summarize`) on the watchdog thread too.
    capture_start: float | None = None
    #: The code captured (what the events per run are remembered for).
    source: str = ""
    #: The fewest runs the window holds once over its budget (:attr:`Window.known_budget_runs`
    #: for code traced before, else :data:`MIN_BUDGET_RUNS`).
    budget_runs: int = MIN_BUDGET_RUNS
    _stop_lock: threading.Lock = field(default_factory=threading.Lock)
    _done: threading.Event = field(default_factory=threading.Event)
    _watchdog: threading.Thread | None = None
    #: A capture's second window (:attr:`Window.second`).
    second: bool = False
    #: Where the profiler must be stopped on the thread that launches programs (XLA:GPU: a
    #: stop from another thread while CUDA graphs launch can poison the context), the
    #: backend's way to run a function there before its next launch; None: stop anywhere.
    hand_over: Callable[[Callable[[], None]], None] | None = None
    #: Called on the watchdog thread once a window that closed early has been read, with the
    #: program runs its events hold (None: nothing to call).
    on_read: Callable[[int], None] | None = None

    def stop_early(self, note: str | None = None) -> bool:
        """Stop the profiler now, keeping what it recorded (once; False when it had stopped)."""
        with self._stop_lock:
            if self.yielded:
                return False
            self.yielded = True
            self.stopped_at = time.time()
            try:
                with runtime_noise_dropped():
                    self.early_data = self.stop()
            except Exception as error:
                self.notes.append(f"{self.runtime}: the device trace failed: {error!r}.")
            if note:
                self.notes.append(note)
            return True


@dataclass(frozen=True)
class Window:
    """How a trace's window is sized and closed, and what the runtime tells it (issue #26).

    `runs()` is the runtime's count of program runs: the trace stops once it has grown by
    `window_runs` or `window_seconds` (default :data:`WINDOW_SECONDS`) have passed since the
    first run (compiles before it do not use up the window), or once the trace has used up its
    budget of the capture's time (:data:`TRACE_BUDGET_SHARE`, after at least
    :data:`MIN_BUDGET_RUNS` runs; `budget=False` turns that off); `window_runs=None` traces
    until :func:`finish`. A window of code whose runs' size is not known yet (no trace of
    `source` read before) also closes once the runs have taken :data:`FIRST_WINDOW_SECONDS`,
    after at least :data:`MIN_WINDOW_RUNS` of them: `busy()` is the seconds the runtime's runs
    have taken so far (None: the wall time from the first run less `making()`, the seconds
    spent making programs, stands for it). Before the window closes, `settle(ended)` waits
    until the counted runs have finished executing (JAX counts calls, which return before
    their runs under async dispatch; it returns early once `ended` is set); then `snapshot()`
    is kept in ``snapshot_at_stop``."""

    runs: Callable[[], int] | None = None
    window_runs: int | None = WINDOW_RUNS
    window_seconds: float | None = None
    snapshot: Callable[[], Any] | None = None
    settle: Callable[[Until], None] | None = None
    source: str = ""
    busy: Callable[[], float] | None = None
    making: Callable[[], float] | None = None
    budget: bool = True
    #: The fewest runs a window over its budget holds for code traced before (its runs are
    #: steady: one shows its ops; the backend holds one more past a program compiled in the
    #: window, whose first run is not); code never traced holds :data:`MIN_BUDGET_RUNS`.
    known_budget_runs: int = MIN_BUDGET_RUNS
    #: A second window of the capture, from the first call of a program the first never saw
    #: (its ``trace`` span is named :data:`SECOND_WINDOW`; its events per run are not the
    #: code's).
    second: bool = False


def start(
    runtime: str,
    begin: Callable[[str], Callable[[], bytes | None]],
    window: Window | None = None,
) -> tuple[Trace | None, str | None]:
    """Start the profiler through `begin(directory) -> stop` unless a trace is already running,
    with its window sized as `window` says (:class:`Window`; None: the whole capture).
    Returns (the trace, None), or (None, a one-line note) when it cannot start; the capture
    then goes on without device times."""
    window = window or Window(window_runs=None)
    runs, window_runs, source = window.runs, window.window_runs, window.source
    with _STATE.lock:
        if _STATE.running is not None or runtime in _STATE.unable:
            return None, None  # the outer capture's trace covers this span / said once
        _STATE.counter += 1
        directory = os.path.join(workdir.path(), f"trace-{os.getpid()}-{_STATE.counter}")
        try:
            os.makedirs(directory, exist_ok=True)
            with runtime_noise_dropped():
                stop = begin(directory)
        except Exception as error:
            shutil.rmtree(directory, ignore_errors=True)
            first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
            if isinstance(error, (ImportError, AttributeError, NotImplementedError)):
                # this runtime or version cannot trace: say so once, then stop trying
                _STATE.unable[runtime] = first_line
                return None, (
                    f"{runtime}: this version cannot run the device trace ({first_line}); "
                    "the time account uses the runtime's counters (said once)."
                )
            return None, (
                f"{runtime}: the device trace could not start ({first_line}); "
                "times are from the runtime's counters."
            )
        trace = _STATE.running = Trace(
            runtime, directory, stop, started_at=time.time(), source=source, second=window.second
        )
        if runs_known(runtime, source):
            trace.budget_runs = max(window.known_budget_runs, 1)
        if runs is not None:
            try:
                trace.runs, trace.runs_at_start = runs, runs()
            except Exception:
                trace.runs = None
        if window_runs is not None and trace.runs is not None:
            limit = trace.window_runs = window_limit(runtime, window_runs, source)
            trace._watchdog = threading.Thread(
                target=_watch,
                args=(
                    trace,
                    runs,
                    trace.runs_at_start,
                    limit,
                    window,
                    _RunTime(window.busy, window.making),
                    not runs_known(runtime, source),
                ),
                name="xlanb-trace-window",
                daemon=True,
            )
            trace._watchdog.start()
        return trace, None


class _RunTime:
    """The seconds the runs of a window have taken: the runtime's own total since the trace
    started, else the wall time from the first run less the time spent making programs
    since (`making()`: the seconds a runtime without a run time of its own has spent
    tracing and compiling so far; a step compiled after a cell's first eager op is not run
    time)."""

    def __init__(
        self, busy: Callable[[], float] | None, making: Callable[[], float] | None = None
    ) -> None:
        self._busy, self._making, self._base, self._made = busy, making, 0.0, 0.0
        if busy is not None:
            try:
                self._base = busy()
            except Exception:  # a runtime that cannot tell: the wall time stands for it
                self._busy = None
        self._counted, self._seconds, self._read_at = 0, 0.0, 0.0

    def _made_so_far(self) -> float:
        if self._making is None:
            return 0.0
        try:
            return self._making()
        except Exception:
            self._making = None
            return 0.0

    def first_run(self) -> None:
        if self._busy is None:
            self._base, self._made = time.monotonic(), self._made_so_far()

    def wall_deadline(self) -> float:
        """When the window's wall time is up (never, where the runtime counts its run time)."""
        if self._busy is not None:
            return math.inf
        return self._base + FIRST_WINDOW_SECONDS + self._made_so_far() - self._made

    def seconds(self, count: int) -> float:
        if self._busy is None:
            return time.monotonic() - self._base - (self._made_so_far() - self._made)
        now = time.monotonic()
        # the total grows as runs end, after their launch was counted: read it at each launch
        # and while runs are in flight, not at every poll
        if count != self._counted or now - self._read_at >= BUSY_POLL_SECONDS:
            self._counted, self._read_at = count, now
            self._seconds = self._busy() - self._base
        return self._seconds


class Until:
    """What a window's `settle` waits on: set when the capture ends, or when the wall time of
    a window of unknown runs is up (its runs queued under async dispatch need not all run).
    :meth:`spent`: the window is over its budget (:func:`over_budget`), so a settle that
    counts calls waits for its fewest runs only (a loop queues its calls long before they
    run: the runs queued since are left to the estimate, tracing them would overrun it)."""

    def __init__(self, done: threading.Event, budget: Callable[[], bool] | None = None) -> None:
        self.done, self.deadline, self._budget = done, math.inf, budget

    def spent(self) -> bool:
        """Whether the window is over its budget now."""
        return self._budget is not None and self._budget()

    def is_set(self) -> bool:
        return self.done.is_set() or time.monotonic() >= self.deadline

    def wait(self, timeout: float) -> bool:
        """Like ``threading.Event.wait``: True once set (within `timeout` seconds)."""
        timeout = min(timeout, max(self.deadline - time.monotonic(), 0.0))
        return self.done.wait(timeout) or self.is_set()


def over_budget(
    count: int, traced_seconds: float, capture_seconds: float, fewest: int = MIN_BUDGET_RUNS
) -> bool:
    """Whether a window of `count` runs that have run `traced_seconds` (not counting programs
    made meanwhile) in a capture of `capture_seconds` so far has cost its budget: at least
    `fewest` runs, and their tracing's cost is :data:`TRACE_BUDGET_SHARE` of the capture's
    wall time or more."""
    if count < fewest:
        return False
    return TRACED_SLOWDOWN * traced_seconds >= TRACE_BUDGET_SHARE * capture_seconds


def _watch(
    trace: Trace,
    runs: Callable[[], int],
    base: int,
    limit: int,
    window: Window,
    run_time: _RunTime,
    unknown_runs: bool,
) -> None:
    """Close `trace`'s window after `limit` more runs or the window's seconds from the first
    one, once over its budget (:func:`over_budget` of the runs' time, `run_time`), or (runs of
    unknown size) once they have run :data:`FIRST_WINDOW_SECONDS` after at least
    :data:`MIN_WINDOW_RUNS` runs, unless it ends first."""
    fewest = min(MIN_WINDOW_RUNS, limit)
    seconds = WINDOW_SECONDS if window.window_seconds is None else window.window_seconds
    settle, snapshot = window.settle, window.snapshot
    started = time.monotonic() - max(time.time() - trace.started_at, 0.0)

    def spent() -> bool:
        count = runs() - base
        ran = run_time.seconds(count) if count else 0.0
        elapsed = time.monotonic() - started
        return window.budget and over_budget(count, ran, elapsed, trace.budget_runs)

    until = Until(trace._done, spent)
    try:
        deadline, first_run_seen = math.inf, False
        while not trace._done.wait(POLL_SECONDS):
            count = runs() - base
            now = time.monotonic()
            if count and not first_run_seen:
                # a flag, not an infinite deadline: a window of infinite seconds has one too
                deadline, first_run_seen = now + seconds, True
                run_time.first_run()
                if unknown_runs:
                    until.deadline = run_time.wall_deadline()
            ran = run_time.seconds(count) if count else 0.0
            full = unknown_runs and count >= fewest and ran >= FIRST_WINDOW_SECONDS
            if count >= limit or now >= deadline or full or until.spent():
                if unknown_runs and count:  # programs made since the first run
                    until.deadline = run_time.wall_deadline()
                if settle is not None:
                    settle(until)
                    if trace._done.is_set():
                        return  # the capture ended meanwhile: the trace covers all of it
                if trace.hand_over is None:
                    closed = _close_window(trace, snapshot, runs, base)
                else:
                    closed = _close_on_launching_thread(trace, snapshot, runs, base)
                if closed:
                    # read the window's events now, while the cell goes on
                    with _launches_first(trace.hand_over is not None):
                        trace.early_events = _read(trace, trace.early_data)
                        trace.early_data = None
                        if trace.early_events is not None and trace.capture_start is not None:
                            try:
                                summary = summarize(
                                    trace.early_events, trace.capture_start, float("inf")
                                )
                                if trace.on_read is not None:
                                    trace.on_read(
                                        sum(span[0] == "device" for span in summary.spans)
                                    )
                            except Exception:
                                pass  # summarized again, and failing with a note, at the end
                return
    except Exception as error:  # a runtime that cannot count: trace to the end
        trace.notes.append(f"{trace.runtime}: the trace window could not count runs: {error!r}.")


#: The interpreter's switch interval while the window is read beside a launching thread.
READ_SWITCH_SECONDS = 0.0005


@contextmanager
def _launches_first(launching: bool) -> Iterator[None]:
    """While the watchdog reads a window beside a thread that launches programs on an
    accelerator (`launching`), that thread waits at most :data:`READ_SWITCH_SECONDS` for the
    interpreter lock, not the default 5 ms: JAX keeps few runs queued, so each 5 ms wait
    between two launches could leave the device idle."""
    before = sys.getswitchinterval()
    if launching:
        sys.setswitchinterval(min(before, READ_SWITCH_SECONDS))
    try:
        yield
    finally:
        if launching:
            sys.setswitchinterval(before)


def _close_window(
    trace: Trace, snapshot: Callable[[], Any] | None, runs: Callable[[], int], base: int
) -> bool:
    """Stop `trace`'s profiler as its window closes (False: it had stopped already)."""
    taken = snapshot() if snapshot is not None else None
    counted = runs() - base
    if not trace.stop_early():
        return False
    trace.window_closed = True
    trace.snapshot_at_stop = taken
    trace.runs_traced = counted
    return True


def _close_on_launching_thread(
    trace: Trace, snapshot: Callable[[], Any] | None, runs: Callable[[], int], base: int
) -> bool:
    """:func:`_close_window`, run by the backend on the thread that launches programs, before
    its next launch; False when the capture ends first (:func:`finish` stops it there)."""
    outcome: list[bool] = []
    done = threading.Event()

    def close() -> None:
        try:
            outcome.append(_close_window(trace, snapshot, runs, base))
        finally:
            done.set()

    assert trace.hand_over is not None
    trace.hand_over(close)
    while not done.wait(POLL_SECONDS):
        if trace._done.is_set() and not done.wait(POLL_SECONDS):
            return False
    return bool(outcome and outcome[0])


def count_runs(trace: Trace) -> None:
    """Note the runs `trace` holds, before its capture's counts are gone (a backend whose run
    count ends with its capture calls this first; :func:`finish` does it otherwise)."""
    if trace.runs_traced is None and trace.runs is not None and not trace.yielded:
        try:
            trace.runs_traced = trace.runs() - trace.runs_at_start
        except Exception:
            pass


def _end_watch(trace: Trace) -> None:
    trace._done.set()
    if trace._watchdog is not None and trace._watchdog is not threading.current_thread():
        trace._watchdog.join()


def finish(trace: Trace) -> Any:
    """Stop `trace` and read its events (an :class:`xlanb.formats.xspace.XSpaceEvents`), or None
    with a note in ``trace.notes``. The trace's files are removed in every case."""
    try:
        try:
            _end_watch(trace)
            with trace._stop_lock:
                if trace.early_events is not None:
                    return trace.early_events  # read while the cell ran
                count_runs(trace)
                if trace.yielded:
                    data = trace.early_data
                else:
                    with runtime_noise_dropped():
                        data = trace.stop()
        finally:
            with _STATE.lock:
                _STATE.running = None
        return _read(trace, data)
    except Exception as error:
        trace.notes.append(f"{trace.runtime}: the device trace failed: {error!r}.")
        return None
    finally:
        shutil.rmtree(trace.directory, ignore_errors=True)


def _read(trace: Trace, data: bytes | None) -> Any:
    """The events of `trace` (its XSpace `data`, else the file it wrote), or None with a note;
    learns the runtime's events per run for the next window."""
    try:
        events = _parse(trace, data)
    except XSpaceError as error:
        trace.notes.append(f"{trace.runtime}: the device trace could not be read ({error}).")
        return None
    except Exception as error:
        trace.notes.append(f"{trace.runtime}: the device trace failed: {error!r}.")
        return None
    runs = _runs_in(events) or trace.runs_traced
    if events is not None and runs and not trace.second:
        key = (trace.runtime, trace.source)
        _STATE.events_per_run.pop(key, None)
        _STATE.events_per_run[key] = events.event_count / runs
        while len(_STATE.events_per_run) > KEPT_SIZES:
            del _STATE.events_per_run[next(iter(_STATE.events_per_run))]
    return events


def _runs_in(events: Any) -> int:
    """The whole program runs a trace holds, where its runtime numbers them (JAX's ``run_id``;
    a window closed on time holds fewer runs than the calls counted under async dispatch; a
    run the window closed in is not one, as in :func:`_cut_runs`)."""
    frame = getattr(events, "events", None)
    return 0 if frame is None else whole_runs_in(frame)


def _parse(trace: Trace, data: bytes | None) -> Any:
    if data is not None:
        _STATE.last_trace_bytes = len(data)
        if len(data) > MAX_TRACE_BYTES:
            trace.notes.append(
                f"{trace.runtime}: the device trace is "
                f"{len(data) / 2**20:.0f} MB, over xlanb's "
                f"{MAX_TRACE_BYTES // 2**20} MB cap; it was not read."
            )
            return None
        return parse_xspace(data, f"{trace.runtime} trace", markers=False)
    files = find_xspace_files(trace.directory)
    if not files:
        trace.notes.append(f"{trace.runtime}: the device trace wrote no file.")
        return None
    size = _STATE.last_trace_bytes = files[0].stat().st_size
    if size > MAX_TRACE_BYTES:
        trace.notes.append(
            f"{trace.runtime}: the device trace is {size / 2**20:.0f} MB, "
            f"over xlanb's {MAX_TRACE_BYTES // 2**20} MB cap; it was not "
            "read (profile fewer steps for per-op times)."
        )
        return None
    return read_xspace(files[0], markers=False)


def yield_to_user() -> None:
    """Stop the running trace now, keeping what it recorded: the user is starting a trace of
    their own (the runtime allows one session), and theirs must work as without xlanb."""
    trace = _STATE.running
    if trace is None:
        return
    trace._done.set()
    trace.stop_early(
        f"{trace.runtime}: your own profiler trace started in the cell; "
        "xlanb's device trace covers the cell up to that point."
    )


def abandon() -> None:
    """Stop a trace whose capture was interrupted before it could read it, dropping what it
    recorded (the profiler allows one session: a leftover one would block every later trace
    and the user's own)."""
    trace, _STATE.running = _STATE.running, None
    if trace is None:
        return
    try:
        _end_watch(trace)
        trace.stop_early()
    except BaseException:
        pass
    finally:
        shutil.rmtree(trace.directory, ignore_errors=True)


def window_span(
    backend: str, trace: Trace, ended_at: float, spans: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The ``trace`` lane's span: what part of the capture the device trace covers (not part
    of the time account; the views say which runs the per-op times come from), or none when
    the trace holds no program run. `spans`: the capture's spans from the trace."""
    end = trace.stopped_at if trace.stopped_at is not None else ended_at
    runs = sum(1 for span in spans if span["lane"] == "device" and not span["estimated"])
    if not runs:
        return []
    counted = f"{runs} {'run' if runs == 1 else 'runs'}"
    if trace.second:
        name = f"{SECOND_WINDOW} {counted}"
    elif trace.stopped_at is None:
        name = WHOLE_TRACE
    elif trace.window_closed:
        name = "device trace: first run" if runs == 1 else f"device trace: first {counted}"
    else:
        name = f"device trace: until your own trace started ({counted})"
    return [
        {
            "backend": backend,
            "lane": "trace",
            "name": name,
            "graph": None,
            "start": trace.started_at,
            "seconds": max(end - trace.started_at, 0.0),
            "estimated": False,
        }
    ]


def reused_span(backend: str, at: float) -> list[dict[str, Any]]:
    """The ``trace`` lane's span of a capture that traced nothing and reused the last trace of
    its code (:data:`REUSED_TRACE`): no time of the capture's own."""
    return [
        {
            "backend": backend,
            "lane": "trace",
            "name": REUSED_TRACE,
            "graph": None,
            "start": at,
            "seconds": 0.0,
            "estimated": False,
        }
    ]


def is_running() -> bool:
    return _STATE.running is not None


def last_trace_bytes() -> int:
    """Size of the last trace read, in bytes (``bench/overhead.py`` reports it)."""
    return _STATE.last_trace_bytes
