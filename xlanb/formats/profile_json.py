"""The saved Profile's JSON (:meth:`Profile.save`, ``xlanb.load``): the document's form, and
its defensive reader (anything not well-formed is a :class:`FormatError` naming the file)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pandas as pd

from xlanb.core.errors import FormatError
from xlanb.core.profile import Profile
from xlanb.core.schema import FRAME_COLUMNS, FRAME_NAMES, columns_of, empty_frame
from xlanb.core.seams import provides

FORMAT_NAME = "xlanb-profile"
FORMAT_VERSION = 1
#: ``meta.step_starts`` of a file whose ``step_times.start`` counts from the cell's start (a
#: file without it holds epoch seconds there).
STEP_STARTS = "cell"


@provides("profile_to_dict")
def profile_to_dict(profile: Profile) -> dict[str, Any]:
    """The documented on-disk form: JSON-ready, frames as column lists with dtypes."""
    return {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "meta": {
            "name": profile.name,
            "backends": list(profile.backends),
            "started_at": profile.started_at,
            "wall_seconds": profile.wall_seconds,
            "failed": profile.failed,
            "error": profile.error,
            "source": profile.source,
            "notes": list(profile.notes),
            "environment": profile.environment,
            "step_starts": STEP_STARTS,
        },
        "frames": {name: _frame_to_json(frame) for name, frame in profile.frames().items()},
    }


@provides("profile_from_dict")
def profile_from_dict(data: dict[str, Any], cls: type[Profile] = Profile) -> Profile:
    """Inverse of :func:`profile_to_dict`."""
    meta = data["meta"]
    frames = {name: _frame_from_json(name, spec) for name, spec in data["frames"].items()}
    for name in FRAME_NAMES:
        frames.setdefault(name, empty_frame(name))
    steps = frames["step_times"]
    if meta.get("step_starts") != STEP_STARTS and not steps.empty:
        # saved before step starts were counted from the cell's start: epoch seconds
        frames["step_times"] = steps.assign(start=steps["start"] - meta.get("started_at", 0.0))
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
        profile = profile_from_dict(data)
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
