"""The plain-text summary of a Profile, and the headline numbers every view shares."""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Callable, Iterable
from types import SimpleNamespace
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from xlanb.core.frame_memo import FrameMemo
from xlanb.core.profile import Profile
from xlanb.core.schema import (
    FRAME_NAMES,
    HOST_KINDS,
    OTHER_HOST_KIND,
    REUSED_TRACE,
    WHOLE_TRACE,
    headline_host_kinds,
)
from xlanb.core.units import format_seconds, percent, time_unit  # noqa: F401 - re-exported
from xlanb.core.words import on_each_device

Made = TypeVar("Made", bound=Callable[..., Any])

#: What the HTML summary and its text twin both say of a profile (a displayed cell builds
#: both, one after the other), kept per the profile's frames.
_SAID: FrameMemo[tuple[Any, Any]] = FrameMemo(16)


def kept_per_profile(reads_shown: bool) -> Callable[[Made], Made]:
    """Keep what the decorated ``function(profile, *args)`` made while `profile`'s frames
    (the same objects, of the same lengths), wall time, start, backends and source stay the
    same, and, where it `reads_shown`, its ``Profile.shown`` is the same object; each caller
    gets its own (shallow) copy of a kept list or dict."""

    def decorate(function: Made) -> Made:
        @functools.wraps(function)
        def kept(profile: Profile, *args: Any) -> Any:
            shown = profile.shown if reads_shown else None
            frames = tuple(getattr(profile, name) for name in FRAME_NAMES)
            key = (
                function.__qualname__,
                tuple(tuple(arg) if isinstance(arg, list) else arg for arg in args),
                id(shown),  # the kept value holds `shown`: its id is not reused meanwhile
                profile.wall_seconds,
                profile.started_at,
                tuple(profile.backends),
                profile.source,
            )
            value = _SAID.get(frames, key, lambda: (shown, function(profile, *args)))[1]
            return copy.copy(value)

        return kept  # type: ignore[return-value]

    return decorate


@kept_per_profile(reads_shown=False)
def headline(profile: Profile) -> list[tuple[str, str]]:
    """(label, value) pairs of the summary line."""
    numbers = profile.summary()
    # a time only where the profile holds one (summary() counts unknown seconds as 0)
    compiled = (
        f" ({_compile_label(profile.compiles)}{format_seconds(numbers['compile_seconds'])})"
        if _timed(profile.compiles)
        else ""
    )
    executed = (
        f" ({format_seconds(numbers['execute_seconds'])})" if _timed(profile.executions) else ""
    )
    hits = _cache_hits(profile.compiles)
    if hits:
        compiled += f", {hits} from the persistent cache"
    pairs = [
        ("wall", format_seconds(numbers["wall_seconds"]) if numbers["wall_seconds"] else "-"),
        ("compiles", f"{numbers['compiles']}{compiled}"),
        ("executions", f"{numbers['executions']}{executed}"),
        (_transfers_label(profile, numbers), str(numbers["transfers"])),
    ]
    pairs += [(kind.label, str(numbers[kind.key])) for kind in headline_host_kinds(numbers)]
    return pairs


def _transfers_label(profile: Profile, numbers: dict) -> str:
    """``host-to-device transfers`` where every transfer counted is one (JAX's copies of
    host values: inputs of jitted functions, ``jax.device_put``, eager ops' operands), else
    ``transfers``."""
    if not numbers["transfers"]:
        return "transfers"
    counters = profile.counters
    names = counters.loc[counters["category"] == "transfer", "name"]
    host_to_device = len(names) and names.astype(str).str.startswith("HostToDevice").all()
    return "host-to-device transfers" if host_to_device else "transfers"


def _cache_hits(compiles: pd.DataFrame) -> int:
    """Compiles read from JAX's persistent compilation cache."""
    if "cache_hit" not in compiles.columns:
        return 0
    return int(compiles["cache_hit"].fillna(False).astype(bool).sum())


def _compile_label(compiles: pd.DataFrame) -> str:
    """What the header's compile seconds count: XLA's compile alone where every compile is
    JAX's or torch_xla's (the account's ``compile`` also holds tracing and lowering, and only
    time no program ran; a JAX recompile finding's seconds are tracing + lowering + XLA)."""
    backends = set(compiles["backend"].astype(str))
    return "XLA compile " if backends and backends <= {"jax", "torch_xla"} else ""


def _timed(frame: pd.DataFrame) -> bool:
    return not frame.empty and bool(frame["seconds"].notna().any())


#: The headline label that is red when its count is not 0, and the kind of row shown red.
ALARM_LABEL, ALARM_KIND = OTHER_HOST_KIND.label, OTHER_HOST_KIND.row


def host_kind(cause: object) -> str:
    """What a ``fallbacks`` row is, in words (``sync: value read back``, ``CPU fallback``)."""
    return HOST_KINDS.get(str(cause), OTHER_HOST_KIND).row


#: Bucket colours of the time-account bar (read on light and dark themes).
BUCKET_COLOURS = {
    "device": "#2e7d32",
    "compile": "#c62828",
    "python": "#1565c0",
    "transfer": "#ef6c00",
    "sync_wait": "#6a1b9a",
    "other": "#757575",
}


#: The ``findings`` columns the views show.
FINDING_COLUMNS = ["severity", "title", "detail", "advice", "seconds", "share"]


def finding_cost(row) -> str:
    """``2.11 s (75% of the cell): `` for a finding row that states its cost, else ""."""
    seconds = getattr(row, "seconds", None)
    if seconds is None or seconds != seconds or seconds <= 0:
        return ""
    share = getattr(row, "share", None)
    of_wall = f" ({percent(share)} of the cell)" if share is not None and share == share else ""
    return f"{format_seconds(seconds)}{of_wall}: "


def account_parts(profile: Profile) -> list[tuple[str, float, float]]:
    """(bucket, seconds, share) of the time account, largest first, empty buckets left out."""
    frame = profile.breakdown
    if frame.empty:
        return []
    parts = [
        (str(bucket), float(seconds), float(share))
        for bucket, seconds, share in zip(
            frame["bucket"].tolist(),
            frame["seconds"].tolist(),
            frame["share"].tolist(),
            strict=True,
        )
        if seconds > 0
    ]
    return sorted(parts, key=lambda part: -part[1])


@kept_per_profile(reads_shown=True)
def account_line(profile: Profile) -> str:
    """``wall 2.81 s = compile 2.11 s (75%) · device 410 ms (15%) · ...`` ("" without one)."""
    parts = account_parts(profile)
    if not parts:
        return ""
    estimated = (
        not profile.breakdown.empty
        and "estimated" in profile.breakdown.columns
        and any(_marked(flag) for flag in profile.breakdown["estimated"].tolist())
    )
    body = " · ".join(
        f"{bucket} {format_seconds(seconds)} ({percent(share)})" for bucket, seconds, share in parts
    )
    if estimated:
        if reused_trace(profile):
            body += " (device time estimated from this cell's last trace)"
        elif trace_coverage(profile):
            body += " (device time after the trace's window partly estimated)"
        else:
            body += " (estimated from xlanb's timers)"
    untraced = profile.shown.untraced_programs
    if untraced:
        named = ", ".join(
            f"{name} ({runs} {'run' if runs == 1 else 'runs'})" for name, runs in untraced
        )
        body += f"; python holds the untraced runs of {named}"
    line = f"wall {format_seconds(profile.wall_seconds)} = {body}"
    host = profile.shown.host_activity
    if host is not None:
        window = profile.shown.traced_window
        where = f" in the traced {format_seconds(window[1] - window[0])}" if window else ""
        line += (
            f";{where} host busy {format_seconds(host[0])}, {format_seconds(host[1])} of it "
            "hidden under device time"
        )
    return line


def _marked(flag: Any) -> bool:
    """Whether a flag column's value is set (missing values are not)."""
    return isinstance(flag, (bool, int, float)) and flag == flag and bool(flag)


def trace_coverage(profile: Profile) -> str:
    """``device trace: first 50 runs, 112 ms of 4.10 s`` when the device trace covered only
    the start of the cell (its window closed), else "": the per-op times come from that part;
    ``..., then 1 run, ...`` where a second window traced a program compiled after it."""
    window, name = profile.shown.traced_window, profile.shown.traced_window_name
    if window is None or name is None:
        return ""
    if reused_trace(profile):
        return name  # nothing of this cell was traced
    later = profile.shown.later_windows
    seconds = window[1] - window[0] + sum(seconds for _, seconds in later)
    then = "".join(f", {name.removeprefix(f'{WHOLE_TRACE}: ')}" for name, _ in later)
    return f"{name}{then}, {format_seconds(seconds)} of {format_seconds(profile.wall_seconds)}"


def reused_trace(profile: Profile) -> bool:
    """Whether the cell traced nothing and reused its last trace (a cell run again)."""
    return profile.shown.traced_window_name == REUSED_TRACE


@kept_per_profile(reads_shown=True)
def steps_line(profile: Profile) -> str:
    """``steps: 2 warm-up (1.21 s) · 98 steady, median 12.3 ms: device 80% · python 15% · 50
    estimated after the trace's window`` (``from xlanb's timers`` without a window: no device
    trace) ("" when the cell ran no loop, or no step of it ran without compiling)."""
    steps = profile.step_times
    if steps.empty:
        return ""
    phases = steps["phase"].to_numpy(dtype=object)
    warm, steady = phases == "warm-up", phases == "steady"
    if not steady.any():
        return ""  # every run compiled: no steady loop, and the compiles say it all
    seconds = steps["seconds"].to_numpy(dtype=float)
    parts = []
    if warm.any():
        parts.append(
            f"{int(warm.sum())} warm-up ({format_seconds(float(np.nansum(seconds[warm])))})"
        )
    median = float(np.nanmedian(seconds[steady]))
    total = float(np.nansum(seconds[steady])) or 1.0
    shares = sorted(
        (
            (float(np.nansum(steps[b].to_numpy(dtype=float)[steady])) / total, b)
            for b in ("device", "python", "compile", "transfer", "sync_wait")
        ),
        reverse=True,
    )
    mix = " · ".join(f"{bucket} {percent(share)}" for share, bucket in shares if share >= 0.005)
    parts.append(f"{int(steady.sum())} steady, median {format_seconds(median)}: {mix}")
    guessed = int(steps["estimated"].fillna(False).sum()) if "estimated" in steps else 0
    if guessed:
        # without a trace's window (torch._lazy, or no trace) the runs' times are xlanb's own
        if reused_trace(profile):
            source = "from this cell's last trace"
        elif profile.shown.traced_window:
            source = "after the trace's window"
        else:
            source = "from xlanb's timers"
        parts.append(f"{guessed} estimated {source}")
    traced = " in the trace's window" if profile.shown.traced_window and not guessed else ""
    return f"steps{traced}: " + " · ".join(parts)


def top_ops(profile: Profile, limit: int = 10) -> pd.DataFrame:
    """The `limit` ops with the most measured device time, each with ``where`` (its source
    line as people know it, else the cell line that ran it), ``code`` (that line's text) and
    ``program`` (a readable name of its graph where it has one, else the graph)."""
    if profile.ops.empty:
        return profile.ops
    order = _top_order(profile, limit)
    shown = top_op_columns(profile, limit, ["where", "code", "program"])
    return profile.ops.iloc[order].reset_index(drop=True).assign(**shown)


def _top_order(profile: Profile, limit: int) -> list[int]:
    """The positions of the `limit` ops with the most device time, as sort_values orders
    them (sorting the frame itself cost ~1 ms)."""
    seconds = profile.ops["seconds"].reset_index(drop=True)
    return seconds.sort_values(ascending=False).index[:limit].tolist()


@kept_per_profile(reads_shown=False)
def top_op_columns(profile: Profile, limit: int, columns: list[str]) -> dict[str, list[Any]]:
    """`columns` of :func:`top_ops` by name, as lists (those the ``ops`` frame lacks left
    out): only the few rows shown, a column at a time."""
    order = _top_order(profile, limit)
    ops = profile.ops

    def taken(name: str) -> list[Any]:
        if name not in ops.columns:
            return [None] * len(order)
        values = ops[name].tolist()
        return [values[i] for i in order]

    made: dict[str, list[Any]] = {}
    if "where" in columns or "code" in columns:
        made["where"], made["code"] = _places(
            profile.source.splitlines(),
            *(taken(c) for c in ("source", "code", "source_file", "source_line", "cell_line")),
        )
    if "program" in columns:
        graphs = taken("graph")
        made["program"] = [
            graph if pd.isna(program) else program
            for program, graph in zip(taken("program"), graphs, strict=True)
        ]
    return {
        name: made[name] if name in made else taken(name)
        for name in columns
        if name in made or name in ops.columns
    }


def _places(lines: list[str], *columns: list[Any]) -> tuple[list[str], list[str]]:
    """Per op, ``where`` (its source line as people know it, else the cell line that ran it)
    and ``code`` (that line's text), from its source, code, source_file, source_line and
    cell_line."""
    where, code = [], []
    for source, own, file, line, cell_line in zip(*columns, strict=True):
        if isinstance(source, str) and source:
            where.append(source)
            code.append(own if isinstance(own, str) else "")
        elif isinstance(file, str) and not pd.isna(line):
            where.append(f"{file}:{line}")
            code.append("")
        elif not pd.isna(cell_line):
            where.append(f"called at cell line {cell_line}")
            code.append(cell_code(lines, cell_line))
        else:
            where.append("")
            code.append("")
    return where, code


#: A ``where`` that is a path and a line: the folders before its file name.
_FOLDERS = re.compile(r"^.*[/\\](?=[^/\\]+:\d+$)")


def file_and_line(place: str) -> str:
    """A ``where`` (:func:`_places`) as a narrow column shows it: a path's file name and line
    (``model.py:12`` of ``/home/me/project/model.py:12``), anything else as it is."""
    return _FOLDERS.sub("", place) if isinstance(place, str) else place


#: The ``ops`` columns :func:`runs_texts` reads.
TOP_OP_RUNS = ["runs", "first_run_seconds", "count", "seconds", "devices", "programs"]
#: Top ops in the HTML's table; the text shows the first :data:`TOP_OPS_TEXT` of them.
TOP_OPS_SHOWN = 10
TOP_OPS_TEXT = 5


def top_op_table_columns(profile: Profile) -> list[str]:
    """The columns of the HTML's top-ops table."""
    return [
        "op",
        "program",
        "seconds",
        "share",
        "where",
        "code",
        "runs",
        "category",
        *(["op_name"] if "op_name" in profile.ops.columns else []),
    ]


def shown_top_ops(profile: Profile) -> dict[str, list[Any]]:
    """:func:`top_op_columns` of the :data:`TOP_OPS_SHOWN` top ops that the HTML and the
    text show (the text its first rows): asked once the same way, made once per profile."""
    return top_op_columns(profile, TOP_OPS_SHOWN, [*top_op_table_columns(profile), *TOP_OP_RUNS])


def runs_text(row: Any) -> str:
    """Which runs an ``ops`` row's time is from: ``6 runs, first 100.2 ms, then 1.2 ms a run``
    (the first traced run of its program holds the compile's warm-up), or its count where
    runs are unknown; ``on each of 8 devices`` where the row is one device's of several;
    ``8 runs of 2 programs, first runs ...`` where it adds up a function's compiles."""
    return runs_words(
        getattr(row, "runs", None),
        getattr(row, "first_run_seconds", None),
        row.count,
        row.seconds,
        getattr(row, "devices", None),
        getattr(row, "programs", None),
    )


def runs_texts(ops: pd.DataFrame | dict[str, list[Any]]) -> list[str]:
    """:func:`runs_text` of every row of `ops` (a frame, or its columns' values by name)."""
    count = len(ops["count"])
    absent = [None] * count
    return [
        runs_words(*values)
        for values in zip(
            list(ops["runs"]) if "runs" in ops else absent,
            list(ops["first_run_seconds"]) if "first_run_seconds" in ops else absent,
            list(ops["count"]),
            list(ops["seconds"]),
            list(ops["devices"]) if "devices" in ops else absent,
            list(ops["programs"]) if "programs" in ops else absent,
            strict=True,
        )
    ]


def runs_words(
    runs: Any, first: Any, count: Any, seconds: Any, devices: Any = None, programs: Any = None
) -> str:
    on = on_each_device(devices)
    if runs is None or pd.isna(runs) or first is None or pd.isna(first):
        return f"×{count}{on}"
    # each program's first run holds its warm-up: the later runs are the others
    firsts = 1 if programs is None or pd.isna(programs) else max(int(programs), 1)
    if int(runs) <= 1:
        return f"1 run{on}"
    if int(runs) <= firsts:
        return f"{int(runs)} runs, the first of each of {firsts} programs{on}"
    later = (float(seconds) - float(first)) / (int(runs) - firsts)
    what = (
        f"{int(runs)} runs of {firsts} programs, first runs"
        if firsts > 1
        else f"{int(runs)} runs, first"
    )
    return (
        f"{what} {format_seconds(float(first))}, then {format_seconds(max(later, 0.0))} a run{on}"
    )


def with_code(profile: Profile, frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with a ``code`` column: the text of its ``cell_line`` in the profiled cell."""
    return frame.assign(code=cell_codes(profile, frame["cell_line"].tolist()))


def cell_codes(profile: Profile, cell_lines: Iterable[Any]) -> list[str]:
    """The text of each of `cell_lines` in the profiled cell ("" where it has none)."""
    lines = profile.source.splitlines()
    return [cell_code(lines, n) for n in cell_lines]


def cell_code(lines: list[str], cell_line: Any) -> str:
    """The text of line `cell_line` of the cell's `lines` ("" where it has none)."""
    if pd.isna(cell_line) or not 0 < int(cell_line) <= len(lines):
        return ""
    return lines[int(cell_line) - 1].strip()


@kept_per_profile(reads_shown=False)
def graph_names(profile: Profile) -> dict[str, str]:
    """Graph -> its readable name where it has one (torch_xla: the function and line that cut
    the graph, for its hash), from the compiles' and the ops' ``program``."""
    names: dict[str, str] = {}
    for frame in (profile.ops, profile.compiles):
        if "program" in frame.columns and "graph" in frame.columns:
            named = frame[frame["program"].notna() & frame["graph"].notna()]
            names.update(zip(named["graph"], named["program"], strict=True))
    return names


def rows_of(frame: pd.DataFrame, columns: list[str]) -> list[SimpleNamespace]:
    """The rows of `frame` as objects with an attribute per column of `columns` it has
    (Python values): what ``itertuples`` gives, without a namedtuple class per call."""
    columns = [column for column in columns if column in frame.columns]
    values = [frame[column].tolist() for column in columns]
    return [
        SimpleNamespace(**dict(zip(columns, row, strict=True))) for row in zip(*values, strict=True)
    ]


def title(profile: Profile) -> str:
    backends = ", ".join(profile.backends) or "no runtime in use"
    status = " FAILED: " + profile.error if profile.failed else ""
    return f"xlanb profile {profile.name!s} [{backends}]{status}"


def summary_text(profile: Profile) -> str:
    lines = [title(profile), "  " + " | ".join(f"{k}: {v}" for k, v in headline(profile))]
    if account := account_line(profile):
        lines.append("  " + account)
    if steps := steps_line(profile):
        lines.append("  " + steps)
    for row in rows_of(profile.findings, FINDING_COLUMNS):
        lines.append(f"  [{row.severity}] {finding_cost(row)}{row.title}")
    if not profile.fallbacks.empty:
        lines.append("  left the device:")
        for row in rows_of(
            with_code(profile, profile.fallbacks), ["op", "count", "cause", "cell_line", "code"]
        ):
            where = f" line {row.cell_line}: {row.code}" if row.code else ""
            lines.append(f"    {row.op} ×{row.count} ({host_kind(row.cause)}){where}")
    if not profile.ops.empty:
        coverage = trace_coverage(profile)
        lines.append(f"  top ops (device time{'; ' + coverage if coverage else ''}):")
        top = {name: values[:TOP_OPS_TEXT] for name, values in shown_top_ops(profile).items()}
        for op, program, seconds, runs, place, code in zip(
            top["op"],
            top["program"],
            top["seconds"],
            runs_texts(top),
            top["where"],
            top["code"],
            strict=True,
        ):
            where = f" {place}" if place else ""
            code_text = f": {code}" if code else ""
            lines.append(
                f"    {op} ({program}) {format_seconds(seconds)} ({runs}){where}{code_text}"
            )
    if not profile.compiles.empty:
        lines.append("  compiles:")
        names = graph_names(profile)
        for row in rows_of(profile.compiles.head(20), ["graph", "seconds", "cell_line", "cause"]):
            line = f" line {row.cell_line}" if not pd.isna(row.cell_line) else ""
            graph = row.graph if isinstance(row.graph, str) else "(graph unknown)"
            graph = names.get(graph, graph)
            cause = row.cause if isinstance(row.cause, str) else "(cause unknown)"
            lines.append(f"    {graph} {format_seconds(row.seconds)}{line}: {cause}")
    lines.extend("  note: " + note for note in profile.notes)
    return "\n".join(lines)
