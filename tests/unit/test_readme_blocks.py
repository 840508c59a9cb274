"""README.md's generated tables (the frame schema, the runtime support ranges): current, and a
stale one is caught by the tool's ``--check`` and rewritten in place."""

from __future__ import annotations

import pytest

from tests.support.helpers import load_tool

TOOLS = ["schema_table", "support_table"]


@pytest.mark.parametrize("name", TOOLS)
def test_readme_block_is_current(name):
    assert load_tool(name).main(["--check"]) == 0, f"README.md is stale: run python tools/{name}.py"


@pytest.mark.parametrize("name", TOOLS)
def test_check_fails_on_a_stale_block_and_rewrite_fixes_it(name, tmp_path):
    tool = load_tool(name)
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{tool.BEGIN}\nold table\n{tool.END}\n\nafter\n")
    assert tool.main(["--check", "--readme", str(readme)]) == 1
    assert tool.main(["--readme", str(readme)]) == 0
    assert tool.main(["--check", "--readme", str(readme)]) == 0
    text = readme.read_text()
    assert tool.BLOCK.make() in text and "old table" not in text
    assert text.endswith(f"{tool.END}\n\nafter\n")


def test_readme_tables_name_every_bucket_and_backend_choice():
    """The bucket table lists every bucket of the time account (it left out `other`) and the
    magic's option table every `-b` choice (it left out `jax`)."""
    from tests.support.helpers import ROOT
    from xlanb.analysis.time_account import BUCKETS
    from xlanb.capture.backends import CHOICES

    text = (ROOT / "README.md").read_text()
    table = text.split("| bucket | what counts |", 1)[1].split("\n\n", 1)[0]
    assert {bucket for bucket in BUCKETS if f"| `{bucket}` |" not in table} == set()
    option = next(line for line in text.splitlines() if line.startswith("| `-b/--backend "))
    choices = option.removeprefix("| `-b/--backend ").split("`", 1)[0]
    assert choices.split("\\|") == list(CHOICES)
