"""The ops a backward pass ran that left the device, at the line that called it.

torch_xla counts each op that fell back to the CPU (``aten::nonzero``) without saying where
it ran; the autograd engine runs some again in ``loss.backward()`` (the nonzero of
``y[y > 0]``). While a capture runs, ``torch.autograd.backward`` (what ``Tensor.backward``
calls) is wrapped: the runtime's ``aten::`` counters are read before and after each call and
the difference is kept by the caller's place. The fallback rows then give those counts to
the backward line and the rest to the forward one. Installed by the first capture and
removed by the last one.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Frame = tuple[str, str, int]


@dataclass(eq=False)
class BackwardOps:
    """One capture's backward passes: counter reader and, per calling place, its stack and
    the ``aten::`` counts its passes added."""

    read_counters: Callable[[], dict[str, int]]
    places: dict[tuple, tuple[tuple[Frame, ...], Counter]] = field(default_factory=dict)


@dataclass(eq=False)
class _BackwardState:
    """This module's mutable state, one instance (:data:`_STATE`). ``lock`` guards ``active``
    and the wrapper's install and removal."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    #: The captures counting backward ops now.
    active: list[BackwardOps] = field(default_factory=list)
    #: The ``torch.autograd.backward`` the wrapper replaced (while it is installed).
    original: list[Any] = field(default_factory=list)


_STATE = _BackwardState()


def start(read_counters: Callable[[], dict[str, int]]) -> BackwardOps:
    """Count the ops of each backward pass until :func:`stop` (`read_counters`: the
    runtime's ``aten::`` counters)."""
    ops = BackwardOps(read_counters)
    with _STATE.lock:
        if not _STATE.active:
            _install()
        _STATE.active.append(ops)
    return ops


def stop(ops: BackwardOps) -> list[tuple[tuple[Frame, ...], Counter]]:
    with _STATE.lock:
        if ops in _STATE.active:
            _STATE.active.remove(ops)
        if not _STATE.active:
            _uninstall()
    return list(ops.places.values())


def _install() -> None:
    import torch.autograd

    original = torch.autograd.backward
    _STATE.original[:] = [original]

    def backward(*args, **kwargs):
        __tracebackhide__ = True  # IPython leaves this frame out of the user's traceback
        active = list(_STATE.active)
        if not active:
            return original(*args, **kwargs)
        before = [_read(ops) for ops in active]
        result = original(*args, **kwargs)
        for ops, counts in zip(active, before, strict=True):
            _note(ops, counts, sys._getframe(1))
        return result

    torch.autograd.backward = backward


def _uninstall() -> None:
    import torch.autograd

    if _STATE.original:
        torch.autograd.backward = _STATE.original.pop()


def _read(ops: BackwardOps) -> dict[str, int]:
    try:
        return ops.read_counters()
    except Exception:
        return {}


def _note(ops: BackwardOps, before: dict[str, int], caller: Any) -> None:
    """The counters `ops` reads now less `before`, kept at `caller`'s place."""
    try:
        added = Counter({name: value - before.get(name, 0) for name, value in _read(ops).items()})
        added = +added  # the ops that ran (positive differences only)
        if not added:
            return
        key = tuple((id(frame.f_code), frame.f_lineno) for frame in _frames(caller, limit=8))
        entry = ops.places.get(key)
        if entry is None:
            entry = ops.places.setdefault(key, (_stack(caller), Counter()))
        entry[1].update(added)
    except Exception:
        pass  # the user's backward pass always runs; its ops are counted or not


def _frames(frame: Any, limit: int) -> list[Any]:
    frames = []
    while frame is not None and len(frames) < limit:
        frames.append(frame)
        frame = frame.f_back
    return frames


def _stack(frame: Any) -> tuple[Frame, ...]:
    return tuple(
        (f.f_code.co_name, f.f_code.co_filename, f.f_lineno) for f in _frames(frame, 10_000)
    )


def split_rows(
    rows: list[dict[str, Any]],
    passes: list[tuple[tuple[Frame, ...], Counter]],
    where: Callable[[tuple[Frame, ...]], dict[str, Any]],
) -> list[dict[str, Any]]:
    """`rows` (the runtime's fallback rows) with the counts the backward `passes` added
    given to their own rows, at `where` of each pass's stack (``location``, ``cell_line``);
    the runtime's count stays the total, rows already placed by a read stay as they are."""
    if not passes:
        return rows
    result = []
    for row in rows:
        if row.get("read_at") is not None or row.get("cell_line") is not None:
            result.append(row)
            continue
        left, placed = int(row["count"]), []
        for frames, counts in passes:
            taken = min(int(counts.get(row["op"], 0)), left)
            if taken > 0:
                placed.append({**row, "count": taken, **where(frames)})
                left -= taken
        result += ([{**row, "count": left}] if left > 0 else []) + placed  # forward first
    return result
