"""The `xlanb` command.

- ``xlanb run [-o REPORT.html] [--save P.json] [--backend B] SCRIPT.py [ARGS...]``: run a
  script under the profiler and write its report (see :mod:`xlanb.frontends.run`);
- ``xlanb report INPUT... -o REPORT.html``: an HTML report of anything ``xlanb.load`` reads
  (saved profiles, metrics reports, XLA_METRICS_FILE, PT_XLA_DEBUG_FILE, XLA dump
  directories); the files of one run (one of each format) are one profile; several runs are
  sections of one page, compared each with the next with ``--compare``;
- ``xlanb show INPUT...``: print summaries; ``xlanb html INPUT -o PAGE``: one input's page;
- ``xlanb kernel ...``: the Jupyter kernel spec (see :mod:`xlanb.frontends.kernel`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from xlanb.core.errors import BackendUnavailable, XlanbError
from xlanb.core.profile import Profile


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xlanb", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run a Python script under the profiler")
    run.add_argument(
        "-o", "--output", help="HTML report to write (default: SCRIPT.xlanb.html here)"
    )
    run.add_argument("--save", help="also save the profile as JSON (xlanb.load reads it)")
    run.add_argument("--trace", help="also write a Chrome trace (open in ui.perfetto.dev)")
    run.add_argument(
        "--ranks-dir",
        metavar="DIR",
        help="also write this process's rank file into DIR (one process per "
        "device: xlanb.load(DIR) merges them)",
    )
    run.add_argument(
        "-b",
        "--backend",
        default="auto",
        help="auto (default: each runtime the script imports), torch_xla, torch_lazy or jax",
    )
    run.add_argument("-n", "--name", help="name of the profile (default: the script's)")
    run.add_argument("--no-graphs", action="store_true", help="skip IR/HLO graph capture")
    run.add_argument(
        "--progress-every",
        type=float,
        metavar="SECONDS",
        help="progress line interval on stderr (default 1 on a terminal, 10 otherwise; 0: none)",
    )
    run.add_argument("script")
    run.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")

    report = commands.add_parser("report", help="write an HTML report of one or more inputs")
    report.add_argument("inputs", nargs="+")
    report.add_argument(
        "--compare", action="store_true", help="compare each run with the next (several runs)"
    )
    report.add_argument("-o", "--output", required=True)

    show = commands.add_parser("show", help="print the summary of profiles or runtime files")
    show.add_argument("profiles", nargs="+")
    page = commands.add_parser("html", help="write one input as an HTML page")
    page.add_argument("profile")
    page.add_argument("-o", "--output", required=True)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["kernel"]:
        from xlanb.frontends.kernel import main as kernel_main  # noqa: PLC0415 - loaded when used

        return kernel_main(argv[1:])
    args = _parser().parse_args(argv)
    if args.command == "run":
        return _run(args)  # the script's own exit status and exceptions pass through
    try:
        from xlanb.api import load_inputs  # noqa: PLC0415 - loaded when used

        if args.command == "show":
            for shown in load_inputs(args.profiles):
                print(shown)
        elif args.command == "html":
            _load(args.profile).to_html(args.output)
            print(f"wrote {args.output}")
        else:
            _report_of_inputs(load_inputs(args.inputs), args.output, args.compare)
            print(f"wrote {os.path.abspath(args.output)}")
    except (XlanbError, OSError) as error:
        print(f"xlanb: {error}", file=sys.stderr)
        return 1
    return 0


def _load(path: str) -> Profile:
    import xlanb  # noqa: PLC0415 - loaded when used

    return xlanb.load(path)


def _run(args: argparse.Namespace) -> int:
    from xlanb.frontends.run import run_script  # noqa: PLC0415 - loaded when used

    script = args.script
    if not os.path.isfile(script):
        print(f"xlanb: no such script: {script}", file=sys.stderr)
        return 2
    output = args.output or os.path.splitext(os.path.basename(script))[0] + ".xlanb.html"
    try:
        run_script(
            script,
            args.args,
            backend=args.backend,
            graphs=not args.no_graphs,
            name=args.name,
            report=output,
            save=args.save,
            trace=args.trace,
            progress_every=args.progress_every,
            ranks_dir=args.ranks_dir,
        )
    except BackendUnavailable as error:
        print(f"xlanb: {error}", file=sys.stderr)
        return 2
    return 0


# -- several inputs: one page ------------------------------------------------------------------
def _report_of_inputs(profiles: list[Profile], path: str | os.PathLike, compare: bool) -> None:
    """``xlanb report``: one page for all inputs (:func:`xlanb.api.report.write_report`),
    inputs with the same name told apart by primes; compared when `compare`."""
    from xlanb.api.report import write_report  # noqa: PLC0415 - loaded when used

    _unique_names(profiles)
    write_report(profiles, path, compare=compare)


def _unique_names(profiles: list[Profile]) -> None:
    names: list[str] = []
    for profile in profiles:
        name = str(profile.name or "profile")
        while name in names:
            name += "'"
        names.append(name)
        profile.name = name


if __name__ == "__main__":
    sys.exit(main())
