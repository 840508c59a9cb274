"""What ``%xla_profile status`` prints."""

from __future__ import annotations

from xlanb.capture import switches, versions, workdir
from xlanb.capture.switches import KNOWN_SWITCHES


def status_text(auto_profiling: bool, backends: dict) -> str:
    """What ``%xla_profile status`` prints: auto-profiling, the `backends` (by name), debug
    switches."""
    lines = [f"auto-profiling: {'on' if auto_profiling else 'off'}", "runtimes:"]
    for name, backend in backends.items():
        state = (
            ("in use" if backend.is_imported() else "installed, not imported")
            if backend.is_installed()
            else "not installed"
        )
        release = versions.gate(name).version if name in versions.RUNTIMES else None
        lines.append(f"  {name}: {state}" + (f" ({release})" if release else ""))
    lines.append("debug switches:")
    for name in KNOWN_SWITCHES:
        value = switches.value(name)
        if value is not None:
            lines.append(f"  {name}={value}")
    lines.append(f"workdir: {workdir.current() or '(none yet)'}")
    return "\n".join(lines)


def _with_release(name: str) -> str:
    """A runtime's name with its installed release (``jax 0.10.2``, ``torch_lazy (torch
    2.13.0)``), and whether the release is below xlanb's supported range or newer than its
    tested one."""
    if name not in versions.RUNTIMES:
        return name
    gate, distribution = versions.gate(name), versions.RUNTIMES[name].distribution
    if gate.version is None:
        return name
    release = (
        f"{name} {gate.version}"
        if distribution.replace("-", "_") == name
        else (f"{name} ({distribution} {gate.version})")
    )
    if gate.newer:
        return f"{release}, newer than tested"
    return release if gate.supported else f"{release}, outside the supported range"


def ready_line(backends: dict) -> str:
    """What ``%load_ext xlanb`` shows, one line: the runtimes found with their releases, and
    the switches set."""
    found = []
    for name, backend in backends.items():
        if backend.is_installed():
            described = _with_release(name)
            found.append(f"{described} (imported)" if backend.is_imported() else described)
    missing = [name for name, backend in backends.items() if not backend.is_installed()]
    runtimes = ", ".join(found) or "none installed"
    if missing:
        runtimes += f"; not installed: {', '.join(missing)}"
    set_now = switches.set_by_xlanb()
    switched = ", ".join(set_now) if set_now else "none"
    return (
        f"xlanb ready: %%xla_profile on a cell profiles it. Runtimes: {runtimes}. Debug "
        f"switches set: {switched}. Details: %xla_profile status"
    )
