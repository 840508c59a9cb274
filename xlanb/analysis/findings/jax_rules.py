"""Findings for JAX: recompilation, host callbacks, host transfers and eager-op compiles."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from xlanb.analysis.findings.common import Finding, _lines, lane_seconds
from xlanb.analysis.findings.memory_rules import LEAK_RUNS, growing_runs, kept_groups, snapshots
from xlanb.core.profile import Profile
from xlanb.core.units import format_bytes, format_seconds
from xlanb.core.words import counted, magic_command
from xlanb.formats import jax_text
from xlanb.formats.oom_text import out_of_memory

_JAX_RECOMPILE_CAUSES = (
    jax_text.NEW_TYPES,
    jax_text.NEW_SHARDINGS,
    jax_text.STATIC_CHANGED,
    jax_text.NEW_PYTREE,
    jax_text.NEW_CONTEXT,
)
#: A function run this many times in a cell is hot: a host callback in it is a warning.
HOT_CALLS = 10
#: This many eager-op compiles in a cell are worth a warning.
EAGER_COMPILES = 10
#: Fewer eager-op compiles taking at least this share of the cell's wall time are worth a
#: note (`X[:bs]` of a device array, a few batch sizes: a slice program compiled per size).
EAGER_SHARE = 0.05


def _jax_rows(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["backend"] == jax_text.BACKEND]


def _flag(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame.columns:
        return pd.Series(False, index=frame.index)
    return frame[column].eq(True)


def jax_recompilation(profile: Profile) -> list[Finding]:
    """A jitted function compiled again in the cell: new input shapes or dtypes, a new static
    argument value, or a new function object each time."""
    if profile.compiles.empty:
        return []
    compiles = _jax_rows(profile.compiles)
    compiles = compiles[~_flag(compiles, "eager")]
    findings = []
    for graph, rows in compiles.groupby("graph", sort=False):
        causes = rows["cause"].astype(str)
        again = rows[causes.str.startswith(_JAX_RECOMPILE_CAUSES)]
        # The same line compiling a function of the same name that JAX never saw, again and
        # again: a new function object each time.
        fresh = rows[causes == jax_text.NEVER_SEEN]
        repeated = fresh["location"].value_counts()
        fresh = fresh[fresh["location"].isin(repeated[repeated >= 2].index)]
        phases = [c for c in ("trace_seconds", "lower_seconds", "seconds") if c in rows]
        seconds = float(rows[phases].sum(skipna=True).sum())
        if not again.empty and (values := _few_static_values(again)):
            findings.append(
                {
                    "severity": "info",
                    "title": f"{graph} compiled once per value of a static argument "
                    f"({', '.join(values)})" + _lines(again),
                    "detail": f"{counted(len(rows), 'compile')} of it took "
                    f"{format_seconds(seconds)}. A static argument with a few values (a "
                    "train/eval flag, a size) compiles one program per value, once: "
                    "later calls with either value reuse them.",
                    "advice": "",
                    "seconds": seconds,
                }
            )
        elif not again.empty:
            changes = "; ".join(dict.fromkeys(again["cause"].astype(str)))
            findings.append(
                {
                    "severity": "warning",
                    "title": f"{graph} recompiled {counted(len(again), 'time')} in this cell"
                    + _identity_reason(again["cause"].astype(str))
                    + _lines(again),
                    "detail": f"JAX traced and compiled it again because: {changes}. "
                    f"{counted(len(rows), 'compile')} of it took {format_seconds(seconds)} "
                    f"in all ({_phases(rows)})." + _diff_hint(profile, str(graph), again),
                    "advice": _recompile_advice(again["cause"].astype(str)),
                    "seconds": seconds,
                }
            )
        if not fresh.empty:
            findings.append(
                {
                    "severity": "warning",
                    "title": f"{graph} compiled {len(fresh)} times as a function JAX had never "
                    "seen" + _lines(fresh),
                    "detail": "Each call used a new function object, so JAX's caches never hit: "
                    "jax.jit (or a lambda or partial passed to it) is applied inside a "
                    f"loop or a function. {format_seconds(seconds)} spent compiling.",
                    "advice": "Create the jitted function once, outside the loop, and reuse it; "
                    "pass changing values as arguments.",
                    "seconds": seconds,
                }
            )
    return findings


def _recompile_advice(causes: pd.Series) -> str:
    """What to change, by the causes of a function's recompiles."""
    static = causes.str.startswith(jax_text.STATIC_CHANGED)
    advice = []
    if causes.str.contains(jax_text.IDENTITY_HASHED, regex=False).any():
        advice.append(
            "A static argument whose class has no value equality is hashed by "
            "identity, so each new object (one made per call, a config rebuilt in "
            "the loop) is a new program: make the class hashable by value "
            "(@dataclass(frozen=True), or __eq__ and __hash__) or pass the same "
            "object every call."
        )
    elif static.any():
        advice.append(
            "Every new value of a static argument compiles a new program: "
            "pass values that change as traced (array) arguments, and keep "
            "static arguments to a few values such as flags and sizes."
        )
    moved = causes.str.startswith(jax_text.NEW_SHARDINGS)
    if moved.any():
        advice.append(
            "The arguments moved to another mesh: a jitted step's outputs come back "
            "on the mesh of its sharded inputs, so state made outside it (an init, "
            "jnp.ones) is a new type on the second call. Put the state on the mesh "
            "before the loop (jax.device_put(state, NamedSharding(mesh, P())), or "
            "the sharding you want it in), or make it in a jit with out_shardings."
        )
    if not (static | moved).all():
        advice.append(
            "Keep shapes and dtypes static: pad batches to a fixed size or "
            "bucket them into a few sizes, drop the last partial batch, and "
            "keep dtypes fixed (a Python float vs a float32 array is a new "
            "type)."
        )
    return " ".join(advice)


#: A compile's phases, as the row's columns name them and as a user reads them.
_PHASES = {"trace_seconds": "tracing", "lower_seconds": "lowering", "seconds": "XLA compile"}


def _phases(rows: pd.DataFrame) -> str:
    """``tracing 1.21 s, lowering 402 ms, XLA compile 4.97 s``: where a function's compile
    seconds went (the header's compile seconds are XLA's alone)."""
    return ", ".join(
        f"{word} {format_seconds(float(rows[column].sum(skipna=True)))}"
        for column, word in _PHASES.items()
        if column in rows and rows[column].notna().any()
    )


def _diff_hint(profile: Profile, graph: str, again: pd.DataFrame) -> str:
    """How to see what changed in the program at its last recompile, if its graph was kept."""
    if profile.graphs.empty or "compile_id" not in again.columns or again.empty:
        return ""
    entries = profile.graph_entries()
    last = again["compile_id"].dropna()
    if last.empty:
        return ""
    matches = entries.index[
        (entries["graph"].astype(str) == graph) & (entries["compile"] == int(last.iloc[-1]))
    ]
    if len(matches) != 1:
        return ""
    index = int(entries.index.get_loc(matches[0]))
    command = magic_command("diff", profile.name, index)
    return f" `{command}` shows its graph against the previous one."


#: A static argument that takes at most this many values is a flag, not a leak.
FEW_STATIC_VALUES = 3


def _few_static_values(again: pd.DataFrame) -> list[str]:
    """The values a static argument took when every recompile of a function came from it and
    they are few (a flag), else []."""
    causes = again["cause"].astype(str)
    if not causes.str.startswith(jax_text.STATIC_CHANGED).all():
        return []
    if causes.str.contains(jax_text.IDENTITY_HASHED, regex=False).any():
        return []  # a new object every call: as many values as calls
    values: dict[str, None] = {}
    for cause in causes:
        for pair in cause.split(": ", 1)[-1].split(", "):
            values.update(dict.fromkeys(part.strip() for part in pair.split(" -> ")))
    return list(values) if 1 < len(values) <= FEW_STATIC_VALUES else []


def jax_host_callbacks(profile: Profile) -> list[Finding]:
    """Host callbacks (pure_callback, io_callback, jax.debug.print) in jitted functions."""
    if jax_text.HOST_CALLBACK not in profile.fallbacks["cause"].tolist():
        return []
    fallbacks = _jax_rows(profile.fallbacks)
    fallbacks = fallbacks[fallbacks["cause"] == jax_text.HOST_CALLBACK]
    findings = []
    group = "graph" if "graph" in fallbacks.columns else "op"
    for graph, rows in fallbacks.groupby(group, sort=False):
        calls = int(rows["calls"].max()) if "calls" in rows else int(rows["count"].max())
        ops = ", ".join(dict.fromkeys(str(op).split(" in ")[0] for op in rows["op"]))
        count = int(rows["count"].sum())
        hot = calls >= HOT_CALLS
        findings.append(
            {
                "severity": "warning" if hot else "info",
                "title": f"host callback {ops} in {'hot function ' if hot else ''}{graph}: "
                f"{counted(count, 'round trip')} to Python" + _lines(rows),
                "detail": f"{graph} ran {counted(calls, 'time')} in this cell, and each run "
                "stops the "
                f"device program for: {ops}.",
                "advice": jax_text.ADVICE[jax_text.HOST_CALLBACK],
            }
        )
    return findings


def jax_host_transfers(profile: Profile) -> list[Finding]:
    """NumPy arrays or Python scalars passed to jitted functions: a copy to the device on
    every call."""
    fallbacks = profile.fallbacks
    causes = fallbacks["cause"].tolist()
    if jax_text.HOST_TRANSFER not in causes:
        return []
    # a cell's few rows picked in plain Python: a frame filter costs more than the rule
    positions = [
        position
        for position, (backend, cause) in enumerate(
            zip(fallbacks["backend"].tolist(), causes, strict=True)
        )
        if backend == jax_text.BACKEND and cause == jax_text.HOST_TRANSFER
    ]
    if not positions:
        return []
    rows = fallbacks if len(positions) == len(fallbacks) else fallbacks.iloc[positions]
    count = int(rows["count"].sum())
    ops = ", ".join(f"{op} ×{n}" for op, n in zip(rows["op"], rows["count"], strict=True))
    return [
        {
            "severity": "warning",
            "title": f"{counted(count, 'host input')} copied to the device on calls of jitted "
            "functions" + _lines(rows),
            "detail": f"Host values passed to jitted functions are copied to the device on every "
            f"call: {ops}.",
            "advice": "; ".join(dict.fromkeys(rows["advice"].astype(str))) + ".",
            "seconds": lane_seconds(profile, "transfer", "jax"),
        }
    ]


_IDENTITY_CAUSE = re.compile(
    r"a new (?P<cls>\S+) object(?: at (?:keyword )?(?P<where>\S+))? \("
    + re.escape(jax_text.IDENTITY_HASHED)
)


def _identity_reason(causes: pd.Series) -> str:
    """``: static argument config is a new Config object each call, hashed by identity``
    when every recompile's cause is such an object (the why, in the title); else ""."""
    found = [_IDENTITY_CAUSE.search(cause) for cause in causes]
    if not found or not all(found):
        return ""
    first = found[0]
    assert first is not None
    where = f" {first['where']}" if first["where"] else ""
    return f": static argument{where} is a new {first['cls']} object each call, hashed by identity"


def jax_eager_compiles(profile: Profile) -> list[Finding]:
    """Small programs compiled for ops run outside jax.jit: many of them (a warning), or a
    few that took a noticeable share of the cell (information)."""
    if profile.compiles.empty:
        return []
    compiles = _jax_rows(profile.compiles)
    eager = compiles[_flag(compiles, "eager")]
    seconds = float(eager["seconds"].sum(skipna=True))
    many = len(eager) >= EAGER_COMPILES
    wall = profile.wall_seconds or 0.0
    if eager.empty or not (many or (wall > 0 and seconds >= EAGER_SHARE * wall)):
        return []
    top = eager["graph"].value_counts().head(5)
    names = ", ".join(f"{name} ×{n}" for name, n in top.items())
    return [
        {
            "severity": "warning" if many else "info",
            "title": f"{len(eager)} small eager-op compiles" + _lines(eager),
            "detail": f"Each jax.numpy/lax op run outside jax.jit compiles its own program per "
            f"shape and dtype ({names}); {format_seconds(seconds)} spent compiling them.",
            "advice": "Put the computation in a function decorated with jax.jit so it compiles "
            "once as one program (and runs faster), and keep shapes fixed.",
            "seconds": seconds,
        }
    ]


#: Live device memory growing by at least this many bytes in a cell is worth a note.
GROWTH_BYTES = 1_000_000


def jax_memory_growth(profile: Profile) -> list[Finding]:
    """Live device memory that grew in the cell (arrays it created and kept: results appended
    to a list grow it again on every run). Information: a cell may well mean to keep them."""
    live = profile.live_arrays
    if live.empty or (profile.failed and out_of_memory(profile.error)):
        return []  # out of memory: out_of_memory_failure says what was alive
    found = snapshots(live, jax_text.BACKEND)
    if "before" not in found or "after" not in found:
        return []
    grown = _total(found["after"], 1) - _total(found["before"], 1)
    if grown < GROWTH_BYTES or len(growing_runs(live, jax_text.BACKEND)) >= LEAK_RUNS:
        return []  # nothing much, or memory_leak_across_cells says more
    kept = kept_groups(live, jax_text.BACKEND)
    arrays = int(_total(found["after"], 0) - _total(found["before"], 0))
    return [
        {
            "severity": "info",
            "title": f"live device memory grew by {format_bytes(grown)} "
            f"({counted(arrays, 'array')}) in this cell",
            "detail": f"Arrays the cell created and kept: {kept or '-'}. Run again, a cell that "
            "appends results to a list grows it again.",
            "advice": "Keep what you need on the host (float(x) once, np.asarray), or only the "
            "latest result; `del` arrays you no longer need.",
        }
    ]


def _total(rows: list[tuple[Any, Any]], field: int) -> float:
    """The sum of item `field` (0: count, 1: bytes) of `rows`, nulls left out (as pandas
    sums)."""
    return float(sum(row[field] for row in rows if not pd.isna(row[field])))
