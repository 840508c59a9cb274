"""Two profiles' headline numbers as people compare them: units, change in % and ×; and the
verdict, first: whether the second is faster or slower, and where a slower one's time grew."""

from __future__ import annotations

from xlanb.core.schema import HOST_KINDS, OTHER_HOST_KIND
from xlanb.core.units import format_seconds
from xlanb.views.summary import account_parts

#: Readable names of the summary's keys, in the order shown.
LABELS = {
    "wall_seconds": "wall",
    "compiles": "compiles",
    "compile_seconds": "compile time",
    "executions": "executions",
    "execute_seconds": "execute time",
    "transfers": "transfers",
    **{kind.key: kind.label for kind in HOST_KINDS.values()},
}
#: Kinds of host work left out of a comparison where both profiles have none (CPU fallbacks,
#: the alarm, are always shown).
_OPTIONAL = {kind.key for kind in HOST_KINDS.values() if kind is not OTHER_HOST_KIND}


def _value(key: str, value: float) -> str:
    if key == "wall_seconds" and value == 0:
        return "-"  # offline files have no wall time
    if key.endswith("_seconds"):
        return format_seconds(value) if value == value else "-"
    return f"{int(value)}" if value == value else "-"


def change_text(key: str, a: float, b: float) -> str:
    """``−6 (−100%)``, ``−1.23 s (−45%, 0.55×)``, ``+3 (new)``, ``=``."""
    if a != a or b != b or (key == "wall_seconds" and 0 in (a, b)):
        return "-"
    if a == b:
        return "="
    difference = b - a
    sign = "+" if difference > 0 else "−"
    amount = format_seconds(abs(difference)) if key.endswith("_seconds") else f"{abs(difference):g}"
    if a == 0:
        return f"{sign}{amount} (new)"
    share = f"{sign}{abs(difference) / a:.0%}"
    if not key.endswith("_seconds"):
        return f"{sign}{amount} ({share})"
    ratio = b / a
    shown = f"{ratio:.0f}" if ratio >= 10 else f"{ratio:.2f}"  # 1.03x, not 1x
    return f"{sign}{amount} ({share}, {shown}×)"


def summary_rows(comparison) -> list[tuple[str, str, str, str]]:
    """(label, a, b, change) per headline number; kinds of host work 0 in both are left out."""
    summary = comparison.summary
    rows = []
    for key, label in LABELS.items():
        if key not in summary.index:
            continue
        a, b = float(summary.loc[key, "a"]), float(summary.loc[key, "b"])
        if key in _OPTIONAL and a == 0 and b == 0:
            continue
        rows.append((label, _value(key, a), _value(key, b), change_text(key, a, b)))
    return rows


def verdict(comparison) -> tuple[str, bool]:
    """``("after is slower than before: wall 2.04 s → 2.52 s (+24%); the time account grew
    in compile +580.0 ms (compiles 1 → 2)", True)``: the line, and whether b is slower;
    ("", False) where either has no wall time (offline files)."""
    a, b = comparison.a, comparison.b
    before, after = float(a.wall_seconds), float(b.wall_seconds)
    if not (before > 0 and after > 0):
        return "", False
    if after == before:
        return f"{b.name} took as long as {a.name}", False
    slower = after > before
    ratio = after / before
    share = (
        f"{ratio:.1f}× as long" if ratio >= 2 else f"{'+' if slower else '−'}{abs(ratio - 1):.0%}"
    )
    line = (
        f"{b.name} is {'slower' if slower else 'faster'} than {a.name}: wall "
        f"{format_seconds(before)} → {format_seconds(after)} ({share})"
    )
    if not slower:
        return line, False
    seconds_before = {bucket: seconds for bucket, seconds, _ in account_parts(a)}
    grown = sorted(
        (
            (seconds - seconds_before.get(bucket, 0.0), bucket)
            for bucket, seconds, _ in account_parts(b)
            if seconds > seconds_before.get(bucket, 0.0)
        ),
        reverse=True,
    )
    if grown:
        line += "; the time account grew in " + ", ".join(
            f"{bucket} +{format_seconds(extra)}" for extra, bucket in grown[:3]
        )
    counts = comparison.summary
    more = [
        f"{LABELS[key]} {int(counts.loc[key, 'a'])} → {int(counts.loc[key, 'b'])}"
        for key in ("compiles", *(kind.key for kind in HOST_KINDS.values()))
        if key in counts.index and counts.loc[key, "b"] > counts.loc[key, "a"]
    ]
    if more:
        line += f" ({', '.join(more)})"
    return line, True


def comparison_text(comparison) -> str:
    """The comparison as plain text: the verdict, the headline numbers, then the findings'
    changes."""
    rows = [("", comparison.a.name, comparison.b.name, "change"), *summary_rows(comparison)]
    widths = [max(len(str(row[i])) for row in rows) for i in range(4)]
    lines = [f"{comparison.a.name} -> {comparison.b.name}"]
    line, _slower = verdict(comparison)
    if line:
        lines.append(line)
    for row in rows:
        lines.append(
            "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True))
        )
    if not comparison.findings.empty:
        lines.append("findings:")
        for finding in comparison.findings.itertuples():
            change = f" ({finding.change})" if finding.change else ""
            lines.append(f"  {finding.status:<8} {finding.title}{change}")
    return "\n".join(lines)
