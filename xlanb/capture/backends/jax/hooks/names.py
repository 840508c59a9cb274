"""Readers of JAX objects: program names, the ``eager`` flag, stacks, HLO text.

Touch point 8 (attributes of a ``PjitFunction``: ``_fun``, ``_apply_primitive``, the name
in ``_cache_miss``'s closure, ``_jit_info``; each read with a default, never an error),
touch point 6 (the StableHLO module's ``sym_name``) and touch point 12 (the optimized HLO
text of a loaded executable).
"""

from __future__ import annotations

import functools
import inspect
import os

from xlanb.capture.backends.jax.events import (
    Frame,
)
from xlanb.capture.backends.jax.hooks.checks import _string_attr


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
        eager = not _holds_user_function(inspect.unwrap(target))
    return f"jit({name})", eager


def _holds_user_function(function) -> bool:
    """Whether a function JAX made runs the user's own: ``jax.pmap``'s per-device ``_fun``
    (from JAX 0.9 a ``jax.jit`` of it), which closes over the user's function as ``fun``, a
    ``WrappedFun`` holding it in ``f``."""
    code, closure = getattr(function, "__code__", None), getattr(function, "__closure__", None)
    if code is None or not closure or "fun" not in code.co_freevars:
        return False
    try:
        user = getattr(closure[code.co_freevars.index("fun")].cell_contents, "f", None)
    except (ValueError, IndexError):
        return False
    while isinstance(user, functools.partial):
        user = user.func
    user_code = getattr(inspect.unwrap(user), "__code__", None) if callable(user) else None
    return user_code is not None and not user_code.co_filename.startswith(_jax_dir())


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
