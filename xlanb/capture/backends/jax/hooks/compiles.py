"""Compiles: JAX's duration events, its cache-miss explanations, and the compile wrapper.

Touch point 1: the ``jax.monitoring`` duration listener (trace, lower and compile times;
persistent-cache hits), registered once, recording only while a capture is active. Touch
points 2-4: the explain option, switched on per thread while capturing, and one logging
filter on the explain loggers (``jax._src.interpreters.partial_eval``; ``jax._src.pjit``
before 0.9) that takes the ``TRACING CACHE MISS`` records and drops the persistent-cache
messages JAX raises only because xlanb switched the option on. Touch point 5: the wrapper
of ``compile_or_get_cached`` that records each program's module, executable and host
callbacks.
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
import time
from typing import Any

from xlanb.capture.backends.jax.events import (
    CacheMiss,
    CompileRecord,
    Duration,
)
from xlanb.capture.backends.jax.hooks.checks import (
    EXPLAIN_LOGGERS,
    Check,
    _register,
    compile_entry,
    explain_option,
)
from xlanb.capture.backends.jax.hooks.counting import static_arguments
from xlanb.capture.backends.jax.hooks.names import function_name, module_name, python_stack
from xlanb.capture.backends.jax.state import STATE, Restore

#: Calls after a compile in the trace's window that its fewest runs wait for the compiled
#: function's next call (flax's ``nnx.jit`` makes two calls of its own around each step).
FEWEST_WAIT_CALLS = 16

TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
LOWER_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
#: Recorded (inside the compile, before its COMPILE_EVENT) when the program came from JAX's
#: persistent compilation cache: the "compile" that follows only read it from disk.
CACHE_HIT_EVENT = "/jax/compilation_cache/cache_retrieval_time_sec"
_EVENT_KINDS: dict[str, Any] = {
    TRACE_EVENT: "trace",
    LOWER_EVENT: "lower",
    COMPILE_EVENT: "compile",
    CACHE_HIT_EVENT: "cache_hit",
}
#: Loggers that raise persistent-cache messages to WARNING while the explain option is on.
_CACHE_LOGGERS = ("jax._src.compiler", "jax._src.compilation_cache")
_CACHE_MESSAGES = (
    "PERSISTENT COMPILATION CACHE MISS",
    "Not writing persistent cache entry",
    "Writing ",  # "Writing jit_f to persistent compilation cache with key ..."
)


@functools.cache
def duration_listener() -> Check:
    """Touch point 1, registered here once."""
    return _register(
        "jax.monitoring", "register_event_duration_secs_listener", on_duration, "no compiles"
    )


@functools.cache
def log_filters() -> Check:
    """Touch points 3 and 4: the filter goes on the explain logger and the cache loggers once
    (it does nothing unless a capture is active)."""
    for name in (*EXPLAIN_LOGGERS, *_CACHE_LOGGERS):
        logging.getLogger(name).addFilter(FILTER)
    return Check(True)


def _explain_on(restore: Restore, notes: list[str]) -> None:
    """The explain logger raised to WARNING (the option itself is per thread: see
    :func:`explain_enter`)."""
    check = explain_option()
    if check.note:
        notes.append(check.note)
        return
    for name in EXPLAIN_LOGGERS:
        logger = logging.getLogger(name)
        if not logger.isEnabledFor(logging.WARNING):
            restore.logger_levels[name] = logger.level
            logger.setLevel(logging.WARNING)


#: JAX's explain option is thread-local: per thread, how many captures switched it on, the
#: value to put back and whether the user had it on themselves.
_explain_local = threading.local()


def explain_enter() -> None:
    """Switch JAX's cache-miss explanations on for the calling thread (its first capture)."""
    check = explain_option()
    if check.note:
        return
    depth = getattr(_explain_local, "depth", 0)
    if depth == 0:
        option = check.found
        _explain_local.user = bool(option.value)
        _explain_local.token = option.swap_local(True)
    _explain_local.depth = depth + 1


def explain_exit() -> None:
    """Undo :func:`explain_enter` on the calling thread (its last capture puts the value
    back)."""
    depth = getattr(_explain_local, "depth", 0)
    if depth == 0:
        return
    _explain_local.depth = depth - 1
    if depth == 1:
        explain_option().found.set_local(_explain_local.token)


def user_explains() -> bool:
    """Whether the calling thread's explanations are the user's own (to pass on): on a thread
    where xlanb did not switch them on, or where the user had them on already."""
    if getattr(_explain_local, "depth", 0) == 0:
        return True
    return bool(getattr(_explain_local, "user", False))


def _compile_hook_on(restore: Restore, notes: list[str]) -> None:
    check = compile_entry()
    if check.note:
        notes.append(check.note)
        return
    if check.found.host_callbacks is None:
        notes.append(
            "jax: no host callbacks (jax._src.compiler.compile_or_get_cached takes no "
            "host_callbacks)."
        )
    try:
        compiler = check.found.compiler
        compile_fn = compiler.compile_or_get_cached
        if compile_fn is not compile_hook:
            STATE.compile_original = compile_fn
            compiler.compile_or_get_cached = compile_hook
            restore.compile_fn = compile_fn
    except Exception as error:
        notes.append(f"jax: no graphs or host callbacks ({error!r}).")


# -- listeners -------------------------------------------------------------------------------
def on_duration(event: str, duration: float, **kwargs: Any) -> None:
    """The ``jax.monitoring`` listener (touch point 1)."""
    if not STATE.listening:
        return
    kind = _EVENT_KINDS.get(event)
    if kind is not None:
        ended = time.time()
        if kind == "compile" and STATE.compile_wait:  # the wrapper's wait is not the compile's
            waited, STATE.compile_wait = STATE.compile_wait, 0.0
            duration, ended = max(duration - waited, 0.0), ended - waited
        STATE.append_event(Duration(kind, str(kwargs.get("fun_name", "")), float(duration), ended))


class _ExplainFilter(logging.Filter):
    """Takes JAX's cache-miss explanations while a capture is active; passes every record on
    unchanged otherwise, and drops only the records xlanb itself caused to be logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        restore = STATE.restore
        if not STATE.listening or restore is None:
            return True
        try:
            message = record.getMessage()
        except Exception:
            return True
        if record.name in EXPLAIN_LOGGERS:
            if not message.startswith("TRACING CACHE MISS"):
                return True
            STATE.append_event(CacheMiss(message, time.time()))
            return user_explains()
        # Raised to WARNING only because xlanb switched the explain option on.
        return not (
            message.startswith(_CACHE_MESSAGES)
            and not user_explains()
            and record.levelno >= logging.WARNING
        )


FILTER = _ExplainFilter()


def _before_compile(computation: Any) -> tuple[tuple, bool, str | None] | None:
    """(the compile's Python frames, whether it is an eager op's, the StableHLO text that
    ``STATE.before_compile`` made of a kept program's module), taken in
    :func:`compile_hook` before XLA compiles; None where that failed."""
    try:
        frames, eager = python_stack(sys._getframe(2))
        current = STATE.current
        if current is not None:
            eager = eager or function_name(current)[1]
        stablehlo = None
        if not eager and STATE.keeps_graphs() and STATE.before_compile is not None:
            stablehlo = STATE.before_compile(computation)
        return tuple(frames), eager, stablehlo
    except Exception:
        return None


def compile_hook(backend, computation, *args, **kwargs):
    """``jax._src.compiler.compile_or_get_cached`` while capturing (touch point 5)."""
    if STATE.traced_functions is not None and STATE.listening:
        STATE.trace_late(None)  # a new program: the trace (or the cell's last one) never saw it
    before = _before_compile(computation) if STATE.listening else None
    try:
        executable = STATE.compile_original(backend, computation, *args, **kwargs)
    finally:
        after, STATE.after_compile = STATE.after_compile, None
    if after is not None:
        waited = time.perf_counter()
        try:
            after()
        except Exception:  # never let the profiler break a compile
            pass
        STATE.compile_wait = time.perf_counter() - waited
    if STATE.listening:
        try:
            frames, eager, stablehlo = before or _before_compile(computation) or ((), False, None)
            position = compile_entry().found.host_callbacks
            if position is not None and len(args) > position:
                host_callbacks = args[position]
            else:
                host_callbacks = kwargs.get("host_callbacks", ())
            current = STATE.current
            keep_module = STATE.keeps_graphs()
            STATE.append_event(
                CompileRecord(
                    module_name(computation),
                    computation if keep_module else None,
                    executable,
                    len(host_callbacks or ()),
                    tuple(frames),
                    eager,
                    current is not None and getattr(current, "_fun", None) is None,
                    static_arguments(current, sys._getframe(1)),
                )
            )
            if STATE.first_probe is None and STATE.first_probe_at > 0:
                # the next run of the function that compiled is among the window's fewest: a
                # program's first run is not like its next ones
                STATE.first_probe_at = max(STATE.first_probe_at, STATE.sample_count + 2)
                if current is not None and not eager:
                    STATE.first_probe_function = current
                    STATE.first_probe_last = STATE.sample_count + 2 + FEWEST_WAIT_CALLS
            if keep_module and not eager and STATE.on_compile is not None:
                STATE.on_compile(executable, computation, stablehlo)
        except Exception:  # never let the profiler break a compile
            pass
    return executable
