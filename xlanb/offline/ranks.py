"""``load_ranks(dir)``: the rank files of one run, merged into one Profile whose frames carry a
``rank`` column."""

from __future__ import annotations

import os
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from xlanb.core.errors import FormatError, XlanbError
from xlanb.core.profile import FRAME_COLUMNS, FRAME_NAMES, Profile, empty_frame
from xlanb.core.schema import rank_findings_frame
from xlanb.formats.profile_json import FORMAT_NAME, read_profile_json
from xlanb.formats.rank_files import FILE_SUFFIX, format_ranks, is_rank_file_name


class RanksError(XlanbError, ValueError):
    """The rank files in a directory cannot be merged into one run (no rank files, ranks of
    several runs or names, one rank twice); the message says what to do."""


class RankFileWarning(UserWarning):
    """A file in a ranks directory was skipped (corrupt, not a rank profile, or a partial
    write left by a rank that died while saving); the message names it."""


def is_ranks_dir(path: str | os.PathLike) -> bool:
    """Whether `path` is a directory holding at least one file written by ``record()``."""
    try:
        if not Path(path).is_dir():
            return False
        with os.scandir(path) as entries:  # closed even when any() stops early
            return any(is_rank_file_name(e.name) for e in entries if e.is_file())
    except OSError:
        return False


def load_ranks(
    path: str | os.PathLike, *, run_id: str | None = None, name: str | None = None
) -> Profile:
    """Merge the rank profiles that ``xlanb.record()`` wrote into directory `path`.

    Returns one Profile: every frame has a ``rank`` column first; ``findings`` holds the skew
    findings (a rank that compiles or falls back more, an execute-time outlier, programs that
    differ between ranks, a straggler, missing or failed ranks) and each rank's own findings
    (title prefixed with its ranks); ``environment["ranks"]`` holds run_id, world_size,
    present and missing ranks, and per_rank (host, device, pid, wall time, status, file).

    A file that is corrupt or not a rank profile is skipped with a :class:`RankFileWarning`
    naming it. Raises :class:`RanksError` when the directory holds no rank profile, ranks of
    several runs (pass `run_id` to pick one) or of several names (pass `name`), or one rank
    twice."""
    directory = Path(path)
    if not directory.is_dir():
        raise RanksError(f"{directory} is not a directory of rank profiles")
    documents = _read_directory(directory)
    documents = _one_run(directory, documents, run_id, name)
    return merge(documents, directory)


def _read_directory(directory: Path) -> list[dict[str, Any]]:
    documents = []
    with os.scandir(directory) as listing:
        entries = sorted(listing, key=lambda e: e.name)
    for entry in entries:
        if not entry.is_file():
            continue
        if entry.name.startswith("."):
            if entry.name.endswith(".tmp") and FILE_SUFFIX in entry.name:
                _skip(entry.path, "a partial write (the rank died while saving its profile)")
            continue
        document = _read_rank_file(entry.path)
        if document is not None:
            document["file"] = entry.name
            documents.append(document)
    return documents


def _skip(path: str, reason: str) -> None:
    warnings.warn(f"xlanb: skipped {path}: {reason}", RankFileWarning, stacklevel=4)


#: Bytes read to recognise a profile before parsing the whole file (a checkpoint or log in
#: the same directory is skipped without being read).
SNIFF_BYTES = 512


def _read_rank_file(path: str) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as handle:
            head = handle.read(SNIFF_BYTES)
            if not head.lstrip().startswith(b"{"):
                _skip(path, f"not an {FORMAT_NAME} file (not JSON)")
                return None
            if FORMAT_NAME.encode() not in head:
                _skip(path, f"not an {FORMAT_NAME} file")
                return None
            document = read_profile_json(head + handle.read(), path)
    except FormatError as error:
        _skip(path, error.reason if error.line <= 1 else f"line {error.line}: {error.reason}")
        return None
    except OSError as error:
        _skip(path, f"unreadable ({error.strerror})")
        return None
    rank = document["meta"].get("environment", {}).get("rank")
    if not isinstance(rank, dict) or not {"rank", "world_size", "run_id"} <= set(rank):
        _skip(path, "a profile without a rank (saved with Profile.save, not xlanb.record)")
        return None
    if (problem := _identity_problem(rank)) is not None:
        _skip(path, problem)
        return None
    return document


#: The largest world size a rank file may claim (the merge lists the missing ranks).
MAX_WORLD_SIZE = 1 << 20


def _identity_problem(identity: dict[str, Any]) -> str | None:
    """Why a rank file's identity cannot be right (None when it can)."""
    rank, size, run_id = identity["rank"], identity["world_size"], identity["run_id"]
    if not isinstance(rank, int) or isinstance(rank, bool):
        return f"rank {rank!r} is not a whole number"
    if not isinstance(size, int) or isinstance(size, bool):
        return f"world size {size!r} is not a whole number"
    if not isinstance(run_id, str):
        return f"run id {run_id!r} is not text"
    if rank < 0:
        return f"rank {rank} is negative"
    if not 1 <= size <= MAX_WORLD_SIZE:
        return f"world size {size} is not between 1 and {MAX_WORLD_SIZE}"
    if rank >= size:
        return f"rank {rank} is not below the world size {size}"
    return None


def _identity(document: dict[str, Any]) -> dict[str, Any]:
    return document["meta"]["environment"]["rank"]


def _one_run(
    directory: Path, documents: list[dict[str, Any]], run_id: str | None, name: str | None
) -> list[dict[str, Any]]:
    """The documents of one run and name, or a RanksError saying why there is no such set."""
    if not documents:
        raise RanksError(
            f"{directory} holds no rank profile (files *.rank<N>{FILE_SUFFIX} "
            "written by xlanb.record)"
        )
    runs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for document in documents:
        runs[str(_identity(document)["run_id"])].append(document)
    if run_id is not None:
        if run_id not in runs:
            raise RanksError(
                f"{directory} holds no ranks of run {run_id!r}; its runs: "
                + "; ".join(_describe_run(r, d) for r, d in runs.items())
            )
        documents = runs[run_id]
    elif len(runs) > 1:
        ordered = sorted(runs.items(), key=lambda item: _written(item[1]), reverse=True)
        raise RanksError(
            f"{directory} mixes ranks of {len(runs)} runs: "
            + "; ".join(_describe_run(r, d) for r, d in ordered)
            + f". Load one run with load_ranks({str(directory)!r}, run_id=...), or delete "
            "the files of the runs you do not want (each rank of a new run replaces only "
            "its own file)."
        )
    names: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for document in documents:
        names[str(document["meta"].get("name", ""))].append(document)
    if name is not None:
        if name not in names:
            raise RanksError(
                f"{directory} holds no profile named {name!r}; names: "
                + ", ".join(repr(n) for n in sorted(names))
            )
        documents = names[name]
    elif len(names) > 1:
        raise RanksError(
            f"{directory} holds profiles of {len(names)} names ("
            + ", ".join(f"{n!r}: ranks {_ranks_of(d)}" for n, d in names.items())
            + "); pass name=... to load one"
        )
    by_rank: dict[int, dict[str, Any]] = {}
    for document in documents:
        rank = int(_identity(document)["rank"])
        if rank in by_rank:
            raise RanksError(
                f"rank {rank} of run {_identity(document)['run_id']!r} appears "
                f"twice: {by_rank[rank]['file']} and {document['file']}; delete "
                "one"
            )
        by_rank[rank] = document
    sizes = {int(_identity(d)["world_size"]) for d in documents}
    if len(sizes) > 1:
        raise RanksError(
            f"the ranks of run {_identity(documents[0])['run_id']!r} disagree on "
            f"the world size ({', '.join(str(s) for s in sorted(sizes))}): "
            "files of an earlier launch with the same run id? Delete them or set "
            "XLANB_RUN_ID per launch"
        )
    return [by_rank[rank] for rank in sorted(by_rank)]


def _ranks_of(documents: list[dict[str, Any]]) -> str:
    return format_ranks([int(_identity(d)["rank"]) for d in documents])


def _written(documents: list[dict[str, Any]]) -> float:
    return max(float(d["meta"].get("started_at") or 0) for d in documents)


def _describe_run(run_id: str, documents: list[dict[str, Any]]) -> str:
    files = ", ".join(d["file"] for d in documents[:3]) + (
        f" and {len(documents) - 3} more" if len(documents) > 3 else ""
    )
    started = pd.Timestamp(_written(documents), unit="s").strftime("%Y-%m-%d %H:%M:%S")
    return f"run {run_id!r} (ranks {_ranks_of(documents)}, started {started} UTC: {files})"


# -- merging --------------------------------------------------------------------------------
def merge(documents: list[dict[str, Any]], directory: Path | None = None) -> Profile:
    """One Profile from the parsed rank documents of one run (ordered by rank)."""
    identities = [_identity(d) for d in documents]
    metas = [d["meta"] for d in documents]
    frames = {
        frame: _merge_frame(frame, documents, identities)
        for frame in FRAME_NAMES
        if frame != "findings"
    }
    world_size = int(identities[0]["world_size"])
    present = [int(i["rank"]) for i in identities]
    environment = {
        key: value for key, value in metas[0].get("environment", {}).items() if key != "rank"
    }
    environment["ranks"] = {
        "run_id": str(identities[0]["run_id"]),
        "run_id_source": identities[0].get("run_id_source", ""),
        "world_size": world_size,
        "directory": str(directory) if directory is not None else "",
        "present": present,
        "missing": sorted(set(range(world_size)) - set(present)),
        "per_rank": [
            {
                "rank": int(identity["rank"]),
                "host": identity.get("host", ""),
                "device": identity.get("device", ""),
                "pid": identity.get("pid"),
                "local_rank": identity.get("local_rank"),
                "wall_seconds": float(meta.get("wall_seconds") or 0.0),
                "started_at": float(meta.get("started_at") or 0.0),
                "failed": bool(meta.get("failed")),
                "error": str(meta.get("error") or ""),
                "file": document.get("file", ""),
            }
            for identity, meta, document in zip(identities, metas, documents, strict=True)
        ],
    }
    failed = [
        (int(i["rank"]), m) for i, m in zip(identities, metas, strict=True) if m.get("failed")
    ]
    profile = Profile(
        name=str(metas[0].get("name", "")),
        backends=list(dict.fromkeys(b for m in metas for b in m.get("backends", []))),
        started_at=min(float(m.get("started_at") or 0.0) for m in metas),
        wall_seconds=max(float(m.get("wall_seconds") or 0.0) for m in metas),
        failed=bool(failed),
        error="; ".join(f"rank {rank}: {meta.get('error', '')}" for rank, meta in failed),
        source=str(metas[0].get("source", "")),
        notes=_merged_notes(identities, metas),
        environment=environment,
        **frames,
    )
    # The rank rules over the merged frames are added by xlanb.analysis.derive.
    profile.findings = rank_findings_frame(_rank_findings(documents, identities))
    return profile


def _merged_notes(identities: list[dict[str, Any]], metas: list[dict[str, Any]]) -> list[str]:
    by_note: dict[str, list[int]] = defaultdict(list)
    for identity, meta in zip(identities, metas, strict=True):
        for note in meta.get("notes", []):
            by_note[str(note)].append(int(identity["rank"]))
    return [f"{_rank_label(ranks)}: {note}" for note, ranks in by_note.items()]


def _rank_label(ranks: list[int]) -> str:
    return f"rank{'s' if len(ranks) > 1 else ''} {format_ranks(ranks)}"


def _rank_findings(
    documents: list[dict[str, Any]], identities: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each rank's own findings, one row per distinct (severity, title) with its ranks."""
    grouped: dict[tuple[str, str], dict[str, Any]] = {}
    for document, identity in zip(documents, identities, strict=True):
        spec = document["frames"].get("findings") or {}
        data = spec.get("data", {})
        titles = data.get("title", [])
        for index, title in enumerate(titles):
            key = (str(data["severity"][index]), str(title))
            row = grouped.setdefault(
                key,
                {
                    "severity": key[0],
                    "title": key[1],
                    "detail": data["detail"][index],
                    "advice": data["advice"][index],
                    "ranks_list": [],
                },
            )
            row["ranks_list"].append(int(identity["rank"]))
    rows = []
    for row in grouped.values():
        ranks = row.pop("ranks_list")
        row["title"] = f"{_rank_label(ranks)}: {row['title']}"
        row["rank"] = ranks[0] if len(ranks) == 1 else None
        row["ranks"] = format_ranks(ranks)
        rows.append(row)
    return rows


def _merge_frame(
    frame: str, documents: list[dict[str, Any]], identities: list[dict[str, Any]]
) -> pd.DataFrame:
    """One frame of every rank, concatenated at the list level (one DataFrame built per
    frame, not one per rank: the merge stays fast at 64 ranks)."""
    columns: dict[str, list[Any]] = {column: [] for column in FRAME_COLUMNS[frame]}
    dtypes: dict[str, set[str]] = defaultdict(set)
    ranks: list[int] = []
    for document, identity in zip(documents, identities, strict=True):
        spec = document["frames"].get(frame)
        if not spec or not spec.get("columns"):
            continue
        data = spec["data"]
        length = len(data[spec["columns"][0]])
        for column in spec["columns"]:
            if column not in columns:
                columns[column] = [None] * len(ranks)
            if length:
                dtypes[column].add(str(spec.get("dtypes", {}).get(column, "object")))
        if not length:
            continue
        for column, values in columns.items():
            values.extend(data[column] if column in data else [None] * length)
        ranks.extend([int(identity["rank"])] * length)
    return _frame_of_columns(
        {"rank": ranks, **columns},
        {c: _dtype(frame, c, dtypes.get(c, set())) for c in columns},
        frame,
    )


def _dtype(frame: str, column: str, declared: set[str]) -> str:
    """One dtype for a column from the dtypes the rank files declare for it."""
    if not declared:
        return str(empty_frame(frame)[column].dtype) if column in FRAME_COLUMNS[frame] else "object"
    if len(declared) == 1:
        return next(iter(declared))
    if declared <= {"int64", "float64", "Int64"}:
        return "float64"
    return "object"


def _frame_of_columns(
    columns: dict[str, list[Any]], dtypes: dict[str, str], frame: str
) -> pd.DataFrame:
    built: dict[str, Any] = {"rank": np.asarray(columns.pop("rank"), dtype=np.int64)}
    for column, values in columns.items():
        built[column] = _series(values, dtypes[column])
    return pd.DataFrame(built)


def _series(values: list[Any], dtype: str) -> Any:
    if dtype == "float64":
        return np.asarray(values, dtype=np.float64)  # None becomes NaN
    if dtype in ("int64", "bool") and None not in values:
        return np.asarray(values, dtype=dtype)
    if dtype in ("int64", "Int64"):
        return pd.array(values, dtype="Int64")
    if dtype == "boolean" or dtype == "bool":
        return pd.array(values, dtype="boolean")
    return pd.Series(values, dtype=object)
