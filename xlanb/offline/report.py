"""One metrics report (``metrics_report()`` of PyTorch/XLA or torch._lazy) as a Profile; the
text is read by :mod:`xlanb.formats.metrics_report` (grammar and values described there)."""

from __future__ import annotations

import math
import os
from typing import Any

from xlanb.core.profile import Profile, make_frame
from xlanb.formats.counters import counter_rows, fallback_rows
from xlanb.formats.metrics_report import Report, parse_report_lines
from xlanb.offline.assemble import new_profile, with_file_findings
from xlanb.offline.findings import compile_frequency


# -- which runtime wrote it ------------------------------------------------------------------
def report_backend(report: Report) -> str:
    """``torch_lazy`` for torch._lazy's report (``lazy::`` counters, a ``*Impl`` backend line),
    else ``torch_xla`` (``xla::`` counters, CompileTime/ExecuteTime; also the default for
    old reports that show neither)."""
    names = [*report.counters, *report.metrics]
    if any(name.startswith("xla::") for name in names) or "CompileTime" in report.metrics:
        return "torch_xla"
    if report.backend_report or any(name.startswith("lazy::") for name in names):
        return "torch_lazy"
    return "torch_xla"


# -- the Profile -------------------------------------------------------------------------------
def metric_rows(backend: str, report: Report) -> list[dict[str, Any]]:
    """``metrics`` rows: count and total from the accumulators, p50/p90/p99 from the reported
    percentiles (``max`` is unknown: reports stop at 99%)."""
    rows = []
    for name, metric in report.metrics.items():
        count, total = metric.count or 0, float(metric.total or 0.0)
        rows.append(
            {
                "backend": backend,
                "name": name,
                "unit": metric.unit,
                "count": count,
                "total": total,
                "mean": total / count if count else math.nan,
                "p50": metric.percentiles.get(50.0, math.nan),
                "p90": metric.percentiles.get(90.0, math.nan),
                "p99": metric.percentiles.get(99.0, math.nan),
                "max": math.nan,
                "value_rate": metric.value_rate if metric.value_rate is not None else math.nan,
                "rate": metric.rate if metric.rate is not None else math.nan,
            }
        )
    return rows


#: More compile rows than this from one count would only fill memory (a damaged file).
MAX_COMPILE_ROWS = 100_000


def compile_rows(backend: str, count: int, seconds: float, **extra: Any) -> list[dict[str, Any]]:
    """`count` compile rows that took `seconds` together. When only the total is known for
    several compiles, each row gets their mean and ``seconds_estimated=True``, so that sums
    stay exact; NaN `seconds` stays NaN. At most :data:`MAX_COMPILE_ROWS` rows."""
    share = seconds / count if count > 0 else math.nan
    count = min(count, MAX_COMPILE_ROWS)
    return [
        {
            "backend": backend,
            "seconds": share,
            "time": math.nan,
            "seconds_estimated": count > 1 and not math.isnan(share),
            **extra,
        }
        for _ in range(count)
    ]


def report_profile(
    report: Report, path: str | os.PathLike, file_format: str, backend: str | None = None
) -> Profile:
    """The Profile of one report. Counters are totals since the runtime started, so
    ``delta == total``."""
    backend = backend or report_backend(report)
    profile = new_profile(path, backend, file_format)
    fill_report_frames(profile, report, backend)
    return with_file_findings(profile, compile_frequency(profile))


def fill_report_frames(profile: Profile, report: Report, backend: str) -> None:
    """Set counters, fallbacks, metrics, compiles and executions of `profile` from `report`."""
    if report.backend_report:
        profile.environment["backend_report"] = "\n".join(report.backend_report)
    counters = counter_rows(backend, {}, report.counters)
    profile.counters = make_frame("counters", counters)
    profile.fallbacks = make_frame("fallbacks", fallback_rows(backend, counters))
    profile.metrics = make_frame("metrics", metric_rows(backend, report))
    profile.compiles = make_frame("compiles", _compiles(backend, report))
    profile.executions = make_frame("executions", _executions(backend, report))


def _compiles(backend: str, report: Report) -> list[dict[str, Any]]:
    compile_time = report.metrics.get("CompileTime")
    if compile_time is not None and compile_time.count:
        return compile_rows(backend, compile_time.count, float(compile_time.total or 0.0))
    return compile_rows(backend, max(report.counters.get("UncachedCompile", 0), 0), math.nan)


def _executions(backend: str, report: Report) -> list[dict[str, Any]]:
    execute_time = report.metrics.get("ExecuteTime")
    if execute_time is not None and execute_time.count:
        # ExecuteTime is sampled when a run finishes; launches are counted when they start
        launches = report.counters.get("ExecuteComputation", 0)
        count, seconds = max(execute_time.count, launches), float(execute_time.total or 0.0)
    else:  # torch._lazy: every sync that ran a graph hit or missed the compile cache
        count = sum(
            max(report.counters.get(name, 0), 0) for name in ("CachedCompile", "UncachedCompile")
        )
        seconds = math.nan
    if count <= 0:
        return []
    return [{"backend": backend, "seconds": seconds, "time": math.nan, "count": count}]


def load_report(text: str, path: str | os.PathLike) -> Profile:
    """The Profile of a file holding one metrics report."""
    text = text.replace("\r\n", "\n") if "\r" in text else text
    return report_profile(parse_report_lines(text.split("\n"), path), path, "metrics_report")
