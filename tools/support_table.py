"""Rewrite README.md's runtime support table from the version gate (xlanb/capture/versions.py).

    python tools/support_table.py           # rewrite the block in README.md
    python tools/support_table.py --check   # exit 1 if README.md is stale

The block is everything between the lines ``<!-- support:begin -->`` and
``<!-- support:end -->``; the rest of README.md is left as it is.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in (HERE.parent, HERE):  # run from a checkout without installing
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from readme_block import ReadmeBlock  # noqa: E402

from xlanb.capture.versions import support_table  # noqa: E402

BLOCK = ReadmeBlock(
    "support",
    "tools/support_table.py",
    "xlanb/capture/versions.py",
    "edit the ranges there, not this table",
    support_table,
)
BEGIN, END = BLOCK.begin, BLOCK.end


def main(argv: list[str] | None = None) -> int:
    return BLOCK.main(argv, __doc__.split("\n", 1)[0])


if __name__ == "__main__":
    sys.exit(main())
