"""What the JAX listeners record while a capture runs, one small immutable record per event.

The listeners in :mod:`.hooks` append these to the capture state (:mod:`.state`); :mod:`.rows`
turns them into the frames' rows when the capture ends. The one exception to "a record per
event" is the dispatch counter, which runs on every call of a jitted function: it keeps plain
``(started, seconds)`` pairs and a mutable :class:`~.state.CallStats` per function, and the
state hands them out as :class:`DispatchSample` and :class:`CallDelta` (building a record on
each call would add about half the counter's own cost).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

#: A Python frame as the locations need it: (function name, file name, line number).
Frame = tuple[str, str, int]

#: The ``jax.monitoring`` duration events, by the step of a compile they time.
DurationKind = Literal["trace", "lower", "compile"]


@dataclass(frozen=True, slots=True)
class Duration:
    """A ``jax.monitoring`` duration event of one program: tracing to a jaxpr (``trace``),
    lowering to StableHLO (``lower``) or XLA compilation (``compile``)."""

    kind: DurationKind
    #: The event's ``fun_name``: ``f`` for tracing, ``jit(f)`` for lowering and compiling.
    name: str
    seconds: float
    #: ``time.time()`` when the event came, i.e. when the step ended.
    wall: float


@dataclass(frozen=True, slots=True)
class CacheMiss:
    """A ``TRACING CACHE MISS`` record of JAX's explain-cache-misses logger (the text is parsed
    by :func:`xlanb.formats.jax_text.parse_explanation` when the rows are built)."""

    message: str
    wall: float


@dataclass(frozen=True, slots=True)
class CompileRecord:
    """What the ``compile_or_get_cached`` wrapper saw of one XLA compile; the ``compile``
    :class:`Duration` that follows it is the same compile."""

    #: The StableHLO module's ``sym_name`` ("" when it cannot be read).
    module: str
    #: The StableHLO module (kept only when a capture wants graphs), else None.
    computation: Any
    #: The loaded executable: optimized HLO, cost and memory analyses.
    executable: Any
    #: How many host callbacks the program makes.
    host_callbacks: int
    #: The Python stack at compile time, innermost first.
    frames: tuple[Frame, ...]
    #: A program JAX compiled for code outside ``jit`` (a single primitive, a ``jax.numpy``
    #: function).
    eager: bool
    #: Compiled inside a call of a jitted function JAX made itself (the backward pass of
    #: ``jax.grad`` of a jitted function).
    internal_caller: bool = False
    #: The static arguments of the call that compiled it: (where, its repr, its class's name
    #: when it is hashed by identity, else "").
    statics: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class UnusedDonation:
    """Donated arguments of one program that JAX could not alias to an output while lowering
    it (its warning "Some donated buffers were not usable"); the compile that follows with the
    same program name is that program's."""

    #: The module name JAX lowered (``jit(f)``, as the compile event's ``fun_name``).
    module: str
    #: ``(flat argument position, type such as float32[1000,250], bytes)`` of each one.
    arguments: tuple[tuple[int, str, float], ...]


#: The events in the order they came: the input of :func:`.rows.compile_rows`.
Event = Duration | CacheMiss | CompileRecord | UnusedDonation


@dataclass(frozen=True, slots=True)
class Transfer:
    """Host values (NumPy arrays, Python or NumPy scalars) among the non-static arguments of
    the calls of a jitted function from one place: implicit host-to-device transfers."""

    #: The ``PjitFunction`` called.
    function: Any
    #: The host value's type (``numpy.ndarray``, ``float``, ...).
    kind: type
    count: int
    #: The caller's Python stack, innermost first.
    frames: tuple[Frame, ...]
    #: The calls that passed them.
    calls: int = 1


@dataclass(frozen=True, slots=True)
class Read:
    """A value read back to the host from a ``jax.Array`` (``float(x)``, ``x.item()``,
    ``np.asarray(x)``, printing): the host waits for the array's program to finish."""

    #: How the value was read (``float(x)``, ``np.asarray(x)``, ...).
    how: str
    #: The reader's Python stack, innermost first.
    frames: tuple[Frame, ...]
    #: Reads in the capture from this place, this way.
    count: int = 1


class DispatchSample(NamedTuple):
    """One top-level call of a jitted function, as the dispatch counter timed it."""

    #: ``time.perf_counter()`` when the call started.
    started: float
    #: Host dispatch time.
    seconds: float
    #: The jitted function called.
    function: Any = None


@dataclass(frozen=True, slots=True)
class CallDelta:
    """The calls of one jitted function during one capture."""

    #: The ``PjitFunction`` called.
    function: Any
    count: int
    #: Total host dispatch time.
    seconds: float
    #: ``time.time()`` of the function's first call, NaN when it was first called before
    #: this capture began.
    first: float
    #: The stack of its first call in the capture (none for eager code).
    frames: tuple[Frame, ...] = ()
