"""``%xla_profile on``: profile every cell; show a one-line summary, expandable to the full
view, only under cells that compiled, executed lazily, fell back to the CPU or transferred."""

from __future__ import annotations

import html

from xlanb.api import profile
from xlanb.core.errors import BackendUnavailable
from xlanb.core.schema import headline_host_kinds
from xlanb.core.words import counted
from xlanb.frontends.cells import cell_number, cell_numbers
from xlanb.views.html import profile_html
from xlanb.views.summary import format_seconds


class AutoProfiler:
    """Starts a recorder before each cell and stops it after, through IPython's events."""

    def __init__(self, shell) -> None:
        self.shell = shell
        self.enabled = False
        self._recorder: profile | None = None

    def on(self) -> None:
        if not self.enabled:
            self.shell.events.register("pre_run_cell", self._before)
            if self._after not in self.shell.events.callbacks["post_run_cell"]:
                self.shell.events.register("post_run_cell", self._after)
            self.enabled = True

    def off(self) -> None:
        if self.enabled:
            self.shell.events.unregister("pre_run_cell", self._before)
            self.enabled = False
            if self._recorder is None:
                self.shell.events.unregister("post_run_cell", self._after)
            # else: switched off from inside a profiled cell (its last line): _after still
            # closes that cell's capture, then unregisters itself

    def _before(self, info) -> None:
        source = info.raw_cell or ""
        if source.lstrip().startswith(("%%xla_profile", "%xla_profile")):
            return  # profiled explicitly, or switching auto-profiling itself
        transformed = self.shell.transform_cell(source)
        filename = self.shell.compile.get_code_name(source, transformed, self.shell.execution_count)
        try:
            recorder = profile(
                backend="auto",
                name=f"cell-{cell_number(self.shell, info)}",
                cell_filename=filename,
                source=source,
            )
        except BackendUnavailable:
            return
        recorder.options.cell_numbers = cell_numbers(self.shell)
        recorder.__enter__()
        self._recorder = recorder

    def _after(self, result) -> None:
        recorder, self._recorder = self._recorder, None
        if not self.enabled:
            self.shell.events.unregister("post_run_cell", self._after)
        if recorder is None:
            return
        error = result.error_in_exec
        recorder.__exit__(type(error) if error else None, error, None)
        summary = recorder.profile.summary()
        if any(
            summary[k] for k in ("compiles", "executions", "transfers", "syncs", "fallback_ops")
        ):
            from IPython.display import display

            display(
                {
                    "text/html": one_line_html(recorder.profile),
                    "text/plain": one_line(recorder.profile),
                },
                raw=True,
            )


def one_line(profile) -> str:
    numbers = profile.summary()
    compiled = f" ({format_seconds(numbers['compile_seconds'])})" if numbers["compiles"] else ""
    text = (
        f"xlanb: {counted(numbers['compiles'], 'compile')}{compiled}, "
        f"{counted(numbers['executions'], 'execution')}, "
        f"{counted(numbers['transfers'], 'transfer')}"
    )
    for kind in headline_host_kinds(numbers):
        if numbers[kind.key]:
            text += f", {counted(numbers[kind.key], kind.noun)}"
    if len(profile.findings):
        text += f" · {counted(len(profile.findings), 'finding')}"
    return text


def one_line_html(profile) -> str:
    """A collapsed ``<details>`` whose summary is the one line and whose body is the full
    view."""
    colour = " style='color:#d62728'" if profile.summary()["fallback_ops"] else ""
    return (
        f"<details class='xlanb-auto'><summary{colour}>{html.escape(one_line(profile))}"
        f"</summary>{profile_html(profile)}</details>"
    )
