"""The timeline of one streamed recording as a self-contained HTML page: inline SVG (no script, no external
file) in the style of every ego_adr page, a legend, numbered alerts whose marks carry their evidence as
tooltips, and the alerts table. Same content as the PNG (:mod:`ego_adr.stream.timeline`)."""

from __future__ import annotations

import html
from pathlib import Path

from ego_adr.stream.timeline_data import (
    FALLBACK_COLOUR,
    abbrev,
    colour,
    cut_label,
    end_band,
    end_check,
    evidence_text,
    expected_spans,
    localised,
    omitted_label,
    segment_label,
    title,
)

LEFT, WIDTH, ROW, TOP, PLOT_H = 300, 820, 24, 34, 120
#: a step label's characters in the 300-px label column at 11 px (longer ones end in an ellipsis; tooltip whole)
LABEL_CHARS = 46


def _esc(x) -> str:
    return html.escape(str(x), quote=True)


def _rtf(rtf) -> str:
    """The real-time factor as the stream CLI prints it (processing time / recording time, two decimals)."""
    return f"real-time factor {rtf:.2f} (processing time / recording time); " if isinstance(rtf, (int, float)) else ""


def _axis(dur: float) -> list[float]:
    """Round tick values in seconds, about ten over the recording."""
    raw = dur / 10
    step = next(s for s in (0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1200, 3600, 1e9) if s >= raw)
    return [k * step for k in range(int(dur // step) + 1)]


def _rows(out, steps, x, y, spans, segments, end_labels):
    out.append(f'<text x="4" y="{y(-1) + 4:.1f}" fill="#777">(no step)</text>')
    for i, s in enumerate(steps):
        out.append(f'<text x="4" y="{y(i) + 4:.1f}"><title>{_esc(s)}</title>{i + 1}. {_esc(cut_label(s, LABEL_CHARS))}</text>')
        out.append(f'<line x1="{LEFT}" x2="{LEFT + WIDTH}" y1="{y(i):.1f}" y2="{y(i):.1f}" stroke="#eee"/>')
    for seg in segments or []:
        if seg.get("step_index") is None or seg.get("start") is None:
            continue
        lab = segment_label(seg)
        x0, x1 = x(seg["start"]), x(seg["end"])
        out.append(
            f'<g class="segment"><rect x="{x0:.1f}" y="{y(seg["step_index"]) - 9:.1f}" '
            f'width="{max(1, x1 - x0):.1f}" height="18" fill="{colour(lab)}" opacity="0.55"><title>annotated: '
            f"{_esc(', '.join(seg.get('labels') or [lab]))} {seg['start']:.1f}-{seg['end']:.1f} s</title></rect>"
            f'<text x="{x0 + 3:.1f}" y="{y(seg["step_index"]) + 4:.1f}" text-anchor="start" '
            f'font-size="10">{_esc(abbrev(lab))}</text></g>'
        )
    word = "omitted?" if "not annotated" in omitted_label(end_labels) else "omitted"
    for i, (lo, hi) in spans.items():
        out.append(
            f'<g class="omitted"><rect x="{x(lo):.1f}" y="{y(i) - 9:.1f}" width="{max(2, x(hi) - x(lo)):.1f}" '
            f'height="18" fill="url(#hatch)" stroke="#b2182b" stroke-dasharray="4"><title>step {i + 1}: '
            f"{_esc(omitted_label(end_labels))} ({lo:.1f}-{hi:.1f} s)</title></rect>"
            f'<text x="{(x(lo) + x(hi)) / 2:.1f}" y="{y(i) + 4:.1f}" text-anchor="middle" font-size="10" '
            f'fill="#b2182b">{word}</text></g>'
        )


def _marks(out, result, x, y, band):
    reached, weak = localised(result)
    if reached:
        pts = []
        for k, (t, j) in enumerate(reached):
            if k:
                pts.append(f"{x(t):.1f},{y(reached[k - 1][1]):.1f}")
            pts.append(f"{x(t):.1f},{y(j):.1f}")
        out.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="#333" stroke-width="1"/>')
    for t, j in reached:
        out.append(
            f'<circle class="reached" cx="{x(t):.1f}" cy="{y(j):.1f}" r="3.5" fill="#333"><title>{t:.1f} s: '
            f"step {j + 1} reached (confident match)</title></circle>"
        )
    for t, j in weak:
        out.append(
            f'<circle class="fallback" cx="{x(t):.1f}" cy="{y(j):.1f}" r="4" fill="none" '
            f'stroke="{FALLBACK_COLOUR}"><title>{t:.1f} s: weak match to step {j + 1} (difflib fallback, '
            f"not counted as progress)</title></circle>"
        )
    for k, a in enumerate(result.get("alerts") or [], 1):
        i = a["step_index"] if a["step_index"] is not None else -1
        at_end = a.get("kind") == "end"
        cx, cy = (x((band[0] + band[1]) / 2) if at_end else x(a["t"])), y(i)
        tip = _esc(
            f"#{k} {a['t']:.1f} s{' (end check)' if at_end else ''} {a['error_type']} p={a['prob']:.2f} "
            f"{evidence_text(a.get('evidence'))}"[:600]
        )
        shape = (
            f'<rect x="{cx - 6:.1f}" y="{cy - 6:.1f}" width="12" height="12"'
            if at_end
            else f'<path d="M{cx - 7:.1f},{cy - 9:.1f} h14 l-7,11 z"'
        )
        out.append(
            f'<g class="alert {"end" if at_end else "window"}">{shape} fill="{colour(a["error_type"])}" '
            f'stroke="black"><title>{tip}</title></{"rect" if at_end else "path"}>'
            f'<text x="{cx + 8:.1f}" y="{cy - 6:.1f}" font-size="10">{k}</text></g>'
        )


def _prob_panel(out, result, x, base, dur, band, threshold):
    py = lambda p: base + PLOT_H * (1 - p)  # noqa: E731
    out.append(f'<rect x="{LEFT}" y="{base}" width="{WIDTH}" height="{PLOT_H}" fill="none" stroke="#ccc"/>')
    for p in (0, 0.25, 0.5, 0.75, 1.0):
        out.append(
            f'<line x1="{LEFT - 4}" x2="{LEFT}" y1="{py(p):.1f}" y2="{py(p):.1f}" stroke="#666"/>'
            f'<text x="{LEFT - 8}" y="{py(p) + 4:.1f}" text-anchor="end" font-size="10">{p:g}</text>'
        )
    out.append(f'<text x="4" y="{base + PLOT_H / 2:.1f}">P(error) per window</text>')
    out.append(
        f'<line x1="{LEFT}" x2="{LEFT + WIDTH}" y1="{py(threshold):.1f}" y2="{py(threshold):.1f}" '
        f'stroke="grey" stroke-dasharray="4"/><text x="{x(band[0]) - 4:.1f}" y="{py(threshold) - 3:.1f}" '
        f'text-anchor="end" font-size="10" fill="#555">threshold {threshold:g}</text>'
    )
    ticks = [t for t in result.get("ticks") or [] if not t.get("final")]
    poly = " ".join(f"{x(t['t']):.1f},{py(t['prob']):.1f}" for t in ticks)
    if poly:
        out.append(f'<polyline class="prob" points="{poly}" fill="none" stroke="#b2182b"/>')
    for t in ticks:
        out.append(
            f'<circle cx="{x(t["t"]):.1f}" cy="{py(t["prob"]):.1f}" r="2.5" fill="#b2182b"><title>{t["t"]:.1f} s: '
            f"P(error) {t['prob']:.2f}</title></circle>"
        )
    end = end_check(result)
    if end is not None:
        cx = x((band[0] + band[1]) / 2)
        out.append(
            f'<g class="endcheck"><rect x="{cx - 5:.1f}" y="{py(end["prob"]) - 5:.1f}" width="10" height="10" '
            f'fill="#b2182b" stroke="black"><title>end check: P(error) {end["prob"]:.2f} '
            f'{_esc(end.get("error_type") or "")}</title></rect><text x="{cx:.1f}" y="{base - 4}" '
            f'text-anchor="middle" font-size="10">end check {end["prob"]:.2f}</text></g>'
        )
    for t in _axis(dur):
        out.append(
            f'<text x="{x(t):.1f}" y="{base + PLOT_H + 16}" text-anchor="middle" font-size="10">{t:g}</text>'
        )
    out.append(
        f'<text x="{LEFT + WIDTH / 2}" y="{base + PLOT_H + 32}" text-anchor="middle" font-size="11">'
        "seconds into the recording</text>"
    )


def _legend(used: set[str], spans: dict, end_labels) -> str:
    items = [
        f'<span><i style="background:{colour(lab)};opacity:.55"></i>annotated: {_esc(lab)}</span>'
        for lab in sorted(used)
    ]
    if spans:
        items.append(
            f'<span><i style="border:1px dashed #b2182b"></i>{_esc(omitted_label(end_labels))}</span>'
        )
    items += [
        '<span><i style="background:#333;border-radius:6px"></i>localised step (reached: TF-IDF / model)</span>',
        f'<span><i style="border:1px solid {FALLBACK_COLOUR};border-radius:6px"></i>weak match (difflib '
        "fallback, not progress)</span>",
        "<span>&#9660; alert while watching (colour = type)</span>",
        "<span>&#9632; alert of the end check</span>",
        '<span><i style="background:#eee"></i>end band (end check)</span>',
    ]
    return '<div class="legend">' + "".join(items) + "</div>"


def write_html(
    result: dict,
    steps: list[str],
    path: Path,
    segments: list[dict] | None = None,
    threshold: float = 0.5,
    note: str = "",
    end_labels: list[str] | None = None,
) -> Path:
    from ego_adr.eval.html_page import page

    dur = max(float(result["duration"]), 1e-6)
    band = end_band(dur)
    n = max(1, len(steps))
    x = lambda t: LEFT + WIDTH * t / band[1]  # noqa: E731
    y = lambda i: TOP + (i + 1) * ROW + ROW / 2  # noqa: E731
    spans = expected_spans(n, segments, dur)
    base = TOP + (n + 1) * ROW + 40
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + WIDTH + 20}" height="{base + PLOT_H + 44}" '
        'font-family="sans-serif" font-size="11"><defs><pattern id="hatch" width="6" height="6" '
        'patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><line x1="0" y1="0" x2="0" y2="6" '
        'stroke="#b2182b" stroke-opacity="0.5"/></pattern></defs>',
        f'<rect x="{x(band[0]):.1f}" y="{TOP}" width="{x(band[1]) - x(band[0]):.1f}" '
        f'height="{base + PLOT_H - TOP}" fill="#eeeeee"/><text x="{x((band[0] + band[1]) / 2):.1f}" '
        f'y="{TOP - 4}" text-anchor="middle" font-size="10" fill="#555">end</text>',
    ]
    _rows(out, steps, x, y, spans, segments, end_labels)
    _marks(out, result, x, y, band)
    _prob_panel(out, result, x, base, dur, band, threshold)
    out.append("</svg>")
    used = {
        segment_label(s)
        for s in segments or []
        if s.get("step_index") is not None and s.get("start") is not None
    }
    rows = "".join(
        f"<tr><td>{k}</td><td>{a['t']:.1f}{' (end)' if a.get('kind') == 'end' else ''}</td>"
        f"<td>{_esc(a['error_type'])}</td><td>{a['prob']:.2f}</td>"
        f"<td>{'' if a['step_index'] is None else a['step_index'] + 1}</td>"
        f"<td>{_esc(cut_label(evidence_text(a.get('evidence')), 400))}</td></tr>"
        for k, a in enumerate(result.get("alerts") or [], 1)
    )
    body = (
        _legend(used, spans, end_labels)
        + "".join(out)
        + f"<h2>Alerts ({len(result.get('alerts') or [])})</h2><table class='metrics' id='alerts'><tr><th>#</th>"
        f"<th>t (s)</th><th>type</th><th>p</th><th>step</th><th>evidence</th></tr>{rows}</table>"
        f"<p class='muted'>{_rtf(result.get('rtf'))}recording {dur:.1f} s</p>"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page(title(result, note), body), encoding="utf-8")
    return path
