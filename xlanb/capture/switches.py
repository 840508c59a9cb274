"""The runtimes' debug switches: set them before a runtime starts.

PyTorch/XLA, torch._lazy and XLA read these environment variables once, at start-up. xlanb
points them into its workdir (:mod:`xlanb.capture.workdir`). A switch the user set themselves
wins: xlanb reads that file too but never truncates or deletes it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from xlanb.capture import workdir

#: The switches xlanb set, as JSON, so that a child process replaces them with its own
#: instead of writing into its parent's files.
SWITCHES_ENV = "XLANB_SWITCHES"


@dataclass(eq=False)
class _SwitchState:
    """This module's mutable state, one instance (:data:`_STATE`); its containers are only
    changed in place."""

    #: The runtimes (and switches) whose one-line note was given this session.
    notes_given: set[str] = field(default_factory=set)
    #: The user's own value (None: unset) of each switch xlanb changed, to put back.
    user_values: dict[str, str | None] = field(default_factory=dict)
    #: The values the runtimes started with, for the switches put back by :func:`seal`.
    sealed: dict[str, str | None] = field(default_factory=dict)
    #: Whether :func:`enable` set the costly switches in this process.
    deep: bool = False
    #: The runtimes :func:`enable` configured (for :func:`seal_read`).
    enabled: list = field(default_factory=list)


_STATE = _SwitchState()


def value(name: str) -> str | None:
    """The value the runtime read for switch `name`: the environment's, or the one it had
    before :func:`seal` put the user's back."""
    return _STATE.sealed[name] if name in _STATE.sealed else os.environ.get(name)


def seal(backends: list) -> list[str]:
    """Put the user's own environment back for the switches of every runtime that has read
    them (they are read once, at start-up), so a child process the user starts (a script
    run with ``subprocess``) never writes into this process's files. Returns the names put
    back. A child that imports xlanb sets switches of its own."""
    sealed = []
    inherited = json.loads(os.environ.get(SWITCHES_ENV, "{}"))
    for backend in backends:
        read = getattr(backend, "switches_read", None)
        if read is None:
            continue
        try:  # asked first: it imports nothing, and a runtime not imported has read nothing
            if not read():
                continue
        except Exception:
            continue
        if not backend.is_installed():  # looked up on disk: only for a runtime that read
            continue
        for name in backend.SWITCH_NAMES:
            if name not in _STATE.user_values or name in _STATE.sealed:
                continue
            _STATE.sealed[name] = os.environ.get(name)
            user = _STATE.user_values[name]
            if user is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = user
            inherited.pop(name, None)
            sealed.append(name)
    if sealed:
        if inherited:
            os.environ[SWITCHES_ENV] = json.dumps(inherited)
        else:
            os.environ.pop(SWITCHES_ENV, None)
    return sealed


def pending() -> bool:
    """Whether a switch xlanb set is still in the environment (not given back yet)."""
    return len(_STATE.sealed) < len(_STATE.user_values)


def seal_pending() -> list[str]:
    """:func:`seal_read` while a switch xlanb set is not given back yet, else nothing (cheap):
    called right after a runtime synced or read a value (its first compile has read the
    switches), so a child process started next in the cell does not inherit them."""
    return seal_read() if pending() else []


#: Set to 1 in the environment for the costly switches too (what ``enable(deep=True)`` does).
DEEP_ENV = "XLANB_DEEP"


def enable(backends: list, deep: bool | None = None) -> list[str]:
    """Set each installed runtime's debug switches if it has not started yet; `deep` (default:
    ``XLANB_DEEP=1`` in the environment) adds the costly ones.

    Returns one-line notes for runtimes that started too early (each said once a session)."""
    if deep is None:  # a later plain enable() (%load_ext xlanb) keeps an earlier deep one
        deep = os.environ.get(DEEP_ENV) == "1" or _STATE.deep
    _STATE.deep = deep
    notes = []
    for backend in backends:
        if not backend.is_installed():
            continue
        if backend.has_started():
            note = (
                f"xlanb: {backend.NAME} started before xlanb was loaded, so its debug "
                f"switches are off ({backend.LATE_LOSS}); run `%load_ext xlanb` (or "
                "`xlanb.enable()`) before importing it, or use the xlanb kernel."
            )
            if backend.NAME not in _STATE.notes_given:
                _STATE.notes_given.add(backend.NAME)
                notes.append(note)
            continue
        inherited = json.loads(os.environ.get(SWITCHES_ENV, "{}"))
        ours = {}
        for name, setting in backend.debug_switches(workdir.path(), deep).items():
            current = os.environ.get(name, "")
            if name == "XLA_FLAGS":
                flags = [f for f in current.split() if f not in inherited.get(name, "").split()]
                if dump_dir_from_flags(" ".join(flags)):
                    # the user dumps HLO themselves: their flags stay exactly as they set them
                    os.environ[name] = " ".join(flags)
                    if "--xla_dump_hlo_as_text" not in flags and name not in _STATE.notes_given:
                        _STATE.notes_given.add(name)
                        notes.append(
                            "xlanb: your XLA_FLAGS dump HLO without --xla_dump_hlo_as_text; "
                            "xlanb leaves them as set, so it shows no HLO graphs or op source "
                            "lines from the dump."
                        )
                    continue
                added = _missing_flags(flags, setting)
                os.environ[name] = " ".join(flags + added.split())
                ours[name] = added
                _STATE.user_values.setdefault(name, " ".join(flags) or None)
            elif not current or inherited.get(name) == current:
                os.environ[name] = ours[name] = setting
                _STATE.user_values.setdefault(name, None)  # unset, or only the parent's value
        os.environ[SWITCHES_ENV] = json.dumps({**inherited, **ours})
    if _STATE.user_values:
        _STATE.enabled[:] = backends
        # the files stay small between captures, and the environment is put back once read
        workdir.start_janitor(seal_read, read_first=_remember_unprofiled)
    return notes


def _remember_unprofiled() -> bool:
    """The janitor's first step: each configured runtime that has started remembers the
    compiles its files hold (``between_cells``); False while one is still writing them."""
    ready = True
    for backend in _STATE.enabled:
        remember = getattr(backend, "between_cells", None)
        if remember is not None and backend.has_started():
            ready = remember() is not False and ready
    return ready


def set_by_xlanb() -> list[str]:
    """The switches :func:`enable` set in this process (their values: :func:`value`)."""
    return list(_STATE.user_values)


def seal_read() -> list[str]:
    """:func:`seal` for the runtimes :func:`enable` configured (at the start and the end of
    each capture, after a sync or a read inside one, and from the workdir's janitor)."""
    return seal(_STATE.enabled) if _STATE.enabled else []


#: Every switch a runtime reads at start-up, for ``%xla_profile status``.
KNOWN_SWITCHES = (
    "PT_XLA_DEBUG_LEVEL",
    "PT_XLA_DEBUG_FILE",
    "PT_XLA_DEBUG_MAX_FRAME",
    "XLA_IR_DEBUG",
    "XLA_HLO_DEBUG",
    "XLA_FLAGS",
    "LTC_SAVE_TENSORS_FILE",
    "LTC_SAVE_TENSORS_FMT",
    "PJRT_DEVICE",
)


def _missing_flags(existing: list[str], ours: str) -> str:
    """Our XLA flags that the user did not set themselves."""
    present = {flag.split("=", 1)[0] for flag in existing}
    return " ".join(flag for flag in ours.split() if flag.split("=", 1)[0] not in present)


def dump_dir_from_flags(flags: str) -> str | None:
    for flag in flags.split():
        if flag.startswith("--xla_dump_to="):
            return flag.split("=", 1)[1]
    return None
