"""The schema of every Profile frame, as data: each column's dtype, unit, meaning, whether every
row has it and who writes it; plus the vocabularies shared by writers and readers.

:data:`SCHEMA` is the one authoritative list. Everything else is derived from it:
:data:`FRAME_COLUMNS` (the required columns, public API), :func:`empty_frame`,
:func:`make_frame` (which types optional columns and, with ``XLANB_STRICT_SCHEMA=1``, refuses
undeclared ones) and :func:`markdown_table` (README's frame tables, rewritten by
``tools/schema_table.py``).

Required columns are in every frame, in the declared order, even when empty; optional ones
only where a writer has them (after the required ones), a typed null in rows it leaves empty.

To add a column: declare it here, write it, and run ``tools/schema_table.py`` (README.md);
the tests run with ``XLANB_STRICT_SCHEMA=1``, where an undeclared column fails.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from xlanb.core.errors import SchemaError

#: Environment variable: ``1`` makes :func:`make_frame` raise :class:`SchemaError` on a column
#: the schema does not declare (read on every call; the test suite sets it).
STRICT_ENV = "XLANB_STRICT_SCHEMA"

#: Who writes a column (the names used in :attr:`Column.writers`), with what it means.
WRITERS: dict[str, str] = {
    "torch_xla": "live capture, PyTorch/XLA backend (`xlanb/capture/backends/torch_xla.py`)",
    "torch_lazy": "live capture, torch._lazy backend (`xlanb/capture/backends/torch_lazy.py`)",
    "jax": "live capture, JAX backend (`xlanb/capture/backends/jax/`)",
    "collectives": "`xlanb.record(collectives=True)`: torch.distributed collectives "
    "(`xlanb/capture/collectives.py`)",
    "metrics_report": "offline: one `metrics_report()` text (`xlanb/offline/report.py`)",
    "metrics_file": "offline: an `XLA_METRICS_FILE` (`xlanb/offline/metrics_file.py`)",
    "debug_file": "offline: a `PT_XLA_DEBUG_FILE` (`xlanb/offline/debug_file.py`)",
    "xla_dump": "offline: an `--xla_dump_to` directory or one HLO module file "
    "(`xlanb/offline/xla_dump.py`)",
    "findings": "the finding rules (`xlanb/analysis/findings/`, `xlanb/offline/findings.py`)",
    "attribution": "cell lines of fallbacks from the cell's source "
    "(`xlanb/analysis/attribution.py`)",
    "ranks": "rank files merged by `xlanb.load(dir)` / `load_ranks` (`xlanb/offline/ranks.py`)",
    "time_account": "the time account (`xlanb/analysis/time_account.py`)",
    "rates": "achieved rates against the machine's peak (`xlanb/analysis/rates.py`)",
    "xspace": "the runtime's own trace (XSpace, `xlanb/formats/xspace.py`)",
}

_SPAN_WRITERS = ("torch_xla", "torch_lazy", "jax")
#: The ``name`` of a ``trace`` span when the device trace covered the whole capture (a window
#: that closed early is named after its runs).
WHOLE_TRACE = "device trace"
#: The ``name`` of the ``trace`` span of a cell that traced nothing, reusing its last trace.
REUSED_TRACE = "device trace: none, this cell's last trace reused"
#: How the ``name`` of a ``trace`` span starts when it is a second window, traced from the
#: first call of a program the first window never saw (``device trace: then 3 runs``).
SECOND_WINDOW = "device trace: then"

#: dtypes a column may declare: the pandas dtype of a full column (``str``: text, held as
#: ``object`` in an empty frame; ``Int64``: integers that may be missing).
DTYPES = ("str", "float64", "int64", "Int64", "bool", "object")


@dataclass(frozen=True)
class Column:
    """One column of one frame."""

    name: str
    dtype: str
    unit: str
    meaning: str
    required: bool = False
    writers: tuple[str, ...] = ()


_LIVE = ("torch_xla", "torch_lazy", "jax")
_REPORTS = ("metrics_report", "metrics_file")
_METRIC_WRITERS = (*_LIVE, "collectives", *_REPORTS)
_COMPILE_WRITERS = (*_LIVE, *_REPORTS, "debug_file", "xla_dump")
_EXECUTION_WRITERS = (*_LIVE, *_REPORTS, "debug_file")
_GRAPH_WRITERS = (*_LIVE, "xla_dump")
_FINDING_WRITERS = ("findings", "ranks")
_BACKEND_MEANING = (
    "runtime the row comes from: `torch_xla`, `torch_lazy`, `jax`, "
    "`torch.distributed` (collectives); offline: the detected producer"
)


def _c(
    name: str, dtype: str, unit: str, meaning: str, writers: Iterable[str], required: bool = False
) -> Column:
    return Column(name, dtype, unit, meaning, required, tuple(writers))


def _r(name: str, dtype: str, unit: str, meaning: str, writers: Iterable[str]) -> Column:
    return _c(name, dtype, unit, meaning, writers, required=True)


def _rank(dtype: str = "int64", writers: tuple[str, ...] = ("ranks",)) -> Column:
    return _c(
        "rank",
        dtype,
        "",
        "the rank the row comes from (first column of a profile merged from rank files)",
        writers,
    )


_STACK = _c(
    "stack",
    "str",
    "",
    "Python frames of the analysis, innermost first, one `function (file:line)` per line",
    ("debug_file",),
)
_DEBUG_LINE = _c(
    "debug_line",
    "int64",
    "line",
    "line of the debug file where the analysis block starts",
    ("debug_file",),
)
_INPUTS = _c(
    "inputs", "Int64", "count", "number of graph inputs (`Number of Graph Inputs`)", ("debug_file",)
)
_OUTPUTS = _c(
    "outputs",
    "Int64",
    "count",
    "number of graph outputs (`Number of Graph Outputs`)",
    ("debug_file",),
)
_STEP = _c("step", "int64", "", "step number of the `XLA_METRICS_FILE` record", ("metrics_file",))
_RUN = _c(
    "run",
    "int64",
    "",
    "restarts of the step numbering in the file (several processes "
    "appending to one file): 0, 1, ...",
    ("metrics_file",),
)
_SIZE_MEANING = (
    "from the Post Compilation Analysis (GB = 2**30 bytes, to ~1 kB; torch_xla and its debug "
    "file) or `get_compiled_memory_stats()` (JAX)"
)
_MEMORY_WRITERS = ("debug_file", "torch_xla", "jax")

SCHEMA: dict[str, tuple[Column, ...]] = {
    "counters": (
        _r("backend", "str", "", _BACKEND_MEANING, (*_LIVE, "collectives", *_REPORTS)),
        _r(
            "name",
            "str",
            "",
            "counter name as the runtime names it (`UncachedCompile`, "
            "`aten::nonzero`, `xla::add`; `dist.all_reduce` for collectives; JAX: xlanb's "
            "`UncachedCompile`, `JitDispatch`, `HostToDeviceTransfer`, ...)",
            (*_LIVE, "collectives", *_REPORTS),
        ),
        _r(
            "category",
            "str",
            "",
            "`fallback` (`aten::*`), `compile`, `execute`, `transfer`, "
            "`lowered_op` (`xla::*`, `lazy::*`), `tensor`, `collective` or `other`",
            (*_LIVE, "collectives", *_REPORTS),
        ),
        _r(
            "delta",
            "int64",
            "count",
            "change over the capture (offline: equal to `total`)",
            (*_LIVE, "collectives", *_REPORTS),
        ),
        _r(
            "total",
            "int64",
            "count",
            "the runtime's running total at the end of the capture",
            (*_LIVE, "collectives", *_REPORTS),
        ),
        _rank(),
    ),
    "metrics": (
        _r("backend", "str", "", _BACKEND_MEANING, _METRIC_WRITERS),
        _r(
            "name",
            "str",
            "",
            "metric name (`CompileTime`, `ExecuteTime`, "
            "`TransferToDeviceTime`, ...; xlanb's own: `SyncTime` for torch._lazy, "
            "`TraceTime`/`LowerTime`/`CompileTime`/`DispatchTime` for JAX, `CollectiveTime`)",
            _METRIC_WRITERS,
        ),
        _r(
            "unit",
            "str",
            "",
            "unit of `total`, `mean` and the percentiles: `s`, `bytes` or `count`",
            _METRIC_WRITERS,
        ),
        _r(
            "count",
            "int64",
            "count",
            "samples during the capture, from the runtime's "
            "accumulator (exact even when old samples were dropped)",
            _METRIC_WRITERS,
        ),
        _r(
            "total",
            "float64",
            "metric unit",
            "sum over the capture, from the runtime's accumulator",
            _METRIC_WRITERS,
        ),
        _r("mean", "float64", "metric unit", "`total / count`", _METRIC_WRITERS),
        _r(
            "p50",
            "float64",
            "metric unit",
            "median of the samples inside the capture (reports: the reported percentile)",
            _METRIC_WRITERS,
        ),
        _r("p90", "float64", "metric unit", "90th percentile, as `p50`", _METRIC_WRITERS),
        _r("p99", "float64", "metric unit", "99th percentile, as `p50`", _METRIC_WRITERS),
        _r(
            "max",
            "float64",
            "metric unit",
            "largest sample inside the capture (NaN from a report: reports stop at 99%)",
            (*_LIVE, "collectives"),
        ),
        _c("value_rate", "float64", "metric unit/s", "the report's `ValueRate`", _REPORTS),
        _c("rate", "float64", "1/s", "the report's `Rate` (samples per second)", _REPORTS),
        _rank(),
    ),
    "samples": (
        _r("backend", "str", "", _BACKEND_MEANING, (*_LIVE, "collectives")),
        _r(
            "metric",
            "str",
            "",
            "the `metrics` row (`name`) the sample belongs to; `DeviceMemoryInUse`: an "
            "allocator's bytes in use after each allocation or free in the device trace "
            "(GPU/TPU; no `metrics` row)",
            (*_LIVE, "collectives"),
        ),
        _r("time", "float64", "epoch s", "when the event ended", (*_LIVE, "collectives")),
        _r(
            "value",
            "float64",
            "metric unit",
            "the sample, in its metric's `unit`",
            (*_LIVE, "collectives"),
        ),
        _c(
            "device",
            "str",
            "",
            "`DeviceMemoryInUse`: the allocator (`GPU_0_bfc`; TPU: `device 0`), the "
            "lowest-numbered device's where the trace holds several",
            ("torch_xla", "jax", "xspace"),
        ),
        _rank(),
    ),
    "compiles": (
        _r("backend", "str", "", _BACKEND_MEANING, _COMPILE_WRITERS),
        _r(
            "graph",
            "str",
            "",
            "graph hash (torch_xla, torch._lazy), function (`jit(f)`, "
            "JAX) or module name (dumps); null when unknown",
            (*_LIVE, "debug_file", "xla_dump"),
        ),
        _r(
            "cause",
            "str",
            "",
            "why it compiled: `new graph`, `new shape: f32[8,4] -> "
            "f32[16,4]`, `forced sync (...)`; JAX: the cache-miss explanation's cause (see "
            '"Compile causes")',
            (*_LIVE, "debug_file", "xla_dump"),
        ),
        _r("seconds", "float64", "s", "compile time (NaN when unknown)", (*_LIVE, *_REPORTS)),
        _r("time", "float64", "epoch s", "when the compile ended (NaN when unknown)", _LIVE),
        _r(
            "trigger",
            "str",
            "",
            "what triggered it, in the runtime's words (`user "
            "torch_xla.sync`, `mark_step`, `forced sync`; JAX: `jit`, `eager op`, "
            "`transformation`)",
            (*_LIVE, "debug_file"),
        ),
        _r(
            "location",
            "str",
            "",
            "`file:line` of the user frame that triggered it",
            (*_LIVE, "debug_file"),
        ),
        _r(
            "cell_line",
            "Int64",
            "line",
            "line in the profiled cell, as the editor numbers it (the `%%xla_profile` line is 1)",
            _LIVE,
        ),
        _c(
            "program",
            "str",
            "",
            "a readable name of the graph: the function and line that cut it, "
            "`train_step at In[1] line 12` (`#2` for the next graph cut there); torch_xla, "
            "whose `graph` is a hash",
            ("torch_xla",),
        ),
        _c(
            "trace_seconds",
            "float64",
            "s",
            "tracing to a jaxpr (`/jax/core/compile/jaxpr_trace_duration`)",
            ("jax",),
        ),
        _c(
            "lower_seconds",
            "float64",
            "s",
            "lowering to StableHLO (`/jax/core/compile/jaxpr_to_mlir_module_duration`)",
            ("jax",),
        ),
        _c(
            "eager",
            "bool",
            "",
            "a single-op program JAX compiled for code outside `jit` "
            "(null for other backends' rows)",
            ("jax", "xla_dump"),
        ),
        _c(
            "compile_id",
            "Int64",
            "",
            "number of the compile in the process; joins the `graphs` rows of this compile",
            ("jax",),
        ),
        _c("explanation", "str", "", "JAX's full `TRACING CACHE MISS` explanation", ("jax",)),
        _c(
            "cache_hit",
            "bool",
            "",
            "the program was read from JAX's persistent compilation cache (`seconds` is the "
            "read; null for other backends' rows)",
            ("jax",),
        ),
        _c(
            "seconds_estimated",
            "bool",
            "",
            "`seconds` is the mean of several compiles of which only the total is known",
            _REPORTS,
        ),
        _STEP,
        _RUN,
        _c(
            "module_id",
            "int64",
            "",
            "module number of the dump's file names (`module_0004.*`)",
            ("xla_dump",),
        ),
        _INPUTS,
        _OUTPUTS,
        _STACK,
        _DEBUG_LINE,
        _c(
            "computation_hash",
            "str",
            "",
            "the `Computation hash:` line after the analysis",
            ("debug_file",),
        ),
        _c(
            "input_bytes",
            "float64",
            "bytes",
            f"graph input size (arguments), {_SIZE_MEANING}",
            _MEMORY_WRITERS,
        ),
        _c(
            "output_bytes",
            "float64",
            "bytes",
            f"graph output size, {_SIZE_MEANING}",
            _MEMORY_WRITERS,
        ),
        _c(
            "aliased_bytes",
            "float64",
            "bytes",
            f"aliased (donated) input size, {_SIZE_MEANING}",
            _MEMORY_WRITERS,
        ),
        _c(
            "intermediate_bytes",
            "float64",
            "bytes",
            f"intermediate tensors (temporaries), {_SIZE_MEANING}",
            _MEMORY_WRITERS,
        ),
        _c(
            "program_bytes",
            "float64",
            "bytes",
            f"compiled program (generated code) size, {_SIZE_MEANING}",
            _MEMORY_WRITERS,
        ),
        _c(
            "peak_bytes",
            "float64",
            "bytes",
            "the program's peak memory: JAX's `peak_memory_in_bytes`; torch_xla: inputs + "
            "outputs + intermediates - aliased (an estimate)",
            ("jax", "torch_xla"),
        ),
        _c(
            "devices",
            "Int64",
            "",
            "devices the program runs on in this process (its executable's `local_devices()`):"
            " the memory columns are each one device's",
            ("jax",),
        ),
        _c(
            "not_donated",
            "str",
            "",
            "donated arguments no output could reuse (`argument 1: float32[1000,250]`), as JAX "
            'warned while lowering ("Some donated buffers were not usable")',
            ("jax",),
        ),
        _c(
            "not_donated_bytes",
            "float64",
            "bytes",
            "their size: memory the donation was meant to save and did not",
            ("jax",),
        ),
        _rank(),
    ),
    "executions": (
        _r("backend", "str", "", _BACKEND_MEANING, _EXECUTION_WRITERS),
        _r(
            "graph",
            "str",
            "",
            "graph hash (torch._lazy; torch_xla: `PT_XLA_DEBUG_LEVEL=2`'s execution "
            "analysis, else the device trace's run within the row's sample, past the trace's "
            "window the graph the window ran after its last compile) or function (`jit(f)`, "
            "JAX); null when unknown",
            (*_LIVE, "debug_file"),
        ),
        _r(
            "seconds",
            "float64",
            "s",
            "execution time only, of the row's executions together "
            "(torch_xla: ExecuteTime; JAX: measured device time from the trace, else dispatch "
            "time less compile time; torch._lazy: the mark_step, less the compile estimate of "
            "one that compiled); never compile time; NaN when unknown",
            (*_LIVE, *_REPORTS),
        ),
        _r(
            "time",
            "float64",
            "epoch s",
            "when the execution ended (JAX: the first call; NaN when unknown)",
            _LIVE,
        ),
        _r(
            "count",
            "int64",
            "count",
            "executions the row stands for: 1, or more where the "
            "runtime gives no per-execution data",
            _EXECUTION_WRITERS,
        ),
        _c(
            "eager",
            "bool",
            "",
            "calls JAX makes for code outside `jit` (single primitives, `jax.numpy` functions)",
            ("jax",),
        ),
        _c("mean_seconds", "float64", "s", "`seconds / count`", ("jax",)),
        _c(
            "read_at",
            "str",
            "",
            "where a forced sync read the value, from the runtime's own stack: the innermost "
            "frame outside the runtime (`torch/nn/utils/clip_grad.py:105 (_get_total_norm)`)",
            ("torch_lazy", "torch_xla"),
        ),
        _c(
            "flops_per_second",
            "float64",
            "flop/s",
            "achieved: the program's flops × runs / measured device seconds; the flops are XLA's "
            "cost analysis, or the count from the optimized HLO where that is larger (XLA:GPU's "
            "cost analysis leaves cuBLAS calls out)",
            ("rates",),
        ),
        _c(
            "bytes_per_second",
            "float64",
            "bytes/s",
            "achieved: bytes accessed (cost analysis) × runs / measured device seconds",
            ("rates",),
        ),
        _c(
            "bound",
            "str",
            "",
            "`compute` or `memory` (arithmetic intensity against the "
            "device's peak FLOP/s over peak bytes/s: the data sheet of its `device_kind`, else "
            "the measured peak), `launch` (runs under 20 µs)",
            ("rates",),
        ),
        _c(
            "dispatch_seconds",
            "float64",
            "s",
            "host time in the calls (JAX's call hook): "
            "dispatch, plus tracing and compiling of calls that missed the cache",
            ("jax",),
        ),
        _c(
            "seconds_estimated",
            "bool",
            "",
            "`seconds` is estimated (no trace, or derived from xlanb's own timer)",
            ("jax", "torch_lazy"),
        ),
        _STEP,
        _RUN,
        _c(
            "trigger",
            "str",
            "",
            "what ran it, in the runtime's words: the Execution Analysis cause (debug files, "
            "torch_xla with `--deep`), `forced sync` (torch._lazy)",
            ("debug_file", "torch_xla", "torch_lazy"),
        ),
        _c("location", "str", "", "`file:line` of the user frame that ran it", ("debug_file",)),
        _c(
            "cell_line",
            "Int64",
            "line",
            "line in the profiled cell that led to the run (its frame in the runtime's stack; "
            "null in files)",
            ("debug_file", "torch_xla", "torch_lazy"),
        ),
        _INPUTS,
        _OUTPUTS,
        _STACK,
        _DEBUG_LINE,
        _c(
            "peak_bytes",
            "float64",
            "bytes",
            "the compiled peak memory of the row's program (JAX: of the function's latest "
            "compile seen in a capture; torch_xla: inputs + outputs + intermediates - aliased "
            "of its Post Compilation Analysis), also when it was compiled in an earlier cell",
            ("jax", "torch_xla"),
        ),
        _c(
            "devices",
            "Int64",
            "",
            "the devices the row's program runs on in this process, each holding `peak_bytes`"
            " (JAX)",
            ("jax",),
        ),
        _c(
            "module_id",
            "Int64",
            "",
            "the program id of a traced run (`xlanb.load` of a trace: one row per run), whose "
            "optimized HLO gives the rates",
            ("xspace",),
        ),
        _rank(),
    ),
    "fallbacks": (
        _r("backend", "str", "", _BACKEND_MEANING, (*_LIVE, *_REPORTS)),
        _r(
            "op",
            "str",
            "",
            "the op (`aten::nonzero`); JAX: `<custom call> in jit(f)` or "
            "`jit(f) argument: numpy.ndarray`",
            (*_LIVE, *_REPORTS),
        ),
        _r("count", "int64", "count", "times it ran", (*_LIVE, *_REPORTS)),
        _r(
            "cause",
            "str",
            "",
            "`item` (a sync: `aten::_local_scalar_dense`), `dynamic_shape`, "
            "`missing_lowering` (the only CPU fallbacks); JAX: `host_callback`, "
            "`host_transfer` (a host input)",
            (*_LIVE, *_REPORTS),
        ),
        _r("advice", "str", "", "how to avoid it", (*_LIVE, *_REPORTS)),
        _r(
            "location",
            "str",
            "",
            "`file:line` of the user frame (JAX; torch's reads of values)",
            ("jax", "torch_xla", "torch_lazy"),
        ),
        _r(
            "cell_line",
            "Int64",
            "line",
            "line in the profiled cell: JAX from the program's metadata, a torch read from "
            "its stack, other torch rows from the op's name in the cell's source",
            ("jax", "torch_xla", "torch_lazy", "attribution"),
        ),
        _c(
            "read_at",
            "str",
            "",
            "where a value was read (cause `item`): the innermost frame outside the runtime, an "
            "installed library's file relative to its install directory (`site-packages`)",
            ("torch_xla", "torch_lazy"),
        ),
        _c("graph", "str", "", "the jitted function the callback or transfer belongs to", ("jax",)),
        _c(
            "calls",
            "int64",
            "count",
            "calls of that function (`host_callback`) or calls "
            "that passed host values (`host_transfer`)",
            ("jax",),
        ),
        _rank(),
    ),
    "graphs": (
        _r("backend", "str", "", _BACKEND_MEANING, _GRAPH_WRITERS),
        _r("graph", "str", "", "the `compiles` row's `graph`", _GRAPH_WRITERS),
        _r(
            "kind",
            "str",
            "",
            "`ir` (torch._lazy), `hlo`, `hlo_optimized`, `stablehlo` (JAX)",
            _GRAPH_WRITERS,
        ),
        _r("text", "str", "", "the graph as text", _GRAPH_WRITERS),
        _r(
            "nodes", "int64", "count", "IR nodes, HLO instructions or StableHLO ops", _GRAPH_WRITERS
        ),
        _c("flops", "float64", "flops", "XLA's cost analysis of the compiled program", ("jax",)),
        _c(
            "bytes_accessed",
            "float64",
            "bytes",
            "XLA's cost analysis of the compiled program",
            ("jax",),
        ),
        _c(
            "peak_memory_bytes",
            "float64",
            "bytes",
            "the compiled program's peak memory (`get_compiled_memory_stats()`)",
            ("jax",),
        ),
        _c("compile_id", "Int64", "", "the `compiles` row's `compile_id`", ("jax",)),
        _c(
            "signature",
            "str",
            "",
            "input types of the compiled program (`f32[8,4], f32[4]`), compared between ranks",
            ("jax",),
        ),
        _c(
            "module_id",
            "Int64",
            "",
            "module number of the dump's file names, the device trace's program id (JAX: the "
            "`HloModuleProto` id)",
            ("xla_dump", "torch_xla", "jax"),
        ),
        _c("file", "str", "", "the HLO file read", ("xla_dump",)),
        _c(
            "memory_bytes",
            "float64",
            "bytes",
            "total of the optimized module's buffers (its "
            "memory-usage report, else its buffer assignment)",
            ("xla_dump",),
        ),
        _c("memory_report", "str", "", "the memory-usage report's text", ("xla_dump",)),
        _c("buffer_assignment", "str", "", "the buffer assignment's text", ("xla_dump",)),
        _rank(),
    ),
    "findings": (
        _r(
            "severity",
            "str",
            "",
            "`error`, `warning` or `info`; rows are ordered by "
            "`seconds` (costliest first), then most severe first",
            _FINDING_WRITERS,
        ),
        _r("title", "str", "", "one line: what happened", _FINDING_WRITERS),
        _r("detail", "str", "", "the evidence", _FINDING_WRITERS),
        _r("advice", "str", "", "what to change", _FINDING_WRITERS),
        _rank("Int64", _FINDING_WRITERS),
        _c("ranks", "str", "", "the ranks the finding is about (`0-3, 5`)", _FINDING_WRITERS),
        _c(
            "seconds",
            "float64",
            "s",
            "the time the finding accounts for (compile time of the "
            "recompiles, transfer time, ...), where the rule can tell",
            _FINDING_WRITERS,
        ),
        _c("share", "float64", "fraction", "`seconds` over the wall time", _FINDING_WRITERS),
    ),
    "steps": (
        _r("step", "int64", "", "step number of the record", ("metrics_file",)),
        _r("name", "str", "", "metric or counter name (categorical)", ("metrics_file",)),
        _r(
            "field",
            "str",
            "",
            "`count` (TotalSamples) or `total` (Accumulator) of a metric, "
            "`value` of a counter (categorical)",
            ("metrics_file",),
        ),
        _r(
            "value",
            "float64",
            "metric unit",
            "running total since the process started",
            ("metrics_file",),
        ),
        _RUN,
        _rank(),
    ),
    # -- where the time went ------------------------------------------------------------------
    "spans": (
        _r("backend", "str", "", _BACKEND_MEANING, _SPAN_WRITERS),
        _r(
            "lane",
            "str",
            "",
            "`device` (a program running), `compile`, `transfer` or "
            "`sync_wait`: what the time account counts it as; `op`: one HLO op's event "
            "inside a run (the longest 2,000 of a capture, of one device: the "
            "lowest-numbered; not part of the account); "
            "`trace`: the part of the capture the device trace covers (its first runs; "
            "not part of the account)",
            _SPAN_WRITERS,
        ),
        _r("name", "str", "", "program, runtime span or metric it comes from", _SPAN_WRITERS),
        _r("graph", "str", "", "the graph id (as in `compiles`) where known", _SPAN_WRITERS),
        _r("start", "float64", "epoch s", "when it started", _SPAN_WRITERS),
        _r("seconds", "float64", "s", "how long it lasted", _SPAN_WRITERS),
        _r(
            "estimated",
            "bool",
            "",
            "true when timed by xlanb around a runtime call "
            "(torch._lazy's mark_step) or estimated for runs after the device trace's "
            "window (JAX: the program's mean traced device time; in a cell run again that "
            "reused its last trace, every run), rather than measured by the runtime or its "
            "trace",
            _SPAN_WRITERS,
        ),
        _c(
            "module_id",
            "Int64",
            "",
            "`device` spans: the program id of the run in the trace (a function compiled for "
            "several shapes runs several programs of one graph; the dump's module number)",
            ("xspace",),
        ),
        _rank(),
    ),
    "step_times": (
        _r("backend", "str", "", _BACKEND_MEANING, ("time_account",)),
        _r("step", "int64", "", "step number in the cell, from 0", ("time_account",)),
        _r("graph", "str", "", "the step program whose runs mark the steps", ("time_account",)),
        _r(
            "start",
            "float64",
            "s",
            "when the step started, in seconds after the cell started (`Profile.started_at`): "
            "the end of the previous step's run (step 0: the cell's start)",
            ("time_account",),
        ),
        _r(
            "seconds",
            "float64",
            "s",
            "until the step's run of the step program ended",
            ("time_account",),
        ),
        _r("python", "float64", "s", "the step's `python` bucket", ("time_account",)),
        _r("compile", "float64", "s", "the step's `compile` bucket", ("time_account",)),
        _r("device", "float64", "s", "the step's `device` bucket", ("time_account",)),
        _r("transfer", "float64", "s", "the step's `transfer` bucket", ("time_account",)),
        _r("sync_wait", "float64", "s", "the step's `sync_wait` bucket", ("time_account",)),
        _r(
            "phase",
            "str",
            "",
            "`warm-up` (a compile finished in the step, its time holding compile time) or `steady`",
            ("time_account",),
        ),
        _c(
            "estimated",
            "bool",
            "",
            "the step's run is estimated, not measured (its span is `estimated`): it ran "
            "after the device trace's window or in a cell that reused its last trace, or was "
            "timed by xlanb (torch._lazy's mark_step)",
            ("time_account",),
        ),
        _rank(),
    ),
    "breakdown": (
        _r("backend", "str", "", _BACKEND_MEANING, ("time_account",)),
        _r(
            "bucket",
            "str",
            "",
            "`python`, `compile`, `device`, `transfer`, `sync_wait` or "
            "`other`; the buckets of a capture sum to its wall time",
            ("time_account",),
        ),
        _r("seconds", "float64", "s", "time in the bucket", ("time_account",)),
        _r("share", "float64", "fraction", "`seconds` over the wall time", ("time_account",)),
        _c(
            "estimated",
            "bool",
            "",
            "the bucket's spans include xlanb's own timings",
            ("time_account",),
        ),
        _rank(),
    ),
    "ops": (
        _r("backend", "str", "", _BACKEND_MEANING, ("xspace",)),
        _r("graph", "str", "", "the program the op belongs to", ("xspace",)),
        _r("op", "str", "", "HLO instruction name (`dot`, `add_reduce_fusion`)", ("xspace",)),
        _r(
            "category",
            "str",
            "",
            "kind of op (from its HLO opcode; XLA:GPU: matmul, convolution, attention, "
            "reduction, elementwise, data movement, collective, unattributed)",
            ("xspace",),
        ),
        _r("count", "int64", "count", "times it ran (on one device: see `devices`)", ("xspace",)),
        _r(
            "seconds",
            "float64",
            "s",
            "measured device time of the op itself (less the ops run inside it: a while "
            "loop's body), all runs together, on one device (see `devices`)",
            ("xspace",),
        ),
        _r(
            "share", "float64", "fraction", "`seconds` over the device time of all ops", ("xspace",)
        ),
        _c(
            "runs",
            "int64",
            "count",
            "the traced runs of the op's programs that `seconds` and `count` are from",
            ("xspace",),
        ),
        _c(
            "first_run_seconds",
            "float64",
            "s",
            "of `seconds`, the part from the first traced run of the op's program (the run "
            "after its compile holds the warm-up); the rest is from the later runs",
            ("xspace",),
        ),
        _c(
            "programs",
            "int64",
            "count",
            "the programs of the graph whose runs the row adds up (JAX: a function compiled "
            "for two shapes runs two); `runs` and `first_run_seconds` hold each one's first run",
            ("xspace",),
        ),
        _c(
            "devices",
            "Int64",
            "count",
            "the devices that ran the op, where its program ran on several (a sharded `jit`, "
            "`pmap`, `shard_map`): `count` and `seconds` are then one device's, the mean over "
            "these",
            ("xspace",),
        ),
        _c(
            "max_device_seconds",
            "float64",
            "s",
            "where `devices` is set, the `seconds` of the device that took longest (a straggler's)",
            ("xspace",),
        ),
        _c(
            "flops",
            "float64",
            "flops",
            "FLOPs of one run of the op, counted from the optimized HLO's shapes (2*M*N*K for "
            "dots and cuBLAS gemm calls; a fusion: the sum over what it fuses)",
            ("rates",),
        ),
        _c(
            "bytes",
            "float64",
            "bytes",
            "bytes one run of the op moves: its operands' and result's sizes (HLO shapes)",
            ("rates",),
        ),
        _c(
            "flops_per_second",
            "float64",
            "flop/s",
            "achieved: `flops` × `count` / `seconds`",
            ("rates",),
        ),
        _c(
            "bytes_per_second",
            "float64",
            "bytes/s",
            "achieved: `bytes` × `count` / `seconds`",
            ("rates",),
        ),
        _c(
            "bound",
            "str",
            "",
            "`compute` or `memory`: the op's FLOPs per byte against the device's peak FLOP/s "
            "over peak bytes/s (the data sheet of its `device_kind`, else the measured peak)",
            ("rates",),
        ),
        _r(
            "source_file",
            "str",
            "",
            "source file of the op (HLO metadata): the innermost frame outside installed "
            "libraries, the model's line (a notebook cell's file is IPython's name for it)",
            ("xspace",),
        ),
        _r("source_line", "Int64", "line", "line of `source_file` (HLO metadata)", ("xspace",)),
        _r(
            "cell_line",
            "Int64",
            "line",
            "line in the profiled cell: the op's own where the cell wrote it, else the cell's "
            "call that ran it",
            ("xspace",),
        ),
        _c(
            "source",
            "str",
            "",
            "`source_file`:`source_line` as people know it: `cell line 4` (the profiled cell), "
            "`In[3] line 4` (another notebook cell), else `file:line`",
            ("jax", "torch_xla"),
        ),
        _c("code", "str", "", "the text of the op's source line", ("jax", "torch_xla")),
        _c(
            "program",
            "str",
            "",
            "a readable name of the op's graph (its id is a hash): the function and line that "
            "cut it (`train_step at In[1] line 11`, a second graph cut there `#2`)",
            ("torch_xla",),
        ),
        _c("module", "str", "", "the HLO module name in the trace (`jit_step`)", ("xspace",)),
        _c(
            "op_name",
            "str",
            "",
            "the framework's name of the op, from the instruction's HLO metadata "
            "(`jit(train_step)/jvp()/attention/dot_general`)",
            ("xspace",),
        ),
        _rank(),
    ),
    "live_arrays": (
        _r("backend", "str", "", _BACKEND_MEANING, ("jax", "torch_xla")),
        _r(
            "snapshot",
            "str",
            "",
            "`before` / `after` the cell (all live device arrays: one row), or `left alive` (the "
            "arrays the cell created that are still alive at its end, one row per shape and dtype, "
            "the 20 largest), or `earlier run` (the growth of each earlier profiled run of the "
            "same cell, oldest first, up to 5: `count` and `bytes` added, negative when it freed), "
            "or `at failure` (every live array when the cell ran out of memory, by shape and "
            "dtype, the 20 largest groups), or `failed result` (arrays whose program failed then: "
            "never allocated; `bytes` is what they needed). torch_xla: `before`/`after` and "
            "`earlier run` only",
            ("jax", "torch_xla"),
        ),
        _r(
            "shape",
            "str",
            "",
            "`f32[64,256]`; empty on the before/after rows",
            ("jax", "torch_xla"),
        ),
        _r(
            "count",
            "int64",
            "count",
            "live arrays (torch_xla: live XLA tensors, its CreateXlaTensor less DestroyXlaTensor "
            "counters)",
            ("jax", "torch_xla"),
        ),
        _r(
            "bytes",
            "float64",
            "bytes",
            "their device bytes (`nbytes`); torch_xla: the device allocator's bytes in use "
            "(`xm.get_memory_info`), NaN where it keeps none (the CPU)",
            ("jax", "torch_xla"),
        ),
        _c(
            "origin",
            "str",
            "",
            "`at failure` rows: the names holding them in the failing frames (`kept[...]`, "
            "`x in step`) and whether the cell made them",
            ("jax",),
        ),
        _c(
            "created_at",
            "str",
            "",
            "`left alive` rows: where the group's newest arrays (up to 4) were made, from the "
            "Python stack JAX keeps with each array: `cell line 3`, else `file:line`; the most "
            "common first, `×n` each when they differ",
            ("jax",),
        ),
        _c(
            "cell_line",
            "Int64",
            "line",
            "`left alive` rows: the cell line that made most of them",
            ("jax",),
        ),
        _rank(),
    ),
    "temporaries": (
        _r("backend", "str", "", _BACKEND_MEANING, ("jax", "torch_xla", "xla_dump")),
        _r("graph", "str", "", "the program", ("jax", "torch_xla", "xla_dump")),
        _r(
            "op",
            "str",
            "",
            "the HLO instruction whose result the buffer holds (optimized module)",
            ("jax", "torch_xla", "xla_dump"),
        ),
        _r("shape", "str", "", "`f32[256,512]`", ("jax", "torch_xla", "xla_dump")),
        _r(
            "bytes",
            "float64",
            "bytes",
            "the buffer's size (buffers of one allocation share memory at different times: "
            "sizes do not add up to the temporaries' total)",
            ("jax", "torch_xla", "xla_dump"),
        ),
        _r(
            "source_file",
            "str",
            "",
            "source file of the op (HLO metadata)",
            ("jax", "torch_xla", "xla_dump"),
        ),
        _r(
            "source_line",
            "Int64",
            "line",
            "source line of the op (HLO metadata)",
            ("jax", "torch_xla", "xla_dump"),
        ),
        _r(
            "cell_line",
            "Int64",
            "line",
            "line in the profiled cell",
            ("jax", "torch_xla", "xla_dump"),
        ),
        _c("opcode", "str", "", "the instruction's opcode (`fusion`, `dot`)", ("jax",)),
        _c(
            "source",
            "str",
            "",
            "`source_file`:`source_line` as people know it (as the `ops` column)",
            ("jax", "torch_xla"),
        ),
        _c("code", "str", "", "the text of the op's source line", ("jax", "torch_xla")),
        _c("compile_id", "Int64", "", "the `compiles` row's `compile_id`", ("jax",)),
        _rank(),
    ),
}

#: Frames declared above that are not (yet) attributes of :class:`~xlanb.core.profile.Profile`:
#: left out of FRAME_COLUMNS / FRAME_NAMES. To wire one into Profile, remove it from here.
NEW_FRAMES: tuple[str, ...] = ()

#: What each frame's rows are (README's frame tables).
FRAME_ROWS: dict[str, str] = {
    "counters": "one per runtime counter that moved during the capture (offline: every "
    "counter of the report, `delta == total`)",
    "metrics": "one per metric with samples during the capture",
    "samples": "the raw samples inside the capture; torch_xla keeps the newest 1,024 per metric",
    "compiles": "one per compilation",
    "executions": "one per execution (`count` 1), or aggregated rows (`count` > 1) where the "
    "runtime gives no per-execution data (JAX: one per jitted function)",
    "fallbacks": "one per op that left the device, its kind in `cause` (see `HOST_KINDS`): "
    "values read back (syncs), dynamic shapes and CPU fallbacks (torch), host callbacks and "
    "host inputs (JAX)",
    "graphs": "the graph text of each compile",
    "findings": "what to fix, most severe first",
    "steps": "per-step running totals read from an `XLA_METRICS_FILE` (offline only)",
    "spans": "timed intervals from the runtime's trace and samples (device runs, compiles, "
    "transfers, waits) that the time account is built from",
    "step_times": "one per step of the cell's loop (the runs of its most-run program): the "
    "step's time account, warm-up or steady",
    "breakdown": "the capture's wall time split into exclusive buckets",
    "ops": "per program and HLO op: device time, count, cost and source line",
    "live_arrays": "live device arrays before and after the cell, and those it left alive "
    "(JAX's `jax.live_arrays()`; torch_xla: live XLA tensors, counted); none when the cell "
    "changed nothing",
    "temporaries": "the 5 largest temporary buffers of each program compiled, from its buffer "
    "assignment (JAX: the compiled executable's; torch_xla, and `xlanb report` of an XLA "
    "dump: the dump's `*-buffer-assignment.txt`)",
}

#: Required columns of each Profile frame, in order. Writers may add the optional columns
#: declared in SCHEMA after these; they never remove one.
FRAME_COLUMNS: dict[str, list[str]] = {
    name: [column.name for column in columns if column.required]
    for name, columns in SCHEMA.items()
    if name not in NEW_FRAMES
}

FRAME_NAMES = tuple(FRAME_COLUMNS)

#: Category of every counter, used by the `counters` frame (`collective`: counters written by
#: :mod:`xlanb.capture.collectives`).
COUNTER_CATEGORIES = (
    "fallback",
    "compile",
    "execute",
    "transfer",
    "lowered_op",
    "tensor",
    "other",
    "collective",
)


class HostKind(NamedTuple):
    """What one ``fallbacks`` cause is to a user."""

    #: Its ``Profile.summary`` key.
    key: str
    #: One of them (``sync``), for counts written out (``3 syncs``).
    noun: str
    #: Its headline label.
    label: str
    #: What a row of it is, in the tables.
    row: str
    #: Shown in headlines when not 0 (host inputs are already the transfers).
    in_headline: bool = True


#: Each ``fallbacks`` cause as a user meets it. Only missing lowerings are CPU fallbacks (the
#: alarm, always in the headline); the others leave the device for a reason of the user's
#: code. JAX's host inputs are its transfers (not in the headline twice).
HOST_KINDS = {
    "item": HostKind("syncs", "sync", "syncs", "sync: value read back"),
    "dynamic_shape": HostKind("dynamic_shapes", "dynamic shape", "dynamic shapes", "dynamic shape"),
    "host_callback": HostKind("host_callbacks", "host callback", "host callbacks", "host callback"),
    "host_transfer": HostKind(
        "host_inputs", "host input", "host inputs", "host input", in_headline=False
    ),
    "missing_lowering": HostKind("fallback_ops", "CPU fallback", "CPU fallbacks", "CPU fallback"),
}
#: The kind of a cause not in HOST_KINDS, and the alarm.
OTHER_HOST_KIND = HOST_KINDS["missing_lowering"]


def headline_host_kinds(numbers: dict[str, Any]) -> list[HostKind]:
    """The kinds a headline of these ``Profile.summary`` numbers shows: those not 0, and the
    CPU fallbacks always."""
    return [
        kind
        for kind in HOST_KINDS.values()
        if kind.in_headline and (kind is OTHER_HOST_KIND or numbers[kind.key])
    ]


#: Finding severities, most severe first.
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}

_BY_NAME: dict[str, dict[str, Column]] = {
    name: {column.name: column for column in columns} for name, columns in SCHEMA.items()
}
_REQUIRED: dict[str, list[str]] = {
    name: [column.name for column in columns if column.required] for name, columns in SCHEMA.items()
}
_REQUIRED_SETS = {name: frozenset(columns) for name, columns in _REQUIRED.items()}
#: pandas dtype of an empty column / of a column of nulls, per declared dtype.
_EMPTY_DTYPES = {
    "str": "object",
    "object": "object",
    "float64": "float64",
    "int64": "int64",
    "Int64": "Int64",
    "bool": "bool",
}
_NULL_DTYPES = {
    "str": "object",
    "object": "object",
    "float64": "float64",
    "int64": "Int64",
    "Int64": "Int64",
    "bool": "object",
}
_INTEGERS = ("int64", "Int64")
_NUMERIC = ("float64", *_INTEGERS)


def columns_of(frame: str) -> dict[str, Column]:
    """The declared columns of `frame` by name, required first (KeyError for an unknown
    frame)."""
    return dict(_BY_NAME[frame])


def undeclared(frame: str, columns: Iterable[Any]) -> list[str]:
    """Those of `columns` that the schema does not declare for `frame`."""
    declared = _BY_NAME[frame]
    return [str(column) for column in columns if column not in declared]


def check_columns(frame: str, columns: Iterable[Any]) -> None:
    """Raise :class:`SchemaError` when `columns` holds a column not declared for `frame`."""
    unknown = undeclared(frame, columns)
    if unknown:
        raise SchemaError(frame, unknown)


def strict() -> bool:
    """Whether ``XLANB_STRICT_SCHEMA`` is on (``1``, ``true`` or ``yes``)."""
    return os.environ.get(STRICT_ENV, "").strip().lower() in ("1", "true", "yes")


_EMPTY_FRAMES: dict[str, pd.DataFrame] = {}
#: A frame of at most this many rows checks its numeric columns for nulls in the rows (a
#: column read back from a frame costs more than a few values).
_FEW_ROWS = 16


def empty_frame(name: str) -> pd.DataFrame:
    """An empty frame with the required columns of frame `name`, in their declared dtypes."""
    template = _EMPTY_FRAMES.get(name)
    if template is None:  # building frames from dtypes is slow; copying a template is not
        declared = _BY_NAME[name]
        template = pd.DataFrame(
            {
                column: pd.Series(dtype=_EMPTY_DTYPES[declared[column].dtype])
                for column in _REQUIRED[name]
            }
        )
        _EMPTY_FRAMES[name] = template
    return template.copy()


def make_frame(name: str, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """A frame from row dicts: the required columns first and in order (filled with nulls
    where no row has them), then the optional columns some row has, in the order they
    appear. A declared numeric column that some rows lack holds typed nulls (NaN in a
    ``float64`` column, ``<NA>`` in an ``Int64`` one), not ``None`` in an ``object`` column.

    Built in one go: pandas reads the rows into the columns in their final order (a column
    no row has is all NaN there, ``float64``), then only the columns whose nulls need another
    dtype are replaced. With ``XLANB_STRICT_SCHEMA=1``, a column the schema does not declare
    for `name` raises :class:`SchemaError`."""
    if not rows:
        return empty_frame(name)
    present = list(dict.fromkeys(itertools.chain.from_iterable(rows)))  # keys as they appear
    if strict():
        check_columns(name, present)
    required = _REQUIRED[name]
    required_set = _REQUIRED_SETS[name]
    order = required + [column for column in present if column not in required_set]
    frame = pd.DataFrame(rows, columns=order)
    declared = _BY_NAME[name]
    length = len(frame)
    present_set = set(present)
    few = length <= _FEW_ROWS  # read the rows' values rather than the frame's columns
    for column in order:
        spec = declared.get(column)
        if column not in present_set:
            assert spec is not None  # a required column
            if _NULL_DTYPES[spec.dtype] != "float64":
                frame[column] = _null_array(spec.dtype, length)
            continue
        if spec is not None and spec.dtype in _NUMERIC:
            if few and not any(column not in row or _is_null(row[column]) for row in rows):
                continue  # no nulls: pandas typed the column already
            array = frame[column].array
            typed = _typed_nulls(array, spec.dtype)
            if typed is not array:
                frame[column] = typed
    return frame


def _is_null(value: Any) -> bool:
    """Whether a row's value is a null (None, NaN, ``pd.NA``, ``NaT``; a list or an array is
    not one)."""
    return value is None or (pd.api.types.is_scalar(value) and bool(pd.isna(value)))


def _null_array(dtype: str, length: int) -> Any:
    """A column of `length` nulls of declared dtype `dtype` (``None`` in an object column)."""
    null_dtype = _NULL_DTYPES[dtype]
    if null_dtype == "Int64":
        return pd.array([None] * length, dtype="Int64")
    return np.full(length, None if null_dtype == "object" else np.nan, dtype=null_dtype)


def _typed_nulls(array: Any, dtype: str) -> Any:
    """A numeric column's array with missing values given its declared dtype (``Int64`` for
    integers); `array` itself when it is typed already, holds no nulls, or does not convert
    (text in a numeric column)."""
    current = str(array.dtype)
    if current in (dtype, "Int64") or (current == "int64" and dtype in _INTEGERS):
        return array  # already typed (an int64 column holds no nulls)
    if not pd.isna(array).any():
        return array
    try:
        return array.astype(_NULL_DTYPES[dtype])
    except (TypeError, ValueError):
        return array


def rank_findings_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The findings frame of a run merged from rank files: a ``rank`` (Int64) column before the
    documented ones and a ``ranks`` column after them, most severe first."""
    rows = sorted(rows, key=lambda row: SEVERITY_ORDER.get(row["severity"], 9))
    frame = pd.DataFrame(rows, columns=["rank", *FRAME_COLUMNS["findings"], "ranks"])
    frame["rank"] = frame["rank"].astype("Int64")
    return frame


# -- documentation ---------------------------------------------------------------------------
def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(frames: Iterable[str] | None = None) -> str:
    """Markdown tables of every frame's columns (name, dtype, unit, meaning, written by):
    required columns in bold, then the optional ones; then what each writer is. README.md's
    block between ``<!-- schema:begin -->`` and ``<!-- schema:end -->`` is this text
    (``tools/schema_table.py`` rewrites it)."""
    names = list(SCHEMA) if frames is None else list(frames)
    used: dict[str, None] = {}
    parts = []
    for name in names:
        note = (
            ""
            if name in FRAME_COLUMNS
            else (
                " *(declared for the time account and per-op tables; not yet an attribute of "
                "`Profile`)*"
            )
        )
        everyone = tuple(
            dict.fromkeys(w for column in SCHEMA[name] for w in column.writers if column.required)
        )
        lines = [
            f"**`{name}`**: {_cell(FRAME_ROWS.get(name, ''))}.{note} Written by "
            + ", ".join(f"`{w}`" for w in everyone)
            + ".",
            "",
            "| column | dtype | unit | meaning | written by |",
            "|---|---|---|---|---|",
        ]
        for column in SCHEMA[name]:
            label = f"**`{column.name}`**" if column.required else f"`{column.name}`"
            writers = (
                "all" if column.writers == everyone else ", ".join(f"`{w}`" for w in column.writers)
            )
            used.update(dict.fromkeys(column.writers))
            lines.append(
                f"| {label} | {column.dtype} | {_cell(column.unit)} | "
                f"{_cell(column.meaning)} | {writers} |"
            )
        parts.append("\n".join(lines))
    legend = ["Written by:", ""] + [
        f"- `{writer}`: {WRITERS[writer]}" for writer in WRITERS if writer in used
    ]
    parts.append("\n".join(legend))
    return "\n\n".join(parts) + "\n"
