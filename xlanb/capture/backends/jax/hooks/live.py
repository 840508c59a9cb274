"""Live arrays: counts, bytes, what a cell left alive and what was alive at a failure.

Public API only (``jax.live_arrays()``, each array's ``traceback``); arrays are counted and
weakly referenced, never copied or kept alive.
"""

from __future__ import annotations

import math
import operator
import weakref
from collections import Counter
from collections.abc import Mapping
from typing import Any, NamedTuple

from xlanb.capture.backends.jax.hooks.checks import _XLANB_DIR
from xlanb.formats.python_frames import frame_location, place_name


class LiveSnapshot(NamedTuple):
    """The live arrays at one moment: their count and device bytes, and weak references to
    the newest of them (the client lists its arrays newest first: what a cell makes comes
    before them in a later listing)."""

    count: int
    bytes: float
    newest: tuple[weakref.ref, ...] = ()


#: Newest arrays of a snapshot remembered (weakly) to find where the arrays made after it end.
NEWEST_KEPT = 4096

_NO_SNAPSHOT = LiveSnapshot(0, float("nan"))
_AVAL = operator.attrgetter("aval")


def _listed() -> list[Any]:
    """Every live ``jax.Array`` of the default backend, newest first (public API: the client's
    list of its arrays; references, nothing copied)."""
    import jax

    return jax.live_arrays()


def _bytes_of(arrays: list[Any]) -> float:
    """Device bytes of `arrays`, by abstract value (one ``Counter`` pass in C; an ``nbytes``
    per array costs ten times as much)."""
    return float(
        sum(
            n * math.prod(aval.shape) * aval.dtype.itemsize
            for aval, n in Counter(map(_AVAL, arrays)).items()
        )
    )


def live_arrays() -> LiveSnapshot:
    """Count and device bytes of every live ``jax.Array``, and weak references to the newest
    (:data:`NEWEST_KEPT`): counted, never copied."""
    try:
        arrays = _listed()
        return LiveSnapshot(
            len(arrays), _bytes_of(arrays), tuple(map(weakref.ref, arrays[:NEWEST_KEPT]))
        )
    except Exception:
        return _NO_SNAPSHOT


def made_since(arrays: list[Any], before: LiveSnapshot) -> list[Any]:
    """The arrays of `arrays` (a listing, newest first) made after `before`. JAX lists an array
    ahead of every older one, and a freed array leaves the others in order: the arrays made
    since are exactly those ahead of the newest array of `before` still alive, the first of
    its remembered newest (weak references: a dead one never matches a new array at its
    address). Exact while one of the :data:`NEWEST_KEPT` newest lives; when a cell freed all of
    them (every array is counted new then), or `before` had none."""
    if before.count == 0:
        return arrays
    for ref in before.newest:
        boundary = ref()
        if boundary is not None:
            break
    else:
        return arrays
    for position, array in enumerate(arrays):
        if array is boundary:
            return arrays[:position]
    return arrays


def _shape_text(aval: Any) -> str:
    return f"{aval.dtype.name}[{','.join(map(str, aval.shape))}]"


#: The groups of arrays a cell left alive that are listed (largest first).
LEFT_ALIVE_GROUPS = 20


#: Arrays of each group whose creation stacks are read (the newest first).
CREATION_SAMPLES = 4


def left_alive(
    before: LiveSnapshot,
    cell_filename: str | None = None,
    cell_line_offset: int = 0,
    cell_numbers: Mapping[str, int] | None = None,
) -> tuple[list[dict[str, Any]], int, float]:
    """The arrays alive now that were made after `before`, grouped by shape and dtype, the
    largest groups first, each with where its newest arrays were made (``created_at``,
    ``cell_line``: JAX keeps the Python stack that made each array); and the count and bytes
    of every live array now."""
    try:
        arrays = _listed()
        new = made_since(arrays, before)
        groups: Counter = Counter()
        key_of = {}
        for aval, n in Counter(map(_AVAL, new)).items():
            key = key_of[aval] = (_shape_text(aval), aval.dtype.itemsize * math.prod(aval.shape))
            groups[key] += n
        count, size = len(arrays), _bytes_of(arrays)
    except Exception:
        return [], 0, float("nan")
    rows = [
        {"shape": shape, "count": n, "bytes": float(n * itemsize)}
        for (shape, itemsize), n in groups.items()
    ]
    rows.sort(key=lambda row: -row["bytes"])
    rows = rows[:LEFT_ALIVE_GROUPS]
    try:
        _creation_sites(rows, new, key_of, cell_filename, cell_line_offset, cell_numbers)
    except Exception:
        pass  # where they were made is a detail: the counts stand without it
    return rows, count, size


def _creation_sites(
    rows: list[dict[str, Any]],
    new: list[Any],
    key_of: dict[Any, tuple[str, int]],
    cell_filename: str | None,
    cell_line_offset: int,
    cell_numbers: Mapping[str, int] | None = None,
) -> None:
    """Add to each row (a group of `new` arrays) ``created_at`` (the cell line, or the place
    elsewhere with another cell named as a cell, ``In[3] line 4``, that made its newest
    :data:`CREATION_SAMPLES` arrays, the most common first, `×n` when they differ) and
    ``cell_line`` (the most common cell line), from the Python stack JAX keeps with each array
    (``Array.traceback``; none when JAX's tracebacks are off)."""
    wanted = {(row["shape"], row["bytes"] / row["count"]): row for row in rows}
    samples: dict[tuple[str, float], list[Any]] = {key: [] for key in wanted}
    full = 0
    for array in new:
        shape, itemsize = key_of[array.aval]
        members = samples.get((shape, float(itemsize)))
        if members is None or len(members) >= CREATION_SAMPLES:
            continue
        members.append(array)
        full += len(members) == CREATION_SAMPLES
        if full == len(samples):
            break
    located: dict[tuple, dict[str, Any]] = {}  # arrays made in a loop share their stack
    for key, members in samples.items():
        sites: Counter = Counter()
        for array in members:
            try:
                frames = tuple(
                    (f.function_name, f.file_name, f.line_num) for f in array.traceback.frames
                )
            except Exception:
                continue
            place = located.get(frames)
            if place is None:
                place = located[frames] = frame_location(frames, cell_filename, cell_line_offset)
            if place["cell_line"] is not None:
                sites["cell line", place["cell_line"]] += 1
            elif place["location"] is not None:
                filename, _, line = place["location"].rpartition(":")
                sites[place_name(filename, int(line), None, 0, cell_numbers), None] += 1
        if not sites:
            continue
        ranked = sites.most_common()
        labels = [
            (f"cell line {line}" if line is not None else str(where))
            + (f" ×{n}" if len(ranked) > 1 else "")
            for (where, line), n in ranked
        ]
        row = wanted[key]
        row["created_at"] = ", ".join(labels)
        lines = [line for (_where, line), _n in ranked if line is not None]
        if lines:
            row["cell_line"] = lines[0]


#: Items of a list, tuple or dict looked into for the arrays it holds, at a failure.
HOLDER_ITEMS = 10_000


def live_at_failure(before: LiveSnapshot, error: BaseException) -> list[dict[str, Any]]:
    """Every live array when the cell failed, grouped by shape and dtype, the largest groups
    first (after the ``failed result`` groups: arrays whose program failed), with their
    ``origin``: the names that hold them in the failing frames (the cell's namespace, the
    functions it was in; one level into lists, tuples and dicts) and whether the cell made
    them. Only called after an out-of-memory error: it walks every live array and the
    failing frames' variables."""
    try:
        import jax

        arrays = _listed()
        new_ids = {id(array) for array in made_since(arrays, before)}
        holders = _holders(error, jax.Array)
    except Exception:
        return []
    groups: dict[tuple, list[Any]] = {}
    for array in arrays:
        groups.setdefault((array.shape, array.dtype, _failed(array)), []).append(array)
    rows = []
    for (shape, dtype, failed), members in groups.items():
        names = list(dict.fromkeys(n for a in members for n in holders.get(id(a), ())))
        made = sum(id(a) in new_ids for a in members)
        origin = (
            [f"held by {', '.join(names[:3])}{' ...' if len(names) > 3 else ''}"] if names else []
        )
        if made:
            origin.append(
                f"{made} made in this cell" if made < len(members) else "made in this cell"
            )
        else:
            origin.append("made before this cell")
        rows.append(
            {
                "snapshot": "failed result" if failed else "at failure",
                "shape": f"{dtype.name}[{','.join(map(str, shape))}]",
                "count": len(members),
                "bytes": float(len(members) * math.prod(shape) * dtype.itemsize),
                "origin": "; ".join(origin),
            }
        )
    rows.sort(key=lambda row: (row["snapshot"] == "at failure", -row["bytes"]))
    return rows[: LEFT_ALIVE_GROUPS + sum(row["snapshot"] == "failed result" for row in rows)]


def _failed(array: Any) -> bool:
    """Whether a ready array holds an error instead of data (the result of the program that
    ran out of memory: its buffer was never allocated). Never waits on one still running;
    never touches the buffer itself (its pointer aborts the process)."""
    try:
        if not array.is_ready():
            return False
        array.block_until_ready()
    except Exception:
        return True
    return False


def _holders(error: BaseException, array_type: type) -> dict[int, list[str]]:
    """id of each array -> the names holding it in the frames the error went through."""
    holders: dict[int, list[str]] = {}
    traceback = error.__traceback__
    while traceback is not None:
        frame = traceback.tb_frame
        traceback = traceback.tb_next
        if frame.f_code.co_filename.startswith(_XLANB_DIR):
            continue  # the magic's own frames (its namespace is the cell's, seen there)
        where = "" if frame.f_code.co_name == "<module>" else f" in {frame.f_code.co_name}"
        for name, value in list(frame.f_locals.items()):
            if name.startswith("_"):
                continue
            if isinstance(value, array_type):
                holders.setdefault(id(value), []).append(name + where)
            elif isinstance(value, list | tuple | dict):
                items = value.values() if isinstance(value, dict) else value
                for index, item in enumerate(items):
                    if index >= HOLDER_ITEMS:
                        break
                    if isinstance(item, array_type):
                        holders.setdefault(id(item), []).append(f"{name}[...]{where}")
    return holders


def device_memory() -> dict[str, Any]:
    """The first device's allocator statistics (GPU, TPU: ``memory_stats()``) in the
    environment's memory keys; {} where the client keeps none (the CPU)."""
    try:
        import jax

        stats = jax.devices()[0].memory_stats() or {}
    except Exception:
        return {}
    if "bytes_limit" not in stats:
        return {}
    return {
        "memory_limit": "device memory (memory_stats bytes_limit)",
        "memory_limit_bytes": float(stats["bytes_limit"]),
        "memory_in_use_bytes": float(stats.get("bytes_in_use", float("nan"))),
    }
