"""Which graph each run ran, where the runtime's samples of its runs name none (torch_xla at
the default debug level): the graph of the device trace's run inside each run's sample, the
runtime's samples and the trace sharing the wall clock."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def label_runs(executions: list[dict[str, Any]], spans: Sequence[dict[str, Any]]) -> None:
    """Give each run in `executions` (rows of one run: ``time`` its end, ``seconds`` from
    launch to completion, ``graph`` None) the graph of the traced ``device`` span inside it.
    The runtime's samples and the trace share the wall clock: a run's traced thunks lie
    within its launch-to-completion sample (measured within microseconds on torch_xla).
    Where a sample holds runs of two graphs (a neighbour a few µs away, a run queued behind
    it), it takes the graph of the traced runs nearest it rather than theirs."""
    runs = sorted(
        (span["start"] + span["seconds"] / 2, span["graph"])
        for span in spans
        if span["lane"] == "device" and span.get("graph")
    )
    if not runs:
        return
    middles = np.array([middle for middle, _ in runs])
    mixed = []
    for row in executions:
        if row.get("graph") is not None or row.get("count", 1) != 1:
            continue
        end, seconds = row["time"], row["seconds"]
        first = int(np.searchsorted(middles, end - seconds - RUN_SLACK_S, side="left"))
        last = int(np.searchsorted(middles, end + RUN_SLACK_S, side="right"))
        graphs = {runs[index][1] for index in range(first, last)}
        if len(graphs) == 1:
            row["graph"] = graphs.pop()
        elif graphs:
            mixed.append(row)
    if mixed:
        nearest = _nearest_graphs([row for row in executions if row.get("count", 1) == 1], spans)
        for row in mixed:
            graphs = nearest.get(id(row), set())
            if len(graphs) == 1:  # never a guess between two programs
                row["graph"] = graphs.pop()


def _nearest_graphs(
    executions: list[dict[str, Any]], spans: Sequence[dict[str, Any]]
) -> dict[int, set[str]]:
    """id of an `executions` row -> the graphs of the traced runs nearest its sample: each
    traced run goes to the sample holding it (of several, the one that completed as it
    ended; still tied, all of them), else to one within the clock's slack."""
    starts = np.array([row["time"] - row["seconds"] for row in executions])
    ends = np.array([row["time"] for row in executions])
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], ends[order]
    longest = float((ends - starts).max())
    graphs_of: dict[int, set[str]] = {}
    for span in spans:
        if span["lane"] != "device" or not span.get("graph"):
            continue
        middle = span["start"] + span["seconds"] / 2
        last = int(np.searchsorted(starts, middle + RUN_SLACK_S, side="right"))
        first = int(np.searchsorted(starts, middle - RUN_SLACK_S - longest, side="left"))
        if first >= last:
            continue
        distance = np.maximum(starts[first:last] - middle, middle - ends[first:last]).clip(0)
        if distance.min() > RUN_SLACK_S:
            continue
        span_end = span["start"] + span["seconds"]
        ending = np.where(distance == distance.min(), abs(ends[first:last] - span_end), np.inf)
        for index in np.flatnonzero(ending == ending.min()):
            row = executions[int(order[first + index])]
            graphs_of.setdefault(id(row), set()).add(span["graph"])
    return graphs_of


#: How far a traced run's middle may lie outside its runtime sample (clock rounding).
RUN_SLACK_S = 20e-6
