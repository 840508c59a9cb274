"""A graph's ``order`` column: Kahn's algorithm with the text position breaking ties (the
smallest ready node first) and, on a cycle, the earliest remaining node next: the same ranks as
a plain heap over every ready node, on random graphs with and without cycles."""

from __future__ import annotations

import heapq
import random

import pytest

from xlanb.graphs.model import GraphBuilder


def _plain_order(count: int, edges: list[tuple[int, int]]) -> list[int]:
    successors: list[list[int]] = [[] for _ in range(count)]
    indegree = [0] * count
    for source, target in edges:
        if source != target:
            successors[source].append(target)
            indegree[target] += 1
    ready = [i for i in range(count) if indegree[i] == 0]
    heapq.heapify(ready)
    done, order, rank = [False] * count, [0] * count, 0
    while rank < count:
        if not ready:
            first = done.index(False)
            ready.append(first)
            indegree[first] = 0
        index = heapq.heappop(ready)
        if done[index]:
            continue
        done[index], order[index], rank = True, rank, rank + 1
        for successor in successors[index]:
            indegree[successor] -= 1
            if indegree[successor] == 0 and not done[successor]:
                heapq.heappush(ready, successor)
    return order


@pytest.mark.parametrize("seed", range(40))
def test_order_is_the_plain_heaps(seed: int) -> None:
    rng = random.Random(seed)
    count = rng.randrange(1, 60)
    backward = rng.choice([0.0, 0.05, 0.3])  # edges against text order make cycles
    edges = []
    for _ in range(rng.randrange(0, 3 * count)):
        source, target = rng.randrange(count), rng.randrange(count)
        if source > target and rng.random() > backward:
            source, target = target, source
        edges.append((source, target))
    builder = GraphBuilder("dot", "")
    for index in range(count):
        builder.add_node(f"n{index}", name=f"n{index}", op="op")
    for source, target in edges:
        builder.add_edge(f"n{source}", f"n{target}")
    graph = builder.build()
    assert graph.nodes["order"].tolist() == _plain_order(count, edges)
