"""The version gate (xlanb/capture/versions.py): declared ranges, what is off outside them,
said once; and everything generated from it or pinned for it (README table, Makefile,
pyproject extras) agreeing with it. No runtime is imported."""

from __future__ import annotations

import os
import re

import pytest
import tomllib

from tests.support.helpers import ROOT
from xlanb.capture import versions
from xlanb.capture.backends import torch_lazy, torch_xla


@pytest.mark.parametrize(
    ("text", "release"),
    [
        ("0.10.2", (0, 10, 2)),
        ("2.8.0+cu128", (2, 8, 0)),
        ("2.9.0rc1", (2, 9, 0)),
        ("0.6.1.dev20250101", (0, 6, 1)),
        ("2.14", (2, 14)),
    ],
)
def test_release_numbers(text, release):
    assert versions.parse_version(text) == release


@pytest.mark.parametrize(
    ("backend", "inside", "outside"),
    [
        ("jax", ["0.6.1", "0.8.2", "0.10.2", "0.11.2", "0.12.0.1"], ["0.4.38", "0.6.0"]),
        ("torch_lazy", ["2.7.0", "2.8.0", "2.13.0", "2.14.1+cpu", "2.15.0+cu132"], ["2.6.0"]),
        ("torch_xla", ["2.8.0", "2.9.0"], ["2.6.0"]),
    ],
)
def test_gate_in_and_below_the_range(backend, inside, outside):
    runtime = versions.RUNTIMES[backend]
    private = [f.name for f in runtime.features if f.private]
    public = [f.name for f in runtime.features if not f.private]
    assert private and public
    for release in inside:
        gate = versions.check(backend, release)
        assert gate.supported and gate.note is None
        assert all(gate.allows(name) for name in private + public)
    for release in outside:
        gate = versions.check(backend, release)
        assert not gate.supported
        assert not any(gate.allows(name) for name in private)
        assert all(gate.allows(name) for name in public)
        # one line naming the runtime, the release, the range and every feature that is off
        assert gate.note is not None and "\n" not in gate.note
        assert gate.note.startswith(f"{backend}: {runtime.distribution} {release} is outside")
        assert runtime.range_text in gate.note
        assert all(name in gate.note for name in private)


@pytest.mark.parametrize(
    ("backend", "newer"),
    [
        ("jax", ["0.13.0", "0.14.1", "1.0.0"]),
        ("torch_lazy", ["2.16.0", "2.16.0+cpu", "3.0.0"]),
        ("torch_xla", ["2.10.0", "2.11.0rc1"]),
    ],
)
def test_a_release_newer_than_tested_stays_on_and_says_so_in_one_line(backend, newer):
    """A release above the tested range keeps every feature (each private touch point is
    still checked at first use, and only a failing one is off); the first profile says once,
    in one line, that it is newer than tested."""
    runtime = versions.RUNTIMES[backend]
    for release in newer:
        gate = versions.check(backend, release)
        assert gate.supported and gate.newer and gate.lacked == ()
        assert all(gate.allows(feature.name) for feature in runtime.features)
        assert gate.note == (
            f"{backend}: {runtime.distribution} {release} is newer than the releases xlanb "
            f"was tested on ({runtime.range_text}); its features stay on, each checked at "
            "first use (one that fails is off and said)."
        )
        assert versions.tell_once([gate.note, gate.note]) == [gate.note]
        assert versions.tell_once([gate.note]) == []
    # the newest tested series is inside the range, not newer
    newest = max(runtime.tested, key=versions.parse_version)
    assert not versions.check(backend, newest).newer


def test_jax_range_runs_to_the_newest_release_tested():
    """JAX 0.11 and 0.12 (Python 3.12) are tested: 0.12.0.1 is the range's newest end."""
    runtime = versions.RUNTIMES["jax"]
    assert runtime.tested[-1] == "0.12.0.1" and runtime.range_text == "0.6.1 to 0.12.x"
    for release in ("0.11.0", "0.11.2", "0.12.0", "0.12.0.1"):
        gate = versions.check("jax", release)
        assert gate.supported and not gate.newer and gate.note is None


def test_a_feature_a_release_of_the_range_lacks_is_off_and_said_in_one_line():
    """torch_xla 2.7 is inside the range but writes no per-op events into its CPU trace:
    only the device trace is off, and the note names the release, the feature, why, and the
    first release that has it."""
    gate = versions.check("torch_xla", "2.7.0")
    assert gate.supported and gate.lacked == (torch_xla.TRACE_FEATURE,)
    assert not gate.allows(torch_xla.TRACE_FEATURE)
    others = [f.name for f in versions.RUNTIMES["torch_xla"].features]
    assert all(gate.allows(name) for name in others if name != torch_xla.TRACE_FEATURE)
    assert gate.note == (
        "torch_xla: torch_xla 2.7.0 writes no per-op events into its CPU trace (its runs are "
        "there, not their ops), so device trace (per-op device times) is off (on from "
        "torch_xla 2.8)."
    )
    assert versions.check("torch_xla", "2.7.1").lacked == (torch_xla.TRACE_FEATURE,)
    assert versions.check("torch_xla", "2.8.0").lacked == ()
    # outside the range the one note is the range's, naming the trace among the rest
    assert "outside" in (versions.check("torch_xla", "2.6.0").note or "")


def test_a_runtime_not_installed_has_no_note():
    gate = versions.check("jax", None)
    assert not gate.supported and gate.note is None


def test_an_unknown_feature_is_an_error():
    with pytest.raises(KeyError):
        versions.check("jax", "0.10.2").allows("telepathy")


def test_the_backends_switch_declared_features():
    gate = versions.check("torch_xla", "2.9.0")
    assert gate.allows(torch_xla.CAUSES_FEATURE) and gate.allows(torch_xla.TRACE_FEATURE)
    gate = versions.check("torch_lazy", "2.13.0")
    assert gate.allows(torch_lazy.SYNC_FEATURE) and gate.allows(torch_lazy.GRAPHS_FEATURE)


def test_each_note_is_told_once_per_session():
    note = "jax: a feature this test made up is off (told once)."
    assert versions.tell_once([note, None, note]) == [note]
    assert versions.tell_once([note]) == []
    other = note.replace("made up", "also made up")
    assert versions.tell_once([note, other]) == [other]


def _makefile_pins() -> dict[str, set[str]]:
    text = (ROOT / "Makefile").read_text()
    pins: dict[str, set[str]] = {}
    for name, release in re.findall(r"\b([a-z][a-z_-]*)==([0-9][\w.]*)", text):
        pins.setdefault(name.replace("-", "_"), set()).add(release)
    return pins


def test_make_test_runs_every_tested_release():
    pins = _makefile_pins()
    for runtime in versions.RUNTIMES.values():
        for release in runtime.tested:
            assert release in pins.get(runtime.distribution.replace("-", "_"), set()), (
                f"the Makefile installs no {runtime.distribution}=={release}"
            )
        # the ends of the range are the ones tested
        tested = sorted(versions.parse_version(r) for r in runtime.tested)
        assert tested[0][: len(runtime.oldest)] == runtime.oldest
        assert tested[-1][: len(runtime.below) - 1] == runtime.below[:-1]
        assert tested[-1][len(runtime.below) - 1] == runtime.below[-1] - 1


def test_pyproject_extras_are_ranges_holding_every_tested_release():
    """Each extra starts at the oldest supported release and allows at least every release
    of the tested range (an extra may allow a newer series, which the gate keeps on: a user's
    newer runtime is not downgraded); ranges, never exact pins."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    for extra, runtime in (("torch", "torch_lazy"), ("xla", "torch_xla"), ("jax", "jax")):
        gate = versions.RUNTIMES[runtime]
        name = gate.distribution.replace("_", "-")
        oldest = ".".join(map(str, gate.oldest))
        (requirement,) = [r for r in extras[extra] if re.match(rf"{name}[<>=]", r)]
        found = re.fullmatch(rf"{re.escape(name)}>={re.escape(oldest)}(?:,<([\d.]+))?", requirement)
        assert found is not None, (extra, requirement)
        if found.group(1) is not None:
            assert versions.parse_version(found.group(1)) >= gate.below, (extra, requirement)
    assert "==" not in str(extras)
    assert "jax>=0.6.1,<0.13" in extras["jax"]
    assert "torch>=2.7,<2.16" in extras["torch"]  # torch 2.15: newer than tested, kept on


def test_the_profilers_noise_on_fd_2_is_dropped_and_every_other_line_kept(capfd):
    """jaxlib 0.6 writes this line to fd 2 at each profiler start and stop (C++, not Python
    logging); anything else written meanwhile reaches stderr unchanged."""
    from xlanb.capture.runtime_stderr import runtime_noise_dropped

    noise = (
        b"2026-11-25 21:53:07.449167: E external/xla/xla/python/profiler/internal/"
        b"python_hooks.cc:412] Can't import tensorflow.python.profiler.trace\n"
    )
    with runtime_noise_dropped():
        os.write(2, noise)
        os.write(2, b"the user's own line\n")
        os.write(2, noise)
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "the user's own line\nafter\n"
