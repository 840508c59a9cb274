"""Where torch code read a lazy tensor's value back to the host, from the reader's own stack.

torch_xla and torch._lazy count each read (``aten::_local_scalar_dense``: ``.item()``,
``bool(t)``, ``float(t)``, an index) without saying where it happened; torch_xla's execution
analysis places the reads that cut a graph, but only at ``PT_XLA_DEBUG_LEVEL=2`` (``--deep``),
which slows every step. So while a capture runs, the Python methods of ``torch.Tensor`` that
read a value are wrapped: a read of a tensor on the captured device is counted by place (the
code and line of its first frames), its stack walked once per place. Tensors elsewhere (the
CPU) pass straight through. The wrappers are installed by the first capture and removed by
the last one, whatever the order of their ends.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from xlanb.capture import switches
from xlanb.formats.python_frames import read_place

#: ``torch.Tensor`` methods that read one value back, and how the user wrote the read.
READ_METHODS = {
    "item": "x.item()",
    "__bool__": "bool(x)",
    "__float__": "float(x)",
    "__int__": "int(x)",
    "__index__": "an index",
}

#: Frames that tell one reading place from another (a library's read and the user's line
#: that called into it are usually within them; the first read from a place walks them all).
KEY_FRAMES = 8

Frame = tuple[str, str, int]


@dataclass(eq=False)
class Read:
    """The reads from one place: how, how many, and the reader's stack (innermost first)."""

    how: str
    frames: tuple[Frame, ...]
    count: int = 0


@dataclass(eq=False)
class Reads:
    """One capture's reads of tensors on its device type (``xla``, ``lazy``)."""

    device_type: str
    places: dict[tuple, Read] = field(default_factory=dict)

    def reads(self) -> list[Read]:
        return list(self.places.values())


@dataclass(eq=False)
class _ReadsState:
    """This module's mutable state, one instance (:data:`_STATE`). ``lock`` guards ``active``
    and ``replaced`` (captures on several threads start and stop the wrappers)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    #: The captures counting reads now.
    active: list[Reads] = field(default_factory=list)
    #: What the wrappers replaced: method name -> (it was the class's own attribute, original).
    replaced: dict[str, tuple[bool, Any]] = field(default_factory=dict)
    #: The device types of the active captures (read on every read without the lock).
    device_types: frozenset[str] = frozenset()


_STATE = _ReadsState()


def start(device_type: str) -> Reads:
    """Count the reads of tensors on `device_type` until :func:`stop`."""
    reads = Reads(device_type)
    with _STATE.lock:
        if not _STATE.active:
            _install()
        _STATE.active.append(reads)
        _STATE.device_types = frozenset(active.device_type for active in _STATE.active)
    return reads


def stop(reads: Reads) -> list[Read]:
    """Stop counting for `reads`' capture (the wrappers go with the last capture)."""
    with _STATE.lock:
        if reads in _STATE.active:
            _STATE.active.remove(reads)
        _STATE.device_types = frozenset(active.device_type for active in _STATE.active)
        if not _STATE.active:
            _uninstall()
    return reads.reads()


def _install() -> None:
    import torch

    tensor = torch.Tensor
    for name, how in READ_METHODS.items():
        original = getattr(tensor, name, None)
        if original is None:
            continue
        _STATE.replaced[name] = (name in tensor.__dict__, tensor.__dict__.get(name, original))
        setattr(tensor, name, _counting(original, how))


def _uninstall() -> None:
    import torch

    tensor = torch.Tensor
    for name, (own, original) in _STATE.replaced.items():
        if own:
            setattr(tensor, name, original)
        elif name in tensor.__dict__:
            delattr(tensor, name)
    _STATE.replaced.clear()


def _counting(original: Callable[..., Any], how: str) -> Callable[..., Any]:
    def read(self, *args, **kwargs):
        __tracebackhide__ = True  # IPython leaves this frame out of the user's traceback
        if _STATE.device_types and not self.is_cpu:
            _note(self, sys._getframe(1), how)
            value = original(self, *args, **kwargs)
            switches.seal_pending()  # the read may have been the runtime's first compile
            return value
        return original(self, *args, **kwargs)

    read.__name__ = getattr(original, "__name__", how)
    read.__doc__ = getattr(original, "__doc__", None)
    return read


def _note(tensor: Any, caller: Any, how: str) -> None:
    try:
        device_type = tensor.device.type
        if device_type not in _STATE.device_types:
            return
        key: list[Any] = [how]
        frame = caller
        for _ in range(KEY_FRAMES):
            if frame is None:
                break
            key += (id(frame.f_code), frame.f_lineno)  # a code object hashes its contents
            frame = frame.f_back
        place = tuple(key)
        for reads in list(_STATE.active):
            if reads.device_type != device_type:
                continue
            read = reads.places.get(place)
            if read is None:
                read = reads.places.setdefault(place, Read(how, _stack(caller)))
            read.count += 1
    except Exception:
        pass  # a read is counted or not; the user's read always happens


def _stack(frame: Any) -> tuple[Frame, ...]:
    frames = []
    while frame is not None:
        frames.append((frame.f_code.co_name, frame.f_code.co_filename, frame.f_lineno))
        frame = frame.f_back
    return tuple(frames)


def placed_rows(
    fallbacks: list[dict[str, Any]],
    reads: list[Read],
    where: Callable[[tuple[Frame, ...]], dict[str, Any]],
    place: Callable[[tuple[Frame, ...]], str | None] = read_place,
) -> list[dict[str, Any]]:
    """`fallbacks` (the runtime's counter rows) with its read row (cause ``item``) split by
    the places `reads` saw: ``read_at`` (the innermost frame outside the runtime: a library's
    file, or the user's line), ``location`` and ``cell_line`` (`where` of the stack: the
    user's frame; `place` names the read's). The runtime's count stays the truth: places
    take at most what it counted, and reads no wrapper saw keep one row without a place."""
    placed: dict[tuple[str | None, str | None], dict[str, Any]] = {}
    rows = []
    for row in fallbacks:
        if row["cause"] != "item" or not reads:
            rows.append(row)
            continue
        left = int(row["count"])
        for read in sorted(reads, key=lambda read: -read.count):
            if left <= 0:
                break
            user = where(read.frames)
            key = (place(read.frames), user["location"])
            taken = min(read.count, left)
            left -= taken
            if key in placed:
                placed[key]["count"] += taken
            else:
                placed[key] = {**row, "count": taken, "read_at": key[0], **user}
        rows += placed.values()
        if left > 0:
            rows.append({**row, "count": left})
    rows.sort(key=lambda row: -row["count"])
    return rows
