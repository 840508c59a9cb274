"""Device time per platform, from the XLA profiler's trace events (a capture's window or a
trace read offline): per-op rows and one ``device`` span per program run (:func:`rows`,
:func:`summarize`); then the runs after a window closed, estimated from the traced ones
(:func:`after_window_from_calls`: JAX's calls; :func:`after_window_from_samples`: torch_xla's).

XLA:CPU: thunk events on host threads (a thunk's own time excludes those nested in it); each
run ends in the thunk executor's wait span and carries JAX's ``run_id`` (from 0.10). Several
devices: an op's row is one device's (the mean over them), a run one span over them all.
XLA:GPU: kernel events on ``/device:GPU:N`` planes. A run is the host's execute span
(``CommonPjRtLoadedExecutable::Execute (NAME)``); a kernel belongs to the run whose span holds
its launch (the host event with its ``correlation_id``). Kernels launched outside every run
(the autotuner's, while compiling) are compile time. Kernels inside command buffers are placed
on their instructions by :mod:`xlanb.analysis.command_buffers`; a run cut by the trace's end
has fewer kernels than the program's others.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from xlanb.analysis.command_buffers import COMMAND_BUFFER, UNATTRIBUTED, attribute
from xlanb.analysis.op_kinds import instruction_categories
from xlanb.analysis.trace_summary import EXECUTE_SPAN as EXECUTE_SPAN
from xlanb.analysis.trace_summary import GPU_PLANE as GPU_PLANE
from xlanb.analysis.trace_summary import MAIN_THREAD as MAIN_THREAD
from xlanb.analysis.trace_summary import MAX_OP_SPANS as MAX_OP_SPANS
from xlanb.analysis.trace_summary import NO_PROGRAM as NO_PROGRAM
from xlanb.analysis.trace_summary import RUN_GAP_NS as RUN_GAP_NS
from xlanb.analysis.trace_summary import WAIT_SPAN as WAIT_SPAN
from xlanb.analysis.trace_summary import (
    Columns,
    Summary,
    _codes,
    _factorized,
    _Span,
    execution_windows,
    starting_with,
    summary_of,
    whole_runs,
)
from xlanb.formats.hlo_text import HloOpSource, hlo_module_name, hlo_op_sources
from xlanb.graphs.ops import thunk_category

#: The host's span around one program run on XLA:GPU (PjRt), named after the HLO module.
GPU_EXECUTE_SPAN = "CommonPjRtLoadedExecutable::Execute ("


def is_gpu(frame: pd.DataFrame) -> bool:
    """Whether a trace's events hold GPU device planes."""
    return bool(starting_with(frame["plane"], GPU_PLANE).any())


def gpu_runs(frame: pd.DataFrame) -> pd.DataFrame:
    """The host's execute spans of program runs: ``line``, ``start_ns``, ``end_ns``,
    ``run_id``, ``module`` (the HLO module name), sorted by start."""
    spans = frame[starting_with(frame["name"], GPU_EXECUTE_SPAN)]
    starts = spans["start_ns"].to_numpy(dtype=float)
    return pd.DataFrame(
        {
            "line": spans["line"].to_numpy(dtype=object),
            "start_ns": starts,
            "end_ns": starts + spans["duration_ns"].to_numpy(dtype=float),
            "run_id": spans["run_id"].to_numpy(dtype=object),
            "module": spans["name"].astype(str).str.slice(len(GPU_EXECUTE_SPAN), -1).to_numpy(),
        }
    ).sort_values("start_ns", kind="stable", ignore_index=True)


def launch_runs(
    frame: pd.DataFrame, runs: pd.DataFrame, on_gpu_plane: np.ndarray | None = None
) -> dict[int, int]:
    """``correlation_id`` -> the index in `runs` of the run whose execute span holds the host
    event with that id (kernel launches outside every run are left out); `on_gpu_plane`:
    which events are on a GPU plane, where known."""
    if on_gpu_plane is None:
        on_gpu_plane = starting_with(frame["plane"], GPU_PLANE)
    host = np.flatnonzero(frame["correlation_id"].notna().to_numpy() & ~on_gpu_plane)
    line_codes, lines = _factorized(frame["line"].to_numpy(dtype=object)[host])
    host_starts = frame["start_ns"].to_numpy(dtype=float)[host]
    host_ids = frame["correlation_id"].to_numpy(dtype=np.int64, na_value=0)[host]
    run_lines = runs["line"].to_numpy(dtype=object)
    run_starts = runs["start_ns"].to_numpy(dtype=float)
    run_ends = runs["end_ns"].to_numpy(dtype=float)
    run_index = runs.index.to_numpy()
    found: dict[int, int] = {}
    for code, line in enumerate(lines):  # the threads in order of their first launch
        on_line = np.flatnonzero(run_lines == line)
        if not len(on_line):
            continue
        mine = line_codes == code
        starts = host_starts[mine]
        where = np.searchsorted(run_starts[on_line], starts, "right") - 1
        ok = where >= 0
        ok[ok] &= starts[ok] <= run_ends[on_line][where[ok]]
        indices = run_index[on_line][where[ok]]
        found.update(zip(host_ids[mine][ok].tolist(), indices.tolist(), strict=True))
    return found


def program_events(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with, on XLA:GPU, only the kernels the programs' runs launched among its op
    events, each with the ``run_id`` of its run (where the host span has none, the run's
    position); an XLA:CPU trace is returned as it is."""
    if frame.empty or "correlation_id" not in frame:
        return frame
    on_gpu_plane = starting_with(frame["plane"], GPU_PLANE)
    if not on_gpu_plane.any():
        return frame
    on_gpu = on_gpu_plane & frame["hlo_op"].notna().to_numpy()
    kernels = np.flatnonzero(on_gpu)
    runs = gpu_runs(frame)
    launched = launch_runs(frame, runs, on_gpu_plane)
    correlation = frame["correlation_id"].to_numpy(dtype=np.int64, na_value=0)[kernels]
    run_index = np.fromiter(
        (launched.get(i, -1) for i in correlation.tolist()), np.int64, len(kernels)
    )
    run_index[frame["correlation_id"].isna().to_numpy()[kernels]] = -1
    own = run_index >= 0
    # a run's id, else (the host span has none) its position
    run_keys = np.array(
        [
            position if run_id is None or pd.isna(run_id) else run_id
            for position, run_id in enumerate(runs["run_id"].tolist())
        ],
        dtype=np.int64,
    )
    kept, kept_runs = kernels[own], run_keys[run_index[own]]
    uncut = ~_cut_gpu_runs(frame, kept, kept_runs)
    kept, kept_runs = kept[uncut], kept_runs[uncut]
    positions = np.concatenate([np.flatnonzero(~on_gpu), kept])
    order = np.argsort(frame["start_ns"].to_numpy()[positions], kind="stable")
    run_ids = frame["run_id"].array.astype("Int64", copy=True)
    run_ids[kept] = kept_runs
    events = frame.take(positions[order])
    events["run_id"] = run_ids[positions[order]]
    return events


def _cut_gpu_runs(frame: pd.DataFrame, kernels: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """Which of a GPU trace's program kernels (positions in `frame`, with their run ids)
    belong to a run the trace holds only in part: a program's last run in the trace with
    fewer kernels than its other runs (the profiler stopped while it ran; a program launches
    the same kernels every run). Counted, its short span would lower the mean the runs after
    the window are estimated from, as on XLA:CPU (:func:`_cut_runs`)."""
    programs = frame["program_id"].to_numpy(dtype=np.int64, na_value=NO_PROGRAM)[kernels]
    starts = frame["start_ns"].to_numpy()[kernels]
    program_codes = pd.factorize(programs)[0]
    pairs, firsts = _codes(program_codes, pd.factorize(runs)[0])
    sizes = np.bincount(pairs, minlength=len(firsts))
    earliest = np.full(len(firsts), starts.max(initial=0), dtype=starts.dtype)
    np.minimum.at(earliest, pairs, starts)
    pair_programs = program_codes[firsts]
    cut_pairs = []
    for program in range(int(pair_programs.max(initial=-1)) + 1):
        mine = np.flatnonzero(pair_programs == program)  # its runs, by first kernel
        if len(mine) < 2:
            continue
        last = mine[np.argmax(earliest[mine])]
        if sizes[last] < sizes[mine].max():
            cut_pairs.append(last)
    return np.isin(pairs, cut_pairs)


def placed_kernels(frame: pd.DataFrame, hlo_texts: Mapping[str | int, str]) -> pd.DataFrame:
    """`frame` with the ``hlo_op`` of each kernel inside a command buffer replaced by the
    instruction :func:`xlanb.analysis.command_buffers.attribute` places it on, per program
    whose optimized HLO text `hlo_texts` holds (by program id, else HLO module name)."""
    if not hlo_texts:
        return frame
    inside = np.flatnonzero(starting_with(frame["hlo_op"], COMMAND_BUFFER))
    if not len(inside):
        return frame
    kernels = frame.take(inside).set_axis(inside)  # labelled by position in `frame`
    programs = kernels["program_id"].astype("Int64").fillna(NO_PROGRAM)
    ops = None
    # each device's kernels apart: a run's kernels are aligned with the program in time order
    keys = [kernels["hlo_module"], programs, kernels["plane"]]
    for (module, program, _), group in kernels.groupby(keys):
        text = hlo_texts.get(int(program)) or hlo_texts.get(str(module))
        if text:
            ops = frame["hlo_op"].array.copy() if ops is None else ops
            ops[group.index.to_numpy()] = attribute(group, text).to_numpy()
    return frame if ops is None else frame.assign(hlo_op=ops)


#: The ``samples`` metric of the allocators' bytes in use from the trace's memory events.
MEMORY_METRIC = "DeviceMemoryInUse"


def memory_samples(backend: str, events: Any, window: tuple[float, float]) -> list[dict[str, Any]]:
    """``samples`` rows of :data:`MEMORY_METRIC`: the bytes in use after each allocation or
    free the trace recorded inside `window` (epoch seconds); none where the runtime records
    no memory events (XLA:CPU)."""
    memory = getattr(events, "memory", None)
    if memory is None or memory.empty:
        return []
    inside = memory[
        (memory["start_ns"] >= window[0] * 1e9) & (memory["start_ns"] <= window[1] * 1e9)
    ]
    allocators = list(dict.fromkeys(inside["allocator"].tolist()))
    if len(allocators) > 1:  # one device's: interleaved, several devices' make no series
        inside = inside[inside["allocator"] == first_device(allocators)]
    return [
        {
            "backend": backend,
            "metric": MEMORY_METRIC,
            "time": start / 1e9,
            "value": in_use,
            "device": allocator,
        }
        for start, in_use, allocator in zip(
            inside["start_ns"], inside["bytes_in_use"], inside["allocator"], strict=True
        )
    ]


def first_device(allocators: Sequence[str]) -> str:
    """Of several allocators' names (``GPU_1_bfc``, ``device 0``), that of the lowest device
    number (the first one named without a number where none has one)."""
    numbered = [(int(found[0]), name) for name in allocators if (found := re.search(r"\d+", name))]
    return min(numbered)[1] if numbered else allocators[0]


def rows(
    backend: str,
    events: Any,
    window: tuple[float, float],
    graphs: Sequence[dict[str, Any]] = (),
    kinds: tuple[str, ...] = ("hlo_optimized",),
    cell_filename: str | None = None,
    cell_line_offset: int = 0,
    known_modules: Mapping[str | int, str] | None = None,
    known_sources: Mapping[str | int, dict[str, HloOpSource]] | None = None,
    known_texts: Mapping[str | int, str] | None = None,
    counted_programs: Collection[int] = (),
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(``ops`` rows, ``spans`` rows) of the trace events inside `window` (epoch seconds).

    `graphs` are the capture's ``graphs`` rows: those of `kinds` tell which ``graph`` id a
    program of the trace is (by its ``module_id``, the trace's program id, where the row has
    one, else by HLO module name), and their metadata where each op came from; `known_modules`
    names the graphs of programs compiled before the capture (program id or HLO module name
    -> graph id), `known_sources` where their ops came from, `known_texts` their optimized
    HLO (on XLA:GPU: what places kernels inside command buffers and says what ops compute).
    `counted_programs`: program ids whose ops an earlier window of the capture holds (their
    first run there): their rows here are marked ``later`` (runs after their first, which
    :func:`add_ops` adds to those rows without another first run)."""
    modules, sources = _programs(graphs, kinds, cell_filename)
    modules = {**(known_modules or {}), **modules}
    sources = {**(known_sources or {}), **sources}
    texts = {**(known_texts or {}), **_texts(graphs, kinds)}

    def graph_of(module: str, program: int | None) -> str:
        found = modules.get(program) if program is not None else None
        return found or modules.get(module, module)

    def sources_of(module: str, program: int | None) -> dict[str, HloOpSource]:
        found = sources.get(program) if program is not None else None
        return found if found is not None else sources.get(module, {})

    summary = summarize(events, window[0], window[1], texts)
    trace_facts = getattr(events, "op_facts", None) or {}
    # one row per graph, op and source: programs of one graph (JAX's compiles of a function)
    # add up where their op came from the same line
    by_op: dict[tuple[Any, ...], dict[str, Any]] = {}  # a later window's runs apart
    per_device = summary.devices or [(1, 0.0)] * len(summary.ops)
    for op_row, (devices, slowest) in zip(summary.ops, per_device, strict=True):
        module, program, op, count, seconds, first_seconds, runs = op_row
        later = program is not None and program in counted_programs
        graph = graph_of(module, program)
        facts = trace_facts.get((program, op))  # a TPU trace's own op metadata
        source = _source_of(sources_of(module, program), op) or _trace_source(facts)
        key = (graph, module, op, (source.file, source.line) if source else None, later)
        if (same := by_op.get(key)) is not None:
            _add_up(same, op_row, (devices, slowest) if summary.devices else None, summary.total)
            continue
        cell_line = _cell_line(source, cell_filename)
        text = texts.get(program) if program is not None else None
        category, op_name = _what(op, text or texts.get(module), summary.gpu)
        row = by_op[key] = {
            "backend": backend,
            "graph": graph,
            "module": module,
            "op": op,
            "op_name": source.op_name if source and source.op_name else op_name,
            "category": category,
            "count": count,
            "seconds": seconds,
            "share": seconds / summary.total,
            "runs": runs,
            "first_run_seconds": first_seconds,
            "programs": 1,
            "source_file": source.file if source else None,
            "source_line": source.line if source else None,
            "cell_line": cell_line + cell_line_offset if cell_line is not None else None,
            **({"later": True} if later else {}),
        }
        if facts is not None and facts.flops == facts.flops:  # one run's cost, per the trace
            row.update(flops=facts.flops, bytes=facts.bytes)
        if summary.devices:  # one device's seconds and count, as on one device; then how many
            row.update(devices=devices, max_device_seconds=slowest)
    op_rows = sorted(by_op.values(), key=lambda row: -row["seconds"])
    return op_rows, _span_rows(backend, summary.spans, graph_of)


def _add_up(
    row: dict[str, Any], op_row: tuple, per_device: tuple[int, float] | None, total: float
) -> None:
    """Add another program's `op_row` (:attr:`Summary.ops`) to the ops `row` of its graph, op
    and source line (JAX's compiles of one function), with its devices where it ran on
    several (`per_device`: the devices, the slowest one's seconds)."""
    _module, _program, _op, count, seconds, first_seconds, runs = op_row
    _add_runs(row, (count, seconds, first_seconds, runs, 1), per_device)
    row["share"] = row["seconds"] / total


def _add_runs(
    row: dict[str, Any],
    figures: Sequence[float],
    per_device: tuple[int, float] | None,
) -> None:
    """Add the runs of other programs to the ops `row` of their graph, op and source line:
    their `figures` (count, seconds, first_run_seconds, runs, programs) and, where one side
    is one device's of several, `per_device` (the devices, the slowest one's seconds)."""
    if per_device is not None:  # the slowest devices' seconds add up, as the seconds do
        row["devices"] = max(row.get("devices", 1), per_device[0])
        row["max_device_seconds"] = row.get("max_device_seconds", row["seconds"]) + per_device[1]
    for column, value in zip(_ADDED_UP, figures, strict=True):
        row[column] += value


#: The ``ops`` columns that add up over the programs of one row.
_ADDED_UP = ("count", "seconds", "first_run_seconds", "runs", "programs")


def add_ops(rows: list[dict[str, Any]], more: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``ops`` rows of two windows of one capture as one list, longest first: a row of
    `more` of the same graph, op and source as one of `rows` (another program of its graph,
    or a ``later`` row: more runs of a program whose first run `rows` holds, added without
    a first run or a program) adds to it; ``share`` is over both windows' ops."""

    def key(row: dict[str, Any]) -> tuple[Any, ...]:
        return row["graph"], row["module"], row["op"], row["source_file"], row["source_line"]

    combined = {key(row): row for row in rows}
    for row in more:
        later = row.pop("later", False)
        same = combined.setdefault(key(row), row)
        if same is row:
            continue
        several = "devices" in row or "devices" in same
        per_device = (
            (row.get("devices", 1), row.get("max_device_seconds", row["seconds"]))
            if several
            else None
        )
        figures = [row[column] for column in _ADDED_UP]
        if later:  # no first run and no program of its own: both are the earlier window's
            figures[_ADDED_UP.index("first_run_seconds")] = 0.0
            figures[_ADDED_UP.index("programs")] = 0
        _add_runs(same, figures, per_device)
    total = sum(row["seconds"] for row in combined.values()) or 1.0
    for row in combined.values():
        row["share"] = row["seconds"] / total
    return sorted(combined.values(), key=lambda row: -row["seconds"])


def _trace_source(facts: Any) -> HloOpSource | None:
    """The source line a TPU trace's op metadata names (:class:`OpFacts`), if any."""
    if facts is None or facts.source_file is None:
        return None
    return HloOpSource(facts.source_file, facts.source_line or 0, op_name="")


def _span_rows(
    backend: str, spans: Sequence[_Span], graph_of: Callable[[str, int | None], str]
) -> list[dict[str, Any]]:
    """``spans`` rows of a :class:`Summary`'s spans, the graph of each program looked up
    once; a ``device`` span says which of a graph's programs ran (``module_id``)."""
    graphs: dict[tuple[str, int | None], str | None] = {}
    span_rows = []
    for lane, name, module, program, start, end in spans:
        graph = graphs.get((module, program), _UNKNOWN)
        if graph is _UNKNOWN:
            graph = graphs[module, program] = graph_of(module, program) if module else None
        row = {
            "backend": backend,
            "lane": lane,
            "name": name,
            "graph": graph,
            "start": start / 1e9,
            "seconds": max(end - start, 0.0) / 1e9,
            "estimated": False,
        }
        if lane == "device" and program is not None:
            row["module_id"] = program
        span_rows.append(row)
    return span_rows


#: A graph not looked up yet.
_UNKNOWN = "\0"


def summarize(
    events: Any, start: float, end: float, hlo_texts: Mapping[str | int, str] | None = None
) -> Summary:
    """The :class:`Summary` of the events inside ``[start, end]`` (epoch s), kept on `events`:
    a window read on the watchdog thread is summarized there, while the cell goes on (a later
    `end` covers the same events: the trace stopped before the capture ended). On XLA:GPU
    only the programs' own kernels count (:func:`program_events`), those inside command
    buffers placed on their instructions through `hlo_texts` (program id or HLO module name
    -> its optimized HLO text)."""
    frame = events.events
    start_ns, end_ns = start * 1e9, end * 1e9
    # the same events when `end` is past the last one
    whole = frame.empty or end_ns >= float(frame["start_ns"].to_numpy().max())
    gpu = getattr(events, "gpu", None)
    if gpu is None:
        gpu = events.gpu = not frame.empty and is_gpu(frame)
    # the HLO texts only change what a GPU trace's kernels are placed on
    key = (start, tuple(sorted(map(str, hlo_texts or {}))) if gpu else ())
    kept = getattr(events, "summary", None)
    if kept is not None and whole and kept[0] == key:
        return kept[1]
    if gpu:
        frame = placed_kernels(program_events(frame), hlo_texts or {})
    summary = summary_of(Columns.of(frame, gpu), start_ns, end_ns, gpu)
    if whole:
        events.summary = (key, summary)
    return summary


def _execution_windows(frame: pd.DataFrame) -> np.ndarray:
    """:func:`xlanb.analysis.trace_summary.execution_windows` of a frame of trace events."""
    return execution_windows(Columns.of(frame, gpu=False))


def whole_runs_in(frame: pd.DataFrame) -> int:
    """The whole program runs the trace events `frame` hold, where the runtime numbers them
    (JAX's ``run_id``; a run no wait names was cut, see
    :func:`xlanb.analysis.trace_summary.whole_runs`); on XLA:GPU, of the programs' own
    kernels (:func:`program_events`)."""
    if frame.empty or "run_id" not in frame:
        return 0
    frame = program_events(frame)
    return whole_runs(frame)


def _texts(graphs: Sequence[dict[str, Any]], kinds: tuple[str, ...]) -> dict[str | int, str]:
    """Program id and HLO module name -> the optimized HLO text, of the `graphs` rows of
    `kinds` (a later row of a module wins)."""
    texts: dict[str | int, str] = {}
    for row in graphs:
        if row.get("kind") in kinds and row.get("text"):
            texts[hlo_module_name(row["text"])] = row["text"]
            if row.get("module_id") is not None:
                texts[int(row["module_id"])] = row["text"]
    return texts


def _what(op: str, text: str | None, gpu: bool) -> tuple[str, str | None]:
    """(category, op name) of trace op `op` from its instruction in `text`
    (:mod:`xlanb.analysis.op_kinds`: what a fusion fused, which library a custom call calls);
    on XLA:CPU a fusion's and an op's whose name says nothing (JAX names instructions after
    its primitives: ``conv_general_dilated.3``), the thunk's name saying the rest
    (``sort.0``, ``while.2``)."""
    if gpu and op.endswith(UNATTRIBUTED):
        return "unattributed", None
    by_name = thunk_category(op)
    categories = instruction_categories(text) if text else {}
    found = categories.get(op)
    if found is None and op.rsplit(".", 1)[-1].isdigit():
        found = categories.get(op.rsplit(".", 1)[0])
    if found is None:
        return by_name, None
    if gpu or by_name in ("fusion", "elementwise"):
        return found[0], found[1] or None
    return by_name, found[1] or None


def _programs(
    graphs: Sequence[dict[str, Any]], kinds: tuple[str, ...], cell_filename: str | None
) -> tuple[dict[str | int, str], dict[str | int, dict[str, HloOpSource]]]:
    """(program -> graph id, program -> its ops' sources) of the `graphs` rows of `kinds`, a
    program named by its HLO module name and, where the row has its ``module_id`` (the
    trace's program id), by that too (a later row of a module wins)."""
    modules: dict[str | int, str] = {}
    sources: dict[str | int, dict[str, HloOpSource]] = {}
    for row in graphs:
        if row.get("kind") in kinds:
            text = row["text"] or ""
            module = hlo_module_name(text)
            names: list[str | int] = [module]
            if row.get("module_id") is not None:
                names.append(int(row["module_id"]))
            op_sources = hlo_op_sources(text, cell_filename)
            for name in names:
                modules[name] = row["graph"]
                sources[name] = op_sources
    return modules, sources


def _cell_line(source: HloOpSource | None, cell_filename: str | None) -> int | None:
    """The line in the cell's file of the op at `source`: its own where the cell wrote it,
    else the cell's call that ran it (None: neither is known)."""
    if source is None or not cell_filename:
        return None
    return source.line if source.file == cell_filename else source.cell_line


def _source_of(sources: dict[str, HloOpSource], op: str) -> HloOpSource | None:
    """The HLO metadata of thunk `op` (``sort.0`` is instruction ``sort`` or ``sort.0``)."""
    if op in sources:
        return sources[op]
    base = op.rsplit(".", 1)[0] if op.rsplit(".", 1)[-1].isdigit() else op
    return sources.get(base)


# -- the runs after the window ----------------------------------------------------------------
@functools.lru_cache(maxsize=1024)
def program_key(name: str) -> str:
    """JAX's function ``jit(train step)`` and the HLO module its runs have in the trace,
    ``jit_train_step`` (on XLA:CPU and XLA:GPU alike), as one key: the module name as JAX
    makes it (``jit(<lambda>)`` is ``jit__lambda``), without ``jit_``."""
    return _MODULE_NAME.sub("_", name).rstrip("_").removeprefix("jit_")


#: What JAX replaces by ``_`` in a program's name to name its module (``mlir.sanitize_name``;
#: it then strips trailing ``_``).
_MODULE_NAME = re.compile(r"[^\w.-]")


def traced_runs(spans: Sequence[dict[str, Any]]) -> list[tuple[str, str, float]]:
    """(program key, name, seconds) of each traced ``device`` span of `spans`, in the order
    they started."""
    runs = [span for span in spans if span["lane"] == "device" and not span["estimated"]]
    return [
        (program_key(str(span["name"])), str(span["name"]), float(span["seconds"]))
        for span in sorted(runs, key=lambda span: float(span["start"]))
    ]


def traced_graphs(spans: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Program key -> the graph its traced ``device`` spans of `spans` name (where one does)."""
    return {
        program_key(str(span["name"])): span["graph"]
        for span in spans
        if span["lane"] == "device" and not span["estimated"] and span.get("graph")
    }


#: The name of estimated spans standing for calls the dispatch samples did not keep.
UNSAMPLED_CALLS = "calls past the sample cap"


def after_window_from_calls(
    backend: str,
    traced: Sequence[tuple[str, str, float]],
    calls: Sequence[tuple[str, float]],
    window_end: float,
    capture_end: float,
    unsampled: Sequence[tuple[str, int]] = (),
    graphs: Mapping[str, str] | None = None,
    drained: bool = False,
    traced_here: bool = True,
    earlier: Sequence[tuple[str, str, float]] = (),
    compiled: Collection[str] = (),
) -> list[dict[str, Any]]:
    """Estimated ``device`` spans for the runs a trace's window did not hold, from the calls
    that launched them (JAX).

    Args:
      traced: (program key, name, seconds) of each traced run (:func:`traced_runs`).
      calls: (program key, launch epoch s) of each call in the capture, in call order: a
        program's first calls are its traced runs (under async dispatch some called before
        the window closed ran after it); the rest are queued one run at a time (a device
        runs its programs in turn), each for its program's mean traced device time, none
        before its call or `window_end`, clipped at `capture_end`: a span each, of the
        program's ``graph`` in `graphs` (program key -> graph), so the steps after the
        window are steps too; a run starting after `capture_end` has none.
      drained: the capture's last run had ended by `capture_end` (the cell waited for it),
        so every run fits before it: where the traced mean (traced runs are slower) would
        queue the runs past it, each is shortened alike until they fit.
      unsampled: (program key, calls) the calls leave out; spread after the queued runs.
      traced_here: the traced runs are the capture's own (False: an earlier capture's, so
        every call is estimated).
      earlier: traced runs of an earlier capture of programs `traced` has none of: every
        call of those is estimated.
      compiled: program keys compiled in the capture: their first traced run was their
        first run, which holds one-off warm-up; the mean leaves it out where later runs
        were traced.
    Programs with no traced run get none (unknown)."""
    durations, names, every_call = _run_durations(traced, earlier)
    means: dict[str, float] = {}
    for key, values in durations.items():
        kept = values[1:] if key in compiled and len(values) > 1 else values
        means[key] = sum(kept) / len(kept)
    picked = _untraced_calls(calls, durations, traced_here, every_call)
    spans: list[dict[str, Any]] = []
    last_call = queue_end = window_end
    if picked:
        keys = [key for key, _ in picked]
        called = np.fromiter((launched for _, launched in picked), float)
        run_seconds = np.fromiter((means[key] for key in keys), float)
        ends = _queue_ends(called, run_seconds, window_end)
        if drained and ends[-1] > capture_end:
            run_seconds = run_seconds * _fitting_share(called, run_seconds, window_end, capture_end)
            ends = _queue_ends(called, run_seconds, window_end)
        starts = ends - run_seconds
        inside = starts < capture_end
        # the runs' own seconds, not a difference of epoch times, unless clipped
        held = np.where(ends <= capture_end, run_seconds, capture_end - starts)
        graph_of = graphs or {}
        start_of, held_of = starts.tolist(), held.tolist()
        spans += [
            _estimated(backend, names[keys[i]], start_of[i], held_of[i], graph_of.get(keys[i]))
            for i in np.flatnonzero(inside).tolist()
        ]
        last_call = max(float(called.max()), window_end)
        if inside.any():
            queue_end = float(np.minimum(ends, capture_end)[inside][-1])
    missing = [(key, count) for key, count in unsampled if key in means and count > 0]
    spans += spread_spans(
        backend,
        UNSAMPLED_CALLS,
        max(last_call, queue_end),
        capture_end,
        sum(count for _, count in missing),
        sum(count * means[key] for key, count in missing),
    )
    return spans


def without_queued_runs(
    segments: Sequence[Sequence[tuple[str, float]]],
    traced: Sequence[Mapping[str, int]],
    unsampled: Mapping[str, int] | None = None,
) -> list[list[tuple[str, float]]]:
    """The calls of each of `segments` (program key, launch epoch s; the calls launched
    between two windows' starts, in call order) less those whose runs a later window traced:
    `traced[i]` counts window i's traced runs by program (segment i launched from its start).
    Under async dispatch a window can trace runs queued before it started: where it traced
    more runs of a program than its segment launched (with `unsampled`, the calls past the
    samples' cap, in the last segment), the surplus are the latest calls of that program in
    the segments before it, which :func:`after_window_from_calls` would estimate too."""
    kept = [list(segment) for segment in segments]
    for index in range(len(kept) - 1, 0, -1):
        own = Counter(key for key, _ in segments[index])
        if index == len(kept) - 1 and unsampled:
            own.update(unsampled)
        for key, count in traced[index].items():
            surplus = count - own[key]
            for earlier in range(index - 1, -1, -1):
                if surplus <= 0:
                    break
                calls = kept[earlier]
                for position in range(len(calls) - 1, -1, -1):
                    if calls[position][0] == key:
                        del calls[position]
                        surplus -= 1
                        if not surplus:
                            break
    return kept


def _run_durations(
    traced: Sequence[tuple[str, str, float]], earlier: Sequence[tuple[str, str, float]]
) -> tuple[dict[str, list[float]], dict[str, str], set[str]]:
    """Each program's run seconds, its name, and the programs known from `earlier` runs only
    (every call of those is estimated), as :func:`after_window_from_calls` takes them."""
    durations: dict[str, list[float]] = {}
    names: dict[str, str] = {}
    for key, name, seconds in traced:
        durations.setdefault(key, []).append(seconds)
        names[key] = name
    every_call: set[str] = set()
    for key, name, seconds in earlier:
        if key in durations and key not in every_call:
            continue
        every_call.add(key)
        durations.setdefault(key, []).append(seconds)
        names[key] = name
    return durations, names, every_call


def _untraced_calls(
    calls: Sequence[tuple[str, float]],
    durations: Mapping[str, list[float]],
    traced_here: bool,
    every_call: set[str],
) -> list[tuple[str, float]]:
    """The `calls` of programs with traced runs (`durations`) past those runs: each
    program's first calls were its traced runs where `traced_here`, none were otherwise
    (nor any of the programs in `every_call`)."""
    if not traced_here:
        return [(key, launched) for key, launched in calls if key in durations]
    picked = []
    traced_left = {
        key: 0 if key in every_call else len(values) for key, values in durations.items()
    }
    for key, launched in calls:
        left = traced_left.get(key)
        if left is None:
            continue
        if left:  # one of the program's traced runs
            traced_left[key] = left - 1
        else:
            picked.append((key, launched))
    return picked


def _queue_ends(called: np.ndarray, run_seconds: np.ndarray, window_end: float) -> np.ndarray:
    """When each queued run ends: end_i = max(called_i, end_i-1) + seconds_i, from
    `window_end`, in closed form."""
    done = np.cumsum(run_seconds)
    return done + np.maximum(np.maximum.accumulate(called - (done - run_seconds)), window_end)


def _fitting_share(
    called: np.ndarray, run_seconds: np.ndarray, window_end: float, capture_end: float
) -> float:
    """The largest share of `run_seconds` (to 1e-9) whose queue ends by `capture_end`."""
    low, high = 0.0, 1.0
    for _ in range(30):
        middle = (low + high) / 2
        if _queue_ends(called, run_seconds * middle, window_end)[-1] <= capture_end:
            low = middle
        else:
            high = middle
    return low


def looping_graph(spans: Sequence[dict[str, Any]], window_end: float) -> str | None:
    """The graph the traced ``device`` runs of `spans` were all of after the last compile
    that ended before them (a loop's step, whose first runs may compile other graphs: an
    optimizer makes its state on the first step); None where they were of several, or where
    a compile ended after them before the window did (its graph, never traced, may be what
    ran next)."""
    runs = [span for span in spans if span["lane"] == "device" and not span["estimated"]]
    if not runs:
        return None
    last_run = max(span["start"] for span in runs)
    compiled = [span["start"] + span["seconds"] for span in spans if span["lane"] == "compile"]
    if any(last_run < end <= window_end for end in compiled):
        return None
    after = max((end for end in compiled if end <= last_run), default=-math.inf)
    graphs = {span.get("graph") for span in runs if span["start"] >= after}
    return graphs.pop() if len(graphs) == 1 else None


#: The names of estimated spans from the runtime's execute-time samples.
SCALED_SAMPLES = "ExecuteTime (scaled to the traced runs)"
UNSAMPLED_RUNS = "ExecuteTime (not sampled)"


def after_window_from_samples(
    backend: str,
    traced: tuple[int, float],
    window_execute_seconds: float,
    samples: Sequence[tuple[float, float]],
    counted: tuple[int, float],
    window_end: float,
    capture_end: float,
    graph: str | None = None,
    graph_until: float = math.inf,
) -> list[dict[str, Any]]:
    """Estimated ``device`` spans for the runs after a trace's window, from the runtime's own
    timed runs (torch_xla's ExecuteTime: launch to completion, longer than the trace's device
    time of the same runs).

    Args:
      traced: (runs, device seconds) the window traced, the capture's first runs (one cut
        short by the trace's stop among them); window_execute_seconds: the runtime's execute
        seconds of the runs up to the window's end. The ratio of the seconds (at most 1)
        scales each sample after the window.
      samples: (end epoch s, seconds) of the runs the runtime timed in the capture; those of
        the runs past the traced ones become spans ending where they ended, one at a time:
        none starts before the run timed before it ended (a queued run's sample holds its
        wait in the queue, as under async dispatch on XLA:GPU). The runs are split by count,
        not by `window_end`: a run can end between the runtime's totals read at the window's
        close and the trace's stop, or be cut short by that stop and end after it.
      counted: (runs, seconds) the runtime's totals count in the capture; the runs past the
        traced ones that its samples no longer hold (a circular buffer keeps the newest) ran
        before the first of them sampled: they are spread from `window_end` to its start
        (else to `capture_end`), with the seconds counted after the window's close.
      graph: the graph of each timed run where the window's runs were all of one after its
        last compile (:func:`looping_graph`; the samples name none): those runs are then
        steps; those launched after `graph_until` (the end of a compile after the window:
        its graph, never traced, may be theirs) get none."""
    traced_runs, traced_seconds = traced
    ratio = 1.0
    if window_execute_seconds > 0 and traced_seconds > 0:
        ratio = min(traced_seconds / window_execute_seconds, 1.0)
    timed = sorted(samples)
    runs_after = max(counted[0] - traced_runs, 0)
    after = timed[len(timed) - min(runs_after, len(timed)) :]
    count = runs_after - len(after)
    seconds = counted[1] - window_execute_seconds - sum(value for _, value in after)
    spans = []
    # the run timed before each (unknown for the first after the window where runs are lost)
    previous = len(timed) - len(after) - 1 if count <= 0 else -1
    for end, value in after:
        own = value * ratio
        if previous >= 0:
            own = min(own, end - timed[previous][0])
        launched = end - value
        spans.append(
            _estimated(
                backend, SCALED_SAMPLES, end - own, own, graph if launched < graph_until else None
            )
        )
        previous = len(timed) - len(after) + len(spans) - 1
    first_run = min((span["start"] for span in spans), default=capture_end)
    spans += spread_spans(backend, UNSAMPLED_RUNS, window_end, first_run, count, seconds * ratio)
    return spans


#: At most this many spans stand for runs spread over a stretch of a capture.
MAX_SPREAD_SPANS = 200


def spread_spans(
    backend: str, name: str, start: float, end: float, count: int, seconds: float
) -> list[dict[str, Any]]:
    """Estimated ``device`` spans for `count` runs of `seconds` in all that the runtime counted
    but did not time one by one, evenly spaced over ``[start, end]`` (at most
    :data:`MAX_SPREAD_SPANS`, each then standing for several runs)."""
    if count <= 0 or end <= start or seconds <= 0:
        return []
    spans = min(count, MAX_SPREAD_SPANS)
    step = (end - start) / spans
    each = min(seconds / spans, step)
    return [_estimated(backend, name, start + index * step, each) for index in range(spans)]


def _estimated(
    backend: str, name: str, start: float, seconds: float, graph: str | None = None
) -> dict[str, Any]:
    return {
        "backend": backend,
        "lane": "device",
        "name": name,
        "graph": graph,
        "start": float(start),
        "seconds": float(seconds),
        "estimated": True,
    }
