"""What the views show that is computed from several frames (:class:`xlanb.core.profile.Shown`):
the trace's windows, the host's activity, the programs it never saw, the forced-sync places, a
merged profile's rank table.
:func:`xlanb.analysis.derive` keeps it on the Profile; ``Profile.shown`` asks again through the
seam where a Profile was built without it."""

from __future__ import annotations

import pandas as pd

from xlanb.analysis.attribution import forced_sync_places
from xlanb.analysis.breakdown import (
    host_activity,
    later_windows,
    traced_window,
    traced_window_name,
    untraced_programs,
)
from xlanb.analysis.ranks import RANK_COLUMNS, is_multi_rank, outliers, rank_table
from xlanb.core.profile import Profile, Shown
from xlanb.core.seams import provides

#: The rank table of a profile of one process (copied: building an empty frame costs more).
_NO_RANKS = pd.DataFrame(columns=RANK_COLUMNS)


@provides("shown")
def shown(profile: Profile) -> Shown:
    """The :class:`Shown` of `profile` as its frames are now."""
    ranks = rank_table(profile) if is_multi_rank(profile) else _NO_RANKS.copy()
    return Shown(
        traced_window=traced_window(profile),
        traced_window_name=traced_window_name(profile),
        later_windows=later_windows(profile),
        host_activity=host_activity(profile),
        untraced_programs=untraced_programs(profile),
        forced_syncs=forced_sync_places(profile.executions, profile.fallbacks),
        rank_table=ranks,
        rank_outliers=outliers(ranks),
    )
