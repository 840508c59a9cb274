"""The dispatch counter: ``PjitFunction.__call__`` while capturing (touch point 7).

It counts and times each top-level call of a jitted function (the ``executions`` rows),
finds host values among the arguments (``host_transfer`` fallbacks) and counts those of
eager ops as explicit copies, as does the copy counter around ``jax.device_put``'s
functions (touch point 15). What the dispatch counter uses on every call is bound once as
closure variables; the CPython side (the vectorcall flag) is
:mod:`xlanb.capture.backends.jax.dispatch`. Also the static arguments of the running call,
read from the counter's frame at a compile (touch point 8).
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from xlanb.capture.backends.jax.dispatch import hook_call, unhook_call, vectorcall_flag
from xlanb.capture.backends.jax.hooks.checks import (
    DispatchTarget,
    device_put_targets,
    dispatch_target,
)
from xlanb.capture.backends.jax.hooks.executables import output_probe, probe_ran
from xlanb.capture.backends.jax.hooks.names import _stack, function_name, static_positions
from xlanb.capture.backends.jax.state import RAN, SAMPLE_LIMIT, STATE, CallStats, Restore


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


def _device_put_on(restore: Restore, notes: list[str]) -> None:
    """Wrap ``jax.device_put``'s copying functions for the capture (touch point 15): each
    host value they are given is an explicit copy (``JaxState.host_copies``)."""
    check, puts = dispatch_target(), device_put_targets()
    if check.note or puts.note:
        notes.append(check.note or puts.note)
        return
    array_type, host_types = check.found.array_type, check.found.host_types
    for owner, name in puts.found:
        original = getattr(owner, name)
        setattr(owner, name, _copy_counter(original, array_type, host_types))
        restore.device_puts.append((owner, name, original))


def _device_put_off(restore: Restore) -> None:
    for owner, name, original in reversed(restore.device_puts):
        setattr(owner, name, original)
    restore.device_puts.clear()


def _copy_counter(original: Any, array_type: type, host_types: frozenset) -> Callable[..., Any]:
    """`original` (a device-put function of the values to copy), counting its host values."""
    state = STATE

    def counted(*values, **params):
        if state.listening:
            try:
                destinations, copies = params.get("devices"), 0
                for index, value in enumerate(values):
                    kind = type(value)
                    if kind is not array_type and (
                        kind in host_types or isinstance(value, np.ndarray)
                    ):
                        copies += _device_count(destinations[index]) if destinations else 1
                state.host_copies += copies
            except Exception:
                pass  # a copy is counted or not; the user's copy always happens
        return original(*values, **params)

    return counted


def _device_count(destination: Any) -> int:
    """The devices a value put to `destination` (a device, a sharding, a layout holding one,
    or None: the default device) is copied to: one copy each, as JAX's transfer guard logs."""
    kind = type(destination)
    if kind in _ONE_DEVICE:
        return 1
    devices = getattr(destination, "device_set", None)  # a sharding's
    if devices is None:
        sharding = getattr(destination, "sharding", _MISSING)
        if sharding is _MISSING:  # a device: jaxlib's misses cost microseconds, once a type
            _ONE_DEVICE.add(kind)
            return 1
        devices = getattr(sharding, "device_set", None)  # a layout's, where it holds one
    return len(devices or ()) or 1


#: The types of destinations that are one device (None: the default one).
_ONE_DEVICE: set[type] = {type(None)}
_MISSING = object()


def _probe_fewest(state: Any, function: Any, result: Any, count: int) -> None:
    """At the call that makes the window's fewest runs: hold its result's probe, unless a
    function compiled in the window has not run again yet (its first run was a warm-up): then
    the next call is, up to ``state.first_probe_last``."""
    waited = state.first_probe_function
    if waited is None or waited is function or count >= state.first_probe_last:
        state.first_probe = output_probe(result)
    else:
        state.first_probe_at = count + 1


def _dispatch_counter(original: Any, target: DispatchTarget) -> Callable[..., Any]:
    """The ``PjitFunction.__call__`` put in place while capturing (touch point 7). What it
    uses on every call is bound here, once, as closure variables."""
    state = STATE
    calls = state.calls
    starts, durations, functions = state.sample_starts, state.sample_seconds, state.sample_functions
    array_type = target.array_type
    # the types that need no closer look: device arrays, and the jitted function itself (the
    # first argument; one passed as an argument is no host value either)
    device_only = frozenset({array_type, target.function_type})
    perf, limit = time.perf_counter, SAMPLE_LIMIT
    first_call = _first_call(state, sys._getframe)
    note_host_arguments = _host_argument_counter(state, target, sys._getframe)
    count_host_operands = _host_operand_counter(state, target)

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
        known = state.traced_functions
        if known is not None and args[0] not in known:
            state.trace_late(args[0])  # a program the trace (or the cell's last one) never saw
        started = state.call_started = perf()
        self = state.current = args[0]
        try:
            result = original(*args, **kwargs) if kwargs else original(*args)
        finally:
            state.current = None
        elapsed = perf() - started
        held = state.first_probe
        if held is not None and held is not RAN and probe_ran(held):
            state.first_probe = RAN  # held no longer than its run
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
                _probe_fewest(state, self, result, count)
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
        if entry.eager:  # its host operands are copies, not host inputs
            count_host_operands(args)
            return result
        # device arrays alone need no closer look (one argument: its type alone, no loop)
        if not kwargs and (
            type(args[1]) is array_type
            if len(args) == 2
            else device_only.issuperset(map(type, args))
        ):
            return result
        note_host_arguments(self, entry.static, args, kwargs)
        return result

    return count_call


def _host_operand_counter(state: Any, target: DispatchTarget) -> Callable[[tuple], None]:
    """The dispatch counter's `count_host_operands`: an eager op's host operands are copies
    (`jnp.asarray(batch)` runs JAX's `stage` op; `x * 0.5`), not host inputs to report (JAX's
    transfer guard logs them as explicit transfers)."""
    array_type, host_types, ndarray = target.array_type, target.host_types, np.ndarray

    def count_host_operands(args: tuple) -> None:
        for arg in args:  # args[0], the function, is neither
            kind = type(arg)
            if kind is not array_type and (kind in host_types or isinstance(arg, ndarray)):
                state.host_copies += 1

    return count_host_operands


def _first_call(state: Any, get_frame: Callable[[int], Any]) -> Callable[..., CallStats]:
    """The dispatch counter's `first_call`: a function's entry made on its first call."""
    lock, calls, wall = state.lock, state.calls, time.time

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

    return first_call


def _host_argument_counter(
    state: Any, target: DispatchTarget, get_frame: Callable[[int], Any]
) -> Callable[..., None]:
    """The dispatch counter's `note_host_arguments`, bound to the capture's state and JAX's
    array, host and pytree types."""
    array_type, host_types = target.array_type, target.host_types
    transfers = state.transfers
    containers = frozenset({dict, list, tuple})
    device_only = frozenset({array_type, target.function_type})

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
        traced_tree = (tuple(traced), dynamic)
        _add_transfer_place(state, target, key, caller, function, args, kwargs, traced_tree)

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

    return note_host_arguments


def _add_transfer_place(
    state: Any,
    target: DispatchTarget,
    key: tuple,
    caller: Any,
    function: Any,
    args: tuple,
    kwargs: dict,
    traced: tuple,
) -> None:
    """A place and shape of call seen first: count its host values by a walk of the pytree of
    its `traced` arguments (positional, keyword), and add its entry to the capture's state."""
    leaves = target.tree_leaves(traced)  # in the order jit flattens them
    state.call_started = time.perf_counter()
    state.current = function  # JAX's calls while reading the lowering are not counted
    try:
        leaves, devices = _transferred_leaves(function, args[1:], kwargs, leaves)
    finally:
        state.current = None
    found = Counter(kind for kind in map(type, leaves) if kind in target.host_types)
    if devices > 1:  # a copy to each device, as JAX's transfer guard logs them
        found = Counter({kind: count * devices for kind, count in found.items()})
    state.add_transfer_place(key, function, found, lambda: _stack(caller))


#: The code of the dispatch counter's ``count_call`` (found on the stack at a compile).
_COUNT_CALL_CODE = _dispatch_counter(None, DispatchTarget(type, type, frozenset(), list)).__code__


def _transferred_leaves(function, args: tuple, kwargs: dict, leaves: list) -> tuple[list, int]:
    """The argument `leaves` JAX copies to the devices on a call of `function`: those its
    program keeps (jit drops the arguments the function does not use), and the devices it
    runs on (each of its inputs is on every one, in shards or whole), read from the lowering
    of the call just made (JAX's caches hold it); all of them and one device when that
    cannot be read."""
    try:
        lowering = function.trace(*args, **kwargs).lower()._lowering
        kept = lowering.compile_args["kept_var_idx"]
        devices = int(lowering.compile_args.get("num_devices") or 1)
        hoisted = len(getattr(lowering, "const_args", None) or ())  # constants come first
    except Exception:
        return leaves, 1
    return [leaf for index, leaf in enumerate(leaves) if index + hoisted in kept], devices


def _arg_types(arg) -> Any:
    """An argument's type, with its children's for a dict, list or tuple (a batch), and
    theirs (nested dicts)."""
    kind = type(arg)
    if kind is dict:
        return kind, tuple(map(_arg_types, arg.values()))
    if kind is list or kind is tuple:
        return kind, tuple(map(_arg_types, arg))
    return kind


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
