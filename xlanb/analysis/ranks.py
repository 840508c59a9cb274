"""The per-rank table of a merged profile, the ranks that stand out in it, and the programs
each rank compiled or ran. Shared by the skew findings and the per-rank view."""

from __future__ import annotations

import re
import statistics
from typing import Any

import pandas as pd

from xlanb.core.profile import Profile
from xlanb.core.profile import is_multi_rank as is_multi_rank
from xlanb.formats.rank_files import format_ranks  # noqa: F401 - re-exported

#: Columns of :func:`rank_table`, in order.
RANK_COLUMNS = [
    "rank",
    "host",
    "device",
    "compiles",
    "compile_seconds",
    "executions",
    "execute_seconds",
    "host_ops",
    "transfers",
    "collective_ops",
    "collective_seconds",
    "wall_seconds",
    "status",
]
#: Counts that every rank of a data-parallel run should share: a rank above the usual value
#: stands out.
COUNT_COLUMNS = ("compiles", "executions", "host_ops", "transfers", "collective_ops")
#: Durations: a rank this many times the median of the other ranks, and at least
#: ``MIN_OUTLIER_SECONDS`` above it, stands out.
TIME_COLUMNS = ("compile_seconds", "execute_seconds", "wall_seconds")
OUTLIER_RATIO = 1.5
MIN_OUTLIER_SECONDS = 0.01
#: Time blocked in collectives: the rank that waits far *less* than the others is the one
#: they wait for (the straggler).
WAIT_COLUMN = "collective_seconds"

_COLLECTIVE_COUNTER = re.compile(
    r"allreduce|allgather|reducescatter|alltoall|"
    r"collectivepermute|collectivebroadcast"
)
_HLO_COLLECTIVE = re.compile(
    r"\s(?:all-reduce|all-gather|reduce-scatter|all-to-all|"
    r"ragged-all-to-all|collective-permute|collective-broadcast)"
    r"(?:-start)?\("
)


def rank_info(profile: Profile) -> dict[str, Any]:
    """``environment["ranks"]`` of a merged profile: run_id, world_size, present, missing,
    per_rank (one dict per rank: rank, host, device, pid, wall_seconds, failed, error,
    file)."""
    return profile.environment.get("ranks", {})


def rank_table(profile: Profile) -> pd.DataFrame:
    """One row per rank present (columns :data:`RANK_COLUMNS`): what each rank compiled,
    executed, ran on the CPU, transferred and spent in collectives."""
    per_rank = pd.DataFrame(rank_info(profile).get("per_rank", []))
    if per_rank.empty:
        return pd.DataFrame(columns=RANK_COLUMNS)
    ranks = pd.Index(per_rank["rank"].astype(int), name="rank")
    per_rank = per_rank.set_index(ranks)

    def total(frame: pd.DataFrame, column: str | None = None) -> pd.Series:
        grouped = frame.groupby("rank")
        values = grouped.size() if column is None else grouped[column].sum(min_count=1)
        return values.reindex(ranks).fillna(0)

    table = pd.DataFrame(
        {
            "host": per_rank["host"],
            "device": per_rank["device"],
            "compiles": total(profile.compiles).astype(int),
            "compile_seconds": total(profile.compiles, "seconds"),
            "executions": total(profile.executions, "count").astype(int),
            "execute_seconds": total(profile.executions, "seconds"),
            "host_ops": total(profile.fallbacks, "count").astype(int),
            "transfers": _transfers(profile, ranks),
            "collective_ops": _collective_ops(profile, ranks),
            "collective_seconds": _collective_seconds(profile, ranks),
            "wall_seconds": per_rank["wall_seconds"].astype(float),
            "status": [
                f"failed: {error}" if failed else "ok"
                for failed, error in zip(per_rank["failed"], per_rank["error"], strict=True)
            ],
        },
        index=ranks,
    )
    return table.reset_index()[RANK_COLUMNS]


def _transfers(profile: Profile, ranks: pd.Index) -> pd.Series:
    """As :meth:`Profile.summary`: Transfer* sample counts where a backend keeps them, else
    its transfer counters; per rank."""
    metrics = profile.metrics[profile.metrics["name"].astype(str).str.startswith("Transfer")]
    timed = metrics.groupby(["rank", "backend"])["count"].sum()
    counters = profile.counters[profile.counters["category"] == "transfer"]
    counted = counters.groupby(["rank", "backend"])["delta"].sum()
    totals = dict.fromkeys(ranks, 0)
    for key in set(timed.index) | set(counted.index):
        rank, backend = key
        if backend not in profile.backends or rank not in totals:
            continue
        totals[rank] += int(timed[key] if key in timed.index else counted[key])
    return pd.Series(totals, index=ranks, dtype=int)


def _collective_ops(profile: Profile, ranks: pd.Index) -> pd.Series:
    """Collective calls per rank: the runtimes' collective counters (``xla::all_reduce``,
    ...), ``torch.distributed`` calls, and for JAX the collective instructions of each
    compiled program times the runs of its function."""
    counters = profile.counters
    names = counters["name"].astype(str).str.lower().str.replace("_", "", regex=False)
    chosen = counters[
        names.str.contains(_COLLECTIVE_COUNTER) | (counters["category"] == "collective")
    ]
    totals = chosen.groupby("rank")["delta"].sum().reindex(ranks).fillna(0)
    return (totals + _jax_collective_ops(profile, ranks)).astype(int)


def _jax_collective_ops(profile: Profile, ranks: pd.Index) -> pd.Series:
    graphs = profile.graphs
    graphs = graphs[(graphs["backend"] == "jax") & (graphs["kind"] == "hlo_optimized")]
    if graphs.empty:
        return pd.Series(0, index=ranks)
    counts: dict[str, int] = {}
    per_program = []
    for rank, graph, text in zip(graphs["rank"], graphs["graph"], graphs["text"], strict=True):
        if not isinstance(text, str):
            continue
        if text not in counts:
            counts[text] = len(_HLO_COLLECTIVE.findall(text))
        per_program.append((rank, graph, counts[text]))
    programs = pd.DataFrame(per_program, columns=["rank", "graph", "collectives"])
    programs = programs.groupby(["rank", "graph"])["collectives"].max()
    runs = profile.executions[profile.executions["backend"] == "jax"]
    runs = runs.groupby(["rank", "graph"])["count"].sum()
    joined = (programs * runs.reindex(programs.index).fillna(0)).groupby(level="rank").sum()
    return joined.reindex(ranks).fillna(0)


def _collective_seconds(profile: Profile, ranks: pd.Index) -> pd.Series:
    metrics = profile.metrics[profile.metrics["name"] == "CollectiveTime"]
    return metrics.groupby("rank")["total"].sum().reindex(ranks).fillna(0.0)


# -- outliers -------------------------------------------------------------------------------
def usual_count(values: list[int]) -> int:
    """The value most ranks share (ties: the smaller, so that with two ranks the one that did
    more stands out)."""
    counted = pd.Series(values).value_counts()
    return int(min(counted[counted == counted.max()].index))


def outliers(table: pd.DataFrame) -> dict[str, list[int]]:
    """For each column of the per-rank table, the ranks that stand out: counts above the
    usual value, durations :data:`OUTLIER_RATIO` times the median of the other ranks, and for
    time in collectives the rank that waited far less than the others (the straggler)."""
    found: dict[str, list[int]] = {}
    if len(table) < 2:
        return found
    ranks = list(table["rank"])
    for column in COUNT_COLUMNS:
        values = [int(v) for v in table[column]]
        usual = usual_count(values)
        found[column] = [rank for rank, value in zip(ranks, values, strict=True) if value > usual]
    for column in (*TIME_COLUMNS, WAIT_COLUMN):
        times = [float(v) for v in table[column].fillna(0.0)]
        chosen = []
        for index, (rank, value) in enumerate(zip(ranks, times, strict=True)):
            others = statistics.median(times[:index] + times[index + 1 :])
            if column == WAIT_COLUMN:
                stands_out = (
                    others >= OUTLIER_RATIO * value and others - value >= MIN_OUTLIER_SECONDS
                )
            else:
                stands_out = (
                    value >= OUTLIER_RATIO * others and value - others >= MIN_OUTLIER_SECONDS
                )
            if stands_out:
                chosen.append(rank)
        found[column] = chosen
    return {column: ranks_ for column, ranks_ in found.items() if ranks_}


def median_of_others(table: pd.DataFrame, column: str, rank: int) -> float:
    """The median of `column` over every rank but `rank`."""
    others = table.loc[table["rank"] != rank, column].astype(float)
    return float(others.median()) if not others.empty else float("nan")


# -- programs -------------------------------------------------------------------------------
def programs(profile: Profile) -> pd.DataFrame:
    """Every program each rank compiled or ran: columns rank, backend, graph (the graph hash,
    or JAX's function name), signature (JAX: the input types, else ''), program (graph and
    signature: what must match between ranks) and where (cause and line of its first compile,
    when known). JAX's eager single-op compiles are left out."""
    rows: list[tuple[int, str, str, str, str, str]] = []
    compiles = profile.compiles
    if "eager" in compiles.columns:
        compiles = compiles[~compiles["eager"].eq(True)]
    signatures = _jax_signatures(profile)
    compile_ids = (
        compiles["compile_id"]
        if "compile_id" in compiles.columns
        else pd.Series(None, index=compiles.index)
    )
    for rank, backend, graph, cause, line, location, compile_id in zip(
        compiles["rank"],
        compiles["backend"],
        compiles["graph"],
        compiles["cause"],
        compiles["cell_line"],
        compiles["location"],
        compile_ids,
        strict=True,
    ):
        if not isinstance(graph, str):
            continue
        signature = signatures.get((int(rank), compile_id), "") if backend == "jax" else ""
        where = (
            f"line {int(line)}"
            if not pd.isna(line)
            else (location if isinstance(location, str) else "")
        )
        cause = cause if isinstance(cause, str) else ""
        rows.append(
            (
                int(rank),
                str(backend),
                graph,
                signature,
                f"{graph}({signature})" if signature else graph,
                ", ".join(part for part in (cause, where) if part),
            )
        )
    executions = profile.executions
    executions = executions[
        executions["graph"].map(lambda g: isinstance(g, str)) & (executions["backend"] != "jax")
    ]  # JAX: per function only
    for rank, backend, graph in zip(
        executions["rank"], executions["backend"], executions["graph"], strict=True
    ):
        rows.append((int(rank), str(backend), graph, "", graph, ""))
    frame = pd.DataFrame(
        rows, columns=["rank", "backend", "graph", "signature", "program", "where"]
    )
    # Keep the most telling row of each (rank, program): one with a cause over a bare run.
    frame = frame.sort_values("where", ascending=False, kind="stable")
    return (
        frame.drop_duplicates(["rank", "backend", "program"])
        .sort_values(["rank", "program"], kind="stable")
        .reset_index(drop=True)
    )


def _jax_signatures(profile: Profile) -> dict[tuple[int, Any], str]:
    graphs = profile.graphs
    if "signature" not in graphs.columns or "compile_id" not in graphs.columns:
        return {}
    graphs = graphs.dropna(subset=["signature"])
    return {
        (int(rank), compile_id): str(signature)
        for rank, compile_id, signature in zip(
            graphs["rank"], graphs["compile_id"], graphs["signature"], strict=True
        )
    }
