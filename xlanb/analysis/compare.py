"""Differences between two profiles: headline numbers, counters, fallbacks, findings."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from xlanb.core.profile import Profile
from xlanb.core.seams import implementation


@dataclass
class Comparison:
    """``a`` vs ``b``: each frame has columns ``a``, ``b`` and ``change`` (b - a)."""

    a: Profile
    b: Profile
    summary: pd.DataFrame
    counters: pd.DataFrame
    fallbacks: pd.DataFrame
    findings: pd.DataFrame  # title, status ("gone" / "changed" / "added"), change

    def _repr_html_(self) -> str:
        return implementation("comparison_html")(self)

    def chart(self):
        """A grouped bar chart of the headline numbers, a beside b (an xlanb Chart: plotly
        where available, static SVG elsewhere)."""
        return implementation("comparison_chart")(self)

    def __repr__(self) -> str:
        return implementation("comparison_text")(self)


def _side_by_side(a: pd.Series, b: pd.Series) -> pd.DataFrame:
    frame = pd.concat({"a": a, "b": b}, axis=1).fillna(0)
    frame["change"] = frame["b"] - frame["a"]
    return frame


def compare(a: Profile, b: Profile) -> Comparison:
    """Compare two profiles (typically the same loop before and after a fix)."""
    summary = _side_by_side(
        pd.Series(a.summary(), dtype=float), pd.Series(b.summary(), dtype=float)
    )
    counters = _side_by_side(
        a.counters.groupby(["backend", "name"])["delta"].sum(),
        b.counters.groupby(["backend", "name"])["delta"].sum(),
    )
    fallbacks = _side_by_side(
        a.fallbacks.groupby("op")["count"].sum(), b.fallbacks.groupby("op")["count"].sum()
    )
    return Comparison(a, b, summary, counters, fallbacks, _findings(a, b))


_WHERE = re.compile(r"\s*\((?:cell line|at) [^)]*\)")
_NUMBER = re.compile(r"\d[\d.,]*")


def finding_kind(title: str) -> str:
    """A finding's title without its numbers and lines: "20 values read back (cell line 6)"
    and "1 value read back (cell line 14)" are the same kind of finding."""
    words = _NUMBER.sub("#", _WHERE.sub("", title)).split()
    return " ".join(word.rstrip("s") for word in words)


def _findings(a: Profile, b: Profile) -> pd.DataFrame:
    """``title, status, change``: findings gone, added, or of the same kind in both with
    other numbers (status ``changed``, change ``20 → 1``: the first number of each title)."""
    before = {finding_kind(t): t for t in a.findings["title"]}
    after = {finding_kind(t): t for t in b.findings["title"]}
    rows = []
    for kind, title in before.items():
        if kind not in after:
            rows.append({"title": title, "status": "gone", "change": ""})
        elif after[kind] != title:
            old, new = _NUMBER.search(title), _NUMBER.search(after[kind])
            change = f"{old.group()} → {new.group()}" if old and new else ""
            rows.append({"title": after[kind], "status": "changed", "change": change})
    rows += [
        {"title": title, "status": "added", "change": ""}
        for kind, title in after.items()
        if kind not in before
    ]
    order = {"gone": 0, "changed": 1, "added": 2}
    rows.sort(key=lambda row: (order[row["status"]], row["title"]))
    return pd.DataFrame(rows, columns=["title", "status", "change"])
