"""Two profiles' headline numbers as people compare them: units, change in % and ×."""

from __future__ import annotations

from xlanb.core.schema import HOST_KINDS, OTHER_HOST_KIND
from xlanb.core.units import format_seconds

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


def comparison_text(comparison) -> str:
    """The comparison as plain text: the headline numbers, then the findings' changes."""
    rows = [("", comparison.a.name, comparison.b.name, "change"), *summary_rows(comparison)]
    widths = [max(len(str(row[i])) for row in rows) for i in range(4)]
    lines = [f"{comparison.a.name} -> {comparison.b.name}"]
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
