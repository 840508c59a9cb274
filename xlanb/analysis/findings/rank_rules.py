"""Findings for multi-process runs (a Profile merged by xlanb.ranks.load_ranks).

Each rule returns nothing unless the profile's frames carry a `rank` column and it holds at
least two ranks, so single-process profiles are never affected.
"""

from __future__ import annotations

import pandas as pd

from xlanb.analysis.findings.common import Finding
from xlanb.analysis.ranks import (
    format_ranks,
    is_multi_rank,
    median_of_others,
    outliers,
    programs,
    rank_table,
    usual_count,
)
from xlanb.core.profile import Profile
from xlanb.core.units import format_seconds
from xlanb.core.words import counted

#: Programs named in a divergence finding (the rest are counted).
DIVERGENT_SHOWN = 6


def _rank_table(profile: Profile) -> pd.DataFrame | None:
    if not is_multi_rank(profile):
        return None
    table = rank_table(profile)
    return table if len(table) >= 2 else None


def _ranks_label(ranks: list[int]) -> str:
    return f"rank{'s' if len(ranks) > 1 else ''} {format_ranks(ranks)}"


def _spread(values: list[int]) -> str:
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}-{high}"


def _rank_row(severity: str, ranks: list[int], title: str, detail: str, advice: str) -> Finding:
    return {
        "severity": severity,
        "title": title,
        "detail": detail,
        "advice": advice,
        "rank": ranks[0] if len(ranks) == 1 else None,
        "ranks": format_ranks(ranks),
    }


def rank_skew(profile: Profile) -> list[Finding]:
    """One rank compiling or falling back more than the others, a rank whose execute time is
    an outlier, and the straggler the others wait for in collectives."""
    table = _rank_table(profile)
    if table is None:
        return []
    standing_out = outliers(table)
    indexed = table.set_index("rank")
    findings = []
    for column, noun, detail_of, advice in (
        (
            "compiles",
            "compiled more graphs",
            _extra_compiles,
            "Every rank should trace and compile the same graphs. Look in these ranks' "
            "compiles for code that depends on the rank or its data: a branch on the rank, a "
            "last partial batch, a .item() or print on one rank only. While one rank "
            "compiles, the others wait for it at the next collective.",
        ),
        (
            "host_ops",
            "left the device more often",
            _extra_fallbacks,
            "A value read back (.item(), print) or a CPU fallback syncs and copies on that "
            "rank only, and every other rank waits for it at the next collective. Find the "
            "code only these ranks run, then remove the read or fallback as its own finding "
            "advises.",
        ),
    ):
        ranks = standing_out.get(column, [])
        if not ranks:
            continue
        usual = usual_count([int(v) for v in table[column]])
        counts = [int(indexed.loc[r, column]) for r in ranks]
        findings.append(
            _rank_row(
                "warning",
                ranks,
                f"{_ranks_label(ranks)} {noun} than the other ranks ({_spread(counts)} vs {usual})",
                detail_of(profile, ranks),
                advice,
            )
        )
    for rank in standing_out.get("execute_seconds", []):
        value = float(indexed.loc[rank, "execute_seconds"])
        others = median_of_others(table, "execute_seconds", rank)
        findings.append(
            _rank_row(
                "warning",
                [rank],
                f"rank {rank}'s execute time is an outlier: {format_seconds(value)}, "
                f"{value / others:.1f}x the other ranks' median ({format_seconds(others)})"
                if others > 0
                else f"rank {rank}'s execute time is an outlier: "
                f"{format_seconds(value)}, the other ranks' median {format_seconds(others)}",
                f"Rank {rank} ran {counted(indexed.loc[rank, 'executions'], 'execution')} "
                f"(median of the others {median_of_others(table, 'executions', rank):g}) on "
                f"{indexed.loc[rank, 'host']} {indexed.loc[rank, 'device']}.",
                "Every rank waits for the slowest at each collective. Check whether this rank runs "
                "other or more graphs (see the programs that differ between ranks), whether its "
                "host or device is slower or busy, and whether its input pipeline keeps up.",
            )
        )
    for rank in standing_out.get("collective_seconds", []):
        value = float(indexed.loc[rank, "collective_seconds"])
        others = median_of_others(table, "collective_seconds", rank)
        findings.append(
            _rank_row(
                "warning",
                [rank],
                f"rank {rank} is the straggler: the other ranks waited {format_seconds(others)} "
                f"(median) in collectives, rank {rank} {format_seconds(value)}",
                "A blocking collective returns when the last rank arrives, so the ranks that "
                "wait longest are the fast ones, and the rank that hardly waits is the one "
                "holding the others up.",
                f"Look at what rank {rank} does that the others do not: its compiles, CPU "
                "fallbacks and execute time in the per-rank table.",
            )
        )
    return findings


def _extra_compiles(profile: Profile, ranks: list[int]) -> str:
    table = programs(profile)
    everywhere = _programs_on_every_rank(profile, table)
    parts = []
    for rank in ranks[:4]:
        own = table[(table["rank"] == rank) & ~table["program"].isin(everywhere)]
        compiled = set(profile.compiles.loc[profile.compiles["rank"] == rank, "graph"].astype(str))
        own = own[own["graph"].isin(compiled)]
        listed = (
            "; ".join(
                _program_label(p, w) for p, w in zip(own["program"], own["where"], strict=True)
            )
            or "the same graphs as the others, compiled more often"
        )
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
    return "Left the device: " + " | ".join(parts) + f"; the other ranks: {usual}."


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
    if _rank_table(profile) is None:
        return []
    table = programs(profile)
    present = sorted(int(r) for r in profile.environment["ranks"].get("present", []))
    divergent: list[tuple[list[int], str]] = []
    for (_backend, graph), rows in table.groupby(["backend", "graph"], sort=False):
        ranks_of = {
            program: sorted(set(int(r) for r in group["rank"]))
            for program, group in rows.groupby("program", sort=False)
        }
        if all(len(ranks) == len(present) for ranks in ranks_of.values()):
            continue
        where = next((w for w in rows["where"] if w), "")
        if len(ranks_of) > 1 and rows["signature"].astype(bool).all():
            variants = rows.drop_duplicates("program")
            text = f"{graph} ({where}) with other input types per rank: " + "; ".join(
                f"({signature}) on {_ranks_label(ranks_of[program])}"
                for program, signature in zip(
                    variants["program"], variants["signature"], strict=True
                )
            )
            divergent.append((sorted({r for ranks in ranks_of.values() for r in ranks}), text))
            continue
        for program, ranks in ranks_of.items():
            if len(ranks) == len(present):
                continue
            missing = [r for r in present if r not in ranks]
            side = (
                f"only on {_ranks_label(ranks)}"
                if len(ranks) <= len(missing)
                else f"on every rank but {format_ranks(missing)}"
            )
            divergent.append((ranks, f"{_program_label(program, where)}: {side}"))
    if not divergent:
        return []
    involved = sorted({r for ranks, _ in divergent for r in ranks})
    shown = "; ".join(text for _, text in divergent[:DIVERGENT_SHOWN])
    more = (
        f"; and {len(divergent) - DIVERGENT_SHOWN} more" if len(divergent) > DIVERGENT_SHOWN else ""
    )
    return [
        _rank_row(
            "warning",
            involved,
            f"{counted(len(divergent), 'graph')} "
            f"{'differs' if len(divergent) == 1 else 'differ'} between ranks (divergent programs)",
            f"Not compiled or run by every rank: {shown}{more}.",
            "In data-parallel training every rank runs the same programs; a graph that only some "
            "ranks run means they traced different code or shapes (a branch on the rank or on "
            "data, an uneven last batch, a different input shape). A collective in diverging "
            "programs can mismatch or hang. (A graph one rank compiled before the profiled block "
            "and another inside it is also listed.)",
        )
    ]


def rank_health(profile: Profile) -> list[Finding]:
    """Ranks that wrote no profile, and ranks whose block raised."""
    if not is_multi_rank(profile):
        return []
    info = profile.environment["ranks"]
    findings = []
    missing = [int(r) for r in info.get("missing", [])]
    if missing:
        findings.append(
            _rank_row(
                "warning",
                missing,
                f"{_ranks_label(missing)} of {info.get('world_size')} wrote no profile",
                f"No file from {_ranks_label(missing)} in "
                f"{info.get('directory') or 'the directory'}: it crashed, was killed, or had "
                "not finished its record() block yet (each rank writes its file when the block "
                "ends).",
                "Check that rank's log. The other ranks' numbers are shown; a rank missing from a "
                "collective makes the others wait until they time out.",
            )
        )
    for row in info.get("per_rank", []):
        if row.get("failed"):
            findings.append(
                _rank_row(
                    "error",
                    [int(row["rank"])],
                    f"rank {row['rank']}'s profiled block raised: {row.get('error', '')}",
                    f"Rank {row['rank']} on {row.get('host', '')} ended its record() block with "
                    "an exception; its profile covers the block up to that point.",
                    "Fix that rank's error first: the other ranks' waits and timeouts may follow "
                    "from it.",
                )
            )
    return findings
