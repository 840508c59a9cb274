"""xlanb: a Jupyter-native profiler for lazy-tensor and XLA workloads.

In a notebook::

    %load_ext xlanb          # sets the runtimes' debug switches if they have not started

    %%xla_profile
    train_step()

In a script::

    import xlanb
    xlanb.enable()           # before importing torch_xla / starting torch._lazy
    with xlanb.profile() as prof:
        train_step()
    print(prof.compiles)

A plain ``import xlanb`` changes nothing in the process.
"""

from __future__ import annotations

from xlanb.errors import BackendUnavailable, CompileBudgetExceeded, FormatError, XlanbError
from xlanb.profile import FRAME_COLUMNS, Profile
from xlanb.recorder import history, last, profile

__all__ = [
    "FRAME_COLUMNS",
    "BackendUnavailable",
    "CompileBudgetExceeded",
    "FormatError",
    "Profile",
    "XlanbError",
    "enable",
    "history",
    "last",
    "load",
    "load_ipython_extension",
    "profile",
    "record",
    "unload_ipython_extension",
]
__version__ = "0.1.0"


def load(path) -> Profile:
    """Read a Profile from `path`, whatever the runtimes wrote there (the format is detected
    from the content): a Profile saved with :meth:`Profile.save`, a metrics report
    (``metrics_report()`` text of PyTorch/XLA or torch._lazy), an ``XLA_METRICS_FILE``, a
    ``PT_XLA_DEBUG_FILE``, an ``--xla_dump_to`` directory or one HLO module file; or a
    directory of rank files written by :func:`record` (one per process), merged into one
    Profile whose frames carry a ``rank`` column.

    Raises :class:`FormatError` (naming the file and its first line that does not fit) for
    anything else; an incomplete last record of an appended file is a
    :class:`xlanb.errors.TruncatedRecordWarning`."""
    from xlanb.offline import load as load_offline
    from xlanb.ranks import is_ranks_dir, load_ranks

    if is_ranks_dir(path):
        return load_ranks(path)
    return load_offline(path)


def record(directory, name: str | None = None, backend: str | list[str] = "auto",
           graphs: bool = True, **identity):
    """Like :class:`profile`, in one process of a multi-process run: when the block ends, the
    Profile is written (atomically) into `directory` with this process's rank, world size,
    host, device and the run id. ``xlanb.load(directory)`` merges the ranks. See
    :func:`xlanb.ranks.record` for `identity` (``rank=``, ``world_size=``, ``run_id=``,
    ``collectives=``)."""
    from xlanb.ranks import record as record_rank

    return record_rank(directory, name=name, backend=backend, graphs=graphs, **identity)


def enable() -> list[str]:
    """Set the debug switches of every installed runtime that has not started yet.

    Call it before importing torch_xla (or before the first torch._lazy sync). Returns, and
    prints, one line per runtime that started too early to be configured."""
    from xlanb import debug_env
    from xlanb.backends import BACKENDS

    notes = debug_env.enable(list(BACKENDS.values()))
    for note in notes:
        print(note)
    return notes


def _clear_debug_files_between_cells(result=None) -> None:
    from xlanb import debug_env, recorder

    if not recorder.active:
        debug_env.clear_owned_files()


def load_ipython_extension(ipython) -> None:
    """``%load_ext xlanb``: set the debug switches, register ``%%xla_profile``."""
    from xlanb.magics import XlaProfileMagics

    enable()
    ipython.register_magics(XlaProfileMagics)
    events = ipython.events
    if _clear_debug_files_between_cells not in events.callbacks["post_run_cell"]:
        events.register("post_run_cell", _clear_debug_files_between_cells)


def unload_ipython_extension(ipython) -> None:
    events = ipython.events
    if _clear_debug_files_between_cells in events.callbacks["post_run_cell"]:
        events.unregister("post_run_cell", _clear_debug_files_between_cells)
