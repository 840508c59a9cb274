"""Architecture check (``make lint``): the import graph with imports inside functions counted.

Fails on an import cycle between xlanb modules, a ``xlanb.views`` module importing
``xlanb.analysis``, xlanb's own in-function imports past :data:`LAZY_OWN_IMPORTS`, a module
over :data:`MAX_MODULE_LINES` lines, more than :data:`MAX_LONG_FUNCTIONS` functions over
:data:`LONG_FUNCTION` lines, or a module docstring over :data:`MAX_DOCSTRING_LINES` lines.
``python tools/architecture.py`` prints each problem and exits 1; ``-v`` lists the counts.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "xlanb"
MAX_MODULE_LINES = 900
MAX_LONG_FUNCTIONS = 3
LONG_FUNCTION = 80
MAX_DOCSTRING_LINES = 15
MAX_LAZY_OWN = 15
#: Declarative modules exempt from the size limit.
SIZE_EXEMPT = {"xlanb.core.schema": "the frames' columns, declared as data"}
#: xlanb's own imports that stay inside a function ("module:imported" -> why).
LAZY_OWN_IMPORTS: dict[str, str] = {
    "xlanb:xlanb.frontends.extension": "`import xlanb` loads nothing until the extension loads",
    "xlanb.kernel_ext.bootstrap:xlanb.frontends.kernel": "the kernel loads xlanb when started",
    "xlanb.frontends.cli:xlanb.frontends.kernel": "a CLI subcommand loads only what it runs",
    "xlanb.frontends.cli:xlanb.frontends.run": "a CLI subcommand loads only what it runs",
    "xlanb.frontends.cli:xlanb.api.report": "a CLI subcommand loads only what it runs",
    "xlanb.frontends.cli:xlanb.api": "a CLI subcommand loads only what it runs",
    "xlanb.frontends.cli:xlanb": "a CLI subcommand loads only what it runs",
    "xlanb.frontends.kernel:xlanb.capture.backends": "`xlanb kernel install` loads no capture",
    "xlanb.frontends.kernel:xlanb": "the kernel's start loads xlanb, its install does not",
    "xlanb.frontends.kernel:xlanb.frontends.extension": "the kernel's start loads the extension",
}


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    lines: int
    imports: set[str] = field(default_factory=set)
    lazy: list[tuple[int, str]] = field(default_factory=list)


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def load_modules(root: Path = ROOT) -> dict[str, Module]:
    modules = {}
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        name = module_name(path, root)
        modules[name] = Module(name, path, ast.parse(text), text.count("\n"))
    return modules


def _targets(module: Module, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The dotted names `node` imports (``from a import b``: ``a`` and ``a.b``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module.name.split(".")
        if module.path.name != "__init__.py":
            package = package[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join([*package, *([node.module] if node.module else [])])
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def _imports(
    node: ast.AST, in_function: bool
) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child, in_function
        inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
        yield from _imports(child, inner)


def link(modules: dict[str, Module]) -> None:
    """Fill each module's imports (xlanb modules only) and its in-function own imports."""
    for module in modules.values():
        for node, in_function in _imports(module.tree, False):
            package = module.name.split(".")[0]
            own = [t for t in _targets(module, node) if t.split(".")[0] == package]
            hits = [t for t in own if t in modules]
            if own and not hits:
                target = own[0]
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                hits = [target] if target else []
            module.imports.update(hits)
            if in_function and hits:
                module.lazy.append((node.lineno, hits[0]))


def cycles(modules: dict[str, Module]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in modules:
        if start in index:
            continue
        work = [(start, iter(sorted(modules[start].imports)))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            step = next(successors, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(modules[step].imports))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def long_functions(modules: dict[str, Module]) -> list[tuple[int, str]]:
    found = []
    for module in modules.values():
        for node in ast.walk(module.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > LONG_FUNCTION:
                    found.append((length, f"{module.name}.{node.name}"))
    return sorted(found, reverse=True)


def problems(root: Path = ROOT) -> dict[str, list[str]]:
    """Each check's problems (empty lists when the architecture holds) in package `root`."""
    modules = load_modules(root)
    link(modules)
    lazy = [
        (f"{m.name}:{target}", f"{m.path.relative_to(root.parent)}:{line} imports {target}")
        for m in modules.values()
        for line, target in m.lazy
    ]
    unlisted = [where for key, where in lazy if key not in LAZY_OWN_IMPORTS]
    listed = sum(1 for key, _ in lazy if key in LAZY_OWN_IMPORTS)
    docstrings = []
    for m in modules.values():
        doc = ast.get_docstring(m.tree, clean=False)
        if doc and doc.count("\n") + 1 > MAX_DOCSTRING_LINES:
            docstrings.append(f"{m.name}: module docstring of {doc.count(chr(10)) + 1} lines")
    long = long_functions(modules)
    return {
        "cycles": [" <-> ".join(c) for c in cycles(modules)],
        "views import analysis": sorted(
            f"{m.name} -> {t}"
            for m in modules.values()
            if m.name.startswith(f"{root.name}.views")
            for t in m.imports
            if t.startswith(f"{root.name}.analysis")
        ),
        "in-function imports of xlanb": unlisted
        + (
            [f"{listed} allowed lazy imports, at most {MAX_LAZY_OWN}"]
            if listed > MAX_LAZY_OWN
            else []
        ),
        "long modules": [
            f"{m.name}: {m.lines} lines"
            for m in modules.values()
            if m.lines > MAX_MODULE_LINES and m.name not in SIZE_EXEMPT
        ],
        "long functions": [f"{n} lines: {name}" for n, name in long]
        if len(long) > MAX_LONG_FUNCTIONS
        else [],
        "long docstrings": docstrings,
    }


def main(argv: list[str]) -> int:
    found = problems()
    for check, items in found.items():
        if items or "-v" in argv:
            print(f"{check}: {len(items)} problem(s)")
        for item in items:
            print(f"  {item}")
    return 1 if any(found.values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
