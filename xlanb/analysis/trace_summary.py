"""The device-time summary of a trace window's events in numpy (:func:`summary_of`): per-op
device time by HLO module, program and op, the longest op events, one ``device`` span per
program run and the main thread's host spans. It runs on the watchdog thread while a profiled
cell runs, so it works on the events' columns as arrays (codes from ``pd.factorize``, sums by
``np.bincount``), not through pandas' groupby. :mod:`xlanb.analysis.device_time` builds its
rows from it; what a run is on each runtime is told there.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from itertools import repeat

import numpy as np
import pandas as pd

from xlanb.analysis.sync_cost import READ_WAITS

#: The XLine of the Python main thread on the runtimes' host plane: the process's name,
#: ``python`` (JAX 0.10 on XLA:CPU, torch_xla) or ``python3`` (JAX 0.11 on XLA:GPU).
MAIN_THREAD = re.compile(r"^python[\d.]*$")
#: Op events kept as ``op`` spans per capture (the longest): enough to zoom into the runs
#: that matter without making a long cell's profile large.
MAX_OP_SPANS = 2000
#: The planes of GPU devices.
GPU_PLANE = "/device:GPU:"
#: The program id of ops whose trace has none (grouped apart from every real id).
NO_PROGRAM = -1
#: Thunks of one run closer than this are one device span (a runtime without ``run_id``).
RUN_GAP_NS = 100_000
#: The runtime's spans around one whole program run on XLA:CPU (JAX and torch_xla): the thunk
#: executor launching it, then waiting for it, on the client thread that runs the program
#: (nested executors of called computations run on the worker pool and are not runs). jaxlib
#: 0.6 writes no launch span: a run's first thunks start on the client thread, then its wait
#: holds the rest of the run (async thunks' work on the worker pool has no op event of its own).
EXECUTE_SPAN = "ThunkExecutor::Execute"
WAIT_SPAN = "ThunkExecutor::Execute (wait for completion)"

#: One of :attr:`Summary.ops`: HLO module, program id, op, count, seconds, the seconds of
#: them in the program's first traced run, the program's traced runs.
_OpRow = tuple[str, int | None, str, int, float, float, int]
#: One of :attr:`Summary.spans`: lane, name, HLO module, program id, start ns, end ns.
_Span = tuple[str, str, str, int | None, float, float]


@dataclass
class Summary:
    """What :func:`xlanb.analysis.device_time.rows` takes from a trace's events, before it
    knows the capture's graphs: ``ops`` (HLO module, program id, op, count, seconds, those of
    the program's first traced run, the program's traced runs), their total seconds, and
    ``spans`` (lane, name, HLO module or "", program id, start ns, end ns): the longest op
    events (lane ``op``, for zooming into a run; not part of the time account), one
    ``device`` span per program run and the main thread's ``transfer`` and ``sync_wait``
    spans. A program id is None where the trace has none; programs of one module name
    (torch_xla names every program of a line alike) are told apart by it. An op that ran on
    several devices (a sharded program) has the count and seconds of one device: the mean
    over those that ran it (:func:`_op_summary`), and its ``devices``."""

    ops: list[_OpRow]
    total: float
    spans: list[_Span]
    #: The events are XLA:GPU kernels.
    gpu: bool = False
    #: Where an op ran on several devices, of each of ``ops``: (the devices that ran it, the
    #: seconds of the one that took longest); else empty (one device, or a trace that does
    #: not say).
    devices: list[tuple[int, float]] = field(default_factory=list)


@dataclass
class Columns:
    """A trace's events as arrays, one item per event (the columns of
    :attr:`xlanb.formats.xspace.XSpaceEvents.events` that the summary reads)."""

    start: np.ndarray  # epoch ns, float (to 256 ns: a float's precision at today's epoch)
    #: ns since the events' earliest start, float: exact, for telling events that abut
    #: from events that overlap
    offset: np.ndarray
    duration: np.ndarray  # ns, float
    op: np.ndarray  # HLO op (object; NaN where the event is no op's)
    is_op: np.ndarray  # bool
    module: np.ndarray  # HLO module (object)
    program: np.ndarray  # program id, NO_PROGRAM where none (int64)
    run: np.ndarray  # run id, NaN where none (float)
    line: np.ndarray  # the thread's code in line_names (-1: none)
    plane: np.ndarray  # the plane's code (-1: none)
    name: np.ndarray  # object
    kind: np.ndarray  # object
    on_gpu: np.ndarray  # bool: the event is on a GPU device plane
    device: np.ndarray  # the device it ran for: its plane's, else its ordinal (-1: unknown)
    #: The threads' names, by code (not one per event).
    line_names: list[str]

    @classmethod
    def of(cls, frame: pd.DataFrame, gpu: bool) -> Columns:
        """The columns of `frame`; `gpu`: whether any of its planes is a GPU's."""
        op = frame["hlo_op"].to_numpy(dtype=object)
        plane, planes = _factorized(frame["plane"].to_numpy(dtype=object))
        line, line_names = _factorized(frame["line"].to_numpy(dtype=object))
        on_gpu = np.zeros(len(op), dtype=bool)
        if gpu:
            on_gpu = np.isin(plane, _matching(planes, lambda name: name.startswith(GPU_PLANE)))
        start_ns = frame["start_ns"].to_numpy(dtype=np.int64)
        return cls(
            start=start_ns.astype(float),
            offset=(start_ns - (start_ns.min() if len(start_ns) else 0)).astype(float),
            duration=frame["duration_ns"].to_numpy(dtype=float),
            op=op,
            is_op=~pd.isna(op),
            module=frame["hlo_module"].to_numpy(dtype=object),
            program=frame["program_id"].to_numpy(dtype=np.int64, na_value=NO_PROGRAM),
            run=frame["run_id"].to_numpy(dtype=float, na_value=np.nan),
            line=line,
            plane=plane,
            name=frame["name"].to_numpy(dtype=object),
            kind=frame["kind"].to_numpy(dtype=object),
            on_gpu=on_gpu,
            device=_devices(frame, plane, planes),
            line_names=line_names,
        )

    def take(self, selected: np.ndarray) -> Columns:
        """The events `selected` (a boolean mask or positions)."""
        taken = {name: getattr(self, name)[selected] for name in _PER_EVENT}
        return Columns(**taken, line_names=self.line_names)

    def __len__(self) -> int:
        return len(self.start)


_PER_EVENT = [field.name for field in fields(Columns) if field.name != "line_names"]

#: A device's plane (``/device:GPU:1``, ``/device:TPU:3``) and its number.
DEVICE_PLANE = re.compile(r"^/device:[A-Z]+:(\d+)$")


def _devices(frame: pd.DataFrame, plane: np.ndarray, planes: list[str]) -> np.ndarray:
    """The device each event of `frame` ran for: the number of its device plane (one per GPU
    or TPU), else its ``device_ordinal`` (XLA:CPU's thunks of JAX 0.10 and newer, one per
    forced host device), else -1 (the trace does not say)."""
    if "device_ordinal" in frame:
        device = frame["device_ordinal"].to_numpy(dtype=np.int64, na_value=-1)
    else:
        device = np.full(len(frame), -1, dtype=np.int64)
    numbers = [int(m.group(1)) if (m := DEVICE_PLANE.match(name)) else -1 for name in planes]
    if any(number >= 0 for number in numbers):
        of_plane = np.asarray([*numbers, -1], dtype=np.int64)[plane]  # plane -1: none
        device = np.where(of_plane >= 0, of_plane, device)
    return device


def _matching(names: list[str], test: Callable[[str], bool]) -> list[int]:
    """The codes of the `names` that pass `test`."""
    return [code for code, name in enumerate(names) if test(name)]


def summary_of(events: Columns, start_ns: float, end_ns: float, gpu: bool) -> Summary:
    """The :class:`Summary` of `events` inside ``[start_ns, end_ns]``."""
    selected = (events.start + events.duration >= start_ns) & (events.start <= end_ns)
    inside = events if selected.all() else events.take(selected)
    ops = inside.take(inside.is_op)
    executions = execution_windows(inside)
    cut = _cut_runs(ops, inside, executions)
    if cut.any():
        ops = ops.take(~cut)
    op_summary, spans, total, devices = _op_summary(ops, executions)
    spans += _host_spans(inside)
    return Summary(op_summary, total, spans, gpu, devices)


def _codes(first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the code of each item's pair of codes, numbered in order of first appearance as
    pandas' ``groupby(sort=False)`` numbers groups; the position of each code's first item).
    An item with a missing code (-1) gets -1 (a group pandas drops)."""
    kept = np.flatnonzero((first >= 0) & (second >= 0))
    found, _ = pd.factorize(first[kept] * (int(second.max(initial=0)) + 1) + second[kept])
    codes = np.full(len(first), -1, dtype=np.int64)
    codes[kept] = found
    return codes, kept[np.unique(found, return_index=True)[1]]


def _op_summary(
    ops: Columns, executions: np.ndarray
) -> tuple[list[_OpRow], list[_Span], float, list[tuple[int, float]]]:
    """The ops' device time by module, program and op, the spans of the longest ops and of
    each program's runs, the ops' total seconds (1 when none) and :attr:`Summary.devices`. An
    op that ran on several devices has one device's count and seconds: the most runs of it on
    a device, the mean of the devices' seconds (so a run's ops add up to one device's time,
    not to the devices' sum)."""
    if not len(ops):
        return [], [], 1.0, []
    seconds = _own_ns(ops) / 1e9
    programs, program_firsts = _codes(_factorized(ops.module)[0], pd.factorize(ops.program)[0])
    runs = _run_keys(ops, executions)
    first_seconds = _first_run_seconds(ops, programs, runs, seconds)
    groups, group_firsts = _codes(programs, pd.factorize(ops.op)[0])
    counted = groups >= 0
    group_codes = groups[counted]
    size = len(group_firsts)
    executions_of = _executions(ops)[counted] if ops.on_gpu.any() else None
    op_seconds = np.bincount(group_codes, weights=seconds[counted], minlength=size)
    op_first = np.bincount(group_codes, weights=first_seconds[counted], minlength=size)
    op_devices = ops.device[counted]
    if len(op_devices) and (op_devices != op_devices[0]).any():
        count, devices, slowest = _per_device(
            group_codes, pd.factorize(op_devices)[0], seconds[counted], executions_of, size
        )
        op_seconds, op_first = op_seconds / devices, op_first / devices
        # each op event for its share of its op's one-device time
        shares = seconds.copy()
        shares[counted] /= devices[group_codes]
        total = float(shares.sum()) or 1.0
    else:
        if executions_of is not None:
            count = _distinct_per_group(group_codes, executions_of, size)
        else:  # each thunk event is one execution
            count = np.bincount(group_codes, minlength=size)
        devices, slowest = np.ones(size, dtype=np.int64), op_seconds
        total = float(seconds.sum()) or 1.0
    program_runs = _distinct_per_group(programs[counted], runs[counted], len(program_firsts))
    op_summary = list(
        zip(
            _texts(ops.module[group_firsts]),
            _program_ids(ops.program[group_firsts]),
            ops.op[group_firsts].tolist(),
            count.tolist(),
            op_seconds.tolist(),
            op_first.tolist(),
            program_runs[programs[group_firsts]].tolist(),
            strict=True,
        )
    )
    several: list[tuple[int, float]] = []
    if devices.max(initial=1) > 1:
        several = list(zip(devices.tolist(), slowest.tolist(), strict=True))
    spans = _longest_spans(ops) + _device_spans(ops, programs, executions)
    return op_summary, spans, total, several


def _per_device(
    groups: np.ndarray,
    devices: np.ndarray,
    seconds: np.ndarray,
    executions: np.ndarray | None,
    size: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Of each of `size` groups of op events (by code in `groups`, with the code of each
    event's device in `devices`): the most executions of it on one device (`executions`: what
    counts as one, None: each event), the devices that ran it, the most `seconds` of one."""
    pairs, pair_firsts = _codes(groups, devices)
    pair_groups = groups[pair_firsts]
    if executions is not None:
        pair_count = _distinct_per_group(pairs, executions, len(pair_firsts))
    else:
        pair_count = np.bincount(pairs, minlength=len(pair_firsts))
    pair_seconds = np.bincount(pairs, weights=seconds, minlength=len(pair_firsts))
    count = np.zeros(size, dtype=np.int64)
    np.maximum.at(count, pair_groups, pair_count)
    slowest = np.zeros(size)
    np.maximum.at(slowest, pair_groups, pair_seconds)
    return count, np.bincount(pair_groups, minlength=size), slowest


def _texts(values: np.ndarray) -> list[str]:
    """`values` as strings (a missing one is ``"nan"``, as ``str`` writes it)."""
    texts = values.tolist()
    if all(isinstance(value, str) for value in set(texts)):
        return texts
    return [str(value) for value in texts]


#: Columns with at most this many distinct values are coded by comparing with each.
FEW_VALUES = 8


#: About how many of a column's items, evenly spaced, :func:`_factorized` looks at first.
_SAMPLE_ITEMS = 1000


def _factorized(values: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """(``pd.factorize`` codes of `values`, strings or missing: -1, numbered by first
    appearance; the distinct strings by code): a column of few distinct values (a trace's
    planes, threads, modules) by comparing with each, quicker than hashing every item."""
    # more distinct strings in a sample: no need to list those of all items
    sample = dict.fromkeys(values[:: max(len(values) // _SAMPLE_ITEMS, 1)].tolist())
    many = sum(isinstance(value, str) for value in sample) > FEW_VALUES
    distinct = [] if many else [v for v in dict.fromkeys(values.tolist()) if isinstance(v, str)]
    if many or len(distinct) > FEW_VALUES:
        codes, uniques = pd.factorize(values)
        return codes, list(uniques)
    codes = np.full(len(values), -1, dtype=np.int64)
    for code, value in enumerate(distinct):
        codes[values == value] = code
    return codes, distinct


def passing(column: pd.Series, test: Callable[[str], bool]) -> np.ndarray:
    """Whether each item of `column` (strings; a missing one does not) passes `test`, tested
    once per distinct value, not once per item."""
    codes, distinct = _factorized(column.to_numpy(dtype=object))
    hits = np.array([test(value) for value in distinct] + [False], dtype=bool)
    return hits[codes]


def starting_with(column: pd.Series, prefix: str) -> np.ndarray:
    """Whether each item of `column` (strings; a missing one does not) starts with `prefix`
    (:func:`passing`)."""
    return passing(column, lambda value: value.startswith(prefix))


def _program_ids(programs: np.ndarray) -> list[int | None]:
    """Program ids, None for :data:`NO_PROGRAM`."""
    ids = programs.astype(object)
    ids[programs == NO_PROGRAM] = None
    return ids.tolist()


def _distinct_per_group(groups: np.ndarray, values: np.ndarray, size: int) -> np.ndarray:
    """The number of distinct `values` in each of `size` groups (by code in `groups`)."""
    value_codes, uniques = pd.factorize(values)
    present = value_codes >= 0  # pandas' nunique leaves missing values out
    pairs = np.unique(groups[present] * len(uniques) + value_codes[present])
    return np.bincount(pairs // max(len(uniques), 1), minlength=size)


def _program(program: int) -> int | None:
    return None if program == NO_PROGRAM else int(program)


def _first_run_seconds(
    ops: Columns, programs: np.ndarray, runs: np.ndarray, seconds: np.ndarray
) -> np.ndarray:
    """Each op event's `seconds` where it belongs to its program's first traced run (the one
    holding the program's earliest event), else 0."""
    order = np.argsort(ops.start, kind="stable")
    order = order[programs[order] >= 0]
    # the earliest event of each program: its first occurrence in time order
    ordered = programs[order]
    _, first = np.unique(ordered, return_index=True)
    first_run = np.full(max(int(programs.max(initial=-1)) + 1, 1), np.nan)
    first_run[ordered[first]] = runs[order[first]]
    in_first = (programs >= 0) & (runs == first_run[np.maximum(programs, 0)])
    return np.where(in_first, seconds, 0.0)


def _run_keys(ops: Columns, executions: np.ndarray) -> np.ndarray:
    """The program run each op event belongs to, as :func:`_runs` tells them: JAX's
    ``run_id``, else the latest runtime run launched before it, else the events of one
    program merged across gaps shorter than :data:`RUN_GAP_NS` (numbered in time order)."""
    if not np.isnan(ops.run).any():
        return ops.run.copy()
    starts = ops.start
    if len(executions):
        return np.maximum(np.searchsorted(executions[:, 0], starts, side="right") - 1, 0).astype(
            float
        )
    keys = np.zeros(len(ops))
    ends = starts + ops.duration
    modules = pd.factorize(ops.module, use_na_sentinel=False)[0]
    for positions in _positions_by(modules * (len(ops) + 1) + pd.factorize(ops.program)[0]):
        order = positions[np.argsort(starts[positions], kind="stable")]
        reach = np.maximum.accumulate(ends[order])
        gaps = starts[order][1:] - reach[:-1] > RUN_GAP_NS
        keys[order] = np.r_[0, np.cumsum(gaps)]
    return keys


def _positions_by(codes: np.ndarray) -> list[np.ndarray]:
    """The positions of each code's items (ascending), by code; -1 left out."""
    order = np.argsort(codes, kind="stable")
    order = order[codes[order] >= 0]
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    return np.split(order, bounds) if len(order) else []


def _executions(ops: Columns) -> np.ndarray:
    """What counts as one execution of an op event: each thunk event, but on XLA:GPU each run
    (a library call launches several kernels, a memset and a gemm, in one execution)."""
    key = np.arange(len(ops), dtype=np.int64)
    with_run = ops.on_gpu & ~np.isnan(ops.run)
    key[with_run] = -1 - ops.run[with_run].astype(np.int64)
    return key


def _own_ns(ops: Columns) -> np.ndarray:
    """Each op event's own time: a GPU kernel's duration (kernels on a stream do not nest,
    though one may start before the last one ended), a thunk's :func:`_exclusive_ns`."""
    own = _exclusive_ns(ops)
    own[ops.on_gpu] = ops.duration[ops.on_gpu]
    return own


#: An event that starts less than this before the last one ended follows it: starts are read
#: in whole ns, durations to the ps, so events that abut may seem to overlap by under a ns.
ABUTTING_NS = 1.0


def _exclusive_ns(ops: Columns) -> np.ndarray:
    """Each op event's own time: its duration less that of the op events nested in it on its
    line (a ``while`` or ``call`` thunk holds the thunks of the computation it runs; summed
    whole, a loop and its body each took the loop's time). A line where no event starts
    before an earlier one ended is taken as it is."""
    own = ops.duration.copy()
    starts = ops.offset
    lines, firsts = _codes(ops.plane, ops.line)
    by_start = np.argsort(starts, kind="stable")
    ordered_lines = lines[by_start]
    for line in range(len(firsts)):
        positions = by_start[ordered_lines == line]
        reach = np.maximum.accumulate(starts[positions] + own[positions])
        if (starts[positions[1:]] < reach[:-1] - ABUTTING_NS).any():
            _subtract_held(own, starts, positions)
    return np.maximum(own, 0.0)


def _subtract_held(own: np.ndarray, starts: np.ndarray, positions: np.ndarray) -> None:
    """Subtract from each event of one line (at `positions`) the durations of those nested
    in it, by runs of events that an earlier event still holds."""
    # by start, outer events first where two start together
    order = positions[np.lexsort((-own[positions], starts[positions]))]
    reach = np.maximum.accumulate(starts[order] + own[order])
    held = np.flatnonzero(starts[order[1:]] < reach[:-1] - ABUTTING_NS) + 1
    free = np.setdiff1d(np.arange(len(order) + 1), held)
    for first, stop in zip(free[:-1].tolist(), free[1:].tolist(), strict=True):
        if stop - first > 1:
            _subtract_nested(own, starts, order[first:stop])


def _subtract_nested(own: np.ndarray, starts: np.ndarray, order: np.ndarray) -> None:
    """Subtract from each event of `order` (events of one line, by start, outer first) the
    durations of those nested in it."""
    open_ends: list[tuple[float, int]] = []  # the events enclosing the next one
    for position in order.tolist():
        start = starts[position]
        end = start + own[position]
        while open_ends and open_ends[-1][0] <= start + ABUTTING_NS:
            open_ends.pop()
        if open_ends:
            own[open_ends[-1][1]] -= end - start
        open_ends.append((end, position))


def _longest_spans(ops: Columns) -> list[_Span]:
    """``op`` spans of the :data:`MAX_OP_SPANS` longest op events (the first of equals) of one
    device: the lowest-numbered where several ran ops (each runs its own copy of a sharded
    program's ops at the same time)."""
    known = ops.device[ops.device >= 0]
    if len(known) and (known != known[0]).any():
        ops = ops.take(ops.device == known.min())
    longest = np.argsort(-ops.duration, kind="stable")[:MAX_OP_SPANS]
    starts = ops.start[longest]
    return list(
        zip(
            repeat("op", len(longest)),
            ops.op[longest].tolist(),
            _texts(ops.module[longest]),
            _program_ids(ops.program[longest]),
            starts.tolist(),
            (starts + ops.duration[longest]).tolist(),
            strict=True,
        )
    )


def _device_spans(ops: Columns, programs: np.ndarray, executions: np.ndarray) -> list[_Span]:
    """One ``device`` span per run of each program (by code in `programs`)."""
    spans: list[_Span] = []
    ends = ops.start + ops.duration
    for positions in _positions_by(programs):
        module = str(ops.module[positions[0]])
        program = _program(int(ops.program[positions[0]]))
        for run_start, run_end in _runs(
            ops.start[positions], ends[positions], ops.run[positions], executions
        ):
            spans.append(("device", module, module, program, run_start, run_end))
    return spans


def _runs(
    starts: np.ndarray, ends: np.ndarray, run_ids: np.ndarray, executions: np.ndarray
) -> list[tuple[float, float]]:
    """(start_ns, end_ns) of each run of one program: by ``run_id`` where the runtime sets it
    (JAX 0.10), else by the runtime's runs (torch_xla, jaxlib 0.6: each op belongs to the latest
    run launched before it, which spans from its launch to its completion), else (a trace
    without either) the op events merged across gaps shorter than :data:`RUN_GAP_NS`."""
    if not np.isnan(run_ids).any():
        return _group_extents(run_ids.astype(np.int64), starts, ends)
    if len(executions):
        # an op belongs to the latest run launched before it started (a run's last thunks
        # may finish after its wait span, on the worker pool)
        launches, completions = executions[:, 0], executions[:, 1]
        window = np.maximum(np.searchsorted(launches, starts, side="right") - 1, 0)
        keys = np.unique(window)
        extents = _group_extents(window, starts, ends)
        return [
            (min(start, launches[key]), end if math.isnan(done) else max(end, done))
            for key, (start, end), done in zip(keys, extents, completions[keys], strict=True)
        ]
    runs: list[tuple[float, float]] = []
    for start, end in sorted(zip(starts.tolist(), ends.tolist(), strict=True)):
        if runs and start - runs[-1][1] <= RUN_GAP_NS:
            runs[-1] = (runs[-1][0], max(runs[-1][1], end))
        else:
            runs.append((start, end))
    return runs


def _group_extents(
    keys: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> list[tuple[float, float]]:
    """(earliest start, latest end) of the events of each key, in key order."""
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    first = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    run_starts = np.minimum.reduceat(starts[order], first)
    run_ends = np.maximum.reduceat(ends[order], first)
    return list(zip(run_starts.tolist(), run_ends.tolist(), strict=True))


#: The main thread's waits shorter than this are left out of its spans (but for reads).
SHORTEST_WAIT_NS = 1_000


def _host_spans(inside: Columns) -> list[_Span]:
    """The spans of the main thread's transfers and sync waits."""
    # Only the main (Python) thread's waits and copies hold up the user's code: a runtime
    # thread waiting on donation holds while Python traces the next step does not.
    kinds = inside.kind
    hosts = np.flatnonzero(~inside.is_op & ((kinds == "transfer") | (kinds == "sync_wait")))
    main = _matching(inside.line_names, lambda line: bool(MAIN_THREAD.fullmatch(line)))
    hosts = hosts[np.isin(inside.line[hosts], main)]
    # A wait of under a microsecond holds nothing up (XLA:CPU marks one per argument buffer a
    # run waits on): left out, but for a read, which the account follows with the device's
    # idle gap (:mod:`xlanb.analysis.sync_cost`).
    kept = (inside.duration[hosts] >= SHORTEST_WAIT_NS) | (kinds[hosts] == "transfer")
    hosts = hosts[kept | np.isin(inside.name[hosts], list(READ_WAITS))]
    starts = inside.start[hosts]
    return list(
        zip(
            _texts(kinds[hosts]),
            _texts(inside.name[hosts]),
            repeat("", len(hosts)),
            repeat(None, len(hosts)),
            starts.tolist(),
            (starts + inside.duration[hosts]).tolist(),
            strict=True,
        )
    )


def execution_windows(events: Columns) -> np.ndarray:
    """(n, 2) [launch ns, completion ns] of the runtime's program runs in the trace, sorted by
    launch. On each client thread that waits for its runs, a run is launched by the first
    launch span or thunk after the previous run's wait, and completes when its own wait ends
    (NaN: the trace ended before it)."""
    waits = events.name == WAIT_SPAN
    runners = np.unique(events.line[waits])
    runner = np.isin(events.line, runners[runners >= 0])
    on_runners = np.flatnonzero(runner & (events.is_op | waits | (events.name == EXECUTE_SPAN)))
    lines = events.line[on_runners]
    windows: list[np.ndarray] = []
    for line in pd.unique(lines):  # in order of first appearance, as pandas groups them
        positions = on_runners[lines == line]
        positions = positions[np.argsort(events.start[positions], kind="stable")]
        starts = events.start[positions]
        line_waits = waits[positions]
        # each event's run on this line: the number of waits that ended a run before it
        run = np.cumsum(line_waits) - line_waits
        first = np.flatnonzero(np.r_[True, run[1:] != run[:-1]])
        done = np.full(len(first), np.nan)
        done[run[line_waits]] = (starts + events.duration[positions])[line_waits]
        windows.append(np.column_stack([starts[first], done]))
    if not windows:
        return np.empty((0, 2))
    merged = np.concatenate(windows)
    return merged[np.argsort(merged[:, 0], kind="stable")]


def _cut_runs(ops: Columns, events: Columns, executions: np.ndarray) -> np.ndarray:
    """Which of the op events `ops` belong to a run the trace holds only in part: one still
    going when the profiler stopped (a window closes while the next queued run has started).
    On XLA:CPU every run ends in a wait span, even a 4-float add's (measured on JAX 0.6 and
    0.10), so a run whose wait is not in the trace was cut: with JAX's ``run_id``, a run no
    wait names; else a run with no completion, or ops that start after the completion of the
    latest run launched before them (their run was launched on a thread whose wait the trace
    does not hold). Counted, its first thunks made one op's count exceed the runs', and its
    short span lowered the mean that the runs after the window are estimated from."""
    unwaited = unwaited_runs(ops, events)
    if unwaited is not None:
        return unwaited
    if not len(executions) or not len(ops) or not np.isnan(ops.run).any():
        # no waits, or run ids that no wait carries: nothing tells a cut run
        return np.zeros(len(ops), dtype=bool)
    starts = ops.start
    run = np.maximum(np.searchsorted(executions[:, 0], starts, side="right") - 1, 0)
    done = executions[run, 1]
    return np.isnan(done) | (starts > done)


def unwaited_runs(ops: Columns, events: Columns) -> np.ndarray | None:
    """Where every op event of `ops` has JAX's ``run_id`` and the waits of `events` carry it
    too: which op events belong to a run that no wait names (cut, see :func:`_cut_runs`);
    else None. A run on several devices (each waits for its own part, under the run's one
    id) is cut where a device that ran ops of it has no wait of it."""
    waits = events.name == WAIT_SPAN
    return _unwaited(ops.run, events.run[waits], ops.device, events.device[waits])


def _unwaited(
    op_runs: np.ndarray,
    wait_runs: np.ndarray,
    op_devices: np.ndarray | None = None,
    wait_devices: np.ndarray | None = None,
) -> np.ndarray | None:
    """:func:`unwaited_runs` of the op events' run ids and the waits' (NaN where none), and
    their devices (-1 where unknown)."""
    if not len(op_runs) or np.isnan(op_runs).any():
        return None
    has_run = ~np.isnan(wait_runs)
    waited = wait_runs[has_run]
    if not len(waited):
        return None
    unwaited = ~np.isin(op_runs, waited)
    if op_devices is None or wait_devices is None or len(np.unique(op_devices)) < 2:
        return unwaited
    waited_devices = wait_devices[has_run]
    if (waited_devices < 0).any() or (op_devices < 0).any():
        return unwaited
    # each (run, device) as one code
    runs = pd.factorize(np.concatenate([op_runs, waited]))[0]
    devices, known = pd.factorize(np.concatenate([op_devices, waited_devices]))
    parts = runs * len(known) + devices
    cut_parts = ~np.isin(parts[: len(op_runs)], parts[len(op_runs) :])
    # a run cut on one device is cut on all: its parts on the others are not a whole run
    return unwaited | np.isin(op_runs, op_runs[cut_parts])


def whole_runs(frame: pd.DataFrame) -> int:
    """The program runs of the trace events `frame` whose run ids the op events carry, less
    those no wait names (cut, see :func:`_cut_runs`)."""
    runs = frame["run_id"].to_numpy(dtype=float, na_value=np.nan)
    is_op = frame["hlo_op"].notna().to_numpy(dtype=bool)
    op_runs = runs[is_op]
    waits = frame["name"].to_numpy(dtype=object) == WAIT_SPAN
    devices = _devices(frame, *_factorized(frame["plane"].to_numpy(dtype=object)))
    unwaited = _unwaited(op_runs, runs[waits], devices[is_op], devices[waits])
    if unwaited is not None:
        op_runs = op_runs[~unwaited]
    return len(np.unique(op_runs[~np.isnan(op_runs)]))
