"""xlanb's workdir: the one temporary directory the debug switches write into, emptied after
every cell and removed at exit so the files never grow without bound, and the readers of the
files the runtimes append to there."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

#: This process's workdir (informational: child processes make their own).
WORKDIR_ENV = "XLANB_WORKDIR"
#: Where workdirs are made (the xlanb kernel sets it to a per-kernel directory).
WORKDIR_ROOT_ENV = "XLANB_WORKDIR_ROOT"

#: How often the janitor empties the files while no capture runs (:func:`start_janitor`).
JANITOR_SECONDS = 2.0


@dataclass(eq=False)
class _WorkdirState:
    """This module's mutable state, one instance (:data:`_STATE`). ``lock`` guards ``holds``
    and the emptying of the files (a capture cannot begin while they are emptied)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    #: This process's workdir, made on first use.
    workdir: str | None = None
    #: Captures in progress in this process (:func:`hold`): files are emptied only by the last.
    holds: int = 0
    #: The janitor thread (:func:`start_janitor`), its extra tasks and readers.
    janitor: threading.Thread | None = None
    janitor_tasks: list[Callable[[], object]] = field(default_factory=list)
    janitor_readers: list[Callable[[], bool]] = field(default_factory=list)


_STATE = _WorkdirState()
#: Workdir names carry the pid of their process, so a dead process's can be swept.
_NAME = re.compile(r"xlanb-(\d+)-")


def path() -> str:
    """This process's directory for the files the debug switches write (made on first use,
    removed at exit; those left by processes that were killed are removed then too)."""
    if _STATE.workdir is None:
        root = os.environ.get(WORKDIR_ROOT_ENV) or None
        if root:
            Path(root).mkdir(parents=True, exist_ok=True)
        sweep_stale(root or tempfile.gettempdir())
        _STATE.workdir = tempfile.mkdtemp(prefix=f"xlanb-{os.getpid()}-", dir=root)
        os.environ[WORKDIR_ENV] = _STATE.workdir
        atexit.register(shutil.rmtree, _STATE.workdir, True)
    return _STATE.workdir


def sweep_stale(root: str) -> list[str]:
    """Remove the workdirs under `root` whose process is gone (a killed kernel's); returns
    them. Only directories named by xlanb with a pid are touched."""
    removed = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        match = _NAME.match(entry.name)
        if not match or not entry.is_dir(follow_symlinks=False):
            continue
        pid = int(match.group(1))
        if pid == os.getpid() or _alive(pid):
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(entry.path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # someone else's process (or unknowable): keep its directory
    return True


def hold() -> None:
    """A capture begins: the files are read by offset, and emptied only by the last capture
    to end (a nested or overlapping capture never empties what an outer one still needs)."""
    with _STATE.lock:
        _STATE.holds += 1


def release() -> None:
    with _STATE.lock:
        _STATE.holds = max(_STATE.holds - 1, 0)


def held() -> int:
    """Captures in progress (the caller's own included)."""
    return _STATE.holds


def start_janitor(
    also: Callable[[], object] | None = None, read_first: Callable[[], bool] | None = None
) -> None:
    """Empty the owned files every :data:`JANITOR_SECONDS` while no capture runs, so they stay
    small in scripts and long unprofiled cells too (a daemon thread, started once); `also` is
    run on each round too (its errors are ignored). `read_first` reads what the files hold
    (the compiles of unprofiled code) before they are emptied, and returns False while a
    runtime is still writing them (a compile in flight): that round empties nothing."""
    if also is not None and also not in _STATE.janitor_tasks:
        _STATE.janitor_tasks.append(also)
    if read_first is not None and read_first not in _STATE.janitor_readers:
        _STATE.janitor_readers.append(read_first)
    if _STATE.janitor is not None:
        return
    _STATE.janitor = threading.Thread(
        target=_sweep_forever, name="xlanb-workdir-janitor", daemon=True
    )
    _STATE.janitor.start()


def _sweep_forever() -> None:
    stop = threading.Event()
    while not stop.wait(JANITOR_SECONDS):
        if not _STATE.holds and all(
            _read_before_clearing(reader) for reader in list(_STATE.janitor_readers)
        ):
            clear_owned_files()
        for task in list(_STATE.janitor_tasks):
            try:
                task()
            except Exception:
                pass


def _read_before_clearing(reader: Callable[[], bool]) -> bool:
    try:
        return reader() is not False
    except Exception:  # a reader that fails must not keep the files growing
        return True


def is_owned(path: str | os.PathLike | None) -> bool:
    """Whether `path` lies in xlanb's workdir, so xlanb may truncate or delete it."""
    if not path or _STATE.workdir is None:
        return False
    try:
        return Path(path).resolve().is_relative_to(Path(_STATE.workdir).resolve())
    except OSError:
        return False


def current() -> str | None:
    """The workdir if it was made, else None (it is made on first use)."""
    return _STATE.workdir


class AppendedFile:
    """A file a runtime appends to; yields only what was appended since :meth:`start`."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.owned = is_owned(path)
        self._offset = 0

    def start(self) -> None:
        if not self.path:
            return
        if self.owned and held() <= 1:
            _truncate(self.path)
            self._offset = 0
        else:
            self._offset = _size(self.path)

    def read_new(self) -> str:
        if not self.path or not os.path.exists(self.path):
            return ""
        with open(self.path, encoding="utf-8", errors="replace") as handle:
            handle.seek(self._offset)
            text = handle.read()
        if self.owned and held() <= 1:
            _truncate(self.path)
            self._offset = 0
        else:
            self._offset += len(text.encode("utf-8", errors="replace"))
        return text


def empty_directory(path: str) -> None:
    """Delete the files directly in `path` (a dump directory xlanb owns)."""
    with os.scandir(path) as entries:
        for entry in entries:
            if entry.is_file():
                try:
                    os.unlink(entry.path)
                except FileNotFoundError:
                    pass


def clear_owned_files() -> None:
    """Empty every file xlanb owns in its workdir, unless a capture is in progress (between
    cells, and from the janitor)."""
    if _STATE.workdir is None or not os.path.isdir(_STATE.workdir):
        return
    with _STATE.lock:  # a capture cannot begin while its files are being emptied
        if _STATE.holds:
            return
        with os.scandir(_STATE.workdir) as entries:
            for entry in entries:
                if entry.is_file():
                    _truncate(entry.path)
                elif entry.is_dir() and not entry.name.startswith("trace-"):
                    empty_directory(entry.path)


def _truncate(path: str) -> None:
    try:
        if os.path.getsize(path):
            os.truncate(path, 0)
    except OSError:
        pass


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
