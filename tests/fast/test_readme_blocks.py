"""README.md's generated tables (the frame schema, the runtime support ranges): current, and a
stale one is caught by the tool's ``--check`` and rewritten in place."""

from __future__ import annotations

import pytest

from tests.helpers import load_tool

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
