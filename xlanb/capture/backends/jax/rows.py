"""The frames' rows of one JAX capture, built from what the listeners recorded.

:func:`fill` is the whole of it: ``compiles`` (and ``graphs``) from the events, ``spans`` and
``ops`` (with the device trace, through :mod:`xlanb.capture.device_trace`), ``executions``
from the dispatch counter's totals, ``fallbacks`` (host callbacks, host-to-device transfers,
values read back),
``metrics``, ``samples`` and ``counters``. JAX objects held by the events (executables, jitted
functions) are read through :mod:`.hooks`.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections import Counter
from typing import Any

import xlanb.capture.backends.jax.hooks as hooks
import xlanb.capture.backends.jax.reuse as reuse
import xlanb.capture.backends.jax.untraced as untraced
from xlanb.analysis import device_time
from xlanb.capture import device_trace, switches
from xlanb.capture.backends.base import (
    Capture,
    CaptureOptions,
    location_fields,
    name_op_places,
)
from xlanb.capture.backends.jax.ahead import AHEAD, ProgramReads, stablehlo_text
from xlanb.capture.backends.jax.events import (
    CacheMiss,
    CallDelta,
    CompileRecord,
    Duration,
    Event,
    Frame,
    Read,
    Transfer,
    UnusedDonation,
)
from xlanb.capture.backends.jax.state import PEAKS_KEPT, PROGRAMS_KEPT, Session, Taken
from xlanb.formats import jax_text
from xlanb.formats.buffer_assignment import dumped_temporaries, temporary_rows
from xlanb.formats.counters import metric_row
from xlanb.formats.hlo_text import count_hlo_instructions, hlo_module_name, hlo_op_sources
from xlanb.formats.jax_text import (
    ADVICE,
    DERIVED,
    EAGER_OP,
    HOST_CALLBACK,
    HOST_READ,
    HOST_TRANSFER,
    JAX_UNEXPLAINED,
    NEVER_SEEN,
    UNEXPLAINED,
    CallbackOp,
    Explanation,
    callback_instructions,
    count_stablehlo_ops,
    hlo_signature,
    parse_explanation,
    static_change_cause,
    strip_jit,
)
from xlanb.formats.xla_dump_names import dump_file_name

NAME = jax_text.BACKEND


def fill(
    capture: Capture,
    taken: Taken,
    options: CaptureOptions,
    session: Session,
    trace_events: Any,
    window: tuple[float, float],
    trace: device_trace.Trace | None = None,
    drained: bool = False,
    reused: bool = False,
    earlier: list[tuple[device_trace.Trace, Any]] | None = None,
) -> None:
    """Add the rows of one capture to `capture` (`trace_events`: the device trace's events,
    None without a trace, and `trace` the trace they come from; `window`: the capture's
    wall-clock start and end; `drained`: its last run had ended by then; `reused`: it traced
    nothing, its cell's last trace stands for its runs: :mod:`.reuse`; `earlier`: a first
    trace and its events, whose window closed before `trace` started)."""
    compiles = _compile_rows(taken.events, options, capture, session)
    compiled = {_program_key(str(row["graph"])) for row in compiles}
    capture.rows["spans"] = _compile_spans(compiles)
    if reused:
        calls, unsampled = untraced.calls_by_program(taken)
        reuse.reused_rows(capture, session.traces, options, calls, unsampled, window, drained)
    else:
        traces = [
            (each, events)
            for each, events in [*(earlier or []), (trace, trace_events)]
            if each is not None and events is not None
        ]
        if traces:
            remember_dumped_programs(session)
            _traces_rows(capture, traces, taken, options, session, window, drained, compiled)
    executions = _execution_rows(taken.calls)
    for row in executions:
        if row["graph"] in session.peaks:
            row.update(session.peaks[row["graph"]])
    _execution_seconds(executions, capture.rows["spans"], traced=trace_events is not None or reused)
    capture.rows["executions"] = executions
    _remember_programs(capture, session)
    if options.graphs:
        _ran_programs_graphs(capture, executions, session)
    _fallback_rows(capture, compiles, executions, taken.transfers, options, session)
    _read_rows(capture, taken.reads, options)
    _metric_and_counter_rows(capture, compiles, executions, taken, session)
    if trace is not None and trace_events is not None:
        with_callbacks = {
            _program_key(str(row["graph"]))
            for row in capture.rows.get("fallbacks", [])
            if row.get("cause") == HOST_CALLBACK
        }
        reuse.remember(
            session.traces,
            options,
            capture,
            [call.function for call in taken.calls],
            lambda function: hooks.function_name(function)[0],
            with_callbacks,
            compiled,
        )


# -- compiles and graphs ---------------------------------------------------------------------
def _compile_rows(
    events: list[Event], options: CaptureOptions, capture: Capture, session: Session
) -> list[dict[str, Any]]:
    explanations: list[Explanation] = []
    traces: dict[str, tuple[float, Explanation | None]] = {}
    lowers: dict[str, float] = {}
    record: CompileRecord | None = None
    cache_hit = False  # the next compile came from the persistent compilation cache
    unused: dict[str, UnusedDonation] = {}  # by program: donations its lowering could not use
    rows: list[dict[str, Any]] = []
    for event in events:
        if isinstance(event, UnusedDonation):
            unused[event.module] = event
        elif isinstance(event, CacheMiss):
            explanations.append(parse_explanation(event.message))
        elif isinstance(event, CompileRecord):
            record = event
        elif event.kind == "cache_hit":
            cache_hit = True
        elif event.kind == "trace":
            traces[event.name] = (event.seconds, _take_explanation(explanations, event.name))
        elif event.kind == "lower":
            lowers[event.name] = event.seconds
        elif event.kind == "compile":
            traced = traces.pop(strip_jit(event.name), None)
            if traced:
                # JAX before 0.9 logs the explanation after the trace (with what it cost)
                explanation = traced[1] or _take_explanation(explanations, strip_jit(event.name))
            else:
                explanation = _take_explanation(explanations, strip_jit(event.name))
            lower_seconds = lowers.pop(event.name, math.nan)
            rows.append(
                _compile_row(
                    event,
                    traced,
                    explanation,
                    lower_seconds,
                    record,
                    options,
                    capture,
                    session,
                )
            )
            rows[-1]["cache_hit"] = cache_hit
            donation = unused.pop(event.name, None)
            if donation is not None:
                rows[-1]["not_donated"] = ", ".join(
                    f"argument {position}: {text}" for position, text, _ in donation.arguments
                )
                rows[-1]["not_donated_bytes"] = sum(size for *_, size in donation.arguments)
            record, cache_hit = None, False
    capture.rows["compiles"] = rows
    return rows


def _take_explanation(pending: list[Explanation], name: str) -> Explanation | None:
    for matches in (lambda e: e.name == name, lambda e: e.name == name.split(" ")[0]):
        for index, explanation in enumerate(pending):
            if matches(explanation):
                return pending.pop(index)
    return None


def _compile_row(
    compiled: Duration,
    traced: tuple[float, Explanation | None] | None,
    explanation: Explanation | None,
    lower_seconds: float,
    record: CompileRecord | None,
    options: CaptureOptions,
    capture: Capture,
    session: Session,
) -> dict[str, Any]:
    compile_id = next(session.compile_ids)
    frames: list[Frame] = list(explanation.frames) if explanation else []
    eager = False
    if record is not None:
        frames += record.frames
        eager = record.eager
    trigger = "eager op" if eager else "jit" if traced is not None else "transformation"
    if explanation is not None:
        cause = _explained_cause(compiled.name, explanation.cause, record, session)
    elif eager:
        cause = EAGER_OP
    elif traced is not None:
        cause = UNEXPLAINED
    else:
        cause = DERIVED
    row = {
        "backend": NAME,
        "graph": compiled.name,
        "cause": cause,
        "seconds": compiled.seconds,
        "time": compiled.wall,
        "trigger": trigger,
        **location_fields(frames, options),
        "trace_seconds": traced[0] if traced else math.nan,
        "lower_seconds": lower_seconds,
        "eager": bool(eager),
        "compile_id": compile_id,
        "explanation": explanation.text if explanation else None,
    }
    if record is not None:
        reads = AHEAD.take(record.executable)
        if not eager:  # a single op's buffers are not worth a row each
            row.update(reads.memory if reads is not None else hooks.memory(record.executable))
            session.remember_peak(compiled.name, row)
        _graph_rows(compiled.name, compile_id, record, options, capture, session, reads)
    return row


def _explained_cause(name: str, cause: str, record: CompileRecord | None, session: Session) -> str:
    """JAX's cause, made exact where JAX 0.12 says less: a program compiled inside a jitted
    function JAX made itself (the backward pass of ``jax.grad``) is derived, whatever JAX
    says; a miss JAX cannot explain, of a function with static arguments, names the static
    argument that changed (from the call's own arguments)."""
    if record is None:
        return cause
    before = session.statics.pop(name, None)
    if record.statics:
        session.statics[name] = {where: text for where, text, _ in record.statics}
        while len(session.statics) > PEAKS_KEPT:
            del session.statics[next(iter(session.statics))]
    if cause == NEVER_SEEN and record.internal_caller:
        return DERIVED
    if cause == JAX_UNEXPLAINED and record.statics:
        return static_change_cause(record.statics, before)
    return cause


def _graph_rows(
    name: str,
    compile_id: int,
    record: CompileRecord,
    options: CaptureOptions,
    capture: Capture,
    session: Session,
    reads: ProgramReads | None = None,
) -> None:
    """The program's ``graphs`` and ``temporaries`` rows (`reads`: what was read of its
    executable ahead, :mod:`.ahead`; else read now)."""
    eager, callbacks, executable = record.eager, record.host_callbacks, record.executable
    hlo_text = None
    if callbacks or (options.graphs and not eager):
        hlo_text = reads.hlo_text if reads is not None else hooks.hlo_text(executable)
    if callbacks and hlo_text:
        session.callback_ops[name] = callback_instructions(hlo_text)
    elif name in session.callback_ops and not callbacks:
        del session.callback_ops[name]
    if not options.graphs or eager:
        return
    costs = reads.costs if reads is not None else hooks.costs(executable)
    signature = hlo_signature(hlo_text or "")
    if record.computation is not None:
        text = reads.stablehlo if reads is not None else None
        if text is None:
            text = stablehlo_text(record.computation)
        capture.add(
            "graphs",
            {
                "backend": NAME,
                "graph": name,
                "kind": "stablehlo",
                "text": text,
                "nodes": count_stablehlo_ops(text),
                **costs,
                "compile_id": compile_id,
                "signature": signature,
            },
        )
    if reads is not None:
        module, temporaries = reads.module, reads.temporaries
    else:
        module = hooks.module_proto(executable)
        temporaries = hooks.temporaries(executable, module)
    if not temporaries and hlo_text:  # XLA:GPU hands over no buffer assignment: the dump's
        dump_dir = switches.dump_dir_from_flags(switches.value("XLA_FLAGS") or "")
        if dump_dir:
            temporaries = dumped_temporaries(dump_dir, hooks.program_id(module), hlo_text)
    rows = temporary_rows(
        NAME, name, temporaries, hlo_text, options.cell_filename, options.cell_line_offset
    )
    name_op_places(rows, options)
    for row in rows:
        capture.add("temporaries", {**row, "compile_id": compile_id})
    if hlo_text is not None:
        capture.add(
            "graphs",
            {
                "backend": NAME,
                "graph": name,
                "kind": "hlo_optimized",
                "text": hlo_text,
                "nodes": count_hlo_instructions(hlo_text),
                **costs,
                "compile_id": compile_id,
                "signature": signature,
                "module_id": hooks.program_id(module),
            },
        )


# -- spans and ops ---------------------------------------------------------------------------
def _compile_spans(compiles: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A ``compile`` span per compile: tracing, lowering and XLA compilation end together at
    the row's ``time``."""
    spans = []
    for row in compiles:
        total = sum(
            value
            for value in (row["seconds"], row["trace_seconds"], row["lower_seconds"])
            if not math.isnan(value)
        )
        spans.append(
            {
                "backend": NAME,
                "lane": "compile",
                "name": row["graph"],
                "graph": row["graph"],
                "start": row["time"] - total,
                "seconds": total,
                "estimated": False,
            }
        )
    return spans


def _trace_rows(
    capture: Capture,
    events: Any,
    window: tuple[float, float],
    options: CaptureOptions,
    session: Session,
    taken: Taken,
) -> list[dict[str, Any]]:
    """``ops`` and device/transfer ``spans`` from the device trace (the spans it added are
    returned); ops are located through the optimized HLO's metadata of the programs compiled
    in this capture or remembered from earlier ones, and an op the cell did not write is on
    the line that called its program. A second trace's runs of a program the first one has
    ops of add to those rows as later runs, and another program of a graph adds to its rows
    (:func:`device_time.add_ops`)."""
    with session.programs_lock:
        known = dict(session.programs)
    had = capture.rows.get("ops", [])
    counted = {  # the programs whose first traced run an earlier window's ops rows hold
        int(span["module_id"])
        for span in capture.rows["spans"]
        if had
        and span["lane"] == "device"
        and not span.get("estimated")
        and span.get("module_id") is not None
    }
    ops, spans = device_trace.rows(
        NAME,
        events,
        window,
        capture.rows.get("graphs", []),
        ("hlo_optimized",),
        options.cell_filename,
        options.cell_line_offset,
        known_modules={module: graph for module, (graph, _, _) in known.items()},
        known_sources={module: sources for module, (_, sources, _) in known.items()},
        known_texts={module: text for module, (_, _, text) in known.items()},
        counted_programs=counted,
    )
    # the functions called in the capture, by program: a program compiled before any capture
    # is known by its HLO module name only (jit_step for jit(step))
    call_names: dict[str, str] = {}
    call_lines: dict[str, int] = {}
    for call in taken.calls:
        name = hooks.function_name(call.function)[0]
        key = _program_key(name)
        call_names.setdefault(key, name)
        line = location_fields(call.frames, options)["cell_line"] if call.frames else None
        if line is not None:
            call_lines.setdefault(key, line)
    renamed = {
        op["module"]: call_names[_program_key(op["module"])]
        for op in ops
        if op["graph"] == op["module"] and _program_key(op["module"]) in call_names
    }
    for op in ops:
        op["graph"] = renamed.get(op["graph"], op["graph"])
        if op["cell_line"] is None:
            op["cell_line"] = call_lines.get(_program_key(op["module"]))
    for span in spans:
        span["graph"] = renamed.get(span["graph"], span["graph"])
    if had and not counted:  # no program ids: a graph the earlier window has ops of keeps them
        graphs = {op["graph"] for op in had}
        ops = [op for op in ops if op["graph"] not in graphs]
    name_op_places(ops, options)
    capture.rows["ops"] = device_time.add_ops(had, ops) if had else ops
    capture.rows["spans"].extend(spans)
    for sample in device_trace.memory_samples(NAME, events, window):
        capture.add("samples", sample)
    return spans


def remember_dumped_programs(session: Session, dump_dir: str | None = None) -> None:
    """Programs compiled outside any capture (an unprofiled cell), from the optimized HLO
    files of XLA's dump (set by xlanb where an accelerator plugin is installed): a later
    capture that only runs them names and locates their ops, and on XLA:GPU places the
    kernels inside their command buffers. A program the session knows is not read again."""
    if dump_dir is None:
        dump_dir = switches.dump_dir_from_flags(switches.value("XLA_FLAGS") or "")
    try:
        filenames = sorted(os.listdir(dump_dir)) if dump_dir else []
    except OSError:
        return
    for filename in filenames:
        name = dump_file_name(filename)
        if name is None or not (name.is_hlo and name.optimized):
            continue
        if name.module_id in session.programs:
            continue
        try:
            with open(os.path.join(dump_dir, filename), encoding="utf-8") as file:
                text = file.read()
        except (OSError, UnicodeDecodeError):
            continue  # removed meanwhile, or still being written
        kept = (name.module, hlo_op_sources(text), text)
        with session.programs_lock:  # the janitor's thread reads the dump between cells
            session.programs[name.module_id] = kept
            session.programs.setdefault(name.module, kept)  # a capture's compile stays first
            while len(session.programs) > PROGRAMS_KEPT:
                session.programs.popitem(last=False)


def _remember_programs(capture: Capture, session: Session) -> None:
    """Keep the graph and op sources of each program compiled in the capture, for later
    captures that run it without compiling (their ops located outside any one cell)."""
    for row in capture.rows.get("graphs", []):
        if row.get("kind") == "hlo_optimized" and row.get("text"):
            kept = (row["graph"], hlo_op_sources(row["text"]), row["text"])
            # by module name (the latest compile of a function), and by the trace's program
            # id where known (each compile its own sources)
            with session.programs_lock:
                for key in (hlo_module_name(row["text"]), row.get("module_id")):
                    if key is not None:
                        session.programs[key] = kept
                        session.programs.move_to_end(key)
    with session.programs_lock:
        while len(session.programs) > PROGRAMS_KEPT:
            session.programs.popitem(last=False)


def _ran_programs_graphs(
    capture: Capture, executions: list[dict[str, Any]], session: Session
) -> None:
    """Remember the ``graphs`` rows of the programs compiled in the capture, and add those of
    the programs it ran without compiling (compiled in an earlier capture): a profile holds
    the graphs of every program it ran."""
    rows = capture.rows.setdefault("graphs", [])
    compiled: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        compiled.setdefault(str(row["graph"]), []).append(row)
    for name, graph_rows in compiled.items():
        latest = max(row.get("compile_id", 0) for row in graph_rows)
        session.graphs[name] = [row for row in graph_rows if row.get("compile_id", 0) == latest]
        session.graphs.move_to_end(name)
    while len(session.graphs) > PROGRAMS_KEPT:
        session.graphs.popitem(last=False)
    for name in dict.fromkeys(str(row["graph"]) for row in executions):
        if name not in compiled and name in session.graphs:
            rows.extend(dict(row) for row in session.graphs[name])


def _traces_rows(
    capture: Capture,
    traces: list[tuple[device_trace.Trace, Any]],
    taken: Taken,
    options: CaptureOptions,
    session: Session,
    window: tuple[float, float],
    drained: bool,
    compiled: set[str],
) -> None:
    """``ops`` and ``spans`` of the capture's traces (one, or a first whose window closed and
    a second), the runs they did not hold estimated (`compiled`: the program keys compiled in
    the capture), and a note naming the programs none of them holds."""
    runs_of = []
    for each, events in traces:
        added = _trace_rows(capture, events, window, options, session, taken)
        capture.rows["spans"] += device_trace.window_span(NAME, each, window[1], added)
        runs_of.append((each, device_time.traced_runs(added)))
    kept = _kept_untraced(capture, taken, options, session)
    capture.rows["spans"].extend(
        untraced.estimated_runs(
            taken, capture.rows["spans"], runs_of, window, drained, kept, compiled
        )
    )
    traced_again = bool(device_trace.REUSE_TRACES and options.source and options.reuse_trace)
    capture.notes.extend(untraced.programs_note(taken, capture.rows["spans"], traced_again))


def _kept_untraced(
    capture: Capture, taken: Taken, options: CaptureOptions, session: Session
) -> list[reuse.TracedProgram]:
    """The programs the capture ran that its trace holds no run of and its cell's last trace
    kept (:func:`.reuse.kept_programs`); their kept ``ops`` rows join the capture's."""
    traced = {key for key, _, _ in device_time.traced_runs(capture.rows["spans"])}
    kept = [
        program
        for key, program in reuse.kept_programs(
            session.traces,
            options.source,
            [call.function for call in taken.calls],
            lambda function: hooks.function_name(function)[0],
        ).items()
        if key not in traced
    ]
    if kept:
        capture.rows["ops"] = sorted(
            capture.rows.get("ops", []) + reuse.kept_ops(kept, options),
            key=lambda op: -op["seconds"],
        )
    return kept


# -- executions ------------------------------------------------------------------------------
def _execution_rows(calls: list[CallDelta]) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for call in calls:
        name, eager = hooks.function_name(call.function)
        row = rows.get(name)
        if row is None:
            rows[name] = {
                "backend": NAME,
                "graph": name,
                "seconds": call.seconds,
                "time": call.first,
                "count": call.count,
                "eager": eager,
            }
        else:
            row["seconds"] += call.seconds
            row["count"] += call.count
            if not math.isnan(call.first):
                row["time"] = min(row["time"], call.first)
    ordered = sorted(rows.values(), key=lambda r: (r["eager"], -r["count"], r["graph"]))
    for row in ordered:
        row["mean_seconds"] = row["seconds"] / row["count"]
    return ordered


_program_key = device_time.program_key


def _execution_seconds(
    executions: list[dict[str, Any]], spans: list[dict[str, Any]], traced: bool
) -> None:
    """Make ``seconds`` execution time only. The call hook times host dispatch
    (``dispatch_seconds``), which holds the tracing, lowering and compiling of a call that
    missed the cache and, under async dispatch, little of the run itself. With the device
    trace, ``seconds`` is the program's measured device time; without it, dispatch time less
    the function's compile time in the capture (``seconds_estimated``)."""
    device: dict[str, float] = {}
    estimated: set[str] = set()
    for span in spans:
        if span["lane"] == "device":
            # the function the trace's module was compiled from, where known (a lambda's
            # module `jit__lambda` is not `jit(<lambda>)` by name)
            graph = span.get("graph")
            key = _program_key(str(graph if isinstance(graph, str) else span["name"]))
            device[key] = device.get(key, 0.0) + span["seconds"]
            if span["estimated"]:
                estimated.add(key)
    compiled: dict[str, float] = {}
    for span in spans:
        if span["lane"] == "compile":
            key = _program_key(str(span["name"]))
            compiled[key] = compiled.get(key, 0.0) + span["seconds"]
    for row in executions:
        row["dispatch_seconds"] = row["seconds"]
        key = _program_key(row["graph"])
        if traced and key in device:
            row["seconds"] = device[key]
            row["seconds_estimated"] = key in estimated
        else:
            row["seconds"] = max(row["dispatch_seconds"] - compiled.get(key, 0.0), 0.0)
            row["seconds_estimated"] = True
        row["mean_seconds"] = row["seconds"] / row["count"]


# -- fallbacks -------------------------------------------------------------------------------
def _fallback_rows(
    capture: Capture,
    compiles: list[dict[str, Any]],
    executions: list[dict[str, Any]],
    transfers: list[Transfer],
    options: CaptureOptions,
    session: Session,
) -> None:
    runs = {row["graph"]: row["count"] for row in executions}
    compiled = {row["graph"] for row in compiles if not row["eager"]}
    per_run: dict[tuple[str, str], float] | None = None  # read from the trace when needed
    for graph in dict.fromkeys([*runs, *compiled]):
        ops = session.callback_ops.get(graph)
        if ops is None and graph in runs:  # compiled before any capture: the trace names them
            ops = _traced_callbacks(capture, graph)
        if not ops:
            continue
        if per_run is None:
            per_run = _callbacks_per_run(capture)
        grouped: dict[tuple[str, str | None], dict[str, Any]] = {}
        for op in ops:
            where = location_fields(op.frames, options)
            key = (op.op, where["location"])
            # a callback in a loop (lax.scan) runs many times a run: the trace counted them
            count = round(
                per_run.get((_program_key(graph), op.instruction), 1.0) * runs.get(graph, 0)
            )
            row = grouped.get(key)
            if row is None:
                grouped[key] = {
                    "backend": NAME,
                    "op": f"{op.op} in {graph}",
                    "count": count,
                    "cause": HOST_CALLBACK,
                    "advice": ADVICE[HOST_CALLBACK],
                    **where,
                    "graph": graph,
                    "calls": runs.get(graph, 0),
                }
            else:
                row["count"] += count
        for row in grouped.values():
            capture.add("fallbacks", row)
    grouped_transfers: dict[tuple[str, str, str | None], dict[str, Any]] = {}
    for transfer in transfers:
        graph, eager = hooks.function_name(transfer.function)
        if eager:
            continue
        where = location_fields(transfer.frames, options)
        kind = transfer.kind
        type_name = f"numpy.{kind.__name__}" if kind.__module__ == "numpy" else kind.__name__
        transfer_key = (graph, type_name, where["location"])
        row = grouped_transfers.get(transfer_key)
        if row is None:
            advice = ADVICE[HOST_TRANSFER] if type_name == "numpy.ndarray" else ADVICE["scalar"]
            grouped_transfers[transfer_key] = {
                "backend": NAME,
                "op": f"{graph} argument: {type_name}",
                "count": transfer.count,
                "cause": HOST_TRANSFER,
                "advice": advice,
                **where,
                "graph": graph,
                "calls": transfer.calls,
            }
        else:
            row["count"] += transfer.count
            row["calls"] += transfer.calls
    for row in grouped_transfers.values():
        capture.add("fallbacks", row)


def _callbacks_per_run(capture: Capture) -> dict[tuple[str, str], float]:
    """(graph, HLO instruction) -> how many times a callback instruction ran per run of its
    program, from the device trace: its events (on every device) over the traced runs."""
    ran = Counter(  # the traced runs of each graph
        span["graph"]
        for span in capture.rows.get("spans", [])
        if span["lane"] == "device" and not span.get("estimated")
    )
    return {
        (_program_key(op["graph"]), op["op"]): op["count"] * op.get("devices", 1) / ran[op["graph"]]
        for op in capture.rows.get("ops", [])
        if ran.get(op["graph"])
    }


#: How JAX names a callback's HLO instruction (``pure_callback.3``): the primitive.
_CALLBACK_INSTRUCTION = re.compile(
    r"^(?P<op>pure_callback|io_callback|debug_callback|callback)\.\d+$"
)


def _traced_callbacks(capture: Capture, graph: str) -> list[CallbackOp]:
    """The callbacks of a program compiled before any capture (no compile record holds its
    HLO): its traced ops named after a callback primitive. No source frames: the place is
    not known."""
    key = _program_key(graph)
    return [  # the name first: few ops are callbacks, and every op's program key costs more
        CallbackOp(found["op"], [], op["op"])
        for op in capture.rows.get("ops", [])
        if (found := _CALLBACK_INSTRUCTION.match(str(op["op"])))
        and _program_key(str(op["graph"])) == key
    ]


def _read_rows(capture: Capture, reads: list[Read], options: CaptureOptions) -> None:
    """One ``fallbacks`` row (cause ``item``: a sync) per way and place values were read."""
    grouped: dict[tuple[str, str | None], dict[str, Any]] = {}
    for read in reads:
        if not read.frames:
            continue  # inside a host callback
        where = location_fields(read.frames, options)
        key = (read.how, where["location"])
        row = grouped.get(key)
        if row is None:
            grouped[key] = {
                "backend": NAME,
                "op": f"{read.how} of a jax.Array",
                "count": read.count,
                "cause": HOST_READ,
                "advice": ADVICE[HOST_READ],
                **where,
            }
        else:
            row["count"] += read.count
    for row in grouped.values():
        capture.add("fallbacks", row)


# -- metrics, samples and counters -----------------------------------------------------------
def _metric_and_counter_rows(
    capture: Capture,
    compiles: list[dict[str, Any]],
    executions: list[dict[str, Any]],
    taken: Taken,
    session: Session,
) -> None:
    samples = taken.samples
    for metric, column in (
        ("TraceTime", "trace_seconds"),
        ("LowerTime", "lower_seconds"),
        ("CompileTime", "seconds"),
    ):
        values = [row[column] for row in compiles if not math.isnan(row[column])]
        if values:
            capture.add("metrics", metric_row(NAME, metric, "s", len(values), sum(values), values))
    calls = sum(row["count"] for row in executions)
    if calls:
        capture.add(
            "metrics",
            metric_row(
                NAME,
                "DispatchTime",
                "s",
                calls,
                sum(row["dispatch_seconds"] for row in executions),
                [sample.seconds for sample in samples],
            ),
        )
        wall_offset = time.time() - time.perf_counter()
        for sample in samples:
            capture.add(
                "samples",
                {
                    "backend": NAME,
                    "metric": "DispatchTime",
                    "time": sample.started + sample.seconds + wall_offset,
                    "value": sample.seconds,
                },
            )
    transfers = sum(
        row["count"] for row in capture.rows.get("fallbacks", []) if row["cause"] == HOST_TRANSFER
    )
    callbacks = sum(
        row["count"] for row in capture.rows.get("fallbacks", []) if row["cause"] == HOST_CALLBACK
    )
    deltas = {
        "UncachedCompile": ("compile", len(compiles)),
        "EagerOpCompile": ("compile", sum(1 for r in compiles if r["eager"])),
        "JitDispatch": ("execute", calls),
        "HostToDeviceTransfer": ("transfer", transfers),
        "HostToDeviceCopy": ("transfer", taken.host_copies),
        "HostCallback": ("fallback", callbacks),
    }
    for counter, (category, delta) in deltas.items():
        session.totals[counter] += delta
        if delta:
            capture.add(
                "counters",
                {
                    "backend": NAME,
                    "name": counter,
                    "category": category,
                    "delta": int(delta),
                    "total": int(session.totals[counter]),
                },
            )
