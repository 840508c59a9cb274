"""Start and stop the backends around user code and combine what they saw into a Profile.

The recorder only captures: findings, attribution and the time account are computed above it
(:func:`xlanb.analysis.derive`), by the `finish` callable the API layer passes in."""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType

from xlanb.capture import backends as backend_registry
from xlanb.capture import cell_memory, device_trace, memory_limit, switches, workdir
from xlanb.capture.backends.base import Backend, Capture, CaptureOptions, Progress
from xlanb.core.gc_pause import no_cyclic_gc
from xlanb.core.profile import FRAME_NAMES, Profile, make_frame
from xlanb.formats.oom_text import out_of_memory

#: Profiles kept by :func:`history` (oldest dropped first); ``XLANB_HISTORY`` sets it at start,
#: :func:`set_history_limit` later. Every Profile holds its frames (and graphs' text), so an
#: unbounded history grows without end under ``%xla_profile on``.
DEFAULT_HISTORY = 100


def _new_history() -> deque[Profile]:
    return deque(maxlen=int(os.environ.get("XLANB_HISTORY") or DEFAULT_HISTORY))


@dataclass(eq=False)
class _RecorderState:
    """This module's mutable state, one instance (:data:`_STATE`)."""

    #: The profiles :func:`history` returns, oldest first.
    history: deque[Profile] = field(default_factory=_new_history)
    #: Every capture so far, for default names.
    captured: int = 0
    #: Captures running now (the notebook hook leaves the debug files alone then).
    active: int = 0


_STATE = _RecorderState()


def capturing() -> bool:
    """Whether a capture is running in this process."""
    return _STATE.active > 0


def history() -> list[Profile]:
    """Every Profile captured in this process, oldest first."""
    return list(_STATE.history)


def set_history_limit(limit: int) -> None:
    """Keep the last `limit` profiles in :func:`history` (at least 1)."""
    _STATE.history = deque(_STATE.history, maxlen=max(1, int(limit)))


def clear_history() -> None:
    """Forget every kept Profile (profiles held in variables stay)."""
    _STATE.history.clear()


def _count_capture() -> None:
    _STATE.captured += 1


def last() -> Profile | None:
    """The most recent Profile, or None before the first capture."""
    return _STATE.history[-1] if _STATE.history else None


class Recorder:
    """Starts the backends when a ``with`` block begins and fills its Profile from what they
    saw when it ends (the public face is :class:`xlanb.profile`, with its arguments).

    `finish` (or the class's :attr:`finish_profile`) derives what the capture itself does not
    hold: findings, attribution, the time account (the API layer passes the analysis in)."""

    #: Called with the filled Profile and the options when no `finish` is given.
    finish_profile: Callable[[Profile, CaptureOptions], None] | None = None

    def __init__(
        self,
        backend: str | list[str] = "auto",
        name: str | None = None,
        graphs: bool = True,
        *,
        cell_filename: str | None = None,
        source: str = "",
        finish: Callable[[Profile, CaptureOptions], None] | None = None,
        trace: bool = True,
        trace_runs: int | None = device_trace.WINDOW_RUNS,
    ) -> None:
        self._finish = finish if finish is not None else self.finish_profile
        self.modules: list[Backend] = backend_registry.resolve(backend)
        self._auto = backend == "auto"
        if trace_runs is not None and trace_runs < 1:
            raise ValueError(f"trace_runs must be at least 1 (or None), not {trace_runs}")
        self.options = CaptureOptions(
            graphs=graphs,
            cell_filename=cell_filename,
            device_trace=trace,
            trace_runs=trace_runs,
            source=source,
        )
        self.profile = Profile(
            name=name or f"profile-{_STATE.captured + 1}",
            backends=[m.NAME for m in self.modules],
            source=source,
        )
        self._tokens: list[tuple[Backend, object]] = []
        self._started = 0.0

    def __enter__(self) -> Profile:
        _STATE.active += 1
        workdir.hold()
        try:  # a runtime that read its switches before this capture gives them back now
            switches.seal_read()
        except Exception:
            pass
        try:
            for module in self.modules:
                self._tokens.append((module, module.begin(self.options)))
        except BaseException:
            self._end_backends()
            workdir.release()
            _STATE.active -= 1
            raise
        self.profile.started_at = time.time()
        self._started = time.perf_counter()
        return self.profile

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        wall_seconds = time.perf_counter() - self._started
        with no_cyclic_gc():  # the end allocates an object or more per event, row and frame
            return self._exit(exc_type, exc, wall_seconds)

    def _exit(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, wall_seconds: float
    ) -> bool:
        # Teardown always completes: every backend is ended (its hooks undone) and the profile
        # kept, even when a Ctrl-C lands in xlanb's own end-of-cell work; that interrupt is
        # raised again afterwards, unless the user's own exception is on its way already.
        interrupt: BaseException | None = None
        names = [module.NAME for module, _token in self._tokens]
        try:
            self.options.error = exc
            try:
                captures, interrupt = self._end_backends()
            finally:
                self.options.error = None  # it holds the failing frames and their arrays
                workdir.release()
            try:
                switches.seal_read()  # a runtime that has read its switches gives them back
            except Exception:
                pass
            if interrupt is not None:
                device_trace.abandon()
            try:
                cell_memory.remember(self.profile.source, list(zip(names, captures, strict=True)))
                _fill(self.profile, captures, wall_seconds)
                if self._auto:
                    self.profile.notes.extend(self._late_imports())
                if exc_type is not None:
                    self.profile.failed = True
                    self.profile.error = f"{exc_type.__name__}: {exc}"
                    if out_of_memory(self.profile.error):
                        # a device's own allocator limit (set by its backend) comes first
                        for key, value in memory_limit.host_memory().items():
                            self.profile.environment.setdefault(key, value)
                if self._finish is not None:
                    self._finish(self.profile, self.options)
            except Exception as error:  # xlanb's own failure: a note, never the user's problem
                self.profile.notes.append(f"xlanb: analysis failed: {error!r}")
            except BaseException as error:
                interrupt = interrupt or error
                self.profile.notes.append(
                    f"xlanb: end-of-cell work interrupted ({type(error).__name__}); the "
                    "profile is partial"
                )
            _STATE.history.append(self.profile)
            _count_capture()
        finally:
            _STATE.active -= 1
        if interrupt is not None and exc_type is None:
            raise interrupt
        return False  # never swallow the user's exception

    def join(self, module: Backend) -> None:
        """Start capturing on backend `module` from now on (a runtime imported mid-capture)."""
        if module in self.modules:
            return
        token = module.begin(self.options)
        self.modules.append(module)
        self._tokens.append((module, token))
        self.profile.backends.append(module.NAME)

    def leave(self, module: Backend) -> None:
        """Stop capturing on backend `module` and drop what it saw (its hooks are undone)."""
        for index, (joined, token) in enumerate(self._tokens):
            if joined is module:
                del self._tokens[index]
                try:
                    module.end(token, self.options)
                except Exception:
                    pass
                break
        if module in self.modules:
            self.modules.remove(module)
        if module.NAME in self.profile.backends:
            self.profile.backends.remove(module.NAME)

    def _late_imports(self) -> list[str]:
        started = [
            m.NAME
            for m in backend_registry.BACKENDS.values()
            if m not in self.modules and m.is_imported()
        ]
        return [
            f"{name} was imported during this cell, so this cell was not profiled on it; "
            "profiled cells after this one are."
            for name in started
        ]

    def progress(self) -> Progress:
        """Totals so far, from the backends that can tell cheaply (safe from another
        thread)."""
        total = Progress()
        for module, token in list(self._tokens):
            peek = getattr(module, "peek", None)
            if peek is not None:
                try:
                    total = total + peek(token)
                except Exception:  # a runtime mid-teardown must not break the live view
                    pass
        return total

    def _end_backends(self) -> tuple[list[Capture], BaseException | None]:
        """End every backend, whatever happens in any of them: (their captures, the first
        interrupt — KeyboardInterrupt, SystemExit — that arrived meanwhile)."""
        captures = []
        interrupt: BaseException | None = None
        for module, token in self._tokens:
            try:
                captures.append(module.end(token, self.options))
            except Exception as error:  # a broken capture must not hide the user's result
                captures.append(Capture(notes=[f"{module.NAME}: capture failed: {error!r}"]))
            except BaseException as error:  # Ctrl-C mid-teardown: end the others first
                interrupt = interrupt or error
                captures.append(
                    Capture(
                        notes=[
                            f"{module.NAME}: end-of-cell work interrupted "
                            f"({type(error).__name__}); this backend's capture is partial"
                        ]
                    )
                )
        self._tokens.clear()
        return captures, interrupt


def _fill(target: Profile, captures: list[Capture], wall_seconds: float) -> None:
    target.wall_seconds = wall_seconds
    for name in FRAME_NAMES:
        if name == "findings":
            continue
        having = [capture for capture in captures if capture.rows.get(name)]
        built = having[0].frames.get(name) if len(having) == 1 else None
        if built is not None and len(built) == len(having[0].rows[name]):
            setattr(target, name, built.copy())
            continue
        rows = [row for capture in having for row in capture.rows[name]]
        if rows or not getattr(target, name).empty:  # a new Profile's frames are empty
            setattr(target, name, make_frame(name, rows))
    for capture in captures:
        target.notes.extend(capture.notes)
        target.environment.update(capture.environment)
