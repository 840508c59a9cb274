"""``%%xla_profile`` / ``%xla_profile``: parse arguments, run the cell under the recorder,
display the Profile. Nothing else lives here."""

from __future__ import annotations

import ast
import os
import shlex
import sys
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from xlanb.analysis.compare import Comparison, compare
from xlanb.analysis.findings import compile_budget_error
from xlanb.api import history, profile
from xlanb.capture import backends
from xlanb.capture.device_trace import WINDOW_RUNS
from xlanb.core.errors import BackendUnavailable
from xlanb.core.profile import Profile
from xlanb.frontends.autoprofile import AutoProfiler
from xlanb.frontends.cells import cell_number, cell_numbers
from xlanb.frontends.live import LiveView
from xlanb.frontends.status import status_text
from xlanb.views.notebook import display_profile


def _unquote(text: str) -> str:
    """IPython's magic arguments keep the quotes around a path with spaces."""
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _words(line: str) -> list[str]:
    """The words of a magic line as a shell splits them: the commands xlanb prints quote a
    profile name with spaces (``%xla_profile diff 'my run' 2``)."""
    try:
        return shlex.split(line)
    except ValueError:  # an unmatched quote: the words as written
        return line.split()


@magics_class
class XlaProfileMagics(Magics):
    @magic_arguments()
    @argument(
        "-b",
        "--backend",
        default="auto",
        choices=backends.CHOICES,
        help="Runtime to profile; auto = every runtime the process has imported.",
    )
    @argument("-n", "--name", default=None, help="Name of the Profile.")
    @argument("--var", default=None, help="Store the Profile in this user variable.")
    @argument("-q", "--quiet", action="store_true", help="Show nothing.")
    @argument("--no-graphs", action="store_true", help="Skip IR/HLO graph capture.")
    @argument(
        "--no-trace",
        action="store_true",
        help="Do not run the XLA profiler's device trace (no per-op device times).",
    )
    @argument(
        "--trace-runs",
        type=int,
        default=WINDOW_RUNS,
        metavar="N",
        help="Trace the cell's first N program runs (default 50, at most 10 s, fewer when "
        "runs are big: ~20,000 trace events, or 1 s of runs on a cell's first trace, at "
        "least 5 runs); 0 traces the whole cell. Given, a JAX cell run again is traced "
        "again rather than reusing its last trace.",
    )
    @argument(
        "--max-compiles",
        type=int,
        default=None,
        metavar="N",
        help="Raise xlanb.CompileBudgetExceeded if the cell compiled more than N graphs.",
    )
    @argument(
        "-o",
        "--output",
        default=None,
        metavar="PATH",
        help="Also write the profile's self-contained HTML report to PATH.",
    )
    @argument(
        "--live",
        action="store_true",
        help="While the cell runs, show compiles, executions and fallbacks so far.",
    )
    @argument("statement", nargs="*", help="Code to profile (line magic form).")
    @line_cell_magic
    def xla_profile(self, line: str, cell: str | None = None) -> Any:
        """Profile a cell on PyTorch/XLA, torch._lazy or JAX and show why it is slow.

        Usage::

            %%xla_profile [-b auto|torch_xla|torch_lazy|jax] [-n NAME] [--var NAME] [-q]
                          [--no-graphs] [--no-trace] [--trace-runs N] [--max-compiles N] [--live]
                          [-o REPORT.html]
            <code>

        or ``%xla_profile [options] statement`` for one line. The Profile is also available
        as ``xlanb.last()``. ``%xla_profile compare A B`` shows what changed between two
        profiles (names, history indices such as -1, or variables holding a Profile);
        ``%xla_profile diff A I`` shows graph I of A against its previous compile.
        ``%xla_profile on`` / ``off`` profiles every cell (a one-line summary under cells
        that did lazy-tensor work); ``%xla_profile status`` says what is on.
        """
        __tracebackhide__ = True  # IPython hides this frame in the user's traceback
        words = _words(line)
        if cell is None and words[:1] == ["compare"]:
            comparison = self._compare(words[1:])
            display(comparison)  # the table, then the chart
            display(comparison.chart())
            return None
        if cell is None and words[:1] == ["diff"]:
            return self._diff(words[1:])
        if cell is None and words in (["on"], ["off"], ["status"]):
            return self._auto(words[0])
        args = parse_argstring(self.xla_profile, line)
        if cell is None:
            code = source = " ".join(args.statement)
            line_offset = 0
            if not code.strip():
                raise UsageError("%xla_profile needs a statement, or use %%xla_profile on a cell.")
        else:
            if args.statement:
                raise UsageError(f"unexpected arguments: {' '.join(args.statement)}")
            # The editor counts the %%xla_profile line as line 1; so do cell_line and source.
            code, source, line_offset = cell, f"%%xla_profile {line}".rstrip() + "\n" + cell, 1
        filename = self.shell.compile.cache(code, self.shell.execution_count or 0)
        try:
            recorder = profile(
                backend=args.backend,
                # named as the cell's In[n], as auto-profiling names its cells
                name=_unquote(args.name) if args.name else f"cell-{cell_number(self.shell)}",
                graphs=not args.no_graphs,
                cell_filename=filename,
                source=source,
                trace=not args.no_trace,
                trace_runs=args.trace_runs or None,
            )
        except (BackendUnavailable, ValueError) as error:
            raise UsageError(str(error)) from None
        recorder.options.cell_line_offset = line_offset
        # a window the user sized is traced again, not reused from the cell's last trace
        recorder.options.reuse_trace = "--trace-runs" not in line
        recorder.options.cell_numbers = cell_numbers(self.shell)
        recorder.options.shown = not args.quiet or bool(args.output)
        live = None
        try:
            with recorder:
                if args.live and not args.quiet:
                    live = LiveView(recorder)
                value = self._execute(code, filename)
        finally:
            if args.var:
                self.shell.user_ns[args.var] = recorder.profile
            if live is not None:
                live.stop()
            if not args.quiet:
                display_profile(recorder.profile)
            if args.output:
                self._write_report(recorder.profile, _unquote(args.output), args.quiet)
        if args.max_compiles is not None:
            error = compile_budget_error(recorder.profile, args.max_compiles)
            if error is not None:
                raise error
        return value

    @staticmethod
    def _write_report(prof, output: str, quiet: bool) -> None:
        """Write the ``-o`` report. Runs in a ``finally``: a failure to write becomes a note
        (and one line), never an exception that would replace the cell's own."""
        path = os.path.abspath(os.path.expanduser(output))
        try:
            prof.to_html(path)
        except OSError as error:
            note = f"xlanb: could not write the report {path}: {error.strerror or error}"
            prof.notes.append(note)
            print(note, file=sys.stderr)
            return
        if not quiet:
            print(f"xlanb: wrote {path}")

    @property
    def auto_profiler(self) -> AutoProfiler:
        if not hasattr(self, "_auto_profiler"):
            self._auto_profiler = AutoProfiler(self.shell)
        return self._auto_profiler

    def _auto(self, word: str) -> None:
        if word == "on":
            self.auto_profiler.on()
            print("xlanb: profiling every cell (%xla_profile off to stop)")
        elif word == "off":
            self.auto_profiler.off()
            print("xlanb: auto-profiling off")
        else:
            print(status_text(self.auto_profiler.enabled, backends.BACKENDS))

    def _compare(self, names: list[str]) -> Comparison:
        if len(names) != 2:
            raise UsageError(
                "usage: %xla_profile compare A B (profile names, history indices or variables)"
            )
        return compare(*(self._find_profile(name) for name in names))

    def _diff(self, words: list[str]):
        """``%xla_profile diff PROFILE I``: graph I of the profile against the previous compile
        of the same function or line (the compiles table's ``diff`` column writes these)."""
        if len(words) != 2 or not words[1].lstrip("-").isdigit():
            raise UsageError(
                "usage: %xla_profile diff PROFILE I (a profile's name, history index or "
                "variable, and a graph index as prof.graph counts)"
            )
        profile = self._find_profile(words[0])
        try:
            return profile.diff(int(words[1]))
        except (KeyError, IndexError) as error:
            raise UsageError(f"{words[0]}: {error.args[0]}") from None

    def _find_profile(self, name: str) -> Profile:
        value = self.shell.user_ns.get(name)
        if isinstance(value, Profile):
            return value
        profiles = history()
        try:
            return profiles[int(name)]
        except ValueError:
            pass
        except IndexError:
            raise UsageError(
                f"no profile at history index {name} ({len(profiles)} in history)"
            ) from None
        for candidate in reversed(profiles):
            if candidate.name == name:
                return candidate
        raise UsageError(f"no profile named {name!r}")

    def _execute(self, code: str, filename: str) -> Any:
        """Run the cell in the user namespace; return the value of its last expression."""
        __tracebackhide__ = True
        transformed = self.shell.transform_cell(code)
        tree = self.shell.compile.ast_parse(transformed, filename=filename)
        last_expression = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last_expression = ast.Expression(tree.body.pop().value)
        namespace = self.shell.user_ns
        exec(self.shell.compile(tree, filename, "exec"), namespace)
        if last_expression is not None:
            return eval(self.shell.compile(last_expression, filename, "eval"), namespace)
        return None
