"""The public API, composed from the layers below: :class:`profile` (capture + analysis),
:func:`record`, :func:`load` (offline formats + analysis), :func:`enable`, :func:`history`,
:func:`last`. ``xlanb`` re-exports these (and the IPython extension entry points of
:mod:`xlanb.frontends.extension`)."""

from __future__ import annotations

import xlanb.analysis.programs
import xlanb.formats.profile_json
import xlanb.views.methods  # noqa: F401 - registers Profile and Graph display
from xlanb.analysis import derive
from xlanb.api.profiling import derive_capture as derive_capture
from xlanb.api.profiling import profile as profile
from xlanb.api.ranks import record as record_rank
from xlanb.capture import switches
from xlanb.capture.backends import BACKENDS
from xlanb.capture.recorder import clear_history as clear_history
from xlanb.capture.recorder import history as history
from xlanb.capture.recorder import last as last
from xlanb.capture.recorder import set_history_limit as set_history_limit
from xlanb.core.profile import Profile
from xlanb.offline import read
from xlanb.offline.detect import SAVED_PROFILE
from xlanb.offline.one_run import is_one_run, merge_run_files
from xlanb.offline.ranks import is_ranks_dir
from xlanb.offline.ranks import load_ranks as merge_rank_files


def load(path, *more, dump=None) -> Profile:
    """Read a Profile from `path`, whatever the runtimes wrote there (the format is detected
    from the content): a Profile saved with :meth:`Profile.save`, a metrics report
    (``metrics_report()`` text of PyTorch/XLA or torch._lazy), an ``XLA_METRICS_FILE``, a
    ``PT_XLA_DEBUG_FILE``, an ``--xla_dump_to`` directory or one HLO module file; a profiler
    trace (an ``.xplane.pb`` at any depth of a folder, TensorBoard's ``plugins/profile/RUN/``
    included) with the XLA dump beside it (`dump` names its folder); or a
    directory of rank files written by :func:`record` (one per process), merged into one
    Profile whose frames carry a ``rank`` column.

    Several paths are one run's files, one of each format (``xlanb.load("metrics.txt",
    "debug.txt", "dump/")``), read as one Profile (see :mod:`xlanb.offline.one_run`); a
    ValueError says so when they are not.

    Raises :class:`FormatError` (naming the file and its first line that does not fit) for
    anything else; an incomplete last record of an appended file is a
    :class:`xlanb.errors.TruncatedRecordWarning`."""

    if more:
        profiles = load_inputs([path, *more])
        if len(profiles) > 1:
            raise ValueError(
                "xlanb.load: these files are not one run's (one file of each format, no saved "
                "profile): load them one by one and compare them"
            )
        return profiles[0]
    if is_ranks_dir(path):
        return load_ranks(path)
    return _derived(*read(path, dump))


def _derived(profile: Profile, file_format: str) -> Profile:
    """A Profile read from a file with its derived frames (a saved one has them)."""

    return profile if file_format == SAVED_PROFILE else derive(profile)


def load_inputs(paths: list) -> list[Profile]:
    """The Profiles of `paths` (as :func:`load` reads each); files of one run (several, of
    different runtime file formats) are one Profile."""

    if len(paths) > 1 and not any(is_ranks_dir(path) for path in paths):
        inputs = [read(path) for path in paths]  # each file is read once
        if is_one_run([file_format for _, file_format in inputs]):
            return [derive(merge_run_files(inputs))]
        return [_derived(profile, file_format) for profile, file_format in inputs]
    return [load(path) for path in paths]


def load_ranks(path, *, run_id: str | None = None, name: str | None = None) -> Profile:
    """The rank files in directory `path` merged into one Profile (see
    :func:`xlanb.offline.ranks.load_ranks`), with the rank findings."""

    return derive(merge_rank_files(path, run_id=run_id, name=name))


def record(
    directory,
    name: str | None = None,
    backend: str | list[str] = "auto",
    graphs: bool = True,
    **identity,
):
    """Like :class:`profile`, in one process of a multi-process run: when the block ends, the
    Profile is written (atomically) into `directory` with this process's rank, world size,
    host, device and the run id. ``xlanb.load(directory)`` merges the ranks. See
    :func:`xlanb.ranks.record` for `identity` (``rank=``, ``world_size=``, ``run_id=``,
    ``collectives=``)."""

    return record_rank(directory, name=name, backend=backend, graphs=graphs, **identity)


def enable(deep: bool | None = None) -> list[str]:
    """Set the debug switches of every installed runtime that has not started yet.

    Call it before importing torch_xla (or before the first torch._lazy sync). `deep=True`
    (or ``XLANB_DEEP=1`` in the environment) also sets the switches that cost the user's
    tracing time: torch_xla's ``XLA_IR_DEBUG``/``XLA_HLO_DEBUG``, for the source line of
    every HLO op. Returns, and prints, one line per runtime that started too early to be
    configured."""
    notes = switches.enable(list(BACKENDS.values()), deep)
    for note in notes:
        print(note)
    return notes
