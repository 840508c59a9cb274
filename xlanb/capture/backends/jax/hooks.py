"""Every place where the JAX backend reaches into JAX beyond its public API, in one module.

Each touch point is checked once, at first use, by a capability check (an import that must
succeed, ``hasattr``, a signature or layout check), cached with :func:`functools.cache`. A
touch point this JAX lacks turns its feature off: :func:`switch_on` hands back a one-line note
per missing one (shown once per session, with the first capture), and nothing raises into the
user's cell. Above the checks sits the version gate (:mod:`xlanb.capture.versions`): a JAX
older than the supported range gets none of these touch points, only the public API
(compiles from ``jax.monitoring``, live arrays); a JAX newer than the tested range gets them
all, each checked as here. Names were checked in ``jax/_src`` of JAX 0.12.0.1, 0.10.2 and
0.6.1.

Touch points (what it is used for; how it is checked):

1. ``jax.monitoring.register_event_duration_secs_listener`` and the duration events
   ``/jax/core/compile/jaxpr_trace_duration``, ``.../jaxpr_to_mlir_module_duration``,
   ``.../backend_compile_duration`` (keyword ``fun_name``): the ``compiles`` rows and their
   trace/lower/compile times; ``/jax/compilation_cache/cache_retrieval_time_sec``: the compile
   that follows was a persistent-cache hit. Checked: ``hasattr``; registered once (JAX cannot
   unregister listeners on every version), recording only while a capture is active.
   Missing: no compiles.
2. ``jax._src.config.explain_cache_misses`` (``.value``, ``.swap_local``, ``.set_local``):
   switched on, for the profiling thread, while a capture is active, for the compiles'
   ``cause``. Checked: import and ``hasattr`` of the three. Missing: no compile causes.
3. The ``jax._src.interpreters.partial_eval`` logger (``jax._src.pjit`` before JAX 0.9): its
   ``TRACING CACHE MISS`` records are the explanations, taken by a logging filter added once
   to both (records xlanb caused are not passed on) while they are raised to WARNING.
   Checked: one of the modules exists (``importlib.util.find_spec``), together with 2.
   Missing: no compile causes.
4. The ``jax._src.compiler`` and ``jax._src.compilation_cache`` loggers: the same filter
   drops the persistent-cache messages that JAX raises to WARNING only because xlanb switched
   the explanations on. Not checked: a filter on a logger no module uses does nothing.
5. ``jax._src.compiler.compile_or_get_cached``: wrapped while a capture is active, for the
   ``graphs`` rows (StableHLO module, loaded executable) and the host callbacks of each
   program; the position of its ``host_callbacks`` argument is read from its signature.
   Checked: import and ``callable``; ``inspect.signature``. Missing: no graphs or host
   callbacks (no host callbacks when only the argument is missing).
6. ``jax._src.lib.mlir.ir.StringAttr``: the StableHLO module's ``sym_name``, kept in the
   compile records. Checked: import. Missing: the name is "" (it is not shown anywhere).
7. ``jax._src.lib._jax.PjitFunction`` (in ``_jax`` from JAX 0.6 to 0.12; its ``__call__``
   slot and the ``tp_flags`` vectorcall bit, changed through ctypes by :mod:`.dispatch`),
   ``jax._src.array.ArrayImpl`` and ``jax.tree_util.tree_leaves``: the dispatch counter
   that makes the ``executions`` rows and finds host-to-device transfers. Checked: imports,
   ``__call__`` in the type's dict, and the type's layout (:func:`.dispatch.vectorcall_flag`).
   Missing: executions and transfers are not counted.
8. Attributes of a ``PjitFunction`` (``_fun``, ``_fun._apply_primitive``, the ``name`` in
   the closure of ``_cache_miss``, ``_jit_info.static_argnums`` / ``static_argnames``) and
   the ``apply_primitive`` frame of ``jax/_src/dispatch.py``: program names, the ``eager``
   flag, static arguments (their values at a compile: JAX 0.12 no longer says which one
   changed) and programs derived inside a jitted function JAX made (no ``_fun``: the
   backward pass of ``jax.grad``, which JAX 0.12 explains as a function never seen).
   Checked: per object, ``getattr`` with a default. Missing: a less exact name
   (``<unnamed function>``, ``<jax internal>``), ``eager`` flag or cause; never an error.
9. ``jax._src.source_info_util.register_exclusion`` and
   ``jax._src.traceback_util.register_exclusion``: keep xlanb's frames out of the source
   locations JAX records and out of JAX's filtered tracebacks. Checked: ``hasattr``;
   registered once. Missing: locations or tracebacks may show xlanb's frames.
10. ``jax._src.profiler`` (``start_trace``, ``_profile_state.profile_session``; from JAX
    0.12 ``_profile_state.session`` and ``ProfileSession.start``, through which every trace
    starts) and ``jax._src.lib._profiler.ProfilerSession``: the device trace runs as JAX's
    own session (no file, no Python tracer), and a ``jax.profiler`` trace the user starts in
    the cell takes over. Checked: imports and ``hasattr``. Missing: the public
    ``jax.profiler.start_trace`` (a user's own trace in the cell then fails; JAX 0.12's
    ``stop_trace`` hands back a ``ProfileData``, and the file it writes is read).
11. ``jax._src.xla_bridge.backends_are_initialized`` and ``jax._src.lib.version_str``: the
    jaxlib version and platform of the profile's environment. Checked: imports and
    ``hasattr``. Missing: the environment names JAX's version only.
12. Methods of the loaded executable (``hlo_modules()`` or ``get_hlo_text()``,
    ``cost_analysis()``, ``get_compiled_memory_stats()``): the optimized HLO text and the
    graphs' costs. Checked: per object, ``try``. Missing: no HLO text, NaN costs.
13. ``jax._src.array.ArrayImpl._value`` (a property, and its ``_npy_value`` cache) and
    ``ArrayImpl.item``: replaced, while a capture is active, by ones that note each read of a
    value not yet on the host (``float(x)``, ``int(x)``, ``bool(x)``, ``x.item()``,
    ``x.tolist()``, printing) with the reader's stack: the ``syncs`` of JAX.
    ``np.asarray(x)`` reads through the buffer protocol, in C++: not seen. Checked: the class
    has ``_value`` as a property. Missing: reads are not counted.
14. The ``warnings`` global of ``jax._src.interpreters.mlir`` and the locals
    ``module_name``, ``donated_args`` and ``sharded_in_avals`` of ``lower_jaxpr_to_module``,
    which warns "Some donated buffers were not usable" when a donated argument has no output
    to alias: while a capture is active the global is a proxy whose ``warn`` notes the
    program and the arguments, then calls ``warnings.warn`` one stack level up, so the user's
    warning comes once, from JAX's own line, under the user's filters. Checked: the global
    is the ``warnings`` module. Missing: no finding for unused donations.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import logging
import math
import operator
import os
import sys
import threading
import time
import types
import warnings
import weakref
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from xlanb.capture import versions
from xlanb.capture.backends.jax.dispatch import hook_call, unhook_call, vectorcall_flag
from xlanb.capture.backends.jax.events import (
    CacheMiss,
    CompileRecord,
    Duration,
    Frame,
    UnusedDonation,
)
from xlanb.capture.backends.jax.state import SAMPLE_LIMIT, STATE, CallStats, Restore
from xlanb.formats.buffer_assignment import Temporary, hlo_module_id, temporaries_from_proto
from xlanb.formats.python_frames import frame_location

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

#: The loggers of JAX's cache-miss explanations: ``jax._src.pjit`` before JAX 0.9,
#: ``jax._src.interpreters.partial_eval`` from 0.9. Both are read and filtered, whichever this
#: JAX uses; :data:`EXPLAIN_LOGGER` is the one the installed release uses.
EXPLAIN_LOGGERS = ("jax._src.interpreters.partial_eval", "jax._src.pjit")
_JAX_VERSION = versions.gate("jax").version
EXPLAIN_LOGGER = EXPLAIN_LOGGERS[
    1 if _JAX_VERSION is not None and versions.parse_version(_JAX_VERSION) < (0, 9) else 0
]
#: Loggers that raise persistent-cache messages to WARNING while the explain option is on.
_CACHE_LOGGERS = ("jax._src.compiler", "jax._src.compilation_cache")
_CACHE_MESSAGES = (
    "PERSISTENT COMPILATION CACHE MISS",
    "Not writing persistent cache entry",
    "Writing ",  # "Writing jit_f to persistent compilation cache with key ..."
)

_HOST_SCALARS = (float, int, bool, complex)

#: xlanb's capture code (``xlanb/capture/``), kept out of the source locations JAX records.
_CAPTURE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(__file__))) + os.sep
#: xlanb itself, whose frames hold no user arrays.
_XLANB_DIR = os.path.dirname(_CAPTURE_DIR.rstrip(os.sep)) + os.sep
#: This package (the dispatch counter, the compile wrapper), kept out of JAX's tracebacks.
_PACKAGE_DIR = os.path.dirname(__file__) + os.sep


# -- capability checks -----------------------------------------------------------------------
@dataclass(frozen=True)
class Check:
    """The outcome of one capability check: what was found, or the note saying which feature
    is off and why."""

    found: Any = None
    note: str | None = None


class CompileEntry(NamedTuple):
    """What the compile wrapper needs from JAX (touch point 5)."""

    #: The ``jax._src.compiler`` module.
    compiler: Any
    #: Position of ``host_callbacks`` after ``backend`` and ``computation``; None: not taken.
    host_callbacks: int | None


class DispatchTarget(NamedTuple):
    """What the dispatch counter needs from JAX (touch point 7)."""

    function_type: type
    array_type: type
    host_types: frozenset[type]
    tree_leaves: Callable[[Any], list[Any]]


def _attribute(module: str, path: str) -> tuple[Any, str | None]:
    """``module.path`` (``path`` dotted), found as ``from module import name`` finds it; or None
    and why not."""
    try:
        found: Any = importlib.import_module(module)
    except Exception as error:  # ImportError, or a module failing on import
        return None, f"{module} not importable: {type(error).__name__}"
    where = module
    for name in path.split("."):
        if not hasattr(found, name) and isinstance(found, types.ModuleType):
            try:  # a submodule not imported yet
                importlib.import_module(f"{where}.{name}")
            except Exception:
                pass
        if not hasattr(found, name):
            return None, f"{where}.{name} not found"
        found, where = getattr(found, name), f"{where}.{name}"
    return found, None


def _outside_range() -> Check | None:
    """The gate's note as a failed check when this JAX is outside the supported range (every
    private touch point is then off); None inside it."""
    gate = versions.gate("jax")
    return None if gate.supported else Check(note=gate.note)


def _module_exists(name: str) -> bool:
    try:
        return name in sys.modules or importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


@functools.cache
def duration_listener() -> Check:
    """Touch point 1, registered here once."""
    return _register(
        "jax.monitoring", "register_event_duration_secs_listener", on_duration, "no compiles"
    )


@functools.cache
def source_exclusion() -> Check:
    """Touch point 9 (source locations), registered here once."""
    return _outside_range() or _register(
        "jax._src.source_info_util",
        "register_exclusion",
        _CAPTURE_DIR,
        "locations may name xlanb's own frames",
    )


@functools.cache
def traceback_exclusion() -> Check:
    """Touch point 9 (tracebacks), registered here once."""
    return _outside_range() or _register(
        "jax._src.traceback_util",
        "register_exclusion",
        _PACKAGE_DIR,
        "JAX's tracebacks may show xlanb's frames",
    )


def _register(module: str, function: str, argument: Any, loss: str) -> Check:
    """Call JAX's `module.function(argument)` (a registration made once); a note naming what
    is lost (`loss`) when it is missing or fails."""
    register, why = _attribute(module, function)
    if why is None:
        try:
            register(argument)
        except Exception as error:
            why = repr(error)
    return Check(True) if why is None else Check(note=f"jax: {loss} ({why}).")


@functools.cache
def log_filters() -> Check:
    """Touch points 3 and 4: the filter goes on the explain logger and the cache loggers once
    (it does nothing unless a capture is active)."""
    for name in (*EXPLAIN_LOGGERS, *_CACHE_LOGGERS):
        logging.getLogger(name).addFilter(FILTER)
    return Check(True)


@functools.cache
def explain_option() -> Check:
    """Touch points 2 and 3."""
    if outside := _outside_range():
        return outside
    option, why = _attribute("jax._src.config", "explain_cache_misses")
    if why is None:
        lacking = [
            name for name in ("value", "swap_local", "set_local") if not hasattr(option, name)
        ]
        if lacking:
            why = f"jax._src.config.explain_cache_misses has no {', '.join(lacking)}"
        elif not any(map(_module_exists, EXPLAIN_LOGGERS)):
            why = f"{' and '.join(EXPLAIN_LOGGERS)} not found"
    return Check(option) if why is None else Check(note=f"jax: no compile causes ({why}).")


@functools.cache
def compile_entry() -> Check:
    """Touch point 5: the ``jax._src.compiler`` module whose entry is wrapped, and where
    ``host_callbacks`` comes among the entry's arguments after ``backend`` and ``computation``
    (``compile_or_get_cached(backend, computation, devices, compile_options, host_callbacks,
    executable_devices, pgle_profiler)``). First called before the entry is wrapped."""
    if outside := _outside_range():
        return outside
    entry, why = _attribute("jax._src.compiler", "compile_or_get_cached")
    if why is None and not callable(entry):
        why = "jax._src.compiler.compile_or_get_cached not callable"
    if why is not None:
        return Check(note=f"jax: no graphs or host callbacks ({why}).")
    try:
        names = list(inspect.signature(entry).parameters)
    except (TypeError, ValueError):
        names = []
    position = names.index("host_callbacks") - 2 if "host_callbacks" in names[2:] else None
    return Check(CompileEntry(sys.modules["jax._src.compiler"], position))


@functools.cache
def _string_attr() -> Any:
    """Touch point 6 (no note: the module name is not shown)."""
    return _attribute("jax._src.lib.mlir", "ir.StringAttr")[0]


@functools.cache
def dispatch_target() -> Check:
    """Touch point 7."""
    if outside := _outside_range():
        return outside
    function_type, why = _attribute("jax._src.lib", "_jax.PjitFunction")
    if why is None:
        array_type, why = _attribute("jax._src.array", "ArrayImpl")
    if why is None:
        tree_leaves, why = _attribute("jax.tree_util", "tree_leaves")
    if why is None and "__call__" not in getattr(function_type, "__dict__", {}):
        why = "PjitFunction has no __call__ slot"
    if why is None:
        try:
            import numpy as np

            vectorcall_flag(function_type)  # the type's layout is the expected one
            host_types = frozenset({np.ndarray, *_HOST_SCALARS, *np.sctypeDict.values()})
        except Exception as error:
            why = repr(error)
    if why is not None:
        return Check(note=f"jax: executions and host transfers are not counted ({why}).")
    return Check(DispatchTarget(function_type, array_type, host_types, tree_leaves))


@functools.cache
def profiler_session() -> Check:
    """Touch point 10: ``(jax._src.profiler, ProfilerSession)``."""
    if outside := _outside_range():
        return outside
    session_type, why = _attribute("jax._src.lib", "_profiler.ProfilerSession")
    if why is None:
        _start, why = _attribute("jax._src.profiler", "start_trace")
    if why is not None:
        return Check(note=f"jax: a jax.profiler trace started inside a capture will fail ({why}).")
    return Check((sys.modules["jax._src.profiler"], session_type))


@functools.cache
def environment_readers() -> Check:
    """Touch point 11: ``(backends_are_initialized, version_str)``."""
    if outside := _outside_range():
        return outside
    initialized, why = _attribute("jax._src.xla_bridge", "backends_are_initialized")
    if why is None:
        version, why = _attribute("jax._src.lib", "version_str")
    if why is not None:
        return Check(note=f"jax: no jaxlib version or platform in the environment ({why}).")
    return Check((initialized, version))


# -- switching on and off --------------------------------------------------------------------
def switch_on() -> list[str]:
    """Switch the hooks on for the first active capture; returns a note per feature this JAX
    does not offer (then left out, rather than failing the user's cell), each said once per
    session."""
    checks = (
        source_exclusion(),
        traceback_exclusion(),
        duration_listener(),
        log_filters(),
        environment_readers(),
    )
    # the gate's own line first: a release newer than tested, or below the range
    notes = [versions.gate("jax").note] + [check.note for check in checks if check.note]
    restore = Restore()
    _explain_on(restore, notes)
    _compile_hook_on(restore, notes)
    _dispatch_on(restore, notes)
    _reads_on(restore, notes)
    _donation_on(restore, notes)
    STATE.restore = restore
    STATE.listening = True
    return versions.tell_once(notes)


def switch_off() -> None:
    """Put back everything :func:`switch_on` changed (when the last capture ends)."""
    STATE.listening = False
    restore, STATE.restore = STATE.restore, None
    if restore is None:
        return
    _dispatch_off(restore)
    _reads_off(restore)
    _donation_off(restore)
    if restore.compile_fn is not None:
        compiler = compile_entry().found.compiler
        if compiler.compile_or_get_cached is compile_hook:
            compiler.compile_or_get_cached = restore.compile_fn
    for name, level in restore.logger_levels.items():
        logging.getLogger(name).setLevel(level)


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


def _dispatch_on(restore: Restore, notes: list[str]) -> None:
    """Replace ``PjitFunction.__call__`` for the capture (see the package docstring)."""
    check = dispatch_target()
    if check.note:
        notes.append(check.note)
        return
    target: DispatchTarget = check.found
    try:
        address, had_vectorcall = vectorcall_flag(target.function_type)
        original = target.function_type.__dict__["__call__"]
        STATE.call_original = original
        hook_call(target.function_type, _dispatch_counter(original, target), address)
    except Exception as error:
        notes.append(f"jax: executions and host transfers are not counted ({error!r}).")
        return
    restore.flags_address, restore.flags = address, had_vectorcall


def _dispatch_off(restore: Restore) -> None:
    if restore.flags_address is None:
        return
    function_type = dispatch_target().found.function_type
    unhook_call(function_type, STATE.call_original, restore.flags_address, restore.flags)


#: What the caller of ``ArrayImpl._value`` (its function's name) read the value for.
_READ_KINDS = {
    "__float__": "float(x)",
    "__int__": "int(x)",
    "__bool__": "bool(x)",
    "__index__": "an index",
    "__complex__": "complex(x)",
    "item": "x.item()",
    "tolist": "x.tolist()",
    "__array__": "np.asarray(x)",
    "__repr__": "printing",
    "__str__": "printing",
    "__format__": "printing",
}


def _reads_on(restore: Restore, notes: list[str]) -> None:
    """Replace ``ArrayImpl._value`` and ``ArrayImpl.item`` for the capture (touch point 13)."""
    check = dispatch_target()
    if check.note:
        notes.append(check.note)
        return
    array_type = check.found.array_type
    original = getattr(array_type, "__dict__", {}).get("_value")
    if not isinstance(original, property) or original.fget is None:
        notes.append("jax: values read back to the host are not counted (no ArrayImpl._value).")
        return
    getter = original.fget
    original_item = array_type.__dict__.get("item")

    def _value(self):
        if STATE.listening and getattr(self, "_npy_value", None) is None:
            _note_read(sys._getframe(1), None)
        return getter(self)

    def item(self, *args):
        if STATE.listening:
            _note_read(sys._getframe(1), "x.item()")
        return original_item(self, *args)

    array_type._value = property(_value, doc=original.__doc__)
    restore.value_property = original
    if callable(original_item):  # it reads through the buffer protocol, not _value
        array_type.item = functools.wraps(original_item)(item)
        restore.item_method = original_item


#: JAX's host-callback machinery: reads inside it are the callback's, not the user's syncs.
_CALLBACK_FILES = (
    os.path.join("jax", "_src", "callback.py"),
    os.path.join("jax", "_src", "debugging.py"),
)


def _note_read(caller, how: str | None) -> None:
    """Count a read by `caller` (``how``: else told by the caller's name). The place is the
    code and instruction of the first few frames: counting a read costs a few microseconds,
    and only the first read from a place walks the whole stack."""
    try:
        how = how or _READ_KINDS.get(caller.f_code.co_name, "a read")
        key: list[Any] = [how]
        frame = caller
        for _ in range(_READ_KEY_FRAMES):
            if frame is None:
                break
            # a code object hashes its contents; f_lineno decodes the line table each read
            key += (id(frame.f_code), frame.f_lasti)
            frame = frame.f_back
        STATE.count_read(tuple(key), how, lambda: _reader_stack(caller))
    except Exception:
        pass  # a read is counted or not; the user's read always happens


#: Frames that tell one reading place from another (the user's line is within them for
#: float(x) and x.item(), a few more for printing).
_READ_KEY_FRAMES = 8


def _reader_stack(caller) -> tuple[Frame, ...]:
    """The reader's stack without JAX's and NumPy's own frames (wherever they are installed:
    a ``pip install --target`` directory is not ``site-packages``)."""
    frames, _eager = python_stack(caller)
    if any(frame[1].endswith(_CALLBACK_FILES) for frame in frames):
        return ()  # a host callback's own work on its operands (jax.debug.print)
    inside = _runtime_dirs()
    return tuple(frame for frame in frames if not frame[1].startswith(inside))


@functools.cache
def _runtime_dirs() -> tuple[str, ...]:
    """The package directories of JAX, jaxlib and NumPy (reading and printing run there)."""
    dirs = []
    for name in ("jax", "jaxlib", "numpy"):
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path:
            dirs.append(os.path.dirname(os.path.abspath(path)) + os.sep)
    return tuple(dirs)


def _reads_off(restore: Restore) -> None:
    array_type = dispatch_target().found.array_type if restore.value_property else None
    if array_type is not None:
        array_type._value = restore.value_property
        if restore.item_method is not None:
            array_type.item = restore.item_method


# -- listeners -------------------------------------------------------------------------------
def on_duration(event: str, duration: float, **kwargs: Any) -> None:
    """The ``jax.monitoring`` listener (touch point 1)."""
    if not STATE.listening:
        return
    kind = _EVENT_KINDS.get(event)
    if kind is not None:
        STATE.append_event(
            Duration(kind, str(kwargs.get("fun_name", "")), float(duration), time.time())
        )


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


def compile_hook(backend, computation, *args, **kwargs):
    """``jax._src.compiler.compile_or_get_cached`` while capturing (touch point 5)."""
    executable = STATE.compile_original(backend, computation, *args, **kwargs)
    if STATE.listening:
        try:
            position = compile_entry().found.host_callbacks
            if position is not None and len(args) > position:
                host_callbacks = args[position]
            else:
                host_callbacks = kwargs.get("host_callbacks", ())
            frames, eager = python_stack(sys._getframe(1))
            current = STATE.current
            if current is not None:
                eager = eager or function_name(current)[1]
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
        except Exception:  # never let the profiler break a compile
            pass
    return executable


def _dispatch_counter(original: Any, target: DispatchTarget) -> Callable[..., Any]:
    """The ``PjitFunction.__call__`` put in place while capturing (touch point 7). What it
    uses on every call is bound here, once, as closure variables."""
    state = STATE
    lock, calls = state.lock, state.calls
    starts, durations, functions = state.sample_starts, state.sample_seconds, state.sample_functions
    array_type, host_types, tree_leaves = target.array_type, target.host_types, target.tree_leaves
    # the types that need no closer look: device arrays, and the jitted function itself (the
    # first argument; one passed as an argument is no host value either)
    device_only = frozenset({array_type, target.function_type})
    perf, wall, limit = time.perf_counter, time.time, SAMPLE_LIMIT
    get_frame = sys._getframe

    # The jitted function comes as args[0], not as a parameter of its own: `args` is then
    # passed on as it came (`original(self, *args)` built a list, a tuple and a dict a call).
    def count_call(*args, **kwargs):
        """``PjitFunction.__call__`` while capturing: count and time top-level calls."""
        __tracebackhide__ = True  # IPython leaves this frame out of the user's traceback
        if state.current is not None:  # a call inside another one (e.g. while tracing)
            return original(*args, **kwargs) if kwargs else original(*args)
        if state.stop_here is not None:
            stop_here, state.stop_here = state.stop_here, None
            stop_here()
        self = state.current = args[0]
        started = perf()
        try:
            result = original(*args, **kwargs) if kwargs else original(*args)
        finally:
            state.current = None
        elapsed = perf() - started
        # No lock on this path (see the state module). Under the samples' cap a call is its
        # sample alone (its function's count and seconds are summed from the samples when
        # read); past it, the running totals of its function, updated in place.
        count = state.sample_count
        if count < limit:
            starts[count] = started
            durations[count] = elapsed
            functions[count] = self
            count += 1
            state.sample_count = count
            if count == state.first_probe_at:  # the window's fewest runs
                state.first_probe = weak_output(result)
            if count == state.probe_at:  # the last run in the trace's window
                state.probe = result
            state.last_result = result
            try:
                entry = calls[self]
            except KeyError:
                entry = first_call(self, 0.0, 0)
        else:
            state.last_result = result
            try:
                entry = calls[self]
            except KeyError:
                entry = first_call(self, elapsed, 1)
            else:
                entry.count += 1
                entry.seconds += elapsed
        # Host values among the arguments (not for eager code: `x + 1`'s 1 is not reported):
        # device arrays alone need no closer look (one argument: its type alone, no loop).
        if entry.eager or (
            not kwargs
            and (
                type(args[1]) is array_type
                if len(args) == 2
                else device_only.issuperset(map(type, args))
            )
        ):
            return result
        note_host_arguments(self, entry.static, args, kwargs)
        return result

    def first_call(function, seconds: float, count: int) -> CallStats:
        """A function's first call: its entry, made under the lock (`count` and `seconds`:
        the call's own when it has no sample)."""
        eager = function_name(function)[1]
        frames = () if eager else _stack(get_frame(2))
        first = CallStats(
            function, count, seconds, wall(), static_positions(function), eager, frames
        )
        with lock:
            entry = calls.setdefault(function, first)
            if entry is not first:  # made meanwhile on another thread
                entry.count += count
                entry.seconds += seconds
        return entry

    transfers = state.transfers
    containers = frozenset({dict, list, tuple})

    def note_host_arguments(function, static, args, kwargs) -> None:
        """Count a call with host values among its arguments and their direct children (a
        batch dict or tuple of NumPy arrays), if it has any: once per place and shape of call
        (the function, the types of its arguments and of their children), a walk of the
        pytree counts them exactly; every later call adds one to that entry. The place is the
        code and instruction of the caller's first three frames: cheap to read on every call,
        enough to tell the cell lines calling a helper apart (an entry's first call walks the
        whole stack for the lines)."""
        numbers, names = static or ((), ())
        traced = (  # args[0] is the function
            [arg for position, arg in enumerate(args[1:]) if position not in numbers]
            if numbers
            else args[1:]
        )
        for arg in traced:
            kind = type(arg)
            if kind is not array_type and (kind in host_types or holds_host(arg)):
                break
        else:
            for name, arg in kwargs.items():
                kind = type(arg)
                if kind is array_type or name in names:
                    continue
                if kind in host_types or holds_host(arg):
                    break
            else:
                return
        kinds = tuple(map(type, args))
        if not containers.isdisjoint(kinds):
            kinds = tuple(map(_arg_types, args))
        if kwargs:
            kinds += tuple((name, _arg_types(arg)) for name, arg in kwargs.items())
        caller = get_frame(2)
        second = caller.f_back
        third = second.f_back if second is not None else None
        key = (
            function,
            kinds,
            id(caller.f_code),
            caller.f_lasti,
            id(second.f_code) if second is not None else 0,
            second.f_lasti if second is not None else 0,
            id(third.f_code) if third is not None else 0,
            third.f_lasti if third is not None else 0,
        )
        entry = transfers.get(key)
        if entry is not None:  # no lock: as the call counts above
            entry[2] += 1
            return
        dynamic = {name: arg for name, arg in kwargs.items() if name not in names}
        leaves = tree_leaves((tuple(traced), dynamic))  # in the order jit flattens them
        state.current = function  # JAX's calls while reading the lowering are not counted
        try:
            leaves = _transferred_leaves(function, args[1:], kwargs, leaves)
        finally:
            state.current = None
        found = Counter(kind for kind in map(type, leaves) if kind in host_types)
        state.add_transfer_place(key, function, found, lambda: _stack(caller))

    def holds_host(arg) -> bool:
        """Whether `arg` holds a host value: a dict's, list's or tuple's children, and theirs
        (a batch of dicts of NumPy arrays)."""
        kind = type(arg)
        if kind is dict:
            children = arg.values()
        elif isinstance(arg, list | tuple):
            children = arg
        else:
            return False
        for child in children:
            kind = type(child)
            if kind in host_types or (kind not in device_only and holds_host(child)):
                return True
        return False

    return count_call


#: The code of the dispatch counter's ``count_call`` (found on the stack at a compile).
_COUNT_CALL_CODE = _dispatch_counter(None, DispatchTarget(type, type, frozenset(), list)).__code__


def _transferred_leaves(function, args: tuple, kwargs: dict, leaves: list) -> list:
    """The argument `leaves` JAX copies to the device on a call of `function`: those its
    program keeps (jit drops the arguments the function does not use), read from the lowering
    of the call just made (JAX's caches hold it); all of them when that cannot be read."""
    try:
        lowering = function.trace(*args, **kwargs).lower()._lowering
        kept = lowering.compile_args["kept_var_idx"]
        hoisted = len(getattr(lowering, "const_args", None) or ())  # constants come first
    except Exception:
        return leaves
    return [leaf for index, leaf in enumerate(leaves) if index + hoisted in kept]


def _arg_types(arg) -> Any:
    """An argument's type, with its children's for a dict, list or tuple (a batch), and
    theirs (nested dicts)."""
    kind = type(arg)
    if kind is dict:
        return kind, tuple(map(_arg_types, arg.values()))
    if kind is list or kind is tuple:
        return kind, tuple(map(_arg_types, arg))
    return kind


def _stack(frame) -> tuple[Frame, ...]:
    return tuple(python_stack(frame)[0])


# -- readers of JAX objects ------------------------------------------------------------------
def python_stack(frame) -> tuple[list[Frame], bool]:
    """The stack from `frame` outwards, and whether JAX's ``apply_primitive`` is on it (an
    eager single-primitive program; touch point 8)."""
    frames, eager = [], False
    while frame is not None:
        code = frame.f_code
        if code.co_name == "apply_primitive" and code.co_filename.endswith("dispatch.py"):
            eager = True
        frames.append((code.co_name, code.co_filename, frame.f_lineno))
        frame = frame.f_back
    return frames, eager


def module_name(computation) -> str:
    """The StableHLO module's ``sym_name`` (touch point 6)."""
    string_attr = _string_attr()
    if string_attr is None:
        return ""
    try:
        return string_attr(computation.operation.attributes["sym_name"]).value
    except Exception:
        return ""


#: Characters of a static argument's repr kept in a compile record.
STATIC_REPR_CHARS = 80


def static_arguments(function, frame) -> tuple[tuple[str, str, str], ...]:
    """The static arguments of the running top-level call of `function` (read from the
    dispatch counter's frame on the stack above `frame`): where each is, its repr, and its
    class's name when it hashes by identity (else ""). JAX 0.12's explanations no longer say
    which static argument changed. Nothing is kept of the objects themselves."""
    static = static_positions(function) if function is not None else None
    if static is None:
        return ()
    while frame is not None and frame.f_code is not _COUNT_CALL_CODE:
        frame = frame.f_back
    if frame is None:
        return ()
    args, kwargs = frame.f_locals.get("args", ()), frame.f_locals.get("kwargs", {})
    numbers, names = static
    found = [(f"args[{n}]", args[n + 1]) for n in sorted(numbers) if 0 <= n < len(args) - 1]
    found += [(f"keyword {name}", kwargs[name]) for name in sorted(names) if name in kwargs]
    return tuple(
        (where, _short_repr(value), type(value).__name__ if _identity_hashed(value) else "")
        for where, value in found
    )


def _identity_hashed(value: Any) -> bool:
    """Whether `value` hashes by identity (a class without ``__hash__``/``__eq__`` of its own):
    each new object is a new static value."""
    kind = type(value)
    return kind.__hash__ is object.__hash__ and kind.__eq__ is object.__eq__


def _short_repr(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= STATIC_REPR_CHARS else text[: STATIC_REPR_CHARS - 1] + "…"


def static_positions(function) -> tuple[frozenset[int], frozenset[str]] | None:
    """The static argument positions and names of a jitted function, None when it has none
    (touch point 8)."""
    info = getattr(function, "_jit_info", None)
    if info is None or not (info.static_argnums or info.static_argnames):
        return None
    return frozenset(info.static_argnums or ()), frozenset(info.static_argnames or ())


def function_name(function) -> tuple[str, bool]:
    """``jit(name)`` as JAX names the program, and whether the function is one JAX runs for
    eager code: a single primitive (``x.sum()`` outside ``jit``) or a jitted ``jax.numpy``
    function called outside ``jit`` (``x + 1``). Touch point 8."""
    inner = getattr(function, "_fun", None)
    if inner is None:  # made by JAX itself, e.g. the backward pass of jax.grad(jitted)
        return f"jit({_internal_name(function)})", False
    eager = bool(getattr(inner, "_apply_primitive", False))
    target = inner
    while isinstance(target, functools.partial):
        target = target.func
    name = getattr(inner, "__name__", None) or getattr(target, "__name__", None)
    if name is None:
        name = getattr(function, "__name__", None) or "<unnamed function>"
    code = getattr(inspect.unwrap(target), "__code__", None) if callable(target) else None
    if code is not None and code.co_filename.startswith(_jax_dir()):
        eager = True
    return f"jit({name})", eager


def _internal_name(function) -> str:
    """The name JAX gave a jitted function it made itself (kept in its cache-miss closure)."""
    miss = getattr(function, "_cache_miss", None)
    code = getattr(miss, "__code__", None)
    if miss is not None and code is not None and "name" in code.co_freevars and miss.__closure__:
        try:
            return str(miss.__closure__[code.co_freevars.index("name")].cell_contents)
        except (ValueError, IndexError):
            pass
    return "<jax internal>"


@functools.cache
def _jax_dir() -> str:
    import jax

    return os.path.dirname(os.path.abspath(jax.__file__)) + os.sep


def hlo_text(executable) -> str | None:
    """The optimized HLO text of a loaded executable (touch point 12)."""
    try:
        return "\n\n".join(module.to_string() for module in executable.hlo_modules())
    except Exception:
        try:
            return "\n\n".join(executable.get_hlo_text())
        except Exception:
            return None


class LiveSnapshot(NamedTuple):
    """The live arrays at one moment: their count and device bytes, and weak references to
    the newest of them (the client lists its arrays newest first: what a cell makes comes
    before them in a later listing)."""

    count: int
    bytes: float
    newest: tuple[weakref.ref, ...] = ()


#: Newest arrays of a snapshot remembered (weakly) to find where the arrays made after it end.
NEWEST_KEPT = 4096

_NO_SNAPSHOT = LiveSnapshot(0, float("nan"))
_AVAL = operator.attrgetter("aval")


def _listed() -> list[Any]:
    """Every live ``jax.Array`` of the default backend, newest first (public API: the client's
    list of its arrays; references, nothing copied)."""
    import jax

    return jax.live_arrays()


def _bytes_of(arrays: list[Any]) -> float:
    """Device bytes of `arrays`, by abstract value (one ``Counter`` pass in C; an ``nbytes``
    per array costs ten times as much)."""
    return float(
        sum(
            n * math.prod(aval.shape) * aval.dtype.itemsize
            for aval, n in Counter(map(_AVAL, arrays)).items()
        )
    )


def live_arrays() -> LiveSnapshot:
    """Count and device bytes of every live ``jax.Array``, and weak references to the newest
    (:data:`NEWEST_KEPT`): counted, never copied."""
    try:
        arrays = _listed()
        return LiveSnapshot(
            len(arrays), _bytes_of(arrays), tuple(map(weakref.ref, arrays[:NEWEST_KEPT]))
        )
    except Exception:
        return _NO_SNAPSHOT


def made_since(arrays: list[Any], before: LiveSnapshot) -> list[Any]:
    """The arrays of `arrays` (a listing, newest first) made after `before`. JAX lists an array
    ahead of every older one, and a freed array leaves the others in order: the arrays made
    since are exactly those ahead of the newest array of `before` still alive, the first of
    its remembered newest (weak references: a dead one never matches a new array at its
    address). Exact while one of the :data:`NEWEST_KEPT` newest lives; when a cell freed all of
    them (every array is counted new then), or `before` had none."""
    if before.count == 0:
        return arrays
    for ref in before.newest:
        boundary = ref()
        if boundary is not None:
            break
    else:
        return arrays
    for position, array in enumerate(arrays):
        if array is boundary:
            return arrays[:position]
    return arrays


def _shape_text(aval: Any) -> str:
    return f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]"


#: The groups of arrays a cell left alive that are listed (largest first).
LEFT_ALIVE_GROUPS = 20


#: Arrays of each group whose creation stacks are read (the newest first).
CREATION_SAMPLES = 4


def left_alive(
    before: LiveSnapshot, cell_filename: str | None = None, cell_line_offset: int = 0
) -> tuple[list[dict[str, Any]], int, float]:
    """The arrays alive now that were made after `before`, grouped by shape and dtype, the
    largest groups first, each with where its newest arrays were made (``created_at``,
    ``cell_line``: JAX keeps the Python stack that made each array); and the count and bytes
    of every live array now."""
    try:
        arrays = _listed()
        new = made_since(arrays, before)
        groups: Counter = Counter()
        key_of = {}
        for aval, n in Counter(map(_AVAL, new)).items():
            key = key_of[aval] = (_shape_text(aval), aval.dtype.itemsize * math.prod(aval.shape))
            groups[key] += n
        count, size = len(arrays), _bytes_of(arrays)
    except Exception:
        return [], 0, float("nan")
    rows = [
        {"shape": shape, "count": n, "bytes": float(n * itemsize)}
        for (shape, itemsize), n in groups.items()
    ]
    rows.sort(key=lambda row: -row["bytes"])
    rows = rows[:LEFT_ALIVE_GROUPS]
    try:
        _creation_sites(rows, new, key_of, cell_filename, cell_line_offset)
    except Exception:
        pass  # where they were made is a detail: the counts stand without it
    return rows, count, size


def _creation_sites(
    rows: list[dict[str, Any]],
    new: list[Any],
    key_of: dict[Any, tuple[str, int]],
    cell_filename: str | None,
    cell_line_offset: int,
) -> None:
    """Add to each row (a group of `new` arrays) ``created_at`` (the cell line or file:line
    that made its newest :data:`CREATION_SAMPLES` arrays, the most common first, `×n` when
    they differ) and ``cell_line`` (the most common cell line), from the Python stack JAX
    keeps with each array (``Array.traceback``; none when JAX's tracebacks are off)."""
    wanted = {(row["shape"], row["bytes"] / row["count"]): row for row in rows}
    samples: dict[tuple[str, float], list[Any]] = {key: [] for key in wanted}
    full = 0
    for array in new:
        shape, itemsize = key_of[array.aval]
        members = samples.get((shape, float(itemsize)))
        if members is None or len(members) >= CREATION_SAMPLES:
            continue
        members.append(array)
        full += len(members) == CREATION_SAMPLES
        if full == len(samples):
            break
    located: dict[tuple, dict[str, Any]] = {}  # arrays made in a loop share their stack
    for key, members in samples.items():
        sites: Counter = Counter()
        for array in members:
            try:
                frames = tuple(
                    (f.function_name, f.file_name, f.line_num) for f in array.traceback.frames
                )
            except Exception:
                continue
            place = located.get(frames)
            if place is None:
                place = located[frames] = frame_location(frames, cell_filename, cell_line_offset)
            if place["cell_line"] is not None:
                sites["cell line", place["cell_line"]] += 1
            elif place["location"] is not None:
                sites[place["location"], None] += 1
        if not sites:
            continue
        ranked = sites.most_common()
        labels = [
            (f"cell line {line}" if line is not None else str(where))
            + (f" ×{n}" if len(ranked) > 1 else "")
            for (where, line), n in ranked
        ]
        row = wanted[key]
        row["created_at"] = ", ".join(labels)
        lines = [line for (_where, line), _n in ranked if line is not None]
        if lines:
            row["cell_line"] = lines[0]


#: Items of a list, tuple or dict looked into for the arrays it holds, at a failure.
HOLDER_ITEMS = 10_000


def live_at_failure(before: LiveSnapshot, error: BaseException) -> list[dict[str, Any]]:
    """Every live array when the cell failed, grouped by shape and dtype, the largest groups
    first (after the ``failed result`` groups: arrays whose program failed), with their
    ``origin``: the names that hold them in the failing frames (the cell's namespace, the
    functions it was in; one level into lists, tuples and dicts) and whether the cell made
    them. Only called after an out-of-memory error: it walks every live array and the
    failing frames' variables."""
    try:
        import jax

        arrays = _listed()
        new_ids = {id(array) for array in made_since(arrays, before)}
        holders = _holders(error, jax.Array)
    except Exception:
        return []
    groups: dict[tuple, list[Any]] = {}
    for array in arrays:
        groups.setdefault((array.shape, array.dtype, _failed(array)), []).append(array)
    rows = []
    for (shape, dtype, failed), members in groups.items():
        names = list(dict.fromkeys(n for a in members for n in holders.get(id(a), ())))
        made = sum(id(a) in new_ids for a in members)
        origin = (
            [f"held by {', '.join(names[:3])}{' ...' if len(names) > 3 else ''}"] if names else []
        )
        if made:
            origin.append(
                f"{made} made in this cell" if made < len(members) else "made in this cell"
            )
        else:
            origin.append("made before this cell")
        rows.append(
            {
                "snapshot": "failed result" if failed else "at failure",
                "shape": f"{dtype.name}[{','.join(map(str, shape))}]",
                "count": len(members),
                "bytes": float(len(members) * math.prod(shape) * dtype.itemsize),
                "origin": "; ".join(origin),
            }
        )
    rows.sort(key=lambda row: (row["snapshot"] == "at failure", -row["bytes"]))
    return rows[: LEFT_ALIVE_GROUPS + sum(row["snapshot"] == "failed result" for row in rows)]


def _failed(array: Any) -> bool:
    """Whether a ready array holds an error instead of data (the result of the program that
    ran out of memory: its buffer was never allocated). Never waits on one still running;
    never touches the buffer itself (its pointer aborts the process)."""
    try:
        if not array.is_ready():
            return False
        array.block_until_ready()
    except Exception:
        return True
    return False


def _holders(error: BaseException, array_type: type) -> dict[int, list[str]]:
    """id of each array -> the names holding it in the frames the error went through."""
    holders: dict[int, list[str]] = {}
    traceback = error.__traceback__
    while traceback is not None:
        frame = traceback.tb_frame
        traceback = traceback.tb_next
        if frame.f_code.co_filename.startswith(_XLANB_DIR):
            continue  # the magic's own frames (its namespace is the cell's, seen there)
        where = "" if frame.f_code.co_name == "<module>" else f" in {frame.f_code.co_name}"
        for name, value in list(frame.f_locals.items()):
            if name.startswith("_"):
                continue
            if isinstance(value, array_type):
                holders.setdefault(id(value), []).append(name + where)
            elif isinstance(value, list | tuple | dict):
                items = value.values() if isinstance(value, dict) else value
                for index, item in enumerate(items):
                    if index >= HOLDER_ITEMS:
                        break
                    if isinstance(item, array_type):
                        holders.setdefault(id(item), []).append(f"{name}[...]{where}")
    return holders


def device_memory() -> dict[str, Any]:
    """The first device's allocator statistics (GPU, TPU: ``memory_stats()``) in the
    environment's memory keys; {} where the client keeps none (the CPU)."""
    try:
        import jax

        stats = jax.devices()[0].memory_stats() or {}
    except Exception:
        return {}
    if "bytes_limit" not in stats:
        return {}
    return {
        "memory_limit": "device memory (memory_stats bytes_limit)",
        "memory_limit_bytes": float(stats["bytes_limit"]),
        "memory_in_use_bytes": float(stats.get("bytes_in_use", float("nan"))),
    }


def memory(executable) -> dict[str, float]:
    """A loaded executable's static memory (``get_compiled_memory_stats()``, touch point 12)
    in the ``compiles`` columns the torch_xla debug file fills; {} where JAX does not say."""
    try:
        stats = executable.get_compiled_memory_stats()
        sizes = {
            "input_bytes": float(stats.argument_size_in_bytes),
            "output_bytes": float(stats.output_size_in_bytes),
            "aliased_bytes": float(stats.alias_size_in_bytes),
            "intermediate_bytes": float(stats.temp_size_in_bytes),
            "program_bytes": float(stats.generated_code_size_in_bytes),
        }
    except Exception:
        return {}
    peak = float(getattr(stats, "peak_memory_in_bytes", 0) or 0)
    if not peak:
        peak = (
            sizes["input_bytes"]
            + sizes["output_bytes"]
            + sizes["intermediate_bytes"]
            - sizes["aliased_bytes"]
        )
    return {**sizes, "peak_bytes": peak}


def module_proto(executable) -> bytes | None:
    """The serialized ``HloModuleProto`` of a loaded executable (touch point 12), or None."""
    try:
        return executable.hlo_modules()[0].as_serialized_hlo_module_proto()
    except Exception:
        return None


def program_id(module: bytes | None) -> int | None:
    """The program id the device trace gives the runs of the module `module_proto` returned."""
    return hlo_module_id(module) if module else None


def temporaries(executable, module: bytes | None) -> list[Temporary]:
    """The largest temporary buffers of a loaded executable, from the buffer assignment its
    compiled memory stats carry, named through its HLO module's proto (`module_proto`; touch
    point 12); [] where JAX does not hand them over."""
    if not module:
        return []
    try:
        assignment = executable.get_compiled_memory_stats().serialized_buffer_assignment_proto
    except Exception:
        return []
    return temporaries_from_proto(assignment, module) if assignment else []


def costs(executable) -> dict[str, float]:
    """``flops``, ``bytes_accessed`` and ``peak_memory_bytes`` of a loaded executable (NaN
    where it does not say; touch point 12)."""
    flops = bytes_accessed = peak = float("nan")
    try:
        analysis = executable.cost_analysis()
        if isinstance(analysis, list | tuple):
            analysis = analysis[0] if analysis else {}
        flops = float(analysis.get("flops", float("nan")))
        bytes_accessed = float(analysis.get("bytes accessed", float("nan")))
    except Exception:
        pass
    try:
        stats = executable.get_compiled_memory_stats()
        peak = float(getattr(stats, "peak_memory_in_bytes", 0) or 0)
        if not peak:
            peak = float(
                stats.argument_size_in_bytes
                + stats.output_size_in_bytes
                + stats.temp_size_in_bytes
                - stats.alias_size_in_bytes
            )
    except Exception:
        pass
    return {"flops": flops, "bytes_accessed": bytes_accessed, "peak_memory_bytes": peak}


def environment() -> dict[str, Any]:
    """JAX's and jaxlib's versions and the platform, when JAX's backends are up (touch point
    11)."""
    import jax

    found: dict[str, Any] = {"jax": jax.__version__}
    readers = environment_readers().found
    if readers is None:
        return found
    backends_are_initialized, version_str = readers
    try:
        found["jaxlib"] = version_str
        if backends_are_initialized():
            found["jax_platform"] = jax.default_backend()
    except Exception:
        pass
    return found


# -- arrays ----------------------------------------------------------------------------------
def weak_output(value: Any) -> Callable[[], Any]:
    """A weak reference to the first array of a call's result `value` (a pytree): its run's
    outputs are ready together, and the user's array is never kept alive by xlanb. Calls
    back None when there is none."""
    try:
        import jax

        leaf = next(iter(jax.tree_util.tree_leaves(value)), None)
        return weakref.ref(leaf) if leaf is not None else lambda: None
    except Exception:  # not an array (no weak references): nothing to wait on
        return lambda: None


def still_running(value: Any) -> bool:
    """Whether an array of `value` (a pytree) is still being computed; never waits."""
    try:
        import jax

        leaves = jax.tree_util.tree_leaves(value)
        return any(hasattr(leaf, "is_ready") and not leaf.is_ready() for leaf in leaves)
    except Exception:
        return False  # an array deleted or donated meanwhile: nothing to say


def block_until_ready(value: Any) -> None:
    """Wait until the device has computed `value` (a pytree of arrays)."""
    import jax

    jax.block_until_ready(value)


DONATION_WARNING = "Some donated buffers were not usable"


@functools.cache
def lowering_module() -> Check:
    """Touch point 14: ``jax._src.interpreters.mlir``, whose ``warnings`` global is proxied."""
    if outside := _outside_range():
        return outside
    module, why = _attribute("jax._src.interpreters", "mlir")
    if why is None and getattr(module, "warnings", None) is not warnings:
        why = "jax._src.interpreters.mlir.warnings is not the warnings module"
    if why is not None:
        return Check(note=f"jax: no finding for unused donations ({why}).")
    return Check(module)


class _LoweringWarnings:
    """Stands for the ``warnings`` module in ``jax._src.interpreters.mlir`` while capturing:
    notes the donations JAX could not use, and warns exactly as JAX would have."""

    def __getattr__(self, name: str) -> Any:
        return getattr(warnings, name)

    def warn(self, message, category=None, stacklevel=1, *args, **kwargs):
        if STATE.listening and DONATION_WARNING in str(message):
            try:
                _note_unused_donation(sys._getframe(1))
            except Exception:  # never let the profiler break a lowering
                pass
        return warnings.warn(message, category, stacklevel + 1, *args, **kwargs)


def _note_unused_donation(frame) -> None:
    names = frame.f_locals
    donated, avals = names.get("donated_args"), names.get("sharded_in_avals")
    if donated is None or avals is None:
        return
    arguments = []
    for position, (aval, unused) in enumerate(zip(avals, donated, strict=False)):
        if unused:
            text = str(aval)  # float32[1000,250], as JAX's warning writes it
            size = math.prod(aval.shape) * aval.dtype.itemsize
            arguments.append((position, text, float(size)))
    if arguments:
        STATE.append_event(UnusedDonation(str(names.get("module_name", "")), tuple(arguments)))


_LOWERING_WARNINGS = _LoweringWarnings()


def _donation_on(restore: Restore, notes: list[str]) -> None:
    check = lowering_module()
    if check.note:
        notes.append(check.note)
        return
    restore.lowering_warnings = check.found.warnings
    check.found.warnings = _LOWERING_WARNINGS


def _donation_off(restore: Restore) -> None:
    if restore.lowering_warnings is not None:
        module = lowering_module().found
        if module.warnings is _LOWERING_WARNINGS:
            module.warnings = restore.lowering_warnings
        restore.lowering_warnings = None
