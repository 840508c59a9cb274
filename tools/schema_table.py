"""Rewrite README.md's frame tables from the schema (xlanb/core/schema.py).

    python tools/schema_table.py           # rewrite the block in README.md
    python tools/schema_table.py --check   # exit 1 if README.md is stale

The block is everything between the lines ``<!-- schema:begin -->`` and
``<!-- schema:end -->``; the rest of README.md is left as it is.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for folder in (HERE.parent, HERE):  # run from a checkout without installing
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from readme_block import ReadmeBlock  # noqa: E402

from xlanb.core.schema import markdown_table  # noqa: E402

BLOCK = ReadmeBlock(
    "schema",
    "tools/schema_table.py",
    "xlanb/core/schema.py",
    "edit the schema, not this table",
    markdown_table,
)
BEGIN, END = BLOCK.begin, BLOCK.end


def main(argv: list[str] | None = None) -> int:
    return BLOCK.main(argv, __doc__.split("\n", 1)[0])


if __name__ == "__main__":
    sys.exit(main())
