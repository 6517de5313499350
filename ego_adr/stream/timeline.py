"""The timeline of one streamed recording: procedure steps along the time axis, what the monitor believed at
each moment (localised step, error probability), the alerts, and the annotated segments when there are any.

Written twice: a PNG (matplotlib, Agg) for reports and the README, and a small self-contained HTML page (inline
SVG, no script, no external files) whose marks carry tooltips with the alert's evidence.
"""

from __future__ import annotations

import html
from pathlib import Path

from ego_adr.taxonomy import CORRECT

COLOURS = {CORRECT: "#8fbf7f", "Wrong object": "#d95f02", "Wrong action": "#e7298a", "Wrong order": "#7570b3",
           "Omission": "#1b9e77", "Unintended and unnecessary action": "#e6ab02", "Correct wrong action": "#66a61e",
           "Equipment failure": "#a6761d", "Others": "#666666"}


def _colour(label: str | None) -> str:
    return COLOURS.get(label or "", "#444444")


def write_png(result: dict, steps: list[str], path: Path, segments: list[dict] | None = None,
              threshold: float = 0.5, note: str = "") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dur = max(result["duration"], 1e-6)
    n = max(1, len(steps))
    fig, (ax, axp) = plt.subplots(2, 1, figsize=(12.5, 2.2 + 0.32 * n), sharex=True,
                                  gridspec_kw={"height_ratios": [max(2, n), 2]})
    for seg in segments or []:
        if seg.get("step_index") is None or seg.get("start") is None:
            continue
        lab = seg["labels"][0] if seg.get("labels") else CORRECT
        ax.barh(seg["step_index"], seg["end"] - seg["start"], left=seg["start"], height=0.8, color=_colour(lab),
                alpha=0.45, edgecolor="none")
    xs = [t["t"] for t in result["ticks"] if t.get("step_index") is not None]
    ys = [t["step_index"] for t in result["ticks"] if t.get("step_index") is not None]
    if xs:
        ax.step(xs, ys, where="post", color="#333333", lw=1.2, label="monitor: localised step")
        ax.plot(xs, ys, "o", color="#333333", ms=3)
    for a in result["alerts"]:
        y = a["step_index"] if a["step_index"] is not None else -0.7
        ax.plot(a["t"], y, marker="v" if a["kind"] == "window" else "s", ms=10, color=_colour(a["error_type"]),
                mec="black", label=f"alert: {a['error_type']}")
    ax.set_yticks(range(n))
    ax.set_yticklabels([f"{i + 1}. {s[:38]}" for i, s in enumerate(steps)], fontsize=7)
    ax.set_ylim(n - 0.4, -1.2)
    ax.set_title(f"{Path(result['video']).name}: {result['monitor'].get('monitor')} "
                 f"({result['monitor'].get('route') or '-'}){note}; shaded = annotated segments", fontsize=9)
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles))
    if uniq:
        ax.legend(uniq.values(), uniq.keys(), fontsize=7, loc="upper left", bbox_to_anchor=(1.005, 1.0))
    ts = [t["t"] for t in result["ticks"]]
    axp.plot(ts, [t["prob"] for t in result["ticks"]], "-o", ms=3, color="#b2182b")
    axp.axhline(threshold, ls="--", color="grey", lw=0.8)
    axp.set_ylim(-0.02, 1.02)
    axp.set_ylabel("P(error)", fontsize=8)
    axp.set_xlabel("seconds", fontsize=8)
    axp.set_xlim(0, dur)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_html(result: dict, steps: list[str], path: Path, segments: list[dict] | None = None,
               threshold: float = 0.5, note: str = "") -> Path:
    dur = max(result["duration"], 1e-6)
    n = max(1, len(steps))
    left, width, row = 260, 760, 22
    top = 30
    plot_h = 90
    h = top + n * row + 30 + plot_h + 30
    x = lambda t: left + width * t / dur  # noqa: E731
    y = lambda i: top + i * row + row / 2  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 20}" height="{h}" '
           'font-family="sans-serif" font-size="11">']
    for i, s in enumerate(steps):
        out.append(f'<text x="4" y="{y(i) + 4:.1f}">{i + 1}. {html.escape(s[:40])}</text>')
        out.append(f'<line x1="{left}" x2="{left + width}" y1="{y(i):.1f}" y2="{y(i):.1f}" stroke="#eee"/>')
    for seg in segments or []:
        if seg.get("step_index") is None or seg.get("start") is None:
            continue
        lab = seg["labels"][0] if seg.get("labels") else CORRECT
        out.append(f'<rect x="{x(seg["start"]):.1f}" y="{y(seg["step_index"]) - 8:.1f}" '
                   f'width="{max(1, x(seg["end"]) - x(seg["start"])):.1f}" height="16" fill="{_colour(lab)}" '
                   f'opacity="0.45"><title>annotated: {html.escape(", ".join(seg.get("labels", [])))} '
                   f'{seg["start"]:.1f}-{seg["end"]:.1f}s</title></rect>')
    pts = [(t["t"], t["step_index"]) for t in result["ticks"] if t.get("step_index") is not None]
    for t, i in pts:
        out.append(f'<circle cx="{x(t):.1f}" cy="{y(i):.1f}" r="3" fill="#333"><title>{t:.1f}s: monitor at step '
                   f'{i + 1}</title></circle>')
    for a in result["alerts"]:
        i = a["step_index"] if a["step_index"] is not None else -1
        tip = html.escape(f'{a["t"]:.1f}s {a["error_type"]} p={a["prob"]:.2f} {a["evidence"]}'[:600])
        out.append(f'<path d="M{x(a["t"]) - 6:.1f},{y(i) - 10:.1f} h12 l-6,10 z" fill="{_colour(a["error_type"])}" '
                   f'stroke="black"><title>{tip}</title></path>')
    base = top + n * row + 30
    out.append(f'<text x="4" y="{base + plot_h / 2:.1f}">P(error), threshold {threshold:g}</text>')
    out.append(f'<rect x="{left}" y="{base}" width="{width}" height="{plot_h}" fill="none" stroke="#ccc"/>')
    ty = base + plot_h * (1 - threshold)
    out.append(f'<line x1="{left}" x2="{left + width}" y1="{ty:.1f}" y2="{ty:.1f}" stroke="grey" '
               'stroke-dasharray="4"/>')
    poly = " ".join(f'{x(t["t"]):.1f},{base + plot_h * (1 - t["prob"]):.1f}' for t in result["ticks"])
    if poly:
        out.append(f'<polyline points="{poly}" fill="none" stroke="#b2182b"/>')
    for k in range(0, 11):
        t = dur * k / 10
        out.append(f'<text x="{x(t) - 8:.1f}" y="{base + plot_h + 16}">{t:.0f}s</text>')
    out.append("</svg>")
    rows = "".join(f"<tr><td>{a['t']:.1f}</td><td>{html.escape(a['error_type'])}</td><td>{a['prob']:.2f}</td>"
                   f"<td>{'' if a['step_index'] is None else a['step_index'] + 1}</td>"
                   f"<td>{html.escape(str(a['evidence'])[:300])}</td></tr>" for a in result["alerts"])
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>ego_adr stream timeline</title></head>"
            f"<body><h3>{html.escape(Path(result['video']).name)} -- {html.escape(str(result['monitor']))}"
            f"{html.escape(note)}</h3>"
            f"{''.join(out)}<h4>Alerts</h4><table border='1' cellpadding='3' style='border-collapse:collapse;"
            f"font-size:12px'><tr><th>t (s)</th><th>type</th><th>p</th><th>step</th><th>evidence</th></tr>{rows}"
            f"</table><p>real-time factor {result.get('rtf')}</p></body></html>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page)
    return path
