"""Findings: the "why is this cell slow" list, derived from a Profile's frames only.

Each rule is a function ``(profile) -> list of finding rows``; the advice follows the PyTorch/XLA
performance caveats (static shapes, no ``.item()`` in the loop, no data-dependent shapes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from xlanb.backends import jax as jax_backend
from xlanb.backends.base import FALLBACK_ADVICE
from xlanb.backends.compile_causes import CHANGED_GRAPH, FORCED_SYNC, NEW_SHAPE
from xlanb.profile import Profile, make_frame
from xlanb.views.summary import format_seconds

Finding = dict[str, Any]
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def _lines(rows: pd.DataFrame) -> str:
    lines = sorted({int(v) for v in rows["cell_line"].dropna()})
    if lines:
        return " (cell line " + ", ".join(str(n) for n in lines) + ")"
    locations = sorted({str(v) for v in rows["location"].dropna()})
    return f" (at {', '.join(locations[:3])})" if locations else ""


def recompilation(profile: Profile) -> list[Finding]:
    """Graphs recompiled because input shapes changed, or one line compiling many graphs."""
    compiles = profile.compiles
    compiles = compiles[compiles["backend"] != jax_backend.NAME]  # see jax_recompilation
    if compiles.empty:
        return []
    findings = []
    shape_changes = compiles[compiles["cause"].astype(str).str.startswith(NEW_SHAPE)]
    if not shape_changes.empty:
        changes = "; ".join(dict.fromkeys(
            c.split(": ", 1)[1] for c in shape_changes["cause"]))
        seconds = shape_changes["seconds"].sum(skipna=True)
        findings.append({
            "severity": "warning",
            "title": f"{len(shape_changes)} recompilation(s) from changing input shapes"
                     + _lines(shape_changes),
            "detail": f"Same graph, new shapes: {changes}. "
                      f"{format_seconds(seconds)} spent compiling them.",
            "advice": "Keep shapes static: pad batches to a fixed size or bucket them into a "
                      "few sizes, and drop the last partial batch (drop_last=True).",
        })
    # The first two steps of a loop legitimately differ (fresh inputs, then step outputs);
    # a third "changed" graph from the same line means something changes every step.
    changed = compiles[compiles["cause"] == CHANGED_GRAPH].dropna(subset=["location"])
    for _location, rows in changed.groupby("location"):
        if len(rows) >= 2:
            findings.append({
                "severity": "warning",
                "title": f"{len(rows) + 1} different graphs compiled by the same line"
                         + _lines(rows),
                "detail": "The steps look alike, yet each compiled a new graph: something in "
                          "the traced code changes every step (a Python scalar baked in as a "
                          "constant, a growing list, a changing condition).",
                "advice": "Pass changing Python numbers as tensors, and keep the traced code "
                          "the same every step.",
            })
    return findings


def forced_syncs(profile: Profile) -> list[Finding]:
    """Syncs the user did not ask for: a tensor value was read inside the step."""
    compiles = profile.compiles
    forced = compiles[compiles["cause"].astype(str).str.startswith(FORCED_SYNC)]
    if forced.empty:
        return []
    return [{
        "severity": "warning",
        "title": f"{len(forced)} forced sync(s) compiled a graph mid-step" + _lines(forced),
        "detail": "Reading a tensor's value (.item(), print, bool(), a CPU fallback on pending "
                  "data) cuts the graph and runs it early, so each step compiles and runs "
                  "more, smaller graphs.",
        "advice": FALLBACK_ADVICE["item"],
    }]


def cpu_fallbacks(profile: Profile) -> list[Finding]:
    """Ops that ran on the CPU, one finding per cause."""
    fallbacks = profile.fallbacks
    findings = []
    titles = {"item": "value(s) read back to the host with .item()",
              "dynamic_shape": "op(s) with data-dependent output shapes fell back to the CPU",
              "missing_lowering": "op(s) without a lowering fell back to the CPU"}
    for cause, rows in fallbacks.groupby("cause", sort=False):
        if cause in _JAX_FALLBACK_CAUSES:  # see jax_host_callbacks, jax_host_transfers
            continue
        count = int(rows["count"].sum())
        ops = ", ".join(f"{op} ×{n}" for op, n in zip(rows["op"], rows["count"], strict=True))
        findings.append({
            "severity": "error" if cause != "item" else "warning",
            "title": f"{count} {titles.get(cause, 'CPU fallback(s)')}",
            "detail": f"CPU fallbacks: {ops}.",
            "advice": FALLBACK_ADVICE.get(cause, ""),
        })
    return findings


_JAX_FALLBACK_CAUSES = {jax_backend.HOST_CALLBACK, jax_backend.HOST_TRANSFER}
_JAX_RECOMPILE_CAUSES = (jax_backend.NEW_TYPES, jax_backend.STATIC_CHANGED,
                         jax_backend.NEW_PYTREE, jax_backend.NEW_CONTEXT)
#: A function run this many times in a cell is hot: a host callback in it is a warning.
HOT_CALLS = 10
#: This many eager-op compiles in a cell are worth a warning.
EAGER_COMPILES = 10


def _jax_rows(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["backend"] == jax_backend.NAME]


def _flag(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame.columns:
        return pd.Series(False, index=frame.index)
    return frame[column].eq(True)


def jax_recompilation(profile: Profile) -> list[Finding]:
    """A jitted function compiled again in the cell: new input shapes or dtypes, a new static
    argument value, or a new function object each time."""
    compiles = _jax_rows(profile.compiles)
    compiles = compiles[~_flag(compiles, "eager")]
    findings = []
    for graph, rows in compiles.groupby("graph", sort=False):
        causes = rows["cause"].astype(str)
        again = rows[causes.str.startswith(_JAX_RECOMPILE_CAUSES)]
        # The same line compiling a function of the same name that JAX never saw, again and
        # again: a new function object each time.
        fresh = rows[causes == jax_backend.NEVER_SEEN]
        repeated = fresh["location"].value_counts()
        fresh = fresh[fresh["location"].isin(repeated[repeated >= 2].index)]
        phases = [c for c in ("trace_seconds", "lower_seconds", "seconds") if c in rows]
        seconds = float(rows[phases].sum(skipna=True).sum())
        if not again.empty:
            changes = "; ".join(dict.fromkeys(again["cause"].astype(str)))
            static = again["cause"].astype(str).str.startswith(jax_backend.STATIC_CHANGED)
            advice = []
            if static.any():
                advice.append("Every new value of a static argument compiles a new program: "
                              "pass values that change as traced (array) arguments, and keep "
                              "static arguments to a few values such as flags and sizes.")
            if not static.all():
                advice.append("Keep shapes and dtypes static: pad batches to a fixed size or "
                              "bucket them into a few sizes, drop the last partial batch, and "
                              "keep dtypes fixed (a Python float vs a float32 array is a new "
                              "type).")
            findings.append({
                "severity": "warning",
                "title": f"{graph} recompiled {len(again)} time(s) in this cell" + _lines(again),
                "detail": f"JAX traced and compiled it again because: {changes}. "
                          f"{len(rows)} compile(s) of it took {format_seconds(seconds)} in all.",
                "advice": " ".join(advice),
            })
        if not fresh.empty:
            findings.append({
                "severity": "warning",
                "title": f"{graph} compiled {len(fresh)} times as a function JAX had never "
                         "seen" + _lines(fresh),
                "detail": "Each call used a new function object, so JAX's caches never hit: "
                          "jax.jit (or a lambda or partial passed to it) is applied inside a "
                          f"loop or a function. {format_seconds(seconds)} spent compiling.",
                "advice": "Create the jitted function once, outside the loop, and reuse it; "
                          "pass changing values as arguments.",
            })
    return findings


def jax_host_callbacks(profile: Profile) -> list[Finding]:
    """Host callbacks (pure_callback, io_callback, jax.debug.print) in jitted functions."""
    fallbacks = _jax_rows(profile.fallbacks)
    fallbacks = fallbacks[fallbacks["cause"] == jax_backend.HOST_CALLBACK]
    findings = []
    group = "graph" if "graph" in fallbacks.columns else "op"
    for graph, rows in fallbacks.groupby(group, sort=False):
        calls = int(rows["calls"].max()) if "calls" in rows else int(rows["count"].max())
        ops = ", ".join(dict.fromkeys(str(op).split(" in ")[0] for op in rows["op"]))
        count = int(rows["count"].sum())
        hot = calls >= HOT_CALLS
        findings.append({
            "severity": "warning" if hot else "info",
            "title": f"host callback(s) {ops} in {'hot function ' if hot else ''}{graph}: "
                     f"{count} round trip(s) to Python" + _lines(rows),
            "detail": f"{graph} ran {calls} time(s) in this cell, and each run stops the "
                      f"device program for: {ops}.",
            "advice": jax_backend.ADVICE[jax_backend.HOST_CALLBACK],
        })
    return findings


def jax_host_transfers(profile: Profile) -> list[Finding]:
    """NumPy arrays or Python scalars passed to jitted functions: a copy to the device on
    every call."""
    fallbacks = _jax_rows(profile.fallbacks)
    rows = fallbacks[fallbacks["cause"] == jax_backend.HOST_TRANSFER]
    if rows.empty:
        return []
    count = int(rows["count"].sum())
    ops = ", ".join(f"{op} ×{n}" for op, n in zip(rows["op"], rows["count"], strict=True))
    return [{
        "severity": "warning",
        "title": f"{count} implicit host-to-device transfer(s) into jitted functions"
                 + _lines(rows),
        "detail": f"Host values passed to jitted functions are copied to the device on every "
                  f"call: {ops}.",
        "advice": "; ".join(dict.fromkeys(rows["advice"].astype(str))) + ".",
    }]


def jax_eager_compiles(profile: Profile) -> list[Finding]:
    """Many small programs compiled for ops run outside jax.jit."""
    compiles = _jax_rows(profile.compiles)
    eager = compiles[_flag(compiles, "eager")]
    if len(eager) < EAGER_COMPILES:
        return []
    top = eager["graph"].value_counts().head(5)
    names = ", ".join(f"{name} ×{n}" for name, n in top.items())
    seconds = float(eager["seconds"].sum(skipna=True))
    return [{
        "severity": "warning",
        "title": f"{len(eager)} small eager-op compiles" + _lines(eager),
        "detail": f"Each jax.numpy/lax op run outside jax.jit compiles its own program per "
                  f"shape and dtype ({names}); {format_seconds(seconds)} spent compiling them.",
        "advice": "Put the computation in a function decorated with jax.jit so it compiles "
                  "once as one program (and runs faster), and keep shapes fixed.",
    }]


# -- multi-process runs (a Profile merged by xlanb.ranks.load_ranks) -------------------------
# Each rule returns nothing unless the profile's frames carry a `rank` column and it holds at
# least two ranks, so single-process profiles are never affected.
#: Programs named in a divergence finding (the rest are counted).
DIVERGENT_SHOWN = 6


def _rank_table(profile: Profile) -> pd.DataFrame | None:
    from xlanb.ranks.table import is_multi_rank, rank_table

    if not is_multi_rank(profile):
        return None
    table = rank_table(profile)
    return table if len(table) >= 2 else None


def _ranks_label(ranks: list[int]) -> str:
    from xlanb.ranks.table import format_ranks

    return f"rank{'s' if len(ranks) > 1 else ''} {format_ranks(ranks)}"


def _spread(values: list[int]) -> str:
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}-{high}"


def _rank_row(severity: str, ranks: list[int], title: str, detail: str, advice: str
              ) -> Finding:
    from xlanb.ranks.table import format_ranks

    return {"severity": severity, "title": title, "detail": detail, "advice": advice,
            "rank": ranks[0] if len(ranks) == 1 else None, "ranks": format_ranks(ranks)}


def rank_skew(profile: Profile) -> list[Finding]:
    """One rank compiling or falling back more than the others, a rank whose execute time is
    an outlier, and the straggler the others wait for in collectives."""
    from xlanb.ranks.table import median_of_others, outliers, usual_count

    table = _rank_table(profile)
    if table is None:
        return []
    standing_out = outliers(table)
    indexed = table.set_index("rank")
    findings = []
    for column, noun, detail_of, advice in (
            ("compiles", "compiled more graphs", _extra_compiles,
             "Every rank should trace and compile the same graphs. Look in these ranks' "
             "compiles for code that depends on the rank or its data: a branch on the rank, a "
             "last partial batch, a .item() or print on one rank only. While one rank "
             "compiles, the others wait for it at the next collective."),
            ("fallback_ops", "ran more CPU fallbacks", _extra_fallbacks,
             "A CPU fallback syncs and copies on that rank only, and every other rank waits for "
             "it at the next collective. Find the code only these ranks run, then remove the "
             "fallback as its own finding advises.")):
        ranks = standing_out.get(column, [])
        if not ranks:
            continue
        usual = usual_count([int(v) for v in table[column]])
        counts = [int(indexed.loc[r, column]) for r in ranks]
        findings.append(_rank_row(
            "warning", ranks,
            f"{_ranks_label(ranks)} {noun} than the other ranks "
            f"({_spread(counts)} vs {usual})", detail_of(profile, ranks), advice))
    for rank in standing_out.get("execute_seconds", []):
        value = float(indexed.loc[rank, "execute_seconds"])
        others = median_of_others(table, "execute_seconds", rank)
        findings.append(_rank_row(
            "warning", [rank],
            f"rank {rank}'s execute time is an outlier: {format_seconds(value)}, "
            f"{value / others:.1f}x the other ranks' median ({format_seconds(others)})"
            if others > 0 else f"rank {rank}'s execute time is an outlier: "
            f"{format_seconds(value)}, the other ranks' median {format_seconds(others)}",
            f"Rank {rank} ran {int(indexed.loc[rank, 'executions'])} execution(s) "
            f"(median of the others {median_of_others(table, 'executions', rank):g}) on "
            f"{indexed.loc[rank, 'host']} {indexed.loc[rank, 'device']}.",
            "Every rank waits for the slowest at each collective. Check whether this rank runs "
            "other or more graphs (see the programs that differ between ranks), whether its "
            "host or device is slower or busy, and whether its input pipeline keeps up."))
    for rank in standing_out.get("collective_seconds", []):
        value = float(indexed.loc[rank, "collective_seconds"])
        others = median_of_others(table, "collective_seconds", rank)
        findings.append(_rank_row(
            "warning", [rank],
            f"rank {rank} is the straggler: the other ranks waited {format_seconds(others)} "
            f"(median) in collectives, rank {rank} {format_seconds(value)}",
            "A blocking collective returns when the last rank arrives, so the ranks that "
            "wait longest are the fast ones, and the rank that hardly waits is the one "
            "holding the others up.",
            f"Look at what rank {rank} does that the others do not: its compiles, CPU "
            "fallbacks and execute time in the per-rank table."))
    return findings


def _extra_compiles(profile: Profile, ranks: list[int]) -> str:
    from xlanb.ranks.table import programs

    table = programs(profile)
    everywhere = _programs_on_every_rank(profile, table)
    parts = []
    for rank in ranks[:4]:
        own = table[(table["rank"] == rank) & ~table["program"].isin(everywhere)]
        compiled = set(profile.compiles.loc[profile.compiles["rank"] == rank, "graph"]
                       .astype(str))
        own = own[own["graph"].isin(compiled)]
        listed = "; ".join(_program_label(p, w) for p, w in
                           zip(own["program"], own["where"], strict=True)) or \
            "the same graphs as the others, compiled more often"
        parts.append(f"rank {rank}: {listed}")
    return "Compiles not shared by every rank: " + " | ".join(parts) + "."


def _extra_fallbacks(profile: Profile, ranks: list[int]) -> str:
    fallbacks = profile.fallbacks
    parts = []
    for rank in ranks[:4]:
        rows = fallbacks[fallbacks["rank"] == rank].groupby("op", sort=False)["count"].sum()
        parts.append(f"rank {rank}: " + ", ".join(f"{op} ×{n}" for op, n in rows.items()))
    others = fallbacks[~fallbacks["rank"].isin(ranks)].groupby("op")["count"].sum()
    usual = ", ".join(f"{op} ×{n} in all" for op, n in others.items()) or "none"
    return "CPU fallbacks: " + " | ".join(parts) + f"; the other ranks: {usual}."


def _programs_on_every_rank(profile: Profile, table: pd.DataFrame) -> set[str]:
    present = set(table["rank"]) | set(profile.environment["ranks"].get("present", []))
    counts = table.groupby("program")["rank"].nunique()
    return set(counts[counts >= len(present)].index)


def _program_label(program: str, where: str) -> str:
    name = program[:12] + "…" if len(program) == 32 and program.isalnum() else program
    return f"{name} ({where})" if where else name


def rank_divergent_programs(profile: Profile) -> list[Finding]:
    """Graphs (programs) that some ranks compiled or ran and others did not: the ranks traced
    different code or shapes. A JAX function compiled for other input types on some ranks is
    one item, with the input types of each."""
    from xlanb.ranks.table import format_ranks, programs

    if _rank_table(profile) is None:
        return []
    table = programs(profile)
    present = sorted(int(r) for r in profile.environment["ranks"].get("present", []))
    divergent: list[tuple[list[int], str]] = []
    for (_backend, graph), rows in table.groupby(["backend", "graph"], sort=False):
        ranks_of = {program: sorted(set(int(r) for r in group["rank"]))
                    for program, group in rows.groupby("program", sort=False)}
        if all(len(ranks) == len(present) for ranks in ranks_of.values()):
            continue
        where = next((w for w in rows["where"] if w), "")
        if len(ranks_of) > 1 and rows["signature"].astype(bool).all():
            variants = rows.drop_duplicates("program")
            text = f"{graph} ({where}) with other input types per rank: " + "; ".join(
                f"({signature}) on {_ranks_label(ranks_of[program])}" for program, signature
                in zip(variants["program"], variants["signature"], strict=True))
            divergent.append((sorted({r for ranks in ranks_of.values() for r in ranks}),
                              text))
            continue
        for program, ranks in ranks_of.items():
            if len(ranks) == len(present):
                continue
            missing = [r for r in present if r not in ranks]
            side = (f"only on {_ranks_label(ranks)}" if len(ranks) <= len(missing)
                    else f"on every rank but {format_ranks(missing)}")
            divergent.append((ranks, f"{_program_label(program, where)}: {side}"))
    if not divergent:
        return []
    involved = sorted({r for ranks, _ in divergent for r in ranks})
    shown = "; ".join(text for _, text in divergent[:DIVERGENT_SHOWN])
    more = (f"; and {len(divergent) - DIVERGENT_SHOWN} more"
            if len(divergent) > DIVERGENT_SHOWN else "")
    return [_rank_row(
        "warning", involved,
        f"{len(divergent)} graph(s) differ between ranks (divergent programs)",
        f"Not compiled or run by every rank: {shown}{more}.",
        "In data-parallel training every rank runs the same programs; a graph that only some "
        "ranks run means they traced different code or shapes (a branch on the rank or on "
        "data, an uneven last batch, a different input shape). A collective in diverging "
        "programs can mismatch or hang. (A graph one rank compiled before the profiled block "
        "and another inside it is also listed.)")]


def rank_health(profile: Profile) -> list[Finding]:
    """Ranks that wrote no profile, and ranks whose block raised."""
    from xlanb.ranks.table import is_multi_rank

    if not is_multi_rank(profile):
        return []
    info = profile.environment["ranks"]
    findings = []
    missing = [int(r) for r in info.get("missing", [])]
    if missing:
        findings.append(_rank_row(
            "warning", missing,
            f"{_ranks_label(missing)} of {info.get('world_size')} wrote no profile",
            f"No file from {_ranks_label(missing)} in {info.get('directory') or 'the directory'}"
            ": it crashed, was killed, or had not finished its record() block yet (each rank "
            "writes its file when the block ends).",
            "Check that rank's log. The other ranks' numbers are shown; a rank missing from a "
            "collective makes the others wait until they time out."))
    for row in info.get("per_rank", []):
        if row.get("failed"):
            findings.append(_rank_row(
                "error", [int(row["rank"])],
                f"rank {row['rank']}'s profiled block raised: {row.get('error', '')}",
                f"Rank {row['rank']} on {row.get('host', '')} ended its record() block with "
                "an exception; its profile covers the block up to that point.",
                "Fix that rank's error first: the other ranks' waits and timeouts may follow "
                "from it."))
    return findings


#: The rules for multi-process runs (also in :data:`RULES`; they do nothing for one process).
RANK_RULES: list[Callable[[Profile], list[Finding]]] = [
    rank_health, rank_skew, rank_divergent_programs,
]

RULES: list[Callable[[Profile], list[Finding]]] = [
    cpu_fallbacks, recompilation, forced_syncs,
    jax_recompilation, jax_host_callbacks, jax_host_transfers, jax_eager_compiles,
    *RANK_RULES,
]


def findings_frame(profile: Profile) -> pd.DataFrame:
    """Every rule's findings, most severe first."""
    rows = [finding for rule in RULES for finding in rule(profile)]
    rows.sort(key=lambda f: SEVERITY_ORDER.get(f["severity"], 9))
    return make_frame("findings", rows)


def check_compile_budget(profile: Profile, limit: int) -> None:
    """Raise :class:`xlanb.CompileBudgetExceeded` when `profile` compiled more than `limit`
    graphs (JAX's eager single-op compiles are not counted)."""
    from xlanb.errors import CompileBudgetExceeded

    compiles = profile.compiles
    if "eager" in compiles.columns:
        compiles = compiles[compiles["eager"] != True]  # noqa: E712 - NaN means not eager
    if len(compiles) <= limit:
        return
    shown = []
    for row in compiles.head(10).itertuples():
        where = f" at cell line {row.cell_line}" if not pd.isna(row.cell_line) else ""
        shown.append(f"  {row.backend} {row.graph}{where}: {row.cause}")
    more = f"\n  ... and {len(compiles) - 10} more" if len(compiles) > 10 else ""
    raise CompileBudgetExceeded(
        f"{profile.name} compiled {len(compiles)} graphs, more than --max-compiles {limit}:\n"
        + "\n".join(shown) + more, len(compiles), limit)
