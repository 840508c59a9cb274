"""What is built from a parsed graph before anyone asks for it: a read-ahead thread that parsed
a program's text while the cell ran (:mod:`xlanb.capture.backends.jax.ahead`) calls
:func:`prepare`, and whatever registered itself with :func:`add_preparer` (the viewer, for
the parts of its payload that depend on the graph alone) builds its part then, into its own
cache. The layers above register; the layers below only call."""

from __future__ import annotations

from collections.abc import Callable

from xlanb.graphs.model import Graph

_preparers: list[Callable[[Graph], object]] = []


def add_preparer(preparer: Callable[[Graph], object]) -> None:
    """Have :func:`prepare` call `preparer(graph)` (once per function)."""
    if preparer not in _preparers:
        _preparers.append(preparer)


def prepare(graph: Graph) -> None:
    """Build what the registered preparers build of `graph`, now."""
    for preparer in list(_preparers):
        preparer(graph)
