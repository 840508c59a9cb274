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

from xlanb.core.errors import FormatError
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

FORMAT_NAME = "xlanb-profile"
FORMAT_VERSION = 1


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
            counts = self.fallbacks.groupby(self.fallbacks["cause"].astype(str))["count"].sum()
            for cause, count in counts.items():
                numbers[HOST_KINDS.get(str(cause), OTHER_HOST_KIND).key] += int(count)
        return numbers

    def _transfers(self) -> int:
        """Host<->device transfers: the runtime's Transfer*Time sample counts where it keeps
        them (torch_xla), else its transfer counters (torch._lazy copies to/from the device)."""
        total = 0
        for backend in self.backends:
            timed = self.metrics[
                (self.metrics["backend"] == backend)
                & self.metrics["name"].str.startswith("Transfer")
            ]
            if not timed.empty:
                total += int(timed["count"].sum())
                continue
            counters = self.counters[
                (self.counters["backend"] == backend) & (self.counters["category"] == "transfer")
            ]
            total += int(counters["delta"].sum())
        return total

    # -- persistence ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The documented on-disk form: JSON-ready, frames as column lists with dtypes."""
        return {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "meta": {
                "name": self.name,
                "backends": list(self.backends),
                "started_at": self.started_at,
                "wall_seconds": self.wall_seconds,
                "failed": self.failed,
                "error": self.error,
                "source": self.source,
                "notes": list(self.notes),
                "environment": self.environment,
            },
            "frames": {name: _frame_to_json(frame) for name, frame in self.frames().items()},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Profile:
        """Inverse of :meth:`to_dict`."""
        meta = data["meta"]
        frames = {name: _frame_from_json(name, spec) for name, spec in data["frames"].items()}
        for name in FRAME_NAMES:
            frames.setdefault(name, empty_frame(name))
        return cls(
            name=meta.get("name", ""),
            backends=list(meta.get("backends", [])),
            started_at=meta.get("started_at", 0.0),
            wall_seconds=meta.get("wall_seconds", 0.0),
            failed=meta.get("failed", False),
            error=meta.get("error", ""),
            source=meta.get("source", ""),
            notes=list(meta.get("notes", [])),
            environment=meta.get("environment", {}),
            **{name: frames[name] for name in FRAME_NAMES},
        )

    def save(self, path: str | os.PathLike) -> Path:
        """Write the profile as JSON (see README, "On-disk format"); returns the path.

        Written atomically (:func:`xlanb.core.files.write_atomically`): a crash never leaves
        half a file, and concurrent writers never tear each other's files."""
        return write_atomically(path, json.dumps(self.to_dict(), allow_nan=True))

    # -- display ----------------------------------------------------------------------------
    def __repr__(self) -> str:
        from xlanb.views.summary import summary_text

        return summary_text(self)

    def _repr_html_(self) -> str:
        from xlanb.views.html import profile_html

        return profile_html(self)

    def charts(self) -> list:
        """Plotly charts of this profile (percentiles of each timed metric, a timeline);
        each displays itself in a notebook, ``.to_plotly()`` gives a plotly Figure."""
        from xlanb.views.notebook import charts

        return charts(self)

    def graph(self, name_or_index: str | int = 0, kind: str | None = None) -> Any:
        """The graph ``name_or_index`` of the ``graphs`` frame as an :class:`xlanb.graphs.Graph`
        (displays as the interactive viewer, CPU-fallback ops of this profile in red).

        An int is a position among the compiled graphs in frame order (``-1``: the last; each
        compile of a JAX function is its own); a str is a graph name or a prefix of one (a hash
        prefix), its latest compile. Of that graph's texts the
        ``hlo``, then ``hlo_optimized`` (JAX), then ``stablehlo``, then ``ir`` one is used,
        unless ``kind`` names another
        (e.g. ``"hlo_optimized"``); when the ``ops`` frame holds measured device time for the
        graph, its ``hlo_optimized`` text comes first (the instructions the trace names), and
        the Graph's ``measured`` holds those ops (the viewer colours nodes by their time). A
        text that does not parse gives a Graph whose ``error`` says why and whose display
        shows the text."""
        from xlanb.graphs import Graph, ParseError, parse_once

        name, rows, measured = self._graph_rows(name_or_index)
        kinds = list(rows["kind"])
        chosen = kind if kind in kinds else None if kind else _default_kind(kinds, measured)
        if chosen is None:
            raise KeyError(f"graph {name!r} has no {kind!r} text; it has {', '.join(kinds)}")
        text = str(rows[rows["kind"] == chosen]["text"].iloc[0])
        try:
            parsed = parse_once(text, chosen)
        except ParseError as error:
            return Graph.unparsed(text, chosen, error, name=name)
        parsed.name = name
        if chosen == "hlo_optimized":
            parsed.measured = measured
        return parsed.with_fallbacks(self.fallbacks["op"].dropna().astype(str))

    def graph_kinds(self, name_or_index: str | int = 0) -> list[str]:
        """The kinds of text graph ``name_or_index`` has (:meth:`graph`'s ``kind``), the one it
        shows by default first: e.g. ``["hlo_optimized", "stablehlo"]`` for a JAX program."""
        _, rows, measured = self._graph_rows(name_or_index)
        kinds = list(dict.fromkeys(rows["kind"]))
        first = _default_kind(kinds, measured)
        return [first, *(k for k in kinds if k != first)]

    def _graph_rows(self, name_or_index: str | int) -> tuple[str, pd.DataFrame, Any]:
        """(name, its ``graphs`` rows with text, its measured ops or None) of one compiled
        graph (see :meth:`graph`)."""
        entries = self.graph_entries()
        if entries.empty:
            raise KeyError("this profile holds no graph (was it captured with graphs off?)")
        names = list(dict.fromkeys(entries["graph"]))
        if isinstance(name_or_index, int):
            try:
                entry = entries.iloc[name_or_index]
            except IndexError:
                raise IndexError(f"graph {name_or_index} of {len(entries)}") from None
            name, compile_key = str(entry["graph"]), entry["compile"]
        else:
            found = [n for n in names if n == name_or_index] or [
                n for n in names if n.startswith(str(name_or_index))
            ]
            if len(found) != 1:
                raise KeyError(
                    f"{'no' if not found else len(found)} graphs named "
                    f"{name_or_index!r}; graphs: {', '.join(names[:10])}"
                )
            name = found[0]
            compile_key = entries.loc[entries["graph"] == name, "compile"].iloc[-1]  # latest
        graphs = self.graphs[self.graphs["text"].notna()]
        same = (graphs["graph"].astype(str) == name) & (_compile_keys(graphs) == compile_key)
        rows = graphs[same.to_numpy(dtype=bool)]
        return name, rows, self._measured_ops(name, str(rows["backend"].iloc[0]))

    @property
    def memory(self) -> pd.DataFrame:
        """The static memory of every program compiled: one row per program and ``kind``
        (``inputs``, ``outputs``, ``aliased``, ``intermediates``, ``program``, ``peak``) with
        its ``bytes``, from the ``compiles`` columns (JAX's compiled memory stats, torch_xla's
        Post Compilation Analysis); ``compile_id`` tells a JAX function's compiles apart."""
        kinds = {
            "input_bytes": "inputs",
            "output_bytes": "outputs",
            "aliased_bytes": "aliased",
            "intermediate_bytes": "intermediates",
            "program_bytes": "program",
            "peak_bytes": "peak",
        }
        columns = ["backend", "graph", "compile_id", "kind", "bytes"]
        present = [c for c in kinds if c in self.compiles.columns]
        if not present:
            return pd.DataFrame(columns=columns)
        compiles = self.compiles.assign(
            compile_id=self.compiles["compile_id"]
            if "compile_id" in self.compiles.columns
            else pd.NA
        )
        long = compiles.melt(
            id_vars=["backend", "graph", "compile_id"],
            value_vars=present,
            var_name="kind",
            value_name="bytes",
        ).dropna(subset=["bytes"])
        long["kind"] = long["kind"].map(kinds)
        return long[columns].reset_index(drop=True)

    def previous_compile(self, index: int, entries: pd.DataFrame | None = None) -> int | None:
        """The index (as :meth:`graph` counts) of the graph compiled before graph `index` for
        the same thing: the same JAX function, or the same line (``compiles.location``) for the
        torch runtimes, whose graph names are hashes; None for a first compile. `entries`:
        :meth:`graph_entries`, when the caller has them already."""
        if entries is None:
            entries = self.graph_entries()
        index = range(len(entries))[index]  # IndexError past the end; -1 is the last
        name, compile_key = str(entries["graph"].iloc[index]), entries["compile"].iloc[index]
        if compile_key != -1:  # JAX: compiles of one function share its name
            same = entries["graph"].astype(str) == name
        else:
            graphs, locations = self.compiles["graph"].astype(str), self.compiles["location"]
            places = dict(zip(graphs, locations, strict=True))
            place = places.get(name)
            if place is None or pd.isna(place):
                return None
            same = entries["graph"].astype(str).map(places) == place
        earlier = [i for i in range(index) if bool(same.iloc[i])]
        return earlier[-1] if earlier else None

    def diff(self, index: int = -1) -> Any:
        """What changed between graph `index` and the previous compile of the same function
        or line (:meth:`previous_compile`): an ``xlanb.graphs.GraphDiff`` (displays side by
        side, changes marked)."""
        from xlanb.graphs import diff

        previous = self.previous_compile(index)
        if previous is None:
            raise KeyError(f"graph {index} is the first compile of its function or line")
        return diff(self.graph(previous), self.graph(index))

    def graph_entries(self) -> pd.DataFrame:
        """One row per compiled graph that has a text, in the order :meth:`graph` indexes them:
        ``graph``, ``compile`` (JAX's ``compile_id``, which tells a function's compiles apart;
        -1 where a runtime's graph ids are distinct already), ``backend`` and ``nodes`` (the
        smallest of its texts)."""
        graphs = self.graphs[self.graphs["text"].notna()]
        keyed = graphs.assign(graph=graphs["graph"].astype(str), compile=_compile_keys(graphs))
        return (
            keyed.groupby(["graph", "compile"], sort=False)
            .agg(backend=("backend", "first"), nodes=("nodes", "min"))
            .reset_index()
        )

    def _measured_ops(self, name: str, backend: str) -> pd.DataFrame | None:
        """The ``ops`` rows of graph `name` (measured device time of its instructions), with
        ``code``: the text of each ``cell_line`` in the profiled cell; None if there are none."""
        ops = self.ops
        if ops.empty:
            return None
        rows = ops[(ops["graph"].astype(str) == name) & (ops["backend"].astype(str) == backend)]
        if rows.empty:
            return None
        lines = self.source.splitlines()
        code = [
            lines[int(n) - 1].strip() if not pd.isna(n) and 0 < int(n) <= len(lines) else ""
            for n in rows["cell_line"]
        ]
        return rows.assign(code=code).reset_index(drop=True)

    def to_html(self, path: str | os.PathLike | None = None) -> str:
        """The self-contained HTML report of this profile (summary, findings, charts, tables,
        every graph in the viewer, environment; opens offline); written to `path` when
        given."""
        from xlanb.views.report import report_html

        page = report_html([self])
        if path is not None:
            write_atomically(path, page)
        return page

    def to_chrome_trace(self, path: str | os.PathLike | None = None) -> dict[str, Any]:
        """Chrome trace events of this profile (open in Perfetto or chrome://tracing): one
        process per backend, one track per graph; written as JSON to `path` when given."""
        from xlanb.views.chrome_trace import chrome_trace, write_chrome_trace

        if path is not None:
            write_chrome_trace(self, path)
        return chrome_trace(self)


def _default_kind(kinds: list[str], measured: Any) -> str:
    """The text a graph shows first: with measured device time its optimized HLO (the
    instructions the trace names); else its HLO, then optimized HLO (JAX has no "hlo": its
    optimized HLO has fusions, op_name scopes and source lines), StableHLO, IR."""
    if measured is not None:
        preferred = ["hlo_optimized", "hlo", "stablehlo", "ir"]
    else:
        preferred = ["hlo", "hlo_optimized", "stablehlo", "ir"]
    return next((k for k in preferred if k in kinds), kinds[0])


def _compile_keys(graphs: pd.DataFrame) -> pd.Series:
    """Each ``graphs`` row's compile (see :meth:`Profile.graph_entries`)."""
    if "compile_id" not in graphs.columns:
        return pd.Series(-1, index=graphs.index, dtype="int64")
    return graphs["compile_id"].astype("Int64").fillna(-1).astype("int64")


def _nan_sum(values: pd.Series) -> float:
    total = float(values.sum(skipna=True)) if not values.empty else 0.0
    return 0.0 if math.isnan(total) else total


def _frame_to_json(frame: pd.DataFrame) -> dict[str, Any]:
    columns = [str(c) for c in frame.columns]
    data = {}
    for column in frame.columns:
        series = frame[column]
        values = series.astype(object).where(series.notna(), None).tolist()
        data[str(column)] = values
    return {
        "columns": columns,
        "dtypes": {str(c): str(t) for c, t in frame.dtypes.items()},
        "data": data,
    }


def _frame_from_json(name: str, spec: dict[str, Any]) -> pd.DataFrame:
    """A saved frame, each declared number column in the schema's dtype (``Int64`` where an
    integer column has nulls)."""
    columns = spec["columns"]
    frame = pd.DataFrame(
        {c: pd.Series(spec["data"][c], dtype=object) for c in columns}, columns=columns
    )
    declared = columns_of(name)
    for column, dtype in spec["dtypes"].items():
        schema_dtype = declared[column].dtype if column in declared else None
        if schema_dtype == "float64":
            dtype = "float64"
        elif schema_dtype in ("int64", "Int64"):
            dtype = "Int64" if frame[column].isna().any() or dtype == "Int64" else "int64"
        if dtype == "object":
            continue
        frame[column] = frame[column].astype(dtype)
    return frame


# -- reading ------------------------------------------------------------------------------
_META_TYPES: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "backends": (list,),
    "started_at": (int, float),
    "wall_seconds": (int, float),
    "failed": (bool,),
    "error": (str,),
    "source": (str,),
    "notes": (list,),
    "environment": (dict,),
}


def read_profile_json(text: str | bytes, path: str | os.PathLike) -> dict[str, Any]:
    """The document of a saved profile (:meth:`Profile.to_dict`'s form), read defensively:
    anything that is not a well-formed ``xlanb-profile`` document is a :class:`FormatError`
    naming `path` (and the line, for JSON syntax errors), never another exception."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise FormatError(path, error.lineno, f"not JSON ({error.msg})") from None
    except UnicodeDecodeError:
        raise FormatError(path, 1, "not a text file") from None
    except RecursionError:
        raise FormatError(path, 1, "not JSON (nested too deeply)") from None
    _check_document(data, path)
    return data


def _check_document(data: Any, path: str | os.PathLike) -> None:
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        raise FormatError(path, 1, f"not an {FORMAT_NAME} file")
    if data.get("version") != FORMAT_VERSION:
        raise FormatError(path, 1, f"unsupported {FORMAT_NAME} version {data.get('version')!r}")
    meta, frames = data.get("meta"), data.get("frames")
    if not isinstance(meta, dict) or not isinstance(frames, dict):
        raise FormatError(path, 1, "needs 'meta' and 'frames' objects")
    for key, types in _META_TYPES.items():
        if key in meta and not isinstance(meta[key], types):
            raise FormatError(path, 1, f"meta.{key} has the wrong type")
    for name, spec in frames.items():
        if name not in FRAME_COLUMNS:
            raise FormatError(path, 1, f"unknown frame {name!r}")
        if not isinstance(spec, dict):
            raise FormatError(path, 1, f"frame {name!r} is not an object")
        columns, dtypes, values = spec.get("columns"), spec.get("dtypes"), spec.get("data")
        if not (
            isinstance(columns, list) and isinstance(dtypes, dict) and isinstance(values, dict)
        ):
            raise FormatError(path, 1, f"frame {name!r} needs columns, dtypes and data")
        if not all(isinstance(c, str) for c in columns) or len(set(columns)) != len(columns):
            raise FormatError(path, 1, f"frame {name!r} has bad column names")
        lengths = {len(values[c]) if isinstance(values.get(c), list) else -1 for c in columns}
        if -1 in lengths or len(lengths) > 1:
            raise FormatError(
                path, 1, f"frame {name!r}: every column needs a list of the same length"
            )
        if not all(c in columns and isinstance(t, str) for c, t in dtypes.items()):
            raise FormatError(path, 1, f"frame {name!r} has dtypes for unknown columns")
        _check_column_types(name, dtypes, values, path)


#: The dtypes a saved frame may give a column the schema declares as the key (what pandas
#: writes for it, with or without missing values); anything else is refused.
_STORED_DTYPES: dict[str, frozenset[str]] = {
    "float64": frozenset({"float64", "float32", "int64", "Int64", "object"}),
    "int64": frozenset({"int64", "Int64", "object"}),
    "Int64": frozenset({"int64", "Int64", "object"}),
    "bool": frozenset({"bool", "boolean", "object"}),
    "str": frozenset({"object", "string", "str", "category"}),
    "object": frozenset(
        {"object", "string", "str", "category", "float64", "int64", "Int64", "bool"}
    ),
}


def _check_column_types(
    frame: str, dtypes: dict[str, str], values: dict[str, list[Any]], path: str | os.PathLike
) -> None:
    """Every column holds what the schema declares: a number column numbers (or nulls; never
    text, booleans or a NaN literal, which xlanb never writes), a bool column booleans."""
    declared = columns_of(frame)
    allowed_undeclared = _STORED_DTYPES["object"]
    for column, dtype in dtypes.items():
        spec = declared.get(column)
        allowed = _STORED_DTYPES.get(spec.dtype, allowed_undeclared) if spec else allowed_undeclared
        if dtype not in allowed:
            raise FormatError(path, 1, f"{frame}.{column} has dtype {dtype}, not one xlanb writes")
    for column, column_values in values.items():
        spec = declared.get(column)
        if spec is None or spec.dtype in ("str", "object"):
            continue
        for value in column_values:
            if value is None:
                continue
            if spec.dtype == "bool":
                ok = isinstance(value, bool)
            elif spec.dtype == "float64":
                ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            else:
                ok = isinstance(value, int) and not isinstance(value, bool)
            if ok and isinstance(value, float) and math.isnan(value):
                raise FormatError(path, 1, f"{frame}.{column} holds NaN (xlanb writes null)")
            if not ok:
                raise FormatError(path, 1, f"{frame}.{column} holds {value!r}, not a {spec.dtype}")


def profile_from_json(text: str | bytes, path: str | os.PathLike) -> Profile:
    """The Profile of a saved-profile JSON document (:func:`read_profile_json`, then
    :meth:`Profile.from_dict`); a frame whose data does not fit its dtypes or lacks a
    documented column is a :class:`FormatError` too."""
    data = read_profile_json(text, path)
    try:
        profile = Profile.from_dict(data)
    except (ValueError, TypeError, OverflowError) as error:
        raise FormatError(path, 1, f"frame data does not fit its dtypes ({error})") from None
    for name, frame in profile.frames().items():
        missing = [c for c in FRAME_COLUMNS[name] if c not in frame.columns]
        if missing:
            raise FormatError(path, 1, f"frame {name!r} lacks columns {missing}")
    return profile


def load_profile(path: str | os.PathLike) -> Profile:
    """Read a profile written by :meth:`Profile.save` (:func:`profile_from_json`)."""
    return profile_from_json(Path(path).read_bytes(), path)
