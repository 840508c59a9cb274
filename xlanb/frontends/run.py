"""``xlanb run script.py [args...]``: run a Python script under the profiler.

The script runs in this process as ``__main__`` (``runpy``), with ``sys.argv`` set to the
script and its arguments and its directory first on ``sys.path``, as ``python script.py``
would. The runtimes' debug switches are set (:func:`xlanb.enable`) before the script starts,
and its frames are mapped like a notebook cell's: ``cell_line`` is the script's line and the
Profile's ``source`` is the script text.

With ``backend="auto"`` a runtime is profiled from the moment the script finishes importing it
(``torch_xla``, ``torch._lazy`` or ``jax``; torch._lazy is dropped again if torch_xla arrives,
as ``auto`` does in notebooks); a named backend is started before the script runs.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import runpy
import sys
import threading
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import IO, Any

import xlanb
from xlanb.api import profile
from xlanb.capture import backends as backend_registry
from xlanb.core.profile import Profile
from xlanb.core.words import counted
from xlanb.ranks import save_rank

#: Module whose import starts a backend under ``auto``: module name -> backend name.
WATCHED_IMPORTS = {"torch_xla": "torch_xla", "torch._lazy": "torch_lazy", "jax": "jax"}
TTY_PROGRESS_SECONDS = 1.0
LOG_PROGRESS_SECONDS = 10.0


class ScriptProfile(profile):
    """A :class:`xlanb.profile` that backends join while it runs (when the script imports a
    runtime) and leave (torch._lazy once torch_xla replaces it): see
    :meth:`xlanb.capture.recorder.Recorder.join`."""


class _NotifyingLoader(importlib.abc.Loader):
    """Wraps a module's loader: runs `on_loaded(name)` once the module has executed."""

    def __init__(self, loader: importlib.abc.Loader, on_loaded: Callable[[str], None]) -> None:
        self._loader = loader
        self._on_loaded = on_loaded

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._on_loaded(module.__name__)

    def __getattr__(self, name: str) -> Any:  # get_resource_reader, is_package, ...
        return getattr(self._loader, name)


class ImportWatcher(importlib.abc.MetaPathFinder):
    """Calls `on_loaded(name)` after any of `names` is imported for the first time."""

    def __init__(self, names: Sequence[str], on_loaded: Callable[[str], None]) -> None:
        self.names = set(names)
        self.on_loaded = on_loaded

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.names:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _NotifyingLoader(spec.loader, self.on_loaded)
                return spec
        return None

    def __enter__(self) -> ImportWatcher:
        sys.meta_path.insert(0, self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)


class ProgressLine:
    """The progress line on stderr; `counts()` gives the running totals to show after the
    elapsed time ("" for none).

    While the script runs, a background thread writes one line to stderr with the elapsed time
    and, where the backends can tell cheaply (torch_xla, torch._lazy: their counters), the
    compiles, executions, syncs and CPU fallbacks so far: every second, rewritten in place,
    when stderr is a terminal; otherwise one plain line every 10 seconds (so CI logs stay
    short). ``progress_every=0`` turns it off.
    """

    def __init__(
        self,
        label: str,
        stream: IO[str],
        every: float | None,
        counts: Callable[[], str] = lambda: "",
    ) -> None:
        self.label = label
        self.counts = counts
        self.stream = stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.every = (
            every
            if every is not None
            else (TTY_PROGRESS_SECONDS if self.tty else LOG_PROGRESS_SECONDS)
        )
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="xlanb-progress", daemon=True)
        self._started = time.perf_counter()
        self._written = False

    def line(self) -> str:
        elapsed = time.perf_counter() - self._started
        try:
            counted = self.counts()
        except Exception:
            counted = ""
        return f"xlanb run: {self.label} {elapsed:.0f} s{counted}"

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            text = self.line()
            try:
                if self.tty:
                    self.stream.write("\r" + text + "\033[K")
                else:
                    self.stream.write(text + "\n")
                self.stream.flush()
                self._written = True
            except (OSError, ValueError):
                return

    def __enter__(self) -> ProgressLine:
        self._started = time.perf_counter()
        if self.every > 0:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        if self.tty and self._written:
            try:
                self.stream.write("\r\033[K")
                self.stream.flush()
            except (OSError, ValueError):
                pass


def run_script(
    script: str | os.PathLike,
    args: Sequence[str] = (),
    *,
    backend: str | list[str] = "auto",
    graphs: bool = True,
    name: str | None = None,
    report: str | os.PathLike | None = None,
    save: str | os.PathLike | None = None,
    trace: str | os.PathLike | None = None,
    progress_every: float | None = None,
    ranks_dir: str | os.PathLike | None = None,
    stream: IO[str] | None = None,
) -> Profile:
    """Run `script` with `args` under the profiler; write `report` (HTML), `save` (profile
    JSON) and `trace` (Chrome trace JSON) when given, even if the script fails, then return
    the Profile or re-raise what the script raised (``SystemExit`` included). With
    `ranks_dir`, the profile is also written there as this process's rank file
    (:func:`xlanb.ranks.save_rank`), for runs with one process per device."""
    stream = stream if stream is not None else sys.stderr
    path = os.path.abspath(os.fspath(script))
    with open(path, encoding="utf-8") as handle:
        source = handle.read()
    xlanb.enable()  # before the script imports any runtime
    explicit = backend != "auto"
    capture = ScriptProfile(
        backend if explicit else [],
        name or os.path.basename(path),
        graphs,
        cell_filename=path,
        source=source,
    )

    on_import = _backend_joiner(capture, backend_registry.BACKENDS)
    counts = _progress_counts(capture)

    saved_argv, saved_path = sys.argv[:], sys.path[:]
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(path))
    watcher = ImportWatcher([] if explicit else list(WATCHED_IMPORTS), on_import)
    progress = ProgressLine(os.path.basename(path), stream, progress_every, counts)
    exit_request: SystemExit | None = None
    try:
        with watcher, progress, capture:
            if not explicit:
                for module_name in WATCHED_IMPORTS:  # imported before the script started
                    if module_name in sys.modules:
                        on_import(module_name)
            try:
                runpy.run_path(path, run_name="__main__")
            except SystemExit as request:  # sys.exit(0) is a normal end, not a failure
                exit_request = request
        if exit_request is not None and exit_request.code not in (0, None):
            capture.profile.failed = True
            capture.profile.error = f"SystemExit: {exit_request.code}"
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
        _write_outputs(capture.profile, report, save, trace, stream)
        if ranks_dir is not None:
            _write_rank(capture.profile, ranks_dir, stream)
    if exit_request is not None:
        raise exit_request
    return capture.profile


def _backend_joiner(capture: ScriptProfile, backends: dict[str, Any]) -> Callable[[str], None]:
    """What to do when the script imports a watched runtime: join its backend (torch_xla
    replaces torch_lazy); a backend that cannot start becomes a note."""

    def on_import(module_name: str) -> None:
        chosen = backends.get(WATCHED_IMPORTS[module_name])
        if chosen is None:
            return
        if chosen.NAME == "torch_xla":
            capture.leave(backends["torch_lazy"])
        elif chosen.NAME == "torch_lazy" and "torch_xla" in sys.modules:
            return
        try:
            capture.join(chosen)
        except Exception as error:
            capture.profile.notes.append(f"{chosen.NAME}: could not start: {error!r}")

    return on_import


def _progress_counts(capture: ScriptProfile) -> Callable[[], str]:
    """The progress line's counts so far (compiles, executions, syncs, CPU fallbacks)."""

    def counts() -> str:
        if not capture.profile.backends:
            return ""
        totals = capture.progress()
        return (
            f", {counted(totals.compiles, 'compile')}, "
            f"{counted(totals.executions, 'execution')}, {counted(totals.syncs, 'sync')}, "
            f"{counted(totals.fallbacks, 'CPU fallback')}"
        )

    return counts


def _write_rank(profile: Profile, ranks_dir: str | os.PathLike, stream: IO[str]) -> None:
    try:
        stream.write(f"xlanb: wrote {save_rank(profile, ranks_dir)}\n")
    except Exception as error:
        stream.write(f"xlanb: could not write a rank file in {ranks_dir}: {error}\n")


def _write_outputs(
    profile: Profile,
    report: str | os.PathLike | None,
    save: str | os.PathLike | None,
    trace: str | os.PathLike | None,
    stream: IO[str],
) -> None:
    for target, write in (
        (report, profile.to_html),
        (save, profile.save),
        (trace, profile.to_chrome_trace),
    ):
        if target is None:
            continue
        try:
            write(target)
            stream.write(f"xlanb: wrote {os.path.abspath(target)}\n")
        except Exception as error:
            stream.write(f"xlanb: could not write {target}: {error}\n")
