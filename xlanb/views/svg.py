"""The static SVG twin of a chart made by :mod:`xlanb.views.charts` or
:mod:`xlanb.views.step_chart`: lines, markers, horizontal and vertical bars, with the axes'
domains, titles and annotations, for front ends and exports without plotly.js."""

from __future__ import annotations

from typing import Any

from xlanb.views.escape import escape

#: Readable on light and dark backgrounds alike.
INK = "#888888"


def _vertical_bars_svg(
    bars: list[dict[str, Any]], left: float, right: float, top: float, bottom: float
) -> list[str]:
    """Grouped vertical bars with their values written above them."""
    categories = list(dict.fromkeys(c for t in bars for c in t["x"]))
    position_of = {category: position for position, category in enumerate(categories)}
    y_max = max((y for t in bars for y in t["y"]), default=1.0) or 1.0
    step = (right - left) / max(len(categories), 1)
    width = step * 0.8 / len(bars)
    parts = [
        f'<line x1="{left:.1f}" y1="{bottom:.1f}" x2="{right:.1f}" y2="{bottom:.1f}" '
        f'stroke="{INK}"/>'
    ]
    for index, trace in enumerate(bars):
        color = trace["marker"]["color"]
        for category, value in zip(trace["x"], trace["y"], strict=True):
            x = left + position_of[category] * step + step * 0.1 + index * width
            height = value / y_max * (bottom - top - 12)
            parts.append(
                f'<rect x="{x:.1f}" y="{bottom - height:.1f}" width="{width:.1f}" '
                f'height="{max(height, 0.5):.1f}" fill="{color}"/>'
            )
            parts.append(
                f'<text x="{x + width / 2:.1f}" y="{bottom - height - 2:.1f}" '
                f'text-anchor="middle" font-size="10">{value:.3g}</text>'
            )
    for position, category in enumerate(categories):
        parts.append(
            f'<text x="{left + (position + 0.5) * step:.1f}" y="{bottom + 14:.1f}" '
            f'text-anchor="middle">{escape(str(category))}</text>'
        )
    return parts


def _stacked_bars_svg(
    bars: list[dict[str, Any]], left: float, right: float, top: float, bottom: float
) -> list[str]:
    """Vertical bars stacked per category (each trace one segment), the total above each."""
    categories = list(dict.fromkeys(c for t in bars for c in t["x"]))
    position_of = {category: position for position, category in enumerate(categories)}
    totals = dict.fromkeys(categories, 0.0)
    for trace in bars:
        for category, value in zip(trace["x"], trace["y"], strict=True):
            totals[category] += value
    y_max = max(totals.values(), default=1.0) or 1.0
    step = (right - left) / max(len(categories), 1)
    scale = (bottom - top - 12) / y_max
    parts = [
        f'<line x1="{left:.1f}" y1="{bottom:.1f}" x2="{right:.1f}" y2="{bottom:.1f}" '
        f'stroke="{INK}"/>'
    ]
    stacked = dict.fromkeys(categories, 0.0)
    for trace in bars:
        color = trace["marker"]["color"]
        opacities = trace["marker"].get("opacity") or [1.0] * len(trace["x"])
        for category, value, opacity in zip(trace["x"], trace["y"], opacities, strict=True):
            x = left + position_of[category] * step + step * 0.1
            y = bottom - (stacked[category] + value) * scale
            stacked[category] += value
            faded = f' fill-opacity="{opacity:g}"' if opacity < 1.0 else ""
            parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{step * 0.8:.1f}" '
                f'height="{value * scale:.1f}" fill="{color}"{faded}/>'
            )
    for position, category in enumerate(categories):
        x = left + (position + 0.5) * step
        if len(categories) <= 12:  # totals above the bars while they fit
            parts.append(
                f'<text x="{x:.1f}" y="{bottom - totals[category] * scale - 2:.1f}" '
                f'text-anchor="middle" font-size="9">{totals[category]:.3g}</text>'
            )
        if len(categories) <= 40:
            parts.append(
                f'<text x="{x:.1f}" y="{bottom + 14:.1f}" text-anchor="middle">'
                f"{escape(str(category))}</text>"
            )
    return parts


def figure_svg(figure: dict[str, Any], width: int = 760) -> str:
    """A static SVG of a figure made here: lines, markers and horizontal bars, with the axes'
    domains, titles and annotations. Enough to read the numbers without plotly.js."""
    layout = figure["layout"]
    height = int(layout.get("height", 300))
    margin = layout["margin"]
    plot_w, plot_h = width - margin["l"] - margin["r"], height - margin["t"] - margin["b"]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'class="xlanb-chart" font-family="sans-serif" font-size="11" fill="{INK}">'
    ]
    by_axis: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for trace in figure["data"]:
        by_axis.setdefault((trace.get("xaxis", "x"), trace.get("yaxis", "y")), []).append(trace)
    categories: list[str] = []
    for (x_name, y_name), traces in by_axis.items():
        x_axis = layout.get("xaxis" + x_name[1:], {})
        y_axis = layout.get("yaxis" + y_name[1:], {})
        x_dom, y_dom = x_axis.get("domain", [0, 1]), y_axis.get("domain", [0, 1])
        left = margin["l"] + x_dom[0] * plot_w
        right = margin["l"] + x_dom[1] * plot_w
        top = margin["t"] + (1 - y_dom[1]) * plot_h
        bottom = margin["t"] + (1 - y_dom[0]) * plot_h
        bars = [t for t in traces if t["type"] == "bar"]
        if bars and bars[0].get("orientation") != "h":
            draw = _stacked_bars_svg if layout.get("barmode") == "stack" else _vertical_bars_svg
            parts.extend(draw(bars, left, right, top, bottom))
            y_title = y_axis.get("title", {}).get("text", "")
            parts.append(
                f'<text x="{left - 4:.1f}" y="{top + 8:.1f}" text-anchor="end">'
                f"{escape(y_title)}</text>"
            )
            continue
        if bars:
            categories = list(dict.fromkeys(c for t in bars for c in t["y"]))
            x_max = (
                max(
                    (b + w for t in bars for b, w in zip(t["base"], t["x"], strict=True)),
                    default=1.0,
                )
                or 1.0
            )
            step = (bottom - top) / max(len(categories), 1)
            row_of = {name: row for row, name in enumerate(categories)}  # names are distinct
            for t in bars:
                color = t["marker"]["color"]
                for y, b, w in zip(t["y"], t["base"], t["x"], strict=True):
                    row = row_of[y]
                    parts.append(
                        f'<rect x="{left + b / x_max * (right - left):.1f}" '
                        f'y="{top + row * step + step * 0.2:.1f}" '
                        f'width="{max(w / x_max * (right - left), 1):.1f}" '
                        f'height="{step * 0.6:.1f}" fill="{color}"/>'
                    )
            for row, name in enumerate(categories):
                parts.append(
                    f'<text x="{left - 4:.1f}" y="{top + (row + 0.6) * step:.1f}" '
                    f'text-anchor="end">{escape(name)}</text>'
                )
            y_values = [0.0, x_max]
        else:
            xs = [x for t in traces for x in t["x"]]
            ys = [y for t in traces for y in t["y"]]
            # a lane under a timeline shares its time axis (the axis' range)
            x_lo, x_hi = x_axis.get("range") or (min(xs), max(xs) or 1)
            y_hi = max(ys) or 1.0
            for t in traces:
                points = [
                    (
                        left + (x - x_lo) / ((x_hi - x_lo) or 1) * (right - left),
                        bottom - y / y_hi * (bottom - top),
                    )
                    for x, y in zip(t["x"], t["y"], strict=True)
                ]
                color = t.get("line", t.get("marker", {})).get("color", INK)
                path_points = points
                if t.get("line", {}).get("shape") == "hv":  # steps: level until the next x
                    path_points = [
                        corner
                        for here, after in zip(points, [*points[1:], None], strict=True)
                        for corner in ([here] if after is None else [here, (after[0], here[1])])
                    ]
                if "lines" in t["mode"]:
                    path = " ".join(f"{px:.1f},{py:.1f}" for px, py in path_points)
                    parts.append(f'<polyline points="{path}" fill="none" stroke="{color}"/>')
                if "markers" in t["mode"]:
                    for (px, py), label in zip(
                        points, t.get("text", [""] * len(points)), strict=True
                    ):
                        parts.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{color}"/>')
                        if label:
                            parts.append(
                                f'<text x="{px - 4:.1f}" y="{py - 6:.1f}" '
                                f'text-anchor="end">{escape(label)}</text>'
                            )
            y_values = [0.0, y_hi]
        parts.append(
            f'<line x1="{left:.1f}" y1="{bottom:.1f}" x2="{right:.1f}" '
            f'y2="{bottom:.1f}" stroke="{INK}"/>'
        )
        y_title = y_axis.get("title", {}).get("text", "")
        x_title = x_axis.get("title", {}).get("text", "")
        parts.append(f'<text x="{left:.1f}" y="{bottom + 14:.1f}">0</text>')
        right_label = f"{y_values[1]:.3g}" if bars else x_title
        parts.append(
            f'<text x="{right:.1f}" y="{bottom + 14:.1f}" text-anchor="end">'
            f"{escape(right_label)}</text>"
        )
        if bars:
            parts.append(
                f'<text x="{(left + right) / 2:.1f}" y="{bottom + 28:.1f}" '
                f'text-anchor="middle">{escape(x_title)}</text>'
            )
        if not bars:
            parts.append(
                f'<text x="{left - 4:.1f}" y="{top + 8:.1f}" text-anchor="end">'
                f"{y_values[1]:.3g}</text>"
            )
            parts.append(
                f'<text x="{left - 4:.1f}" y="{(top + bottom) / 2:.1f}" '
                f'text-anchor="end">{escape(y_title)}</text>'
            )
    for note in layout.get("annotations", []):
        x = margin["l"] + note["x"] * plot_w
        y = margin["t"] + (1 - note["y"]) * plot_h - 2
        parts.append(f'<text x="{x:.1f}" y="{y:.1f}" font-size="12">{escape(note["text"])}</text>')
    parts.append("</svg>")
    return "".join(parts)
