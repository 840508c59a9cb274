"""The Profile: one capture, held as pandas DataFrames with one schema for every runtime.

Every view (text summary, HTML, JSON on disk) is a function of a Profile; the Profile knows
nothing about runtimes.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from xlanb.core.files import write_atomically
from xlanb.core.schema import (  # noqa: F401 - re-exported for old imports
    COUNTER_CATEGORIES,
    FRAME_COLUMNS,
    FRAME_NAMES,
    HOST_KINDS,
    OTHER_HOST_KIND,
    columns_of,
    empty_frame,
    make_frame,
)
from xlanb.core.seams import implementation


@dataclass
class Shown:
    """What the views show that is computed from several frames (filled by
    :func:`xlanb.analysis.derive`; not saved: loading computes it again).

    ``traced_window``: (start, end) epoch seconds of the device trace's window when it closed
    before the cell ended, with its ``traced_window_name``; ``later_windows``: (name, seconds)
    of each second window (a program compiled after the first closed); ``host_activity``:
    (host busy seconds, of which hidden under device time); ``untraced_programs``: (program,
    runs) of those whose runs no device span holds (after the trace's window);
    ``forced_syncs``: where values were read (backend, read_at, cell_line, count, library);
    ``rank_table`` and ``rank_outliers``: a merged profile's per-rank rows and the ranks that
    stand out per column."""

    traced_window: tuple[float, float] | None = None
    traced_window_name: str | None = None
    later_windows: list[tuple[str, float]] = field(default_factory=list)
    host_activity: tuple[float, float] | None = None
    untraced_programs: list[tuple[str, int]] = field(default_factory=list)
    forced_syncs: pd.DataFrame = field(default_factory=pd.DataFrame)
    rank_table: pd.DataFrame = field(default_factory=pd.DataFrame)
    rank_outliers: dict[str, list[int]] = field(default_factory=dict)


@dataclass
class Profile:
    """What one profiled cell (or `with xlanb.profile():` block) did on the lazy-tensor runtimes.

    Frames: one pandas DataFrame attribute per name in :data:`~xlanb.core.schema.FRAME_NAMES`
    (``counters``, ``metrics``, ``compiles``, ...), with one schema for every runtime. Their
    columns are declared, with dtype, unit, meaning and which backend or parser writes each,
    in :data:`xlanb.core.schema.SCHEMA` (rendered in README.md, "The Profile", by
    :func:`xlanb.core.schema.markdown_table`): the required ones
    (:data:`~xlanb.core.schema.FRAME_COLUMNS`) are in every frame, in order, also when it is
    empty; optional ones only where a writer has them.
    """

    name: str = ""
    backends: list[str] = field(default_factory=list)
    started_at: float = 0.0
    wall_seconds: float = 0.0
    failed: bool = False
    error: str = ""
    source: str = ""
    notes: list[str] = field(default_factory=list)
    environment: dict[str, Any] = field(default_factory=dict)
    counters: pd.DataFrame = field(default_factory=lambda: empty_frame("counters"))
    metrics: pd.DataFrame = field(default_factory=lambda: empty_frame("metrics"))
    samples: pd.DataFrame = field(default_factory=lambda: empty_frame("samples"))
    compiles: pd.DataFrame = field(default_factory=lambda: empty_frame("compiles"))
    executions: pd.DataFrame = field(default_factory=lambda: empty_frame("executions"))
    fallbacks: pd.DataFrame = field(default_factory=lambda: empty_frame("fallbacks"))
    graphs: pd.DataFrame = field(default_factory=lambda: empty_frame("graphs"))
    findings: pd.DataFrame = field(default_factory=lambda: empty_frame("findings"))
    steps: pd.DataFrame = field(default_factory=lambda: empty_frame("steps"))
    spans: pd.DataFrame = field(default_factory=lambda: empty_frame("spans"))
    ops: pd.DataFrame = field(default_factory=lambda: empty_frame("ops"))
    breakdown: pd.DataFrame = field(default_factory=lambda: empty_frame("breakdown"))
    step_times: pd.DataFrame = field(default_factory=lambda: empty_frame("step_times"))
    live_arrays: pd.DataFrame = field(default_factory=lambda: empty_frame("live_arrays"))
    temporaries: pd.DataFrame = field(default_factory=lambda: empty_frame("temporaries"))
    _summary_cache: tuple[tuple[Any, ...], tuple[pd.DataFrame, ...], dict[str, Any]] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _shown: tuple[tuple[Any, ...], tuple[pd.DataFrame, ...], Shown] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def shown(self) -> Shown:
        """What :func:`xlanb.analysis.derive` computed for the views (:class:`Shown`); computed
        again (the ``shown`` implementation, registered by :mod:`xlanb.analysis`) where the
        Profile was not derived or its frames, start or wall time changed since."""
        frames, key = self._shown_key()
        kept = self._shown
        if (
            kept is None
            or kept[0] != key
            or not all(old is new for old, new in zip(kept[1], frames, strict=True))
        ):
            self.keep_shown(implementation("shown")(self))
            kept = self._shown
        assert kept is not None
        return kept[2]

    def keep_shown(self, shown: Shown) -> None:
        """Keep `shown`, computed from the frames as they are now."""
        frames, key = self._shown_key()
        self._shown = (key, frames, shown)

    def _shown_key(self) -> tuple[tuple[pd.DataFrame, ...], tuple[Any, ...]]:
        frames = tuple(getattr(self, name) for name in FRAME_NAMES)
        key = (
            *(len(frame) for frame in frames),
            self.started_at,
            self.wall_seconds,
            tuple(self.backends),
            id(self.environment.get("ranks")),
        )
        return frames, key

    def frames(self) -> dict[str, pd.DataFrame]:
        """All frames by name."""
        return {name: getattr(self, name) for name in FRAME_NAMES}

    def summary(self) -> dict[str, Any]:
        """Headline numbers: compiles, compile_seconds, executions, execute_seconds,
        transfers, wall_seconds, and the ``fallbacks`` counted by kind (:data:`HOST_KINDS`):
        syncs (values read back), dynamic_shapes, host_callbacks, host_inputs and
        fallback_ops (CPU fallbacks: ops without a lowering).

        Kept until a frame it reads is replaced or changes length, or the backends or the
        wall time change: a cell's headline, HTML and text each ask."""
        frames = (self.compiles, self.executions, self.fallbacks, self.metrics, self.counters)
        key = (*(len(frame) for frame in frames), tuple(self.backends), self.wall_seconds)
        cached = self._summary_cache
        if (
            cached is not None
            and cached[0] == key
            and all(kept is frame for kept, frame in zip(cached[1], frames, strict=True))
        ):
            return dict(cached[2])
        numbers = self._summary()
        self._summary_cache = (key, frames, numbers)
        return dict(numbers)

    def _summary(self) -> dict[str, Any]:
        executions = self.executions
        numbers = {
            "compiles": int(len(self.compiles)),
            "compile_seconds": _nan_sum(self.compiles["seconds"]),
            "executions": int(executions["count"].sum()) if not executions.empty else 0,
            "execute_seconds": _nan_sum(executions["seconds"]),
            "transfers": self._transfers(),
            "wall_seconds": float(self.wall_seconds),
        }
        numbers.update(dict.fromkeys((kind.key for kind in HOST_KINDS.values()), 0))
        if not self.fallbacks.empty:
            # per cause, as a groupby's sum (a null cause left out, a null count adds nothing),
            # in plain Python: a cell's few rows make a groupby's fixed cost the whole cost
            causes = self.fallbacks["cause"].astype(str).tolist()
            for cause, count in zip(causes, self.fallbacks["count"].tolist(), strict=True):
                if not pd.isna(cause) and not pd.isna(count):
                    numbers[HOST_KINDS.get(str(cause), OTHER_HOST_KIND).key] += int(count)
        return numbers

    def _transfers(self) -> int:
        """Host<->device transfers: the runtime's Transfer*Time sample counts where it keeps
        them (torch_xla), else its transfer counters (torch._lazy copies to/from the device)."""
        metrics = _rows(self.metrics, "backend", "name", "count")
        counters = _rows(self.counters, "backend", "category", "delta")
        total = 0
        for backend in self.backends:  # a few rows each: plain lists, not frame filters
            timed = [
                count
                for name_of, name, count in metrics
                if name_of == backend and isinstance(name, str) and name.startswith("Transfer")
            ]
            if timed:
                total += int(sum(count for count in timed if not pd.isna(count)))
                continue
            total += int(
                sum(
                    delta
                    for name_of, category, delta in counters
                    if name_of == backend and category == "transfer" and not pd.isna(delta)
                )
            )
        return total

    # -- persistence ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The documented on-disk form: JSON-ready, frames as column lists with dtypes (see
        :mod:`xlanb.formats.profile_json`)."""
        return implementation("profile_to_dict")(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Profile:
        """Inverse of :meth:`to_dict`."""
        return implementation("profile_from_dict")(data, cls)

    def save(self, path: str | os.PathLike) -> Path:
        """Write the profile as JSON (see README, "On-disk format"); returns the path.

        Written atomically (:func:`xlanb.core.files.write_atomically`): a crash never leaves
        half a file, and concurrent writers never tear each other's files."""
        return write_atomically(path, json.dumps(self.to_dict(), allow_nan=True))

    # -- display ----------------------------------------------------------------------------
    def __repr__(self) -> str:
        return implementation("summary_text")(self)

    def _repr_html_(self) -> str:
        return implementation("profile_html")(self)

    def charts(self) -> list:
        """Plotly charts of this profile (percentiles of each timed metric, a timeline);
        each displays itself in a notebook, ``.to_plotly()`` gives a plotly Figure."""
        return implementation("charts")(self)

    def graph(self, name_or_index: str | int = 0, kind: str | None = None) -> Any:
        """The graph ``name_or_index`` of the ``graphs`` frame as an :class:`xlanb.graphs.Graph`
        (displays as the interactive viewer, CPU-fallback ops of this profile in red); see
        :func:`xlanb.analysis.programs.graph`."""
        return implementation("graph")(self, name_or_index, kind)

    def graph_kinds(self, name_or_index: str | int = 0) -> list[str]:
        """The kinds of text graph ``name_or_index`` has (:meth:`graph`'s ``kind``), the one it
        shows by default first: e.g. ``["hlo_optimized", "stablehlo"]`` for a JAX program."""
        return implementation("graph_kinds")(self, name_or_index)

    @property
    def memory(self) -> pd.DataFrame:
        """The static memory of every program compiled: one row per program and ``kind``
        (``inputs``, ``outputs``, ``aliased``, ``intermediates``, ``program``, ``peak``) with
        its ``bytes`` (:func:`xlanb.analysis.programs.memory`)."""
        return implementation("memory")(self)

    def previous_compile(self, index: int, entries: pd.DataFrame | None = None) -> int | None:
        """The index (as :meth:`graph` counts) of the graph compiled before graph `index` for
        the same function or line; None for a first compile (see
        :func:`xlanb.analysis.programs.previous_compile`)."""
        return implementation("previous_compile")(self, index, entries)

    def diff(self, index: int = -1) -> Any:
        """What changed between graph `index` and the previous compile of the same function
        or line (:meth:`previous_compile`): an ``xlanb.graphs.GraphDiff`` (displays side by
        side, changes marked)."""
        return implementation("diff")(self, index)

    def graph_entries(self) -> pd.DataFrame:
        """One row per compiled graph that has a text, in the order :meth:`graph` indexes them
        (see :func:`xlanb.analysis.programs.graph_entries`)."""
        return implementation("graph_entries")(self)

    def to_html(self, path: str | os.PathLike | None = None) -> str:
        """The self-contained HTML report of this profile (summary, findings, charts, tables,
        every graph in the viewer, environment; opens offline); written to `path` when
        given."""
        page = implementation("report_html")([self])
        if path is not None:
            write_atomically(path, page)
        return page

    def to_chrome_trace(self, path: str | os.PathLike | None = None) -> dict[str, Any]:
        """Chrome trace events of this profile (open in Perfetto or chrome://tracing): one
        process per backend, one track per graph; written as JSON to `path` when given."""
        if path is not None:
            implementation("write_chrome_trace")(self, path)
        return implementation("chrome_trace")(self)


def _nan_sum(values: pd.Series) -> float:
    total = float(values.sum(skipna=True)) if not values.empty else 0.0
    return 0.0 if math.isnan(total) else total


def is_multi_rank(profile: Profile) -> bool:
    """Whether `profile` was merged from rank files (its frames carry a ``rank`` column)."""
    return "rank" in profile.compiles.columns and "ranks" in profile.environment


def _rows(frame: pd.DataFrame, *columns: str) -> list[tuple[Any, ...]]:
    """`columns` of `frame` as a list of row tuples (plain Python values)."""
    return list(zip(*(frame[column].tolist() for column in columns), strict=True))
