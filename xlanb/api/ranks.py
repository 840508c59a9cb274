"""``record(dir)``: profile this process like ``xlanb.profile`` and write its Profile, stamped
with its rank, into a directory shared by every rank of the run."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from types import TracebackType
from typing import Any

import pandas as pd

from xlanb.api.profiling import derive_capture, profile
from xlanb.capture import rank_identity as identity_module
from xlanb.capture.backends.base import CaptureOptions
from xlanb.capture.collectives import CollectiveProbe
from xlanb.capture.rank_identity import RankIdentity
from xlanb.core.files import write_atomically
from xlanb.core.profile import Profile, make_frame
from xlanb.formats.rank_files import DEFAULT_NAME, rank_file_name


def save_rank(
    profile: Profile,
    directory: str | os.PathLike,
    *,
    identity: RankIdentity | None = None,
    rank: int | None = None,
    world_size: int | None = None,
    run_id: str | None = None,
) -> Path:
    """Stamp `profile` with this process's rank identity (``environment["rank"]``) and write
    it into `directory` atomically; returns the path.

    `identity` defaults to :func:`xlanb.ranks.identify` (with `rank`, `world_size`, `run_id`
    overriding what it finds). The file is written under a hidden temporary name in the same
    directory and renamed, so a rank that dies while writing leaves no partial profile."""
    if identity is None:
        identity = identity_module.identify(rank, world_size, run_id)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    profile.environment["rank"] = {**identity.to_dict(), "name": profile.name}
    path = directory / rank_file_name(profile.name, identity.rank)
    write_atomically(path, json.dumps(profile.to_dict(), allow_nan=True))
    return path


class record:
    """Profile a ``with`` block of one rank of a multi-process run and write its Profile into
    `directory` (shared by all ranks) when the block ends; :func:`load_ranks` merges them.

    >>> with xlanb.record("profiles/", name="train") as prof:
    ...     train(steps=100)

    `backend` and `graphs` are those of :class:`xlanb.profile`. Rank, world size and the run
    id shared by all ranks are found from the runtime, the launcher's environment or the
    coordinator (see :mod:`xlanb.capture.rank_identity`); `rank`, `world_size` and `run_id` override
    them. `collectives=True` also times ``torch.distributed`` collectives during the block
    (see :mod:`xlanb.capture.collectives`).

    The file is ``<directory>/<name>.rank<rank>.xlanb.json``, written atomically; it is
    written also when the block raises (the Profile is then marked failed and the exception
    propagates unchanged). ``path`` and ``identity`` are set after the block.
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        name: str | None = None,
        backend: str | list[str] = "auto",
        graphs: bool = True,
        *,
        rank: int | None = None,
        world_size: int | None = None,
        run_id: str | None = None,
        collectives: bool = True,
    ) -> None:
        self.directory = Path(directory)
        self._capture = profile(
            backend=backend, name=name or DEFAULT_NAME, graphs=graphs, finish=self._derive
        )
        self._collective_rows: dict[str, list[dict[str, Any]]] = {}
        self._overrides = {"rank": rank, "world_size": world_size, "run_id": run_id}
        self._probe = CollectiveProbe() if collectives else None
        self.path: Path | None = None
        self.identity: RankIdentity | None = None

    @property
    def profile(self) -> Profile:
        return self._capture.profile

    def __enter__(self) -> Profile:
        self.directory.mkdir(parents=True, exist_ok=True)
        if self._overrides["run_id"] is None:
            identity_module.publish_run_id()
        profile = self._capture.__enter__()
        if self._probe is not None:
            self._probe.start()
        return profile

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool:
        self._collective_rows = self._probe.stop() if self._probe is not None else {}
        self._capture.__exit__(exc_type, exc, traceback)
        profile = self._capture.profile
        try:
            self.identity = identity_module.identify(**self._overrides)
            self.path = save_rank(profile, self.directory, identity=self.identity)
        except Exception as error:
            if exc_type is None:
                raise
            warnings.warn(f"xlanb: this rank's profile was not written: {error!r}", stacklevel=2)
        return False  # never swallow the user's exception

    def _derive(self, profile: Profile, options: CaptureOptions) -> None:
        """The timed collectives join the captured frames, then the capture is derived (its
        findings and time account see them)."""
        for frame_name, frame_rows in self._collective_rows.items():
            current, added = getattr(profile, frame_name), make_frame(frame_name, frame_rows)
            setattr(
                profile,
                frame_name,
                added if current.empty else pd.concat([current, added], ignore_index=True),
            )
        derive_capture(profile, options)
