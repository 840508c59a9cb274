"""Rewrite one generated block of README.md: everything between ``<!-- NAME:begin -->`` and
``<!-- NAME:end -->`` (the rest of the file is left as it is), or check that it is current.
Used by the table tools of this folder."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


@dataclass(frozen=True)
class ReadmeBlock:
    """A generated block: its marker `name`, the tool that writes it, the source it comes
    from (named in the block's banner), what to edit instead, and `make`, the block's text."""

    name: str
    tool: str
    source: str
    edit: str
    make: Callable[[], str]

    @property
    def begin(self) -> str:
        return f"<!-- {self.name}:begin -->"

    @property
    def end(self) -> str:
        return f"<!-- {self.name}:end -->"

    def render(self, text: str) -> str:
        """`text` (a README) with the block replaced by :attr:`make`'s text."""
        start, end = text.find(self.begin), text.find(self.end)
        if start < 0 or end < start:
            raise ValueError(f"no '{self.begin}' ... '{self.end}' block")
        head = text[: start + len(self.begin)]
        banner = f"<!-- written by {self.tool} from {self.source}; {self.edit} -->"
        return head + "\n" + banner + "\n\n" + self.make() + "\n" + text[end:]

    def main(self, argv: list[str] | None, description: str) -> int:
        """The tool's command line: rewrite the block, or with ``--check`` exit 1 if stale."""
        parser = argparse.ArgumentParser(description=description)
        parser.add_argument(
            "--check",
            action="store_true",
            help=f"exit 1 if the README's {self.name} block is stale",
        )
        parser.add_argument("--readme", type=Path, default=README, help="default: %(default)s")
        args = parser.parse_args(argv)
        text = args.readme.read_text(encoding="utf-8")
        try:
            wanted = self.render(text)
        except ValueError as error:
            print(f"{args.readme}: {error}", file=sys.stderr)
            return 2
        if wanted == text:
            return 0
        if args.check:
            print(f"{args.readme} is stale: run python {self.tool}", file=sys.stderr)
            return 1
        args.readme.write_text(wanted, encoding="utf-8")
        print(f"rewrote the {self.name} block in {args.readme}")
        return 0
