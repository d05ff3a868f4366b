"""Small inline SVG charts: strings in, one ``<svg>`` string out.

Colours and fonts are presentation attributes on the elements, not page CSS, so a
chart copied out of the report still renders the same.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

WIDTH = 680
FONT = 'font-family="system-ui, sans-serif" font-size="12"'
AXIS = "#555"
GRID = "#e3e3e3"
BLUE = "#2b6cb0"
BAND = "#90cdf4"
WIN = "#38a169"
DRAW = "#a0aec0"
LOSS = "#e53e3e"
SERIES = ("#2b6cb0", "#dd6b20", "#805ad5", "#319795", "#d53f8c", "#718096")


def _fmt(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def ticks(low: float, high: float, count: int = 5, whole: bool = False) -> list[float]:
    """Round tick values covering [low, high]; ``whole`` keeps the step at 1 or more."""
    if high <= low:
        high = low + 1.0
    raw = max((high - low) / count, 1.0 if whole else 0.0)
    power = 10.0 ** math.floor(math.log10(raw))
    steps = (1, 2, 5, 10) if whole else (1, 2, 2.5, 5, 10)
    step = next(m * power for m in steps if m * power >= raw)
    first = math.floor(low / step) * step
    return [first + i * step for i in range(int(math.ceil((high - first) / step)) + 1)]


def _svg(height: int, body: list[str], title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(title)}" {FONT}>'
        f"<title>{escape(title)}</title>" + "".join(body) + "</svg>"
    )


def _text(x: float, y: float, text: str, anchor: str = "start", fill: str = AXIS,
          extra: str = "") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{fill}"{extra}>'
            f"{escape(text)}</text>")


def line_with_band(
    points: Sequence[tuple[float, float, float, float]],
    x_range: tuple[float, float],
    title: str,
    x_label: str,
    y_label: str,
    clip: float = 800.0,
) -> str:
    """A line ``(x, y)`` inside a band ``(low, high)`` with a dot on each point; values
    beyond ``±clip`` (and infinite bounds) are drawn at the edge. A dashed line marks
    y = 0."""
    left, right, top, bottom = 64, 20, 28, 44
    height = 300
    plot_w, plot_h = WIDTH - left - right, height - top - bottom
    clamp = [(x, *(max(-clip, min(clip, v)) for v in (y, lo, hi))) for x, y, lo, hi in points]
    x_lo, x_hi = x_range
    if x_hi <= x_lo:
        x_lo, x_hi = x_lo - 1, x_lo + 1
    ys = [v for p in clamp for v in p[1:]] + [0.0]
    y_ticks = ticks(min(ys), max(ys))
    y_lo, y_hi = y_ticks[0], y_ticks[-1]

    def sx(x: float) -> float:  # 8 px inside the frame, so a point at either end shows
        return left + 8 + (x - x_lo) / (x_hi - x_lo) * (plot_w - 16)

    def sy(y: float) -> float:
        return top + (y_hi - y) / (y_hi - y_lo) * plot_h

    body = [_text(left, 16, title, extra=' font-weight="bold"')]
    for t in y_ticks:
        body.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{sy(t):.1f}" '
                    f'y2="{sy(t):.1f}" stroke="{GRID}"/>')
        body.append(_text(left - 6, sy(t) + 4, _fmt(t), "end"))
    for t in ticks(x_lo, x_hi, 6, whole=True):
        if x_lo <= t <= x_hi:
            body.append(_text(sx(t), top + plot_h + 16, _fmt(t), "middle"))
    body.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{sy(0):.1f}" y2="{sy(0):.1f}" '
                f'stroke="{AXIS}" stroke-dasharray="4 3"/>')
    if clamp:
        upper = " ".join(f"{sx(x):.1f},{sy(hi):.1f}" for x, _, _, hi in clamp)
        lower = " ".join(f"{sx(x):.1f},{sy(lo):.1f}" for x, _, lo, _ in reversed(clamp))
        body.append(f'<polygon class="ci-band" points="{upper} {lower}" fill="{BAND}" '
                    f'fill-opacity="0.45" stroke="none"/>')
        line = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y, _, _ in clamp)
        body.append(f'<polyline class="elo-line" points="{line}" fill="none" '
                    f'stroke="{BLUE}" stroke-width="2"/>')
        if len(clamp) <= 60:  # few points: a dot and an error bar each, so one point shows
            for x, y, lo, hi in clamp:
                body.append(f'<line x1="{sx(x):.1f}" x2="{sx(x):.1f}" y1="{sy(lo):.1f}" '
                            f'y2="{sy(hi):.1f}" stroke="{BLUE}" stroke-opacity="0.5"/>')
                body.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{BLUE}"/>')
    body.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" '
                f'fill="none" stroke="{AXIS}"/>')
    body.append(_text(left + plot_w / 2, height - 8, x_label, "middle"))
    body.append(_text(14, top + plot_h / 2, y_label, "middle",
                      extra=f' transform="rotate(-90 14 {top + plot_h / 2:.1f})"'))
    return _svg(height, body, title)


def _legend(items: Sequence[tuple[str, str]], x: float, y: float) -> list[str]:
    out = []
    for name, color in items:
        out.append(f'<rect x="{x:.1f}" y="{y - 9:.1f}" width="10" height="10" fill="{color}"/>')
        out.append(_text(x + 14, y, name))
        x += 24 + 7 * len(name)
    return out


def stacked_bars(
    rows: Sequence[tuple[str, Sequence[int]]],
    segments: Sequence[tuple[str, str]],
    title: str,
) -> str:
    """One horizontal bar per row, split into ``segments`` (name, colour) by count;
    each bar is as long as its row's total relative to the longest."""
    left, right, top, row_h = 170, 60, 44, 26
    height = top + row_h * max(len(rows), 1) + 12
    plot_w = WIDTH - left - right
    longest = max((sum(values) for _, values in rows), default=0) or 1
    body = [_text(8, 16, title, extra=' font-weight="bold"')]
    body += _legend(segments, left, 34)
    for i, (label, values) in enumerate(rows):
        y = top + i * row_h
        body.append(_text(left - 8, y + 16, label, "end", fill="#222"))
        x = float(left)
        for value, (name, color) in zip(values, segments, strict=True):
            if not value:
                continue
            w = value / longest * plot_w
            body.append(f'<rect class="bar" x="{x:.1f}" y="{y + 3}" width="{w:.1f}" '
                        f'height="{row_h - 6}" fill="{color}"><title>{escape(label)}: '
                        f"{value} {escape(name)}</title></rect>")
            if w >= 18:
                body.append(_text(x + w / 2, y + 17, str(value), "middle", fill="#fff"))
            x += w
        body.append(_text(x + 6, y + 17, f"{sum(values)}"))
    return _svg(height, body, title)


def bars(
    groups: Sequence[tuple[str, Sequence[float | None]]],
    series: Sequence[str],
    title: str,
    unit: str = "",
    digits: int = 1,
    skip_zero: bool = False,
) -> str:
    """Horizontal bars, one group per label and one bar per series in it; a missing
    value (None) shows "n/a". ``skip_zero`` leaves out zero bars but the first series'."""
    left, right, top = 170, 90, 44
    bar_h, gap = 16, 10
    shown = [
        [(name, v) for j, (name, v) in enumerate(zip(series, values, strict=True))
         if not (skip_zero and j and v == 0)]
        for _, values in groups
    ]
    height = top + sum(bar_h * len(b) + gap for b in shown) + 8
    plot_w = WIDTH - left - right
    largest = max((v for _, values in groups for v in values if v), default=0.0) or 1.0
    colors = {name: SERIES[i % len(SERIES)] for i, name in enumerate(series)}
    body = [_text(8, 16, title, extra=' font-weight="bold"')]
    if len(series) > 1:
        body += _legend([(s, colors[s]) for s in series], left, 34)
    y0 = top
    for (label, _), group in zip(groups, shown, strict=True):
        body.append(_text(left - 8, y0 + bar_h * len(group) / 2 + 4, label, "end", fill="#222"))
        for j, (name, value) in enumerate(group):
            y = y0 + j * bar_h
            if value is None:
                body.append(_text(left + 4, y + 12, "n/a"))
                continue
            w = max(value / largest * plot_w, 1.0 if value else 0.0)
            body.append(f'<rect class="bar" x="{left}" y="{y + 1}" width="{w:.1f}" '
                        f'height="{bar_h - 2}" fill="{colors[name]}"><title>{escape(label)} '
                        f"{escape(name)}: {value:.{digits}f}{unit}</title></rect>")
            body.append(_text(left + w + 4, y + 12, f"{value:.{digits}f}{unit}"))
        y0 += bar_h * len(group) + gap
    body.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{height - 8}" stroke="{AXIS}"/>')
    return _svg(height, body, title)


def histogram(edges: Sequence[float], counts: Sequence[int], title: str, x_label: str) -> str:
    """Vertical bars between consecutive ``edges``."""
    left, right, top, bottom = 48, 20, 28, 44
    height = 260
    plot_w, plot_h = WIDTH - left - right, height - top - bottom
    body = [_text(8, 16, title, extra=' font-weight="bold"')]
    if counts:
        y_ticks = ticks(0, max(max(counts), 1), whole=True)
        y_hi = y_ticks[-1]
        x_lo, x_hi = edges[0], edges[-1]

        def sx(x: float) -> float:
            return left + (x - x_lo) / (x_hi - x_lo) * plot_w

        for t in y_ticks:
            y = top + plot_h - t / y_hi * plot_h
            body.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" '
                        f'stroke="{GRID}"/>')
            body.append(_text(left - 6, y + 4, _fmt(t), "end"))
        for lo, hi, c in zip(edges, edges[1:], counts, strict=False):
            h = c / y_hi * plot_h
            body.append(f'<rect class="bar" x="{sx(lo) + 1:.1f}" y="{top + plot_h - h:.1f}" '
                        f'width="{max(sx(hi) - sx(lo) - 2, 1):.1f}" height="{h:.1f}" '
                        f'fill="{BLUE}"><title>{_fmt(lo)}–{_fmt(hi)}: {c}</title></rect>')
        for t in ticks(x_lo, x_hi, 8, whole=True):
            if x_lo <= t <= x_hi:
                body.append(_text(sx(t), top + plot_h + 16, _fmt(t), "middle"))
    body.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" '
                f'stroke="{AXIS}"/>')
    body.append(_text(left + plot_w / 2, height - 8, x_label, "middle"))
    return _svg(height, body, title)


def lines(
    series: Sequence[tuple[str, Sequence[tuple[float, float]]]],
    x_range: tuple[float, float],
    title: str,
    x_label: str,
    y_label: str,
    rules: Sequence[tuple[float, str]] = (),
    percent: bool = False,
) -> str:
    """One polyline per ``(name, points)`` and a dashed horizontal rule per
    ``(y, label)`` (SPRT bounds, say); ``percent`` shows y values times 100 with ``%``."""
    left, right, top, bottom = 64, 20, 44, 44
    height = 300
    plot_w, plot_h = WIDTH - left - right, height - top - bottom
    ys = [y for _, pts in series for _, y in pts] + [y for y, _ in rules] + [0.0]
    y_ticks = ticks(min(ys), max(ys))
    y_lo, y_hi = y_ticks[0], y_ticks[-1]
    x_lo, x_hi = x_range
    if x_hi <= x_lo:
        x_lo, x_hi = x_lo - 1, x_lo + 1

    def sx(x: float) -> float:
        return left + 8 + (x - x_lo) / (x_hi - x_lo) * (plot_w - 16)

    def sy(y: float) -> float:
        return top + (y_hi - y) / (y_hi - y_lo) * plot_h

    body = [_text(8, 16, title, extra=' font-weight="bold"')]
    body += _legend([(name, SERIES[i % len(SERIES)]) for i, (name, _) in enumerate(series)],
                    left, 34)
    for t in y_ticks:
        body.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{sy(t):.1f}" '
                    f'y2="{sy(t):.1f}" stroke="{GRID}"/>')
        body.append(_text(left - 6, sy(t) + 4, _fmt(100 * t) + " %" if percent else _fmt(t),
                          "end"))
    for t in ticks(x_lo, x_hi, 6, whole=True):
        if x_lo <= t <= x_hi:
            body.append(_text(sx(t), top + plot_h + 16, _fmt(t), "middle"))
    for y, name in rules:
        body.append(f'<line class="rule" x1="{left}" x2="{left + plot_w}" y1="{sy(y):.1f}" '
                    f'y2="{sy(y):.1f}" stroke="{LOSS}" stroke-dasharray="6 4"/>')
        body.append(_text(left + plot_w - 4, sy(y) - 4, name, "end", fill=LOSS))
    for i, (name, pts) in enumerate(series):
        color = SERIES[i % len(SERIES)]
        coords = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
        body.append(f'<polyline class="series" points="{coords}" fill="none" '
                    f'stroke="{color}" stroke-width="2"><title>{escape(name)}</title>'
                    "</polyline>")
        if len(pts) <= 60:
            body += [f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5" fill="{color}"/>'
                     for x, y in pts]
    body.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" '
                f'fill="none" stroke="{AXIS}"/>')
    body.append(_text(left + plot_w / 2, height - 8, x_label, "middle"))
    body.append(_text(14, top + plot_h / 2, y_label, "middle",
                      extra=f' transform="rotate(-90 14 {top + plot_h / 2:.1f})"'))
    return _svg(height, body, title)


def boxes(rows: Sequence[tuple[str, Sequence[float]]], title: str, unit: str = "") -> str:
    """A horizontal box per row from ``(min, p25, p50, p75, p95, max)``: whiskers from
    min to p95, the box p25–p75, a tick at the median, a dot at the maximum; log scale
    when the values span more than a factor of 20."""
    left, right, top, row_h = 170, 30, 44, 30
    height = top + row_h * max(len(rows), 1) + 30
    plot_w = WIDTH - left - right
    values = [v for _, box in rows for v in box if v is not None]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    log = low > 0 and high / low > 20
    if log:
        lo, hi = math.log10(low), math.log10(high)
        tick_values = [10.0 ** e for e in range(math.floor(lo), math.ceil(hi) + 1)]
    else:
        tick_values = ticks(0.0, high or 1.0)
        lo, hi = tick_values[0], tick_values[-1]
    if log:
        lo, hi = math.log10(tick_values[0]), math.log10(tick_values[-1])

    def sx(v: float) -> float:
        pos = math.log10(max(v, 1e-9)) if log else v
        return left + (pos - lo) / ((hi - lo) or 1.0) * plot_w

    body = [_text(8, 16, title, extra=' font-weight="bold"'),
            _text(left, 34, ("log scale, " if log else "") +
                  "whiskers min–p95, box p25–p75, bar median, dot max")]
    bottom = top + row_h * max(len(rows), 1)
    for t in tick_values:
        body.append(f'<line x1="{sx(t):.1f}" x2="{sx(t):.1f}" y1="{top}" y2="{bottom}" '
                    f'stroke="{GRID}"/>')
        body.append(_text(sx(t), bottom + 16, _fmt(t) + unit, "middle"))
    for i, (label, box) in enumerate(rows):
        y = top + i * row_h + row_h / 2
        body.append(_text(left - 8, y + 4, label, "end", fill="#222"))
        mn, q1, med, q3, p95, mx = box
        color = SERIES[i % len(SERIES)]
        body.append(f'<line x1="{sx(mn):.1f}" x2="{sx(p95):.1f}" y1="{y:.1f}" y2="{y:.1f}" '
                    f'stroke="{color}"/>')
        body.append(f'<rect class="box" x="{sx(q1):.1f}" y="{y - 8:.1f}" '
                    f'width="{max(sx(q3) - sx(q1), 1):.1f}" height="16" fill="{color}" '
                    f'fill-opacity="0.35" stroke="{color}"><title>{escape(label)}: median '
                    f"{_fmt(med)}{unit}, p25–p75 {_fmt(q1)}–{_fmt(q3)}{unit}, p95 "
                    f"{_fmt(p95)}{unit}, max {_fmt(mx)}{unit}</title></rect>")
        body.append(f'<line x1="{sx(med):.1f}" x2="{sx(med):.1f}" y1="{y - 8:.1f}" '
                    f'y2="{y + 8:.1f}" stroke="{color}" stroke-width="3"/>')
        body.append(f'<circle cx="{sx(mx):.1f}" cy="{y:.1f}" r="3" fill="{color}"/>')
    return _svg(height, body, title)
