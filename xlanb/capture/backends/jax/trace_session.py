"""JAX's profiler session for xlanb's device trace (touch point 10 of
:mod:`xlanb.capture.backends.jax.hooks`, whose capability check it uses).

xlanb runs JAX's own ``ProfilerSession`` (no file, no Python tracer) and steps aside when the
user starts a trace of their own in the cell: through ``start_trace`` before JAX 0.12, through
``ProfileSession.start`` (where every trace starts) from 0.12. Without the private session it
falls back to the public ``jax.profiler.start_trace``, which writes a file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xlanb.capture import device_trace
from xlanb.capture.backends.jax.hooks import profiler_session


def start_trace(directory: str) -> Callable[[], bytes | None]:
    """Start JAX's profiler session without its Python tracer (it slows short steps ~3x);
    returns the function that stops it and hands back the XSpace bytes (no file). The session
    is JAX's own ``ProfilerSession`` rather than ``jax.profiler.start_trace``, so a trace the
    user starts inside the cell still works (xlanb's then comes back empty). Touch point 10."""
    import jax

    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0
    options.host_tracer_level = 2
    if hasattr(options, "enable_hlo_proto"):
        # the HLO of every live executable, at each stop (~30 ms, growing with the programs
        # compiled): xlanb has the texts of its programs already
        options.enable_hlo_proto = False
    check = profiler_session()
    if check.found is None:  # a JAX without the private session: the public API writes a file
        jax.profiler.start_trace(directory, profiler_options=options)
        # JAX 0.12's stop_trace hands back a ProfileData (and writes the file): the file is read
        return lambda: _xspace_bytes(jax.profiler.stop_trace())
    jax_profiler, session_type = check.found
    state = getattr(jax_profiler, "_profile_state", None)
    # JAX 0.12 keeps the running session in `session`, older releases in `profile_session`
    if any(getattr(state, name, None) is not None for name in ("session", "profile_session")):
        raise RuntimeError("a jax.profiler trace is already running")
    session = session_type(options)
    undo = _yield_to_user_traces(jax, jax_profiler)

    def stop() -> bytes | None:
        undo()
        return session.stop()

    return stop


def _xspace_bytes(data: Any) -> bytes | None:
    """What a profiler stop handed back, if it is the XSpace's bytes (None: read the file)."""
    return data if isinstance(data, bytes) else None


def _yield_to_user_traces(jax: Any, jax_profiler: Any) -> Callable[[], None]:
    """Make a trace the user starts inside the cell stop xlanb's first (the runtime allows one
    session); returns what puts JAX back. JAX 0.12 starts every trace (``start_trace``,
    ``trace()``, ``ProfileSession``) in ``ProfileSession.start``; older releases in
    ``start_trace``."""
    session_class = getattr(jax_profiler, "ProfileSession", None)
    if session_class is not None and callable(getattr(session_class, "start", None)):
        user_session_start = session_class.start

        def session_start_after_ours(self, *args, **kwargs):
            device_trace.yield_to_user()
            return user_session_start(self, *args, **kwargs)

        session_class.start = session_start_after_ours

        def undo_session() -> None:
            if session_class.start is session_start_after_ours:
                session_class.start = user_session_start

        return undo_session
    user_start = jax_profiler.start_trace

    def start_trace_after_ours(*args, **kwargs):  # the user's own trace: ours steps aside
        device_trace.yield_to_user()
        return user_start(*args, **kwargs)

    # jax.profiler.trace() and jax.profiler.start_trace both go through this one function
    jax_profiler.start_trace = start_trace_after_ours
    public = jax.profiler.start_trace is user_start
    if public:
        jax.profiler.start_trace = start_trace_after_ours

    def undo() -> None:
        if jax_profiler.start_trace is start_trace_after_ours:
            jax_profiler.start_trace = user_start
        if public and jax.profiler.start_trace is start_trace_after_ours:
            jax.profiler.start_trace = user_start

    return undo
