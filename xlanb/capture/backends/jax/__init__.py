"""JAX backend (``jax.jit`` on any XLA platform; tested on CPU): the backend protocol.

JAX needs no start-up switches: everything is switched on in :func:`begin` and off again in
:func:`end`, so a process that loads xlanb but profiles nothing behaves exactly as before.
How each frame is measured, and the limits, are in the README ("Runtime notes", JAX).

The package: this module is the backend protocol (``begin``, ``end``, ...); :mod:`.hooks`
holds every private JAX touch point (each checked once, a missing one turning its feature
off with a note), :mod:`.state` the mutable state (one instance, locked where threads share
it), :mod:`.events` the records the listeners make, :mod:`.rows` the frames' rows built from
them, :mod:`.dispatch` the CPython side of the dispatch counter, :mod:`.trace_session`
JAX's profiler session for the device trace, and :mod:`.reuse` what a cell run again takes
from its last trace instead of tracing.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from xlanb.analysis.peaks import part_of
from xlanb.capture import device_trace, peak, versions
from xlanb.capture.backends.base import Capture, CaptureOptions
from xlanb.capture.backends.jax import hooks, reuse, rows, trace_session
from xlanb.capture.backends.jax.ahead import AHEAD
from xlanb.capture.backends.jax.events import CacheMiss, Duration
from xlanb.capture.backends.jax.hooks import COMPILE_EVENT as COMPILE_EVENT
from xlanb.capture.backends.jax.hooks import EXPLAIN_LOGGER as EXPLAIN_LOGGER
from xlanb.capture.backends.jax.hooks import LOWER_EVENT as LOWER_EVENT
from xlanb.capture.backends.jax.hooks import TRACE_EVENT as TRACE_EVENT
from xlanb.capture.backends.jax.state import RAN, SAMPLE_LIMIT, STATE, Token
from xlanb.formats import jax_text as jax_text_vocabulary

# Causes (``compiles.cause``) and fallback causes, defined in jax_text and re-exported
# (``X as X``), with explanation_cause and parse_explanation, for xlanb.analysis.findings and
# the tests.
from xlanb.formats.jax_text import ADVICE as ADVICE
from xlanb.formats.jax_text import DERIVED as DERIVED
from xlanb.formats.jax_text import EAGER_OP as EAGER_OP
from xlanb.formats.jax_text import HOST_CALLBACK as HOST_CALLBACK
from xlanb.formats.jax_text import HOST_TRANSFER as HOST_TRANSFER
from xlanb.formats.jax_text import NEVER_SEEN as NEVER_SEEN
from xlanb.formats.jax_text import NEW_CONTEXT as NEW_CONTEXT
from xlanb.formats.jax_text import NEW_PYTREE as NEW_PYTREE
from xlanb.formats.jax_text import NEW_TYPES as NEW_TYPES
from xlanb.formats.jax_text import STATIC_CHANGED as STATIC_CHANGED
from xlanb.formats.jax_text import UNEXPLAINED as UNEXPLAINED
from xlanb.formats.jax_text import explanation_cause as explanation_cause
from xlanb.formats.jax_text import parse_explanation as parse_explanation
from xlanb.formats.oom_text import out_of_memory

NAME = jax_text_vocabulary.BACKEND
INSTALL_HINT = "JAX is not installed: `pip install jax jaxlib` (or `pip install 'xlanb[jax]'`)."
LATE_LOSS = (
    "no temporaries of programs on an accelerator (XLA reads its dump flag, which gives them, "
    "once, when JAX starts its backends)"
)
#: The switches of :func:`debug_switches`.
SWITCH_NAMES = ("XLA_FLAGS",)
#: Top-level modules of JAX's accelerator plugins (found without importing them).
_PLUGIN_MODULES = ("jax_cuda13_plugin", "jax_cuda12_plugin", "jax_rocm7_plugin", "libtpu")

#: The wrapper put in place of ``jax._src.compiler.compile_or_get_cached`` while capturing.
_compile_hook = hooks.compile_hook


def __getattr__(name: str) -> Any:
    """``_listening`` (a capture is active), as the single-module backend had it."""
    if name == "_listening":
        return STATE.listening
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def is_installed() -> bool:
    return "jax" in sys.modules or importlib.util.find_spec("jax") is not None


def is_imported() -> bool:
    return "jax" in sys.modules


def has_started() -> bool:
    """Too late for the dump flag: JAX has started its backends on a machine with an
    accelerator plugin (JAX itself needs no start-up switches)."""
    return accelerator_plugin() is not None and switches_read()


def switches_read() -> bool:
    """XLA has read ``XLA_FLAGS``: JAX's backends are up. Imports nothing (the workdir's
    janitor thread asks)."""
    bridge = sys.modules.get("jax._src.xla_bridge")
    try:
        return bridge is not None and bool(bridge.backends_are_initialized())
    except Exception:
        return False


def accelerator_plugin() -> str | None:
    """An installed JAX accelerator plugin (CUDA, ROCm, TPU), found without importing it;
    None on a CPU-only install or when ``JAX_PLATFORMS`` names only ``cpu``."""
    platforms = [p.strip() for p in os.environ.get("JAX_PLATFORMS", "").lower().split(",")]
    if any(platforms) and set(platforms) <= {"cpu", ""}:
        return None
    for name in _PLUGIN_MODULES:
        if importlib.util.find_spec(name) is not None:
            return name
    namespace = importlib.util.find_spec("jax_plugins")
    for folder in (namespace.submodule_search_locations or []) if namespace else []:
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for entry in entries:
            if entry.startswith(("xla_cuda", "xla_rocm", "xla_tpu")):
                return f"jax_plugins.{entry}"
    return None


def debug_switches(workdir: str, deep: bool = False) -> dict[str, str]:
    """On a machine with an accelerator plugin, an XLA dump into the workdir: XLA:GPU's
    compiled memory stats hold no buffer assignment, so the programs' temporaries come from
    the dump's ``*-buffer-assignment.txt`` (only profiled programs' files are read; the
    workdir's janitor empties the folder between captures). None on CPU, where JAX hands the
    assignment over."""
    if accelerator_plugin() is None:
        return {}
    dump_dir = os.path.join(workdir, "xla_dump")
    os.makedirs(dump_dir, exist_ok=True)
    return {"XLA_FLAGS": f"--xla_dump_to={dump_dir} --xla_dump_hlo_as_text"}


def begin(options: CaptureOptions) -> Token:
    import jax  # noqa: F401 - the backend was asked for, so JAX is imported now

    notes: list[str] = []
    if STATE.is_idle():
        STATE.clear()
        notes.extend(hooks.switch_on())
    token = STATE.open(options.graphs, notes)
    STATE.before_compile, STATE.on_compile = AHEAD.before_compile, AHEAD.submit
    AHEAD.parse_first = options.shown
    AHEAD.cell_filename = options.cell_filename
    token.live = hooks.live_arrays()
    hooks.explain_enter()
    token.thread = threading.get_ident()
    if options.device_trace:
        known = None
        if STATE.is_idle():  # the outermost capture only
            known = reuse.known_functions(STATE.session.traces, options, _function_name)
        if known is None:
            _start_trace(token, options)
            if STATE.is_idle() and token.trace is not None and token.trace.window_runs:
                _arm_second_window(token, options)
        else:
            token.reusing = True

            def trace_late(function: Any) -> None:
                STATE.traced_functions = STATE.trace_late = None
                token.reusing = False
                _start_trace(token, options, first_call=_calling(function, token))

            STATE.trace_late, STATE.traced_functions = trace_late, known
    token.started_at = time.time()
    if token.trace is not None:
        token.trace.capture_start = token.started_at
    STATE.activate(token)
    return token


def _arm_second_window(token: Token, options: CaptureOptions) -> None:
    """Once the window of `token`'s trace has closed, the first call of a jitted function it
    never saw (not an eager op), or a new compile of one it saw (a last batch of another
    shape), starts a second trace there (once): a program first run after the window (an
    evaluation after a training loop) has runs of its own to estimate from. A function first
    called in the window whose run came after its stop (queued behind others under async
    dispatch) is forgotten as seen once the window is read: its next call starts the second."""
    seen: dict[Any, str] = {}
    seen_at: dict[Any, int] = {}  # the call each function was first seen at
    first = token.trace

    def trace_late(function: Any) -> None:
        calling = _calling(function, token)
        compiling = function is None
        if compiling:  # a compile, inside its function's call (which came first)
            function = STATE.current
            if function is None:
                return
        trace = token.trace
        eager = hooks.function_name(function)[1]
        if trace is None or trace.stopped_at is None or eager:
            seen[function] = ""  # the open window holds its runs (an eager op's: not worth one)
            if trace is first and not eager:
                seen_at.setdefault(function, STATE.sample_count)
            return
        STATE.traced_functions = STATE.trace_late = None
        token.armed = False
        token.earlier.append((trace, device_trace.finish(trace)))  # its window's reads done
        token.trace = None
        if not trace.window_closed:  # stopped for the user's own trace
            return
        start = functools.partial(_start_trace, token, options, True, calling)
        if compiling:  # once compiled and the runs queued before have run: those untraced
            STATE.after_compile = functools.partial(_after_queued_runs, start)
        else:
            start()

    token.armed = True
    STATE.trace_late, STATE.traced_functions = trace_late, seen
    if first is None:
        return
    first_call = first.runs_at_start

    def forget_untraced(runs: int) -> None:
        """The functions first called past the `runs` the window holds (a device runs its
        programs in call order) ran after its stop: no longer seen."""
        for function, call in list(seen_at.items()):
            if call >= first_call + runs:
                seen.pop(function, None)

    first.on_read = forget_untraced


#: The longest a second window started at a compile waits for the runs queued before it.
QUEUED_RUNS_WAIT_SECONDS = 2.0


def _after_queued_runs(start: Callable[[], None]) -> None:
    """Call `start` (a second window's, at a compile) once the latest call's run has ended (at
    most :data:`QUEUED_RUNS_WAIT_SECONDS`: a run held by a host callback could wait on this
    thread): a device runs its programs in turn, so the runs queued before the new program's
    (a loop's, under async dispatch) are not traced; its run waits for them anyway, and the
    compile has run while they did."""
    latest = STATE.last_result
    probe = RAN if latest is None else hooks.output_probe(latest)  # one of its arrays
    deadline = time.monotonic() + QUEUED_RUNS_WAIT_SECONDS
    while not hooks.probe_ran(probe) and time.monotonic() < deadline:
        time.sleep(device_trace.POLL_SECONDS / 10)
    start()


def _calling(function: Any, token: Token) -> int | None:
    """Where a trace starts at a compile (`function` None) inside a top-level call: that
    call's place among `token`'s sampled calls (its sample is made once it returns), whose
    run the trace holds; None where it starts before a call."""
    if function is not None or STATE.current is None:
        return None
    return STATE.sample_count - token.sample_start


def _function_name(function: Any) -> str:
    return hooks.function_name(function)[0]


def _start_trace(
    token: Token, options: CaptureOptions, second: bool = False, first_call: int | None = None
) -> None:
    """Start `token`'s device trace now (when its capture begins, or at the first compile or
    new program of a capture that reused its cell's last trace until then, or whose first
    window closed before it: `second`; `first_call`: the call it starts inside, at its
    compile, :attr:`device_trace.Trace.first_call`)."""
    window = device_trace.Window(
        runs=_runs,
        window_runs=options.trace_runs,
        settle=_settle,
        source=options.source,
        making=_making_seconds,
        known_budget_runs=1,
        second=second,
    )
    token.trace, note = device_trace.start(NAME, trace_session.start_trace, window)
    if token.trace is not None:
        token.trace.first_call = first_call
    if token.trace is not None and token.trace.window_runs is not None:
        if stops_where_launched():
            token.trace.hand_over = _hand_over
        STATE.probe, STATE.probe_at = None, STATE.sample_count + token.trace.window_runs
        # a window over its budget may close after its fewest runs
        fewest = min(token.trace.budget_runs, token.trace.window_runs)
        STATE.first_probe, STATE.first_probe_at = None, STATE.sample_count + fewest
        STATE.first_probe_function = None
    if note:
        token.notes.append(note)
    elif token.trace is not None:
        token.notes.extend(versions.tell_once([hooks.profiler_session().note]))
    if token.trace is not None and token.started_at:  # a late start
        token.trace.capture_start = token.started_at


#: The note of a cell that ended while its last run was still on the device.
QUEUED_AT_END = (
    "the cell ended before its last program run finished (JAX dispatches asynchronously): "
    "device time after the cell is not in this profile; end the cell with "
    "jax.block_until_ready(result) to measure it"
)


def _making_seconds() -> float:
    """The seconds spent making programs so far (tracing, lowering, compiling): not run time
    for the window of a cell's first trace (JAX keeps no run time of its own, so the window
    counts the wall time from the first run less these: a step compiled after the cell's
    first eager op does not use up the window). JAX reports each phase once it has ended; a
    top-level call that missed the tracing cache (its explanation is logged as tracing
    starts) has been making its program since, beyond the phases reported since (a step
    tracing and compiling for seconds after the eager ops that made its batch closed the
    window before its first run). A call that runs its program inline is not making it."""
    with STATE.lock:
        events = list(STATE.events)
    durations = [event for event in events if isinstance(event, Duration)]
    made = sum(event.seconds for event in durations)
    if STATE.current is None:
        return made
    now = time.time()
    call_began = now - max(time.perf_counter() - STATE.call_started, 0.0)
    misses = [e.wall for e in events if isinstance(e, CacheMiss) and e.wall >= call_began]
    if not misses:
        return made
    since = min(misses)
    reported = sum(event.seconds for event in durations if event.wall >= since)
    return made + max(now - since - reported, 0.0)


def between_cells() -> bool:
    """The janitor's step before it empties the dump: remember the programs compiled since
    the last capture (:func:`~xlanb.capture.backends.jax.rows.remember_dumped_programs`)."""
    rows.remember_dumped_programs(STATE.session)
    return True


def stops_where_launched() -> bool:
    """Whether the trace's window is closed on the thread that launches the programs: with an
    accelerator plugin (XLA:GPU's CUPTI stopped from another thread while command buffers
    launch can leave the CUDA context failing every later launch)."""
    return accelerator_plugin() is not None


def _hand_over(close: Callable[[], None]) -> None:
    """Have the dispatch counter run `close` on the user's thread before its next launch."""
    STATE.stop_here = close


def _runs() -> int:
    """Top-level calls of jitted functions so far (what closes the trace's window)."""
    return STATE.sample_count


def _settle(ended: device_trace.Until) -> None:
    """Wait (on the trace's watchdog thread) until the window's last call has run on the
    device: calls return before their runs under async dispatch, and a device runs its
    programs in turn. A window that closes on time, before its last call, waits for the
    latest call's run instead. Once over its budget it waits for its fewest runs only (a loop
    queues its calls long before they run: they would all be traced). Gives up when the
    capture ends first."""
    try:
        if not 0 < STATE.probe_at <= SAMPLE_LIMIT:
            return  # past the samples' cap: no probe (the window closes on calls and time)
        # the window's fewest runs are traced whatever its time
        while (first := STATE.first_probe) is None or not hooks.probe_ran(first):
            if ended.done.wait(device_trace.POLL_SECONDS):
                return
        while (probe := STATE.probe) is None:
            probe = STATE.last_result
            if probe is not None and STATE.sample_count < STATE.probe_at:
                break  # closed on time, before the window's last call
            if ended.wait(device_trace.POLL_SECONDS) or ended.spent():
                return
        while not ended.spent() and hooks.still_running(probe):
            if ended.wait(device_trace.POLL_SECONDS):
                return
    finally:
        STATE.forget_probes()


def end(token: Token, options: CaptureOptions) -> Capture:
    STATE.stop_here = None  # a window still open is closed by device_trace.finish, here
    STATE.after_compile, STATE.compile_wait = None, 0.0
    if token.reusing or token.armed:
        STATE.traced_functions = STATE.trace_late = None
    if token.thread == threading.get_ident():
        hooks.explain_exit()
    if token.trace is not None:
        device_trace.count_runs(token.trace)  # the calls are forgotten once closed
    taken = STATE.close(token)
    if taken.last:
        hooks.switch_off()
    ended_at = time.time()
    last_result, STATE.last_result = STATE.last_result, None
    if last_result is not None and hooks.still_running(last_result):
        token.notes.append(QUEUED_AT_END)
    del last_result  # not kept alive past the cell (the live arrays are counted next)
    trace_events = device_trace.finish(token.trace) if token.trace is not None else None
    if token.trace is not None:
        STATE.forget_probes()  # a window that never closed
    traces = [trace for trace, _ in token.earlier] + ([token.trace] if token.trace else [])
    capture = Capture(notes=list(token.notes) + [note for t in traces for note in t.notes])
    try:
        rows.fill(
            capture,
            taken,
            options,
            STATE.session,
            trace_events,
            (token.started_at, ended_at),
            token.trace if trace_events is not None else None,
            drained=QUEUED_AT_END not in token.notes,
            reused=token.reusing,
            earlier=token.earlier,
        )
    finally:
        AHEAD.drop()  # reads no row took (a nested capture's rows took them first)
    capture.environment = _environment()
    _live_rows(capture, token, options)
    if options.error is not None and out_of_memory(
        f"{type(options.error).__name__}: {options.error}"
    ):
        _failure_rows(capture, token, options.error)
    return capture


def _failure_rows(capture: Capture, token: Token, error: BaseException) -> None:
    """``live_arrays`` ``at failure``: every live array when the cell ran out of memory, by
    shape and dtype, with what held them; the device's memory limit where it keeps one."""
    for row in hooks.live_at_failure(token.live, error):
        capture.add("live_arrays", {"backend": NAME, **row})
    capture.environment.update(hooks.device_memory())


def _live_rows(capture: Capture, token: Token, options: CaptureOptions) -> None:
    """``live_arrays``: all live arrays before and after the cell, and those it left alive;
    nothing when the cell changed nothing (a cell without JAX work has an empty profile)."""
    count_before, bytes_before = token.live.count, token.live.bytes
    left, count_after, bytes_after = hooks.left_alive(
        token.live, options.cell_filename, options.cell_line_offset, options.cell_numbers
    )
    if not left and (count_before, bytes_before) == (count_after, bytes_after):
        return
    snapshots = [("before", count_before, bytes_before), ("after", count_after, bytes_after)]
    for snapshot, count, size in snapshots:
        capture.add(
            "live_arrays",
            {"backend": NAME, "snapshot": snapshot, "shape": "", "count": count, "bytes": size},
        )
    for row in left:
        capture.add("live_arrays", {"backend": NAME, "snapshot": "left alive", **row})


def _environment() -> dict[str, Any]:
    """JAX's environment, with the peak rates the roofline reads: this CPU's, measured; on an
    accelerator, its ``device_kind`` (whose data sheet :mod:`xlanb.analysis.peaks` holds)."""
    environment = hooks.environment()
    platform = environment.get("jax_platform")
    try:
        if platform == "cpu":
            environment.update(peak.cpu_peak())
        elif platform:
            import jax

            environment["device_kind"] = kind = str(jax.devices()[0].device_kind)
            if part_of(kind) is None and not STATE.listening:  # never inside a capture
                environment.update(peak.jax_device_peak())
    except Exception:
        pass
    return environment
