"""Rewrite README.md's runtime support table from the version gate (xlanb/capture/versions.py).

    python tools/support_table.py           # rewrite the block in README.md
    python tools/support_table.py --check   # exit 1 if README.md is stale

The block is everything between the lines ``<!-- support:begin -->`` and
``<!-- support:end -->``; the rest of README.md is left as it is.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

from xlanb.capture.versions import support_table  # noqa: E402

BEGIN = "<!-- support:begin -->"
END = "<!-- support:end -->"
README = ROOT / "README.md"


def render(text: str) -> str:
    """`text` (a README) with its support block replaced by :func:`support_table`."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"no '{BEGIN}' ... '{END}' block")
    head = text[: start + len(BEGIN)]
    return (
        head + "\n<!-- written by tools/support_table.py from xlanb/capture/versions.py; "
        "edit the ranges there, not this table -->\n\n" + support_table() + "\n" + text[end:]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the README's support table is stale"
    )
    parser.add_argument("--readme", type=Path, default=README, help="default: %(default)s")
    args = parser.parse_args(argv)
    text = args.readme.read_text(encoding="utf-8")
    try:
        wanted = render(text)
    except ValueError as error:
        print(f"{args.readme}: {error}", file=sys.stderr)
        return 2
    if wanted == text:
        return 0
    if args.check:
        print(f"{args.readme} is stale: run python tools/support_table.py", file=sys.stderr)
        return 1
    args.readme.write_text(wanted, encoding="utf-8")
    print(f"rewrote the support table in {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
