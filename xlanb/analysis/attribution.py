"""Which line of the cell triggered each CPU fallback.

The runtimes count fallback ops (``aten::nonzero``) but do not say where they ran. The forced
syncs they cause do carry a Python frame, and the op's name is usually on that line of the
cell (``x.nonzero()``, ``.item()``, ``F.mse_loss``). So: the cell lines that mention the op,
preferring those where a forced sync happened.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from xlanb.formats.python_frames import is_cell_file, is_library_place

# How an op looks in Python source (regular expressions), when its name is not literally
# there. Builtins must not match methods: ``float(x)`` reads a value, ``x.float()`` does not.
_BUILTIN = r"(?<![\w.])"
_SOURCE_SPELLINGS = {
    "_local_scalar_dense": (r"\.item\(", r"\.tolist\(", _BUILTIN + r"(float|int|bool|print)\("),
    "index.Tensor": (r"\[",),
    "_unique2": ("unique",),
}
#: Spellings that may well be something else (``print("done")``, ``int(n)``): evidence only
#: where the runtime forced no sync on another line.
_WEAK = {_BUILTIN + r"(float|int|bool|print)\("}


def _spellings(op: str) -> list[tuple[re.Pattern[str], bool]]:
    """The op's spellings in Python source, likeliest first, each with whether it is weak."""
    bare = op.split("::", 1)[-1]
    patterns = _SOURCE_SPELLINGS.get(bare, (re.escape(bare.strip("_").split(".")[0]),))
    return [(re.compile(pattern), pattern in _WEAK) for pattern in patterns]


def fallback_line(op: str, source: str, forced_sync_lines: set[int]) -> int | None:
    """The line of the cell `source` (1-based, as the editor shows it) that most likely ran
    `op`: a line where the runtime reported a forced sync if one names the op; else the first
    line naming it (``.item()`` before ``print(``); else, when the runtime forced syncs on
    exactly one line, that line (``x[x > 0]`` runs a ``nonzero`` no line names). A weak
    spelling (``print(``, ``float(``) counts only where the runtime forced no sync elsewhere:
    ``print("done")`` is not the read of a helper defined in another cell."""
    lines = [_code_part(text) for text in source.splitlines()]
    strong: list[int] = []
    weak: list[int] = []
    for pattern, is_weak in _spellings(op):
        found = weak if is_weak else strong
        found += [
            number
            for number, text in enumerate(lines, start=1)
            if pattern.search(text) and number not in strong and number not in weak
        ]
    synced = [line for line in strong + weak if line in forced_sync_lines]
    if synced:
        return synced[0]
    if strong:
        return strong[0]
    if forced_sync_lines:
        return next(iter(forced_sync_lines)) if len(forced_sync_lines) == 1 else None
    return weak[0] if weak else None


def _code_part(line: str) -> str:
    return re.sub(r"#.*$", "", line)


_FORCED = "forced sync|access tensor value"


def attribute_fallbacks(
    fallbacks: pd.DataFrame,
    compiles: pd.DataFrame,
    source: str,
    executions: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """`fallbacks` with ``cell_line`` filled where the runtime's forced syncs and the cell's
    source tell (per backend)."""
    if fallbacks.empty or not source:
        return fallbacks
    forced_lines: dict[str, set[int]] = {}  # per backend
    lines = []
    for op, backend, old in zip(
        fallbacks["op"], fallbacks["backend"], fallbacks["cell_line"], strict=True
    ):
        if not pd.isna(old):
            lines.append(old)
            continue
        if backend not in forced_lines:
            forced_lines[backend] = _forced_sync_lines(backend, compiles, executions)
        lines.append(fallback_line(op, source, forced_lines[backend]))
    attributed = fallbacks.copy()
    attributed["cell_line"] = pd.array(lines, dtype="Int64")
    return attributed


def _forced_sync_lines(
    backend: str, compiles: pd.DataFrame, executions: pd.DataFrame | None
) -> set[int]:
    """The cell lines of `backend`'s forced syncs: its forced compiles', and, where the
    runtime placed every run (torch._lazy, torch_xla with ``--deep``), its forced runs'."""
    lines: set[int] = set()
    if not compiles.empty:
        mine = compiles[compiles["backend"].astype(str) == backend]
        forced = mine[mine["trigger"].astype(str).str.contains(_FORCED, regex=True)]
        lines = {int(v) for v in forced["cell_line"].dropna()}
    if executions is None or executions.empty or "trigger" not in executions.columns:
        return lines
    runs = executions[executions["backend"].astype(str) == backend]
    runs = runs[runs["trigger"].astype(str).str.contains(_FORCED, regex=True)]
    return lines | {int(v) for v in runs["cell_line"].dropna()}


#: The forced-sync places of a cell that read no value (copied: building it costs more).
_NO_PLACES = pd.DataFrame(columns=["backend", "read_at", "cell_line", "count", "library"])


def forced_sync_places(
    executions: pd.DataFrame, fallbacks: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Where values were read, from the runtime's own stacks: ``backend``, ``read_at`` (the
    innermost frame outside the runtime), ``cell_line`` (the cell's frame), ``count``, most
    first; ``library``: the place is in an installed library (a read the user's own code does
    not show, such as ``clip_grad_norm_``'s finiteness check). From the runs the runtime
    placed (its execution analysis: the reads that cut a graph), else from the read rows of
    `fallbacks` placed by each read's own stack (every read, at any debug level)."""
    placed = executions.iloc[:0]
    if not executions.empty and "read_at" in executions.columns:
        placed = executions[executions["read_at"].notna()]
    if placed.empty and fallbacks is not None and "read_at" in fallbacks.columns:
        placed = fallbacks[fallbacks["read_at"].notna()]
    if placed.empty:
        return _NO_PLACES.copy()
    places = _counted_places(placed)
    # one frame built in one go: a cell reads values at a few places, and each column set on
    # a frame costs more than the few rows it holds
    return pd.DataFrame(
        {
            "backend": pd.array([key[0] for key, _ in places], dtype=placed["backend"].dtype),
            "read_at": [cell_place(key[1], key[2]) for key, _ in places],
            "cell_line": pd.array([key[2] for key, _ in places], dtype="Int64"),
            "count": pd.array([total for _, total in places], dtype=placed["count"].dtype),
            # read_place writes an installed library's file relative to site-packages
            "library": [is_library_place(key[1]) for key, _ in places],
        }
    )


def _counted_places(placed: pd.DataFrame) -> list[tuple[tuple[Any, ...], Any]]:
    """((backend, read_at, cell_line), count) of `placed`'s counts summed per place (nulls
    alike; a null count adds nothing), in the order places first appear, then most first (a
    stable sort): a ``groupby(dropna=False, sort=False).sum()`` made in plain Python, as a
    cell's few read places make pandas' fixed cost the whole cost."""
    lines = placed["cell_line"].astype("Int64")
    totals: dict[tuple[Any, ...], Any] = {}
    for values, count in zip(
        zip(placed["backend"].tolist(), placed["read_at"].tolist(), lines.tolist(), strict=True),
        placed["count"].tolist(),
        strict=True,
    ):
        key = (*(None if pd.isna(value) else value for value in values),)
        total = totals.setdefault(key, 0)
        if not pd.isna(count):
            totals[key] = total + count
    return sorted(totals.items(), key=lambda item: -item[1])  # stable: ties keep order


def cell_place(read_at: str, cell_line: object) -> str:
    """`read_at` (``file:line (function)``) as people know it: ``cell line N`` where it is the
    profiled cell's own code (a cell's file, at module level: the file's own line count lacks
    the magic line) and the cell line is known, else unchanged (a function defined in a cell
    is named by its file, line and name)."""
    place, _, function = read_at.rpartition(" (")
    filename = place.rsplit(":", 1)[0]
    if function == "<module>)" and is_cell_file(filename) and not pd.isna(cell_line):
        return f"cell line {int(cell_line)}"  # type: ignore[call-overload]
    return read_at
