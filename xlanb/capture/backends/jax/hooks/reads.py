"""Values read back from a ``jax.Array``: the ``syncs`` of JAX (touch point 13).

While capturing, ``ArrayImpl._value`` (a property) and ``ArrayImpl.item`` are replaced by
ones that note each read of a value not yet on the host (``float(x)``, ``int(x)``,
``bool(x)``, ``x.item()``, ``x.tolist()``, printing) with the reader's place;
``np.asarray(x)`` reads through the buffer protocol, in C++, and is not seen.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any

from xlanb.capture.backends.jax.events import (
    Frame,
)
from xlanb.capture.backends.jax.hooks.checks import dispatch_target
from xlanb.capture.backends.jax.hooks.names import python_stack
from xlanb.capture.backends.jax.state import STATE, Restore

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
