"""Capability checks of JAX's private touch points, each made once and cached.

A check hands back what it found or the note saying which feature is off and why; outside
the supported JAX range (:mod:`xlanb.capture.versions`) every private touch point is off.
Touch points: 2 ``jax._src.config.explain_cache_misses``; 5
``jax._src.compiler.compile_or_get_cached`` (and where its ``host_callbacks`` argument is);
6 ``jax._src.lib.mlir.ir.StringAttr``; 7 ``jax._src.lib._jax.PjitFunction`` (its
``__call__`` slot and layout), ``jax._src.array.ArrayImpl``, ``jax.tree_util.tree_leaves``;
9 the ``register_exclusion`` of ``source_info_util`` and ``traceback_util``; 10
``jax._src.profiler`` and ``_profiler.ProfilerSession``; 11
``jax._src.xla_bridge.backends_are_initialized`` and ``jax._src.lib.version_str``.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import os
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from xlanb.capture import versions
from xlanb.capture.backends.jax.dispatch import vectorcall_flag

#: The loggers of JAX's cache-miss explanations: ``jax._src.pjit`` before JAX 0.9,
#: ``jax._src.interpreters.partial_eval`` from 0.9. Both are read and filtered, whichever this
#: JAX uses; :data:`EXPLAIN_LOGGER` is the one the installed release uses.
EXPLAIN_LOGGERS = ("jax._src.interpreters.partial_eval", "jax._src.pjit")
_JAX_VERSION = versions.gate("jax").version
EXPLAIN_LOGGER = EXPLAIN_LOGGERS[
    1 if _JAX_VERSION is not None and versions.parse_version(_JAX_VERSION) < (0, 9) else 0
]

_HOST_SCALARS = (float, int, bool, complex)

#: The JAX backend's package (the dispatch counter, the compile wrapper), kept out of JAX's
#: tracebacks.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(__file__)) + os.sep
#: xlanb's capture code (``xlanb/capture/``), kept out of the source locations JAX records.
_CAPTURE_DIR = os.path.dirname(os.path.dirname(_PACKAGE_DIR.rstrip(os.sep))) + os.sep
#: xlanb itself, whose frames hold no user arrays.
_XLANB_DIR = os.path.dirname(_CAPTURE_DIR.rstrip(os.sep)) + os.sep


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
def device_put_targets() -> Check:
    """Touch point 15: the functions that copy ``jax.device_put``'s values outside a trace,
    as ``[(owner, attribute name)]``: ``jax._src.dispatch._batched_device_put_impl``, which
    ``jax.device_put`` calls by name (JAX 0.7 and newer), and ``device_put_p.impl``, which its
    primitive's ``bind`` runs (JAX 0.6, where ``jnp.asarray`` of a NumPy array is a
    ``jax.device_put``)."""
    if outside := _outside_range():
        return outside
    dispatch, why = _attribute("jax._src", "dispatch")
    targets: list[tuple[Any, str]] = []
    if why is None:
        primitive = getattr(dispatch, "device_put_p", None)
        for owner, name in ((dispatch, "_batched_device_put_impl"), (primitive, "impl")):
            if callable(getattr(owner, name, None)):
                targets.append((owner, name))
        if not targets:
            why = "no jax._src.dispatch._batched_device_put_impl or device_put_p.impl"
    if why is not None:
        return Check(note=f"jax: jax.device_put copies are not counted as transfers ({why}).")
    return Check(targets)


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
