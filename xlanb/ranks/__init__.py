"""Multi-process runs: each rank records its own Profile into a shared directory
(:class:`record`); :func:`load_ranks` merges them into one Profile whose frames carry a
``rank`` column, with findings for the rank that compiles, falls back, runs or waits
differently from the others.

In each process, then in the notebook::

    with xlanb.ranks.record("profiles/", name="train"):
        train()
    prof = xlanb.ranks.load_ranks("profiles/")   # per-rank table and skew findings

The rank, world size and run id: :mod:`xlanb.capture.rank_identity`. This package is the
public home of these names, defined in the layers.
"""

from __future__ import annotations

from xlanb.analysis.ranks import rank_table
from xlanb.api import load_ranks
from xlanb.api.ranks import record, save_rank
from xlanb.capture.rank_identity import RankIdentity, identify
from xlanb.formats.rank_files import rank_file_name
from xlanb.offline.ranks import RankFileWarning, RanksError, is_ranks_dir

__all__ = [
    "RankFileWarning",
    "RankIdentity",
    "RanksError",
    "identify",
    "is_ranks_dir",
    "load_ranks",
    "rank_file_name",
    "rank_table",
    "record",
    "save_rank",
]
