"""When each compile and execution of a Profile ran: the one derivation of an event's span that
the timeline chart and the Chrome trace share.

``time`` is when an event ended (the runtimes stamp their samples when the timed section ends;
xlanb's own timings follow), so an event started at ``time - seconds``. Only events whose end
and duration are known have a span: rows with a missing ``time`` or ``seconds`` (offline
files, forced syncs) and aggregated execution rows (``count`` other than 1) are skipped, never
invented.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from xlanb.core.profile import Profile
from xlanb.core.units import event_span, finite_number


@dataclass(frozen=True)
class GraphEvent:
    """One compile or execution with a known span (``seconds`` may be negative where it is an
    estimate: a view that cannot draw that skips the event)."""

    kind: str  # "compile" or "execute"
    #: The ``compiles`` or ``executions`` row, as a dict.
    row: dict[str, Any]
    #: When it ended (epoch seconds) and how long it took.
    end: float
    seconds: float

    @property
    def start(self) -> float:
        return self.end - self.seconds


def graph_events(profile: Profile) -> list[GraphEvent]:
    """The compiles, then the single executions, of `profile` that have a span, in frame
    order."""
    events = []
    for kind, frame in (("compile", profile.compiles), ("execute", profile.executions)):
        for row in frame.to_dict("records"):
            if kind == "execute" and finite_number(row.get("count")) != 1:
                continue  # aggregated rows have no single start
            span = event_span(row["time"], row["seconds"])
            if span is not None:
                events.append(GraphEvent(kind, row, float(row["time"]), span[1]))
    return events
