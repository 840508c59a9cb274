"""The one reader of the runtimes' text metrics report (``metrics_report()`` of PyTorch/XLA and
torch._lazy), alone or appended once per step (``XLA_METRICS_FILE``).
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from xlanb.core.errors import FormatError, TruncatedRecordWarning
from xlanb.formats.metrics_values import numbers, parse_value

__all__ = [
    "HEADER",
    "NotFast",
    "Report",
    "ReportMetric",
    "StepColumns",
    "complete_records",
    "fast_columns",
    "parse_metrics_file",
    "parse_report",
    "parse_report_lines",
    "parse_value",
    "strict_columns",
]

_BLOCK_START = re.compile(r"(Metric|Counter): (\S.*)", re.ASCII)
_FIELD = re.compile(r"  (\w+): (.*)", re.ASCII)
_BACKEND_REPORT = re.compile(r"\w+Impl: .*", re.ASCII)
_INTEGER = re.compile(r"-?\d+", re.ASCII)
_METRIC_FIELDS = ("TotalSamples", "Accumulator", "Counter", "ValueRate", "Rate", "Percentiles")
_PER_SECOND = " / second"


@dataclass
class ReportMetric:
    name: str
    unit: str = "count"  # "s", "bytes" or "count"
    count: int | None = None
    total: float | None = None
    value_rate: float | None = None
    rate: float | None = None
    percentiles: dict[float, float] = field(default_factory=dict)


@dataclass
class Report:
    """What one report holds."""

    metrics: dict[str, ReportMetric] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    #: Every block in file order, repeats included: ("metric", metric) or ("counter", (name,
    #: value)); the dicts above keep the last block of each name.
    blocks: list[tuple[str, Any]] = field(default_factory=list)
    #: Lines of the lazy backend's own report (``TSBackendImpl: N/A``).
    backend_report: list[str] = field(default_factory=list)


# -- one report ------------------------------------------------------------------------------
def parse_report(text: str) -> tuple[Report, list[tuple[int, str]]]:
    """The metrics and counters of one report, read leniently, and the (line number, line)
    pairs it did not read as metrics or counters: the lines that do not fit the grammar
    (skipped) and the lazy backend's own report (also kept in ``backend_report``)."""
    unknown: list[tuple[int, str]] = []
    return _parse(text.splitlines(), "<report>", 1, unknown), unknown


def parse_report_lines(lines: list[str], path: str | os.PathLike, first_line: int = 1) -> Report:
    """Parse the lines of one report; `first_line` is the file line number of ``lines[0]``.

    Raises :class:`FormatError` at the first line that does not fit (or at the head of a
    block that misses a required line).

    The grammar, checked line by line so that a file that does not fit names its first bad line::

        Metric: NAME                      a metric block: TotalSamples and Accumulator (or the
          TotalSamples: INT               older "Counter:") are required, the others optional,
          Accumulator: VALUE              each at most once
          ValueRate: VALUE / second
          Rate: NUMBER / second
          Percentiles: 1%=VALUE; 5%=VALUE; ...
        Counter: NAME                     a counter block: exactly one Value line
          Value: INT
        TSBackendImpl: N/A                the lazy backend's own report (torch._lazy), kept as text

    Values are durations (``06m09s401ms746.001us`` -> seconds), sizes (``19.72KB`` -> bytes) or
    plain numbers, converted by :func:`xlanb.formats.metrics_values.parse_value`.

    :func:`parse_report_lines` is strict (a :class:`FormatError` at the first line that does not
    fit, for files); :func:`parse_report` reads the same grammar leniently (the lines that do not
    fit are returned, for the live backends, which must never fail on a runtime's report).
    An ``XLA_METRICS_FILE`` (one report per step) is read by :func:`parse_metrics_file`.
    """
    return _parse(lines, path, first_line, None)


def _parse(
    lines: list[str],
    path: str | os.PathLike,
    first_line: int,
    unknown: list[tuple[int, str]] | None,
) -> Report:
    """The grammar; strict when `unknown` is None, else lines that do not fit go there."""
    report = Report()
    block: _Block | None = None
    for number, line in enumerate(lines, start=first_line):
        if not line.strip():
            continue
        start = _BLOCK_START.fullmatch(line)
        if start:
            if block is not None:
                block.close(report, path, unknown is None)
            block = _Block(start[1], start[2], number)
            continue
        if _BACKEND_REPORT.fullmatch(line):
            if block is not None:
                block.close(report, path, unknown is None)
                block = None
            report.backend_report.append(line)
            if unknown is not None:
                unknown.append((number, line))
            continue
        match = _FIELD.fullmatch(line)
        if match is None or block is None:
            if unknown is None:
                raise FormatError(path, number, f"not a line of a metrics report: {line[:80]!r}")
            unknown.append((number, line))
            if block is not None and not line[0].isspace():  # a line of its own ends a block
                block.close(report, path, False)
                block = None
            continue
        try:
            block.add(match[1], match[2], number, path)
        except FormatError:
            if unknown is None:
                raise
            unknown.append((number, line))
    if block is not None:
        block.close(report, path, unknown is None)
    return report


class _Block:
    """A Metric or Counter block being read."""

    def __init__(self, kind: str, name: str, line: int) -> None:
        self.kind = kind
        self.line = line
        self.metric = ReportMetric(name)
        self.value: int | None = None
        self.seen: set[str] = set()

    def add(self, key: str, value: str, number: int, path: str | os.PathLike) -> None:
        allowed = _METRIC_FIELDS if self.kind == "Metric" else ("Value",)
        if (
            key not in allowed
            or key in self.seen
            or (key in ("Accumulator", "Counter") and self.seen & {"Accumulator", "Counter"})
        ):
            raise FormatError(
                path, number, f"unexpected {key!r} line in {self.kind} {self.metric.name!r}"
            )
        self.seen.add(key)
        try:
            _set_field(self, key, value.strip())
        except (ValueError, OverflowError):
            raise FormatError(path, number, f"bad {key} value {value.strip()[:60]!r}") from None

    def close(self, report: Report, path: str | os.PathLike, strict: bool) -> None:
        """Keep the finished block in `report`; strict: a block without its required lines
        is a FormatError (else a counter without a value is dropped, a metric kept)."""
        name = self.metric.name
        if self.kind == "Counter":
            if self.value is None:
                if strict:
                    raise FormatError(path, self.line, f"Counter {name!r} has no Value line")
                return
            report.counters[name] = self.value
            report.blocks.append(("counter", (name, self.value)))
            return
        if strict and (self.metric.count is None or self.metric.total is None):
            raise FormatError(
                path, self.line, f"Metric {name!r} needs TotalSamples and Accumulator lines"
            )
        report.metrics[name] = self.metric
        report.blocks.append(("metric", self.metric))


def _set_field(block: _Block, key: str, value: str) -> None:
    metric = block.metric
    if key == "Value":
        block.value = _integer(value)
    elif key == "TotalSamples":
        metric.count = _integer(value)
    elif key in ("Accumulator", "Counter"):
        metric.total, metric.unit = parse_value(value)
    elif key == "ValueRate":
        metric.value_rate = parse_value(_per_second(value))[0]
    elif key == "Rate":
        metric.rate = float(_per_second(value))
    else:  # Percentiles
        for part in value.split(";"):
            quantile, equals, amount = part.strip().partition("=")
            if not equals or not quantile.endswith("%"):
                raise ValueError(part)
            metric.percentiles[float(quantile[:-1])] = parse_value(amount)[0]


def _integer(text: str) -> int:
    if not _INTEGER.fullmatch(text):
        raise ValueError(text)
    return int(text)


def _per_second(text: str) -> str:
    if not text.endswith(_PER_SECOND):
        raise ValueError(text)
    return text[: -len(_PER_SECOND)]


# -- XLA_METRICS_FILE: one report per step ----------------------------------------------------
HEADER = "[MetricsData; step="
_HEADER_LINE = re.compile(r"\[MetricsData; step=(\d+)\]", re.ASCII)
#: One item of a well-formed file per match (on the file's bytes, which is faster): up to four
#: counter blocks (the most frequent block; fewer matches are faster), a metric block, a
#: record header, a blank line; the last alternative takes any other line, which sends the
#: file to the strict parser. ValueRate, Rate and Percentiles are not read per step, so only
#: their place in the block is checked here (the last record is parsed strictly).
_COUNTER = rb"Counter: (\S[^\n]*)\n  Value: (-?\d+)\n"
_ITEM = re.compile(
    _COUNTER + rb"(?:" + _COUNTER + rb"(?:" + _COUNTER + rb"(?:" + _COUNTER + rb")?)?)?"
    rb"|Metric: (\S[^\n]*)\n  TotalSamples: (\d+)\n  (?:Accumulator|Counter): ([^\n]+)\n"
    rb"(?:  ValueRate: [^\n]*\n)?(?:  Rate: [^\n]*\n)?(?:  Percentiles: [^\n]*\n)?"
    rb"|\[MetricsData; step=(\d+)\]\n"
    rb"|\n"
    rb"|([^\n]*\n)"
)


@dataclass
class StepColumns:
    """Every record of an XLA_METRICS_FILE as columns, with the record boundaries. Names are
    held as codes into ``names``."""

    #: Per record: step number, run, first metric index, first counter index. ``run`` counts
    #: restarts of the step numbering (several processes appending to one file).
    records: list[tuple[int, int, int, int]] = field(default_factory=list)
    #: Name -> code, in order of first appearance.
    names: dict[str, int] = field(default_factory=dict)
    metric_names: Any = field(default_factory=list)  # codes: a list or an integer array
    metric_counts: list[str | bytes] = field(default_factory=list)
    metric_totals: list[float] = field(default_factory=list)
    counter_names: Any = field(default_factory=list)
    counter_values: list[str | bytes] = field(default_factory=list)

    def code(self, name: str) -> int:
        return self.names.setdefault(name, len(self.names))


class NotFast(Exception):
    """The fast pass met text it does not recognise: use the strict parser."""


def parse_metrics_file(text: str, path: str | os.PathLike) -> tuple[StepColumns, Report]:
    """Every complete record of an XLA_METRICS_FILE, and its last record as a Report (for
    percentiles and units). An incomplete last record (the process was killed while writing)
    gives a :class:`TruncatedRecordWarning` and is left out; text that does not fit raises
    :class:`FormatError` naming its first line.

    An ``XLA_METRICS_FILE`` holds one report per step (``torch_xla.sync()`` calls
    ``torch_xla.debug.metrics_saver.save_metrics``), each headed ``[MetricsData; step=N]`` and
    followed by a blank line; values are totals since the process started.
    :func:`parse_metrics_file` reads it into :class:`StepColumns` (every record's metric counts and
    totals and counter values) and the last record as a :class:`Report`. A 2,000-step file (8 MB)
    is read by one regular expression pass over the whole text plus one Python loop over its
    blocks (:func:`fast_columns`); any text the fast pass does not recognise sends the file through
    the strict line-by-line parser (:func:`strict_columns`), which also names the first bad line.
    """
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    text = complete_records(text, path, stacklevel=5)
    try:
        return fast_columns(text), _last_report(text, path)
    except NotFast:
        return strict_columns(text, path)


def complete_records(text: str, path: str | os.PathLike, stacklevel: int = 2) -> str:
    """`text` up to the end of its last complete record (records end with a blank line)."""
    if text.endswith("\n\n"):
        return text
    end = text.rfind("\n\n")
    complete = text[: end + 2] if end >= 0 else ""
    if text[len(complete) :].strip():
        records = complete.count(HEADER)
        line = complete.count("\n") + 1
        warnings.warn(
            TruncatedRecordWarning(
                f"{os.fspath(path)}, line {line}: the last record is incomplete (the file ends "
                f"inside it); read the {records} complete record(s) before it"
            ),
            stacklevel=stacklevel,
        )
    return complete


def fast_columns(text: str) -> StepColumns:
    """The records of complete, ``\\n``-separated `text` in one regular-expression pass;
    raises :class:`NotFast` at anything it does not recognise."""
    columns = StepColumns()
    records = columns.records
    metric_names: list[bytes] = []
    counter_names: list[bytes] = []
    metric_counts, counter_values = columns.metric_counts, columns.counter_values
    totals: list[bytes] = []
    run, previous, ended = 0, -1, True
    for c1, v1, c2, v2, c3, v3, c4, v4, metric, count, total, step, other in _ITEM.findall(
        text.encode("utf-8", errors="surrogatepass")
    ):
        if c1:
            if ended:
                raise NotFast  # a block after a record's blank line: no header
            if c4:
                counter_names += (c1, c2, c3, c4)
                counter_values += (v1, v2, v3, v4)
            elif c3:
                counter_names += (c1, c2, c3)
                counter_values += (v1, v2, v3)
            elif c2:
                counter_names += (c1, c2)
                counter_values += (v1, v2)
            else:
                counter_names.append(c1)
                counter_values.append(v1)
        elif metric:
            if ended:
                raise NotFast
            metric_names.append(metric)
            metric_counts.append(count)
            totals.append(total)
        elif step:
            if not ended:
                raise NotFast  # records are separated by one blank line
            number = int(step)
            if number <= previous:
                run += 1
            previous = number
            records.append((number, run, len(metric_names), len(counter_names)))
            ended = False
        elif other:
            raise NotFast
        else:
            ended = True
    codes, uniques = pd.factorize(np.array(metric_names + counter_names, dtype=object))
    try:
        columns.names = {name.decode("utf-8"): code for code, name in enumerate(uniques)}
        columns.metric_totals = numbers(totals)
    except (ValueError, UnicodeDecodeError):
        raise NotFast from None
    if len(columns.names) != len(uniques):
        raise NotFast
    columns.metric_names = codes[: len(metric_names)]
    columns.counter_names = codes[len(metric_names) :]
    return columns


def _last_report(text: str, path: str | os.PathLike) -> Report:
    """The last record, read by the strict parser (for percentiles and units)."""
    start = text.rfind("\n" + HEADER) + 1
    if start == 0 and not text.startswith(HEADER):
        return Report()
    body = text[start:].split("\n")[1:]
    try:  # line numbers only matter in errors, which the strict parser then reports
        return parse_report_lines(body, path, 0)
    except FormatError:
        raise NotFast from None


def strict_columns(text: str, path: str | os.PathLike) -> tuple[StepColumns, Report]:
    """The records of complete `text`, line by line, and the last record: raises
    FormatError at the first line that does not fit."""
    columns = StepColumns()
    lines = text.split("\n")
    starts = [index for index, line in enumerate(lines) if line.startswith(HEADER)]
    for index, line in enumerate(lines):
        if line.strip():
            if index not in starts[:1]:
                raise FormatError(
                    path, index + 1, f"expected a '{HEADER}N]' record header, got {line[:80]!r}"
                )
            break
    report = Report()
    run, previous = 0, -1
    for position, start in enumerate(starts):
        header = _HEADER_LINE.fullmatch(lines[start])
        if header is None:
            raise FormatError(path, start + 1, f"bad record header {lines[start][:80]!r}")
        end = starts[position + 1] if position + 1 < len(starts) else len(lines)
        _check_record_end(lines, start + 1, end, path)
        report = parse_report_lines(lines[start + 1 : end], path, start + 2)
        number = int(header[1])
        if number <= previous:
            run += 1
        previous = number
        columns.records.append((number, run, len(columns.metric_names), len(columns.counter_names)))
        for kind, block in report.blocks:
            if kind == "metric":
                columns.metric_names.append(columns.code(block.name))
                columns.metric_counts.append(str(block.count))
                columns.metric_totals.append(float(block.total or 0.0))
            else:
                columns.counter_names.append(columns.code(block[0]))
                columns.counter_values.append(str(block[1]))
    return columns, report


def _check_record_end(lines: list[str], first: int, end: int, path: str | os.PathLike) -> None:
    """A record ends at its first blank line: only blank lines may follow until the next
    header (else a header is missing, and two records would be read as one)."""
    ended = False
    for index in range(first, end):
        if not lines[index].strip():
            ended = True
        elif ended:
            raise FormatError(
                path,
                index + 1,
                f"a block after the end of a record (its '{HEADER}N]' header is missing)",
            )
