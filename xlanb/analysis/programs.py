"""Queries over the programs a Profile holds: a program's graph by index or name, the compile
before it and the diff, its measured ops, every program's static memory. The Profile's
``graph``, ``diff``, ``memory``... methods call these (registered on :mod:`xlanb.core.seams`)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from xlanb.core.frame_memo import FrameMemo
from xlanb.core.profile import Profile
from xlanb.core.seams import provides
from xlanb.graphs import Graph, ParseError, parse_once
from xlanb.graphs import diff as graph_diff


@provides("graph")
def graph(profile: Profile, name_or_index: str | int = 0, kind: str | None = None) -> Any:
    """The graph ``name_or_index`` of the ``graphs`` frame as an :class:`xlanb.graphs.Graph`
    (displays as the interactive viewer, CPU-fallback ops of this profile in red).

    An int is a position among the compiled graphs in frame order (``-1``: the last; each
    compile of a JAX function is its own); a str is a graph name or a prefix of one (a hash
    prefix), its latest compile. Of that graph's texts the
    ``hlo``, then ``hlo_optimized`` (JAX), then ``stablehlo``, then ``ir`` one is used,
    unless ``kind`` names another
    (e.g. ``"hlo_optimized"``); when the ``ops`` frame holds measured device time for the
    graph, its ``hlo_optimized`` text comes first (the instructions the trace names), and
    the Graph's ``measured`` holds those ops (the viewer colours nodes by their time). A
    text that does not parse gives a Graph whose ``error`` says why and whose display
    shows the text."""
    name, rows, measured = graph_rows(profile, name_or_index)
    kinds = list(rows["kind"])
    chosen = kind if kind in kinds else None if kind else _default_kind(kinds, measured)
    if chosen is None:
        raise KeyError(f"graph {name!r} has no {kind!r} text; it has {', '.join(kinds)}")
    text = str(rows[rows["kind"] == chosen]["text"].iloc[0])
    try:
        parsed = parse_once(text, chosen)
    except ParseError as error:
        return Graph.unparsed(text, chosen, error, name=name)
    parsed.name = name
    if chosen == "hlo_optimized":
        parsed.measured = measured.copy() if measured is not None else None
    return parsed.with_fallbacks(profile.fallbacks["op"].dropna().astype(str))


@provides("graph_kinds")
def graph_kinds(profile: Profile, name_or_index: str | int = 0) -> list[str]:
    """The kinds of text graph ``name_or_index`` has (:meth:`graph`'s ``kind``), the one it
    shows by default first: e.g. ``["hlo_optimized", "stablehlo"]`` for a JAX program."""
    _, rows, measured = graph_rows(profile, name_or_index)
    kinds = list(dict.fromkeys(rows["kind"]))
    first = _default_kind(kinds, measured)
    return [first, *(k for k in kinds if k != first)]


#: :func:`graph_rows` and :func:`graph_entries` of the last few profiles' frames: a cell's
#: display asks for the same graphs' rows from its viewers, tabs, commands and findings.
_ROWS: FrameMemo[tuple[str, pd.DataFrame, Any]] = FrameMemo(32)
_ENTRIES: FrameMemo[pd.DataFrame] = FrameMemo()


def graph_rows(profile: Profile, name_or_index: str | int) -> tuple[str, pd.DataFrame, Any]:
    """(name, its ``graphs`` rows with text, its measured ops or None) of one compiled
    graph (see :meth:`graph`); kept while the profile's graphs and ops frames stay the same
    (read-only)."""
    return _ROWS.get(
        (profile.graphs, profile.ops),
        (name_or_index, profile.source),
        lambda: _graph_rows(profile, name_or_index),
    )


def _graph_rows(profile: Profile, name_or_index: str | int) -> tuple[str, pd.DataFrame, Any]:
    entries = _entries(profile)
    if entries.empty:
        raise KeyError("this profile holds no graph (was it captured with graphs off?)")
    names = list(dict.fromkeys(entries["graph"]))
    if isinstance(name_or_index, int):
        try:
            entry = entries.iloc[name_or_index]
        except IndexError:
            raise IndexError(f"graph {name_or_index} of {len(entries)}") from None
        name, compile_key = str(entry["graph"]), entry["compile"]
    else:
        found = [n for n in names if n == name_or_index] or [
            n for n in names if n.startswith(str(name_or_index))
        ]
        if len(found) != 1:
            raise KeyError(
                f"{'no' if not found else len(found)} graphs named "
                f"{name_or_index!r}; graphs: {', '.join(names[:10])}"
            )
        name = found[0]
        compile_key = entries.loc[entries["graph"] == name, "compile"].iloc[-1]  # latest
    graphs = profile.graphs[profile.graphs["text"].notna()]
    same = (graphs["graph"].astype(str) == name) & (_compile_keys(graphs) == compile_key)
    rows = graphs[same.to_numpy(dtype=bool)]
    return name, rows, measured_ops(profile, name, str(rows["backend"].iloc[0]))


@provides("memory")
def memory(profile: Profile) -> pd.DataFrame:
    """The static memory of every program compiled: one row per program and ``kind``
    (``inputs``, ``outputs``, ``aliased``, ``intermediates``, ``program``, ``peak``) with
    its ``bytes``, from the ``compiles`` columns (JAX's compiled memory stats, torch_xla's
    Post Compilation Analysis); ``compile_id`` tells a JAX function's compiles apart;
    ``devices`` is how many devices the program runs on, each holding ``bytes`` (NA where
    unknown)."""
    kinds = {
        "input_bytes": "inputs",
        "output_bytes": "outputs",
        "aliased_bytes": "aliased",
        "intermediate_bytes": "intermediates",
        "program_bytes": "program",
        "peak_bytes": "peak",
    }
    columns = ["backend", "graph", "compile_id", "kind", "bytes", "devices"]
    present = [c for c in kinds if c in profile.compiles.columns]
    if not present:
        return pd.DataFrame(columns=columns)
    given = profile.compiles.columns
    compiles = profile.compiles.assign(
        compile_id=profile.compiles["compile_id"] if "compile_id" in given else pd.NA,
        devices=profile.compiles["devices"] if "devices" in given else pd.NA,
    )
    long = compiles.melt(
        id_vars=["backend", "graph", "compile_id", "devices"],
        value_vars=present,
        var_name="kind",
        value_name="bytes",
    ).dropna(subset=["bytes"])
    long["kind"] = long["kind"].map(kinds)
    return long[columns].reset_index(drop=True)


@provides("previous_compile")
def previous_compile(
    profile: Profile, index: int, entries: pd.DataFrame | None = None
) -> int | None:
    """The index (as :meth:`graph` counts) of the graph compiled before graph `index` for
    the same thing: the same JAX function, or the same line (``compiles.location``) for the
    torch runtimes, whose graph names are hashes; None for a first compile. `entries`:
    :meth:`graph_entries`, when the caller has them already."""
    if entries is None:
        entries = _entries(profile)
    index = range(len(entries))[index]  # IndexError past the end; -1 is the last
    name, compile_key = str(entries["graph"].iloc[index]), entries["compile"].iloc[index]
    if compile_key != -1:  # JAX: compiles of one function share its name
        same = entries["graph"].astype(str) == name
    else:
        graphs, locations = profile.compiles["graph"].astype(str), profile.compiles["location"]
        places = dict(zip(graphs, locations, strict=True))
        place = places.get(name)
        if place is None or pd.isna(place):
            return None
        same = entries["graph"].astype(str).map(places) == place
    earlier = [i for i in range(index) if bool(same.iloc[i])]
    return earlier[-1] if earlier else None


@provides("diff")
def diff(profile: Profile, index: int = -1) -> Any:
    """What changed between graph `index` and the previous compile of the same function
    or line (:meth:`previous_compile`): an ``xlanb.graphs.GraphDiff`` (displays side by
    side, changes marked)."""

    previous = previous_compile(profile, index)
    if previous is None:
        raise KeyError(f"graph {index} is the first compile of its function or line")
    return graph_diff(graph(profile, previous), graph(profile, index))


@provides("graph_entries")
def graph_entries(profile: Profile) -> pd.DataFrame:
    """One row per compiled graph that has a text, in the order :meth:`graph` indexes them:
    ``graph``, ``compile`` (JAX's ``compile_id``, which tells a function's compiles apart;
    -1 where a runtime's graph ids are distinct already), ``backend`` and ``nodes`` (the
    smallest of its texts)."""
    return _entries(profile).copy()


def _entries(profile: Profile) -> pd.DataFrame:
    """:func:`graph_entries`, kept while the graphs frame stays the same (read-only)."""
    return _ENTRIES.get((profile.graphs,), None, lambda: _graph_entries(profile))


def _graph_entries(profile: Profile) -> pd.DataFrame:
    graphs = profile.graphs[profile.graphs["text"].notna()]
    keyed = graphs.assign(graph=graphs["graph"].astype(str), compile=_compile_keys(graphs))
    return (
        keyed.groupby(["graph", "compile"], sort=False)
        .agg(backend=("backend", "first"), nodes=("nodes", "min"))
        .reset_index()
    )


def measured_ops(profile: Profile, name: str, backend: str) -> pd.DataFrame | None:
    """The ``ops`` rows of graph `name` (measured device time of its instructions), with
    ``code``: the text of each ``cell_line`` in the profiled cell; None if there are none."""
    ops = profile.ops
    if ops.empty:
        return None
    rows = ops[(ops["graph"].astype(str) == name) & (ops["backend"].astype(str) == backend)]
    if rows.empty:
        return None
    lines = profile.source.splitlines()
    code = [
        lines[int(n) - 1].strip() if not pd.isna(n) and 0 < int(n) <= len(lines) else ""
        for n in rows["cell_line"]
    ]
    return rows.assign(code=code).reset_index(drop=True)


def _default_kind(kinds: list[str], measured: Any) -> str:
    """The text a graph shows first: with measured device time its optimized HLO (the
    instructions the trace names); else its HLO, then optimized HLO (JAX has no "hlo": its
    optimized HLO has fusions, op_name scopes and source lines), StableHLO, IR."""
    if measured is not None:
        preferred = ["hlo_optimized", "hlo", "stablehlo", "ir"]
    else:
        preferred = ["hlo", "hlo_optimized", "stablehlo", "ir"]
    return next((k for k in preferred if k in kinds), kinds[0])


def _compile_keys(graphs: pd.DataFrame) -> pd.Series:
    """Each ``graphs`` row's compile (see :func:`graph_entries`)."""
    if "compile_id" not in graphs.columns:
        return pd.Series(-1, index=graphs.index, dtype="int64")
    return graphs["compile_id"].astype("Int64").fillna(-1).astype("int64")
