"""Which runtime releases xlanb supports, and which of its features each one gets.

One gate per runtime: a declared range of tested releases (its oldest and newest ends are the
ones ``make test`` runs), checked once against the installed release (read from the package
metadata; no runtime is imported here). From the oldest release up every feature is on, as
far as each private touch point's own check at first use allows (JAX's live in
:mod:`xlanb.capture.backends.jax.hooks`): only a failing one is off. A feature the older
releases of the range cannot give (its ``since``: torch_xla 2.7 traces no ops on the CPU) is
off on them, said once in one line with what they lack. A release newer than the range stays
on (users upgrade within days): the first profile of the session says once, in one line, that
it is newer than tested. Below the oldest release the features that reach into the runtime's
internals are off, said once per session in one line; those on its public API stay on.
The README's support table is made from :data:`RUNTIMES` by ``tools/support_table.py``.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

Version = tuple[int, ...]


@dataclass(frozen=True)
class Feature:
    """One thing xlanb measures on a runtime, and what it reads there."""

    name: str
    #: The runtime's API it relies on (Markdown, shown in the support table).
    uses: str
    #: Reaches into the runtime's internals (a private module, a log format, a C type): off
    #: below the oldest supported release.
    private: bool = True
    #: The first release of the range that gives it (None: every release in the range).
    since: Version | None = None
    #: What the releases before `since` lack (the note to the user says it).
    lacking: str = ""


@dataclass(frozen=True)
class Runtime:
    """A runtime's declared supported range and its features."""

    #: The backend's name (``jax``, ``torch_lazy``, ``torch_xla``).
    backend: str
    #: The distribution whose release is gated (``torch`` for torch._lazy).
    distribution: str
    #: The oldest supported release.
    oldest: Version
    #: The first release series not tested (``(0, 13)``: every 0.12.x is); releases from it on
    #: are newer than tested, and stay on.
    below: Version
    #: The releases ``make test`` runs on (its oldest and newest ends at least).
    tested: tuple[str, ...]
    features: tuple[Feature, ...]
    #: Why releases just outside the range are excluded (the README says it).
    excluded: str = ""

    @property
    def range_text(self) -> str:
        newest = ".".join(map(str, self.below[:-1] + (self.below[-1] - 1,)))
        return f"{_text(self.oldest)} to {newest}.x"


def _text(version: Version) -> str:
    return ".".join(map(str, version))


RUNTIMES: dict[str, Runtime] = {
    "jax": Runtime(
        backend="jax",
        distribution="jax",
        oldest=(0, 6, 1),
        below=(0, 13),
        tested=("0.6.1", "0.10.2", "0.12.0.1"),
        features=(
            Feature("compiles and their times", "`jax.monitoring` duration events", private=False),
            Feature(
                "compile causes",
                "`jax_explain_cache_misses` and its log records (`jax._src.pjit` before 0.9, "
                "`jax._src.interpreters.partial_eval` from 0.9)",
            ),
            Feature("graphs and host callbacks", "`jax._src.compiler.compile_or_get_cached`"),
            Feature(
                "executions and host inputs",
                "`PjitFunction.__call__` of `jax._src.lib._jax` (its vectorcall flag cleared "
                "through ctypes)",
            ),
            Feature(
                "`jax.device_put` copies",
                "`jax._src.dispatch._batched_device_put_impl`, `device_put_p.impl`",
            ),
            Feature("values read back (syncs)", "`jax._src.array.ArrayImpl._value`"),
            Feature("unused donations", "the `warnings` global of `jax._src.interpreters.mlir`"),
            Feature(
                "device trace (per-op device times)",
                "`jax._src.lib._profiler.ProfilerSession` (else `jax.profiler.start_trace`)",
            ),
            Feature("live arrays and memory", "`jax.live_arrays()`", private=False),
        ),
        excluded="JAX 0.6.0 and older are not tested; JAX 0.11 and newer need Python 3.12 "
        "(`make test-compat-jax-new` runs 0.12.0.1 there).",
    ),
    "torch_lazy": Runtime(
        backend="torch_lazy",
        distribution="torch",
        oldest=(2, 7),
        below=(2, 16),
        tested=("2.7.0", "2.13.0", "2.15.0"),
        features=(
            Feature(
                "counters and fallbacks",
                "`torch._lazy.metrics.counter_names` / `counter_value`",
                private=False,
            ),
            Feature("sync times (cached / uncached)", "`torch._C._lazy._mark_step` (wrapped)"),
            Feature("graphs and sync locations", "`LTC_SAVE_TENSORS_FILE` (its text format)"),
            Feature("runtime metrics", "`torch._C._lazy._metrics_report` (its text format)"),
        ),
        excluded="torch 2.6 and older are not tested (torch_xla 2.7 needs torch 2.7); torch "
        "2.15 is not tested (PyPI's build for Python 3.12 is a multi-GB CUDA build).",
    ),
    "torch_xla": Runtime(
        backend="torch_xla",
        distribution="torch_xla",
        oldest=(2, 7),
        below=(2, 10),
        tested=("2.7.0", "2.9.0"),
        features=(
            Feature(
                "counters, metrics and their samples", "`torch_xla.debug.metrics`", private=False
            ),
            Feature(
                "compile and execution causes, source lines",
                "`PT_XLA_DEBUG_FILE` (its wording)",
            ),
            Feature("graphs (HLO)", "`XLA_FLAGS=--xla_dump_to`", private=False),
            Feature(
                "device trace (per-op device times)",
                "`torch_xla._XLAC.profiler.TslProfilerSessionWrapper`",
                since=(2, 8),
                lacking="writes no per-op events into its CPU trace (its runs are there, "
                "not their ops)",
            ),
        ),
        excluded="torch_xla 2.6 and older are not tested; torch_xla 2.10 is not released yet.",
    ),
}


def parse_version(text: str) -> Version:
    """The release numbers of a version string: ``2.8.0+cpu`` and ``0.6.1.dev20250101`` are
    ``(2, 8, 0)`` and ``(0, 6, 1)``."""
    numbers = []
    for part in text.split("+", 1)[0].split("."):
        found = re.match(r"\d+", part)
        if found is None:
            break
        numbers.append(int(found.group()))
        if found.end() < len(part):  # 2.9.0rc1: the release number ends here
            break
    return tuple(numbers)


@dataclass(frozen=True)
class Gate:
    """The outcome of checking one runtime's installed release against its range."""

    backend: str
    #: The installed release, None when the runtime is not installed.
    version: str | None
    #: From the oldest supported release up (newer than the tested range included).
    supported: bool
    #: One line for the user when the release is below the range, newer than it, or inside
    #: it but older than a feature's `since`.
    note: str | None = None
    #: The features that this release of the range lacks (older than their `since`).
    lacked: tuple[str, ...] = ()
    #: Newer than the tested range: on, each private touch point checked at first use.
    newer: bool = False

    def allows(self, feature: str) -> bool:
        """Whether the named feature is on (private features need a release from the oldest
        supported one, and each feature a release from its `since`)."""
        runtime = RUNTIMES[self.backend]
        for declared in runtime.features:
            if declared.name == feature:
                if declared.name in self.lacked:
                    return False
                return self.supported or not declared.private
        raise KeyError(f"{self.backend} has no feature {feature!r}")


def check(backend: str, version: str | None) -> Gate:
    """`version` of `backend`'s runtime against the declared range (pure: no import)."""
    runtime = RUNTIMES[backend]
    if version is None:
        return Gate(backend, None, False)
    release = parse_version(version)
    if release >= runtime.below:
        note = (
            f"{backend}: {runtime.distribution} {version} is newer than the releases xlanb "
            f"was tested on ({runtime.range_text}); its features stay on, each checked at "
            "first use (one that fails is off and said)."
        )
        return Gate(backend, version, True, note, newer=True)
    if runtime.oldest <= release:
        lacked = [f for f in runtime.features if f.since is not None and release < f.since]
        if not lacked:
            return Gate(backend, version, True)
        note = "; ".join(
            f"{backend}: {runtime.distribution} {version} {feature.lacking}, so "
            f"{feature.name} is off (on from {runtime.distribution} {_text(feature.since)})"
            for feature in lacked
            if feature.since is not None
        )
        return Gate(backend, version, True, note + ".", tuple(f.name for f in lacked))
    off = [feature.name for feature in runtime.features if feature.private]
    kept = [feature.name for feature in runtime.features if not feature.private]
    note = (
        f"{backend}: {runtime.distribution} {version} is outside xlanb's supported range "
        f"({runtime.range_text}), so {', '.join(off)} are off; "
        f"{', '.join(kept)} still work."
    )
    return Gate(backend, version, False, note)


def installed_version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


@functools.cache
def gate(backend: str) -> Gate:
    """The installed release of `backend`'s runtime against its range, checked once."""
    return check(backend, installed_version(RUNTIMES[backend].distribution))


@dataclass(eq=False)
class _VersionsState:
    """This module's mutable state, one instance (:data:`_STATE`)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    #: The notes told this session (:func:`tell_once`).
    told: set[str] = field(default_factory=set)


_STATE = _VersionsState()


def tell_once(notes: Iterable[str | None]) -> list[str]:
    """The notes not told yet in this session (each feature that is off is said once, with
    the first profile that would have had it, not with every profile)."""
    fresh = []
    with _STATE.lock:
        for note in notes:
            if note and note not in _STATE.told:
                _STATE.told.add(note)
                fresh.append(note)
    return fresh


def support_table() -> str:
    """The README's support table: one row per runtime and feature (Markdown)."""
    lines = [
        "| runtime | tested releases | tested in `make test` | feature | reads | below the range |",
        "|---|---|---|---|---|---|",
    ]
    for runtime in RUNTIMES.values():
        label = "torch._lazy (torch)" if runtime.backend == "torch_lazy" else runtime.distribution
        for index, feature in enumerate(runtime.features):
            first = index == 0
            lines.append(
                "| "
                + " | ".join(
                    [
                        label if first else "",
                        runtime.range_text if first else "",
                        ", ".join(runtime.tested) if first else "",
                        feature.name,
                        feature.uses
                        + (
                            f"; off before {_text(feature.since)}: {feature.lacking}"
                            if feature.since is not None
                            else ""
                        ),
                        "off" if feature.private else "on",
                    ]
                )
                + " |"
            )
    return "\n".join(lines)
