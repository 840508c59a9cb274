"""What every benchmark does with its figures: merge them into ``bench/results.json`` (one
section per benchmark, atomically) and, with ``--check``, fail past a target."""

from __future__ import annotations

import json
import os
from typing import Any

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results.json")


def write(section: str, figures: dict[str, Any]) -> None:
    """Merge `figures` into section `section` of ``bench/results.json``."""
    try:
        with open(PATH, encoding="utf-8") as handle:
            results = json.load(handle)
    except (OSError, ValueError):
        results = {}
    results.setdefault(section, {}).update(figures)
    temporary = f"{PATH}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(results, handle, indent=1, sort_keys=True)
    os.replace(temporary, PATH)


def check(failures: list[str], strict: bool) -> int:
    """Print each figure past its target; the exit status for ``--check`` (1 if any)."""
    for line in failures:
        print("over target:", line)
    return 1 if strict and failures else 0


def add_check_option(parser) -> None:
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when a figure is past its target"
    )


def notebook_shell(cases: dict[str, tuple], chosen: list[str] | None) -> tuple[Any, list[str]]:
    """A real IPython shell with xlanb loaded (rich output on, as in a notebook), and the
    cases to run: `chosen`, else those whose runtime (a case's first item) is installed."""
    import importlib.util

    from IPython.testing.globalipapp import start_ipython

    names = chosen or [
        name for name, spec in cases.items() if importlib.util.find_spec(spec[0]) is not None
    ]
    shell = start_ipython()
    shell.display_formatter.active_types = shell.display_formatter.format_types
    shell.run_line_magic("load_ext", "xlanb")
    return shell, names
