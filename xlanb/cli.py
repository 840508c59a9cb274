"""The `xlanb` command: `xlanb show PROFILE...` prints saved profiles' summaries,
`xlanb html PROFILE -o PAGE` writes one as a self-contained HTML page."""

from __future__ import annotations

import argparse
import sys

from xlanb.errors import XlanbError
from xlanb.profile import load_profile


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["kernel"]:
        from xlanb.kernel import main as kernel_main

        return kernel_main(argv[1:])
    parser = argparse.ArgumentParser(prog="xlanb", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("show", help="print the summary of saved profiles")
    show.add_argument("profiles", nargs="+")
    page = commands.add_parser("html", help="write a saved profile as an HTML page")
    page.add_argument("profile")
    page.add_argument("-o", "--output", required=True)
    args = parser.parse_args(argv)
    try:
        if args.command == "show":
            for path in args.profiles:
                print(load_profile(path))
        else:
            load_profile(args.profile).to_html(args.output)
            print(f"wrote {args.output}")
    except (XlanbError, OSError) as error:
        print(f"xlanb: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
