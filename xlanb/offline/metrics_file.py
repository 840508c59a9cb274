"""``XLA_METRICS_FILE``: PyTorch/XLA appends one metrics report per step (``torch_xla.sync()``
calls ``torch_xla.debug.metrics_saver.save_metrics``), each headed ``[MetricsData; step=N]``
and followed by a blank line. Values are totals since the process started.

What it is read into is on :func:`load_metrics_file`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from xlanb.core.gc_pause import no_cyclic_gc
from xlanb.core.profile import Profile
from xlanb.formats.metrics_report import Report, StepColumns, parse_metrics_file
from xlanb.offline.assemble import frame_from_columns, new_profile, with_file_findings
from xlanb.offline.findings import compile_frequency, recompilation_history
from xlanb.offline.report import MAX_COMPILE_ROWS, fill_report_frames, report_backend

METRIC_FIELDS = ("count", "total")
COUNTER_FIELD = "value"


def load_metrics_file(text: str, path: str | os.PathLike) -> Profile:
    """The Profile of an XLA_METRICS_FILE. An incomplete last record (the process was killed
    while writing) gives a :class:`TruncatedRecordWarning` and is left out.

    Read into:

    - ``steps``: ``step, name, field, value`` (plus ``run``): for every record, each metric's
      ``count`` (TotalSamples) and ``total`` (Accumulator, in the metric's unit: see the
      ``metrics`` frame) and each counter's ``value``. ``run`` counts restarts of the step
      numbering (several processes appending to one file). Percentiles are not kept per step:
      they describe the runtime's sample buffer, not the step.
    - ``counters``, ``metrics``, ``fallbacks``: from the last record, as for one report;
    - ``compiles`` / ``executions``: per-step rows (column ``step``) from the differences between
      consecutive records of CompileTime and of ExecuteComputation (launches) and ExecuteTime;
    - a finding saying at which step recompilation stopped, or that it did not.

    The text is read by :func:`xlanb.formats.metrics_report.parse_metrics_file`; this module
    builds the Profile from its columns.
    """
    with no_cyclic_gc():
        columns, last_report = parse_metrics_file(text, path)
        return _profile(columns, last_report, path)


# -- the Profile -------------------------------------------------------------------------------
def steps_frame(columns: StepColumns) -> pd.DataFrame:
    """The ``steps`` frame (``step, name, field, value, run``) from parsed columns; ``name``
    and ``field`` are categoricals (few distinct values, many rows)."""
    records = columns.records
    metrics, counters = len(columns.metric_names), len(columns.counter_names)
    if not records:
        return frame_from_columns(
            "steps", {"step": [], "name": [], "field": [], "value": [], "run": []}
        )
    metric_starts = [r[2] for r in records] + [metrics]
    counter_starts = [r[3] for r in records] + [counters]
    step_numbers = np.array([r[0] for r in records], dtype=np.int64)
    runs = np.array([r[1] for r in records], dtype=np.int64)
    metric_repeat = np.diff(metric_starts)
    counter_repeat = np.diff(counter_starts)
    metric_steps = np.repeat(step_numbers, metric_repeat)
    metric_runs = np.repeat(runs, metric_repeat)
    # sorted categories, as a saved and reloaded frame has them
    order = sorted(columns.names, key=columns.names.__getitem__)
    ranks = np.argsort(np.argsort(np.array(order, dtype=object)))
    metric_codes = ranks[np.asarray(columns.metric_names, dtype=np.int64)]
    names = pd.Categorical.from_codes(
        np.concatenate(
            [metric_codes, metric_codes, ranks[np.asarray(columns.counter_names, dtype=np.int64)]]
        ),
        categories=sorted(order),
    )
    fields = pd.Categorical.from_codes(
        np.repeat(np.array([0, 1, 2], dtype=np.int8), [metrics, metrics, counters]),
        categories=[*METRIC_FIELDS, COUNTER_FIELD],
    )
    values = np.concatenate(
        [
            np.array(columns.metric_counts, dtype=np.float64),
            np.array(columns.metric_totals, dtype=np.float64),
            np.array(columns.counter_values, dtype=np.float64),
        ]
    )
    return frame_from_columns(
        "steps",
        {
            "step": np.concatenate(
                [metric_steps, metric_steps, np.repeat(step_numbers, counter_repeat)]
            ),
            "name": names,
            "field": fields,
            "value": values,
            "run": np.concatenate([metric_runs, metric_runs, np.repeat(runs, counter_repeat)]),
        },
    )


#: Columns of :func:`step_table`: (column, metric or counter name, field).
#: ``executions`` counts launches: ExecuteTime gets its sample when a run finishes, on
#: another thread, so under load it lags the records by several steps.
_TABLE = (
    ("compiles", "CompileTime", "count"),
    ("compile_seconds", "CompileTime", "total"),
    ("executions", "ExecuteComputation", "value"),
    ("execute_seconds", "ExecuteTime", "total"),
    ("transfers_to_device", "TransferToDeviceTime", "count"),
    ("transfers_from_device", "TransferFromDeviceTime", "count"),
    ("uncached_compiles", "UncachedCompile", "value"),
    ("syncs", "MarkStep", "value"),
)
#: What a file without one of :data:`_TABLE`'s sources is read from instead.
_STAND_INS = {"ExecuteComputation": ("ExecuteTime", "count")}


def step_table(profile: Profile) -> pd.DataFrame:
    """Per recorded step (one row each, in file order): ``run, step`` and what happened in
    that step, as differences between consecutive records: ``compiles, compile_seconds,
    executions, execute_seconds, transfers_to_device, transfers_from_device,
    uncached_compiles, syncs, fallback_ops`` (sum of the ``aten::`` counters). The first
    record's values count from the process start. Ready to chart::

        step_table(prof).plot(x="step", y=["compiles", "execute_seconds"])
    """
    steps = profile.steps
    columns = ["run", "step", *(c for c, _, _ in _TABLE), "fallback_ops"]
    if steps.empty or "run" not in steps:
        return pd.DataFrame(
            {c: pd.Series(dtype="float64" if "seconds" in c else "int64") for c in columns}
        )
    keys = steps["run"].to_numpy(dtype=np.int64) * 2**32 + steps["step"].to_numpy(dtype=np.int64)
    record_keys = pd.unique(keys)
    runs = record_keys >> 32
    return _table(steps, pd.Index(record_keys).get_indexer(keys), runs, record_keys - (runs << 32))


def _table(
    steps: pd.DataFrame, position: np.ndarray, runs: np.ndarray, step_numbers: np.ndarray
) -> pd.DataFrame:
    """:func:`step_table` from the ``steps`` frame and each row's record `position`."""
    records = len(step_numbers)
    table = pd.DataFrame({"run": runs, "step": step_numbers})
    names, fields = _codes(steps["name"]), _codes(steps["field"])
    values = steps["value"].to_numpy(dtype=np.float64)
    for column, name, kind in _TABLE:
        if name not in names.lookup and name in _STAND_INS:
            name, kind = _STAND_INS[name]
        rows = (names.codes == names.lookup.get(name, -2)) & (
            fields.codes == fields.lookup.get(kind, -2)
        )
        table[column] = _differences(_cumulative(position[rows], values[rows], records), runs)
    fallback_codes = [code for name, code in names.lookup.items() if str(name).startswith("aten::")]
    rows = np.isin(names.codes, fallback_codes) & (
        fields.codes == fields.lookup.get(COUNTER_FIELD, -2)
    )
    summed = np.bincount(position[rows], weights=values[rows], minlength=records)
    present = np.bincount(position[rows], minlength=records) > 0
    table["fallback_ops"] = _differences(np.where(present, summed, np.nan), runs)
    for column in table.columns[2:]:
        if "seconds" not in column:
            table[column] = table[column].round().astype("int64")
    return table


@dataclass
class _Codes:
    codes: np.ndarray
    lookup: dict[object, int]


def _codes(column: pd.Series) -> _Codes:
    """Integer codes of a column and the code of each value (categoricals have them)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        categories = column.cat.categories
        return _Codes(column.cat.codes.to_numpy(), {v: i for i, v in enumerate(categories)})
    codes, uniques = pd.factorize(column)
    return _Codes(codes, {v: i for i, v in enumerate(uniques)})


def _cumulative(positions: np.ndarray, values: np.ndarray, records: int) -> np.ndarray:
    """The running total of each record (NaN where the record does not list it)."""
    result = np.full(records, np.nan)
    result[positions] = values
    return result


def _differences(cumulative: np.ndarray, runs: np.ndarray) -> np.ndarray:
    """Per-step increases of a running total, per run (missing = not counted yet = 0; a total
    that went down, after a reset, counts as 0)."""
    values = pd.Series(cumulative)
    single_run = bool(runs.size) and bool((runs == runs[0]).all())
    values = (values.ffill() if single_run else values.groupby(runs).ffill()).fillna(0.0)
    totals = values.to_numpy(dtype=np.float64)
    deltas = np.empty_like(totals)
    if totals.size:
        deltas[0] = totals[0]
        deltas[1:] = totals[1:] - totals[:-1]
        starts = np.flatnonzero(np.r_[True, runs[1:] != runs[:-1]])
        deltas[starts] = totals[starts]
    return np.clip(deltas, 0.0, None)


def _table_of_columns(steps: pd.DataFrame, columns: StepColumns) -> pd.DataFrame:
    """:func:`step_table` without searching for the records: the parser knows where each
    row's record is (rows are laid out as in :func:`steps_frame`)."""
    if steps.empty:
        return step_table(Profile(steps=steps))
    records = columns.records
    metric_repeat = np.diff([r[2] for r in records] + [len(columns.metric_names)])
    counter_repeat = np.diff([r[3] for r in records] + [len(columns.counter_names)])
    indices = np.arange(len(records))
    by_metric = np.repeat(indices, metric_repeat)
    position = np.concatenate([by_metric, by_metric, np.repeat(indices, counter_repeat)])
    return _table(
        steps,
        position,
        np.array([r[1] for r in records], dtype=np.int64),
        np.array([r[0] for r in records], dtype=np.int64),
    )


def _profile(columns: StepColumns, last: Report, path: str | os.PathLike) -> Profile:
    backend = report_backend(last)
    profile = new_profile(path, backend, "xla_metrics_file", records=len(columns.records))
    fill_report_frames(profile, last, backend)
    profile.steps = steps_frame(columns)
    table = _table_of_columns(profile.steps, columns)
    profile.compiles, profile.executions = _step_events(backend, table)
    profile.samples = _exact_samples(backend, table)
    return with_file_findings(profile, compile_frequency(profile) + recompilation_history(table))


#: The ``samples`` metric of each (count, seconds) pair of step_table's columns.
_SAMPLED = {
    "CompileTime": ("compiles", "compile_seconds"),
    "ExecuteTime": ("executions", "execute_seconds"),
}


def _exact_samples(backend: str, table: pd.DataFrame) -> pd.DataFrame:
    """``samples`` of compile and execute seconds: a step that compiled (ran) exactly once
    holds one sample, its seconds (the file keeps totals, not samples; when it was, unknown)."""
    columns: dict[str, list] = {"backend": [], "metric": [], "time": [], "value": []}
    for metric, (count, seconds) in _SAMPLED.items():
        once = table.loc[table[count] == 1, seconds].to_numpy(dtype=float)
        columns["backend"] += [backend] * len(once)
        columns["metric"] += [metric] * len(once)
        columns["time"] += [np.nan] * len(once)
        columns["value"] += once.tolist()
    return frame_from_columns("samples", columns)


def _late_seconds_carried_back(counts: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    """Each step's compile seconds, with those of a step that compiled nothing added to the
    last step before it that did: the runtime can write a record between counting a compile
    and adding its time (seen on torch_xla 2.7 under load), and the time belongs to that
    compile. Seconds before any compile stay where they are."""
    carried = seconds.astype(float)  # a copy
    last = -1
    for step, count in enumerate(counts):
        if count > 0:
            last = step
        elif last >= 0 and carried[step] > 0:
            carried[last] += carried[step]
            carried[step] = 0.0
    return carried


def _step_events(backend: str, table: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Compile rows (``seconds`` exact when a step compiled once, else the step's mean with
    ``seconds_estimated``) and one executions row per step that executed."""
    timed = bool(table["compile_seconds"].gt(0).any() or table["compiles"].gt(0).any())
    counts = np.minimum(
        (table["compiles"] if timed else table["uncached_compiles"]).to_numpy(), MAX_COMPILE_ROWS
    )
    rows = np.repeat(np.arange(len(table)), counts)
    seconds = _late_seconds_carried_back(
        table["compiles"].to_numpy(), table["compile_seconds"].to_numpy()
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = seconds / counts if timed else np.full(len(table), np.nan)
    compiles = {
        "backend": [backend] * len(rows),
        "seconds": shares[rows],
        "time": np.full(len(rows), np.nan),
        "step": table["step"].to_numpy()[rows],
        "run": table["run"].to_numpy()[rows],
        "seconds_estimated": (counts[rows] > 1) & timed,
    }
    executed = table[table["executions"] > 0]
    executions = frame_from_columns(
        "executions",
        {
            "backend": [backend] * len(executed),
            "seconds": executed["execute_seconds"].to_numpy(),
            "time": np.full(len(executed), np.nan),
            "count": executed["executions"].to_numpy(),
            "step": executed["step"].to_numpy(),
            "run": executed["run"].to_numpy(),
        },
    )
    return frame_from_columns("compiles", compiles), executions
