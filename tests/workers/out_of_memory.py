"""A real IPython shell that runs out of memory on purpose, in its own process.

The address space of this process only is limited (``RLIMIT_AS``) to what it uses at start
plus ``HEADROOM`` bytes, so allocations fail long before the machine is at risk. Runs the
cells given as JSON on stdin (``[[source, expect_error], ...]``) and prints, as JSON, what the
test checks: the cells' errors and the last profile's frames.
"""

from __future__ import annotations

import json
import resource
import sys
import traceback

HEADROOM = 1_500_000_000


def limit_memory() -> None:
    status = open("/proc/self/status").read()
    used = int(status.split("VmSize:")[1].split()[0]) * 1024
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (used + HEADROOM, hard))


def main() -> None:
    cells = json.load(sys.stdin)
    from IPython.terminal.interactiveshell import TerminalInteractiveShell

    shell = TerminalInteractiveShell.instance()
    shell.run_line_magic("load_ext", "xlanb")
    shell.run_cell(cells[0][0])  # imports the runtime before the limit
    limit_memory()
    results = []
    for source, _expect_error in cells[1:]:
        result = shell.run_cell(source)
        error = result.error_in_exec
        results.append(
            {
                "error": None if error is None else f"{type(error).__name__}: {error}",
                "same_object": error is not None and error is shell.user_ns.get("caught"),
                "frames": [
                    f"{frame.name}:{frame.lineno}"
                    for frame in traceback.extract_tb(error.__traceback__)
                ]
                if error is not None
                else [],
            }
        )
    prof = shell.user_ns["prof"]
    out = {
        "results": results,
        "failed": prof.failed,
        "error": prof.error,
        "notes": prof.notes,
        "live_arrays": prof.live_arrays.to_dict("records"),
        "findings": prof.findings.to_dict("records"),
        "html": prof._repr_html_(),
    }
    sys.stdout.write("\n@@RESULT@@" + json.dumps(out, default=str))


if __name__ == "__main__":
    main()
