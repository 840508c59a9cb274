"""``%load_ext xlanb``: set the debug switches, register the magics, keep debug files small."""

from __future__ import annotations

from xlanb.api import enable
from xlanb.capture import recorder, workdir
from xlanb.capture.backends import BACKENDS
from xlanb.frontends.cells import note_cell
from xlanb.frontends.magics import XlaProfileMagics
from xlanb.frontends.status import ready_line


def _clear_debug_files_between_cells(result=None) -> None:
    """After a cell run without profiling: what the runtimes wrote goes into their session
    memory (compile causes compare with it), then the files are emptied (unless a compile is
    still being written: the janitor empties them later)."""
    if recorder.capturing():
        return
    ready = True
    for backend in BACKENDS.values():
        remember = getattr(backend, "between_cells", None)
        if remember is not None and backend.is_imported():
            try:
                ready = remember() is not False and ready
            except Exception:  # only the next compile's cause is less exact
                pass
    if ready:
        workdir.clear_owned_files()


def load_ipython_extension(ipython, announce: bool = True) -> None:
    """``%load_ext xlanb``: set the debug switches, register ``%%xla_profile``, and (with
    `announce`) show one line saying which runtimes it found and which switches it set. The
    xlanb kernel loads it silently before the first cell; the notebook's own ``%load_ext
    xlanb`` then shows the line (instead of IPython's "already loaded")."""
    enable()
    if "XlaProfileMagics" not in ipython.magics_manager.registry:
        ipython.register_magics(XlaProfileMagics)
    if announce:
        from IPython.display import display

        display({"text/plain": ready_line(BACKENDS)}, raw=True)
    events = ipython.events
    if _clear_debug_files_between_cells not in events.callbacks["post_run_cell"]:
        events.register("post_run_cell", _clear_debug_files_between_cells)
    if note_cell not in events.callbacks["pre_run_cell"]:
        events.register("pre_run_cell", note_cell)


def unload_ipython_extension(ipython) -> None:
    events = ipython.events
    if _clear_debug_files_between_cells in events.callbacks["post_run_cell"]:
        events.unregister("post_run_cell", _clear_debug_files_between_cells)
    if note_cell in events.callbacks["pre_run_cell"]:
        events.unregister("pre_run_cell", note_cell)
