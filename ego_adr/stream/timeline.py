"""The timeline of one streamed recording, as a PNG (matplotlib, Agg) for reports and the README; the HTML page
with the same content is :mod:`ego_adr.stream.timeline_html`. Both draw what :mod:`ego_adr.stream.timeline_data`
derives from the stream's result, and nothing else.

Top panel, one row per procedure step: annotated segments (coloured by label, labelled), steps without a
segment marked where the procedure expected them, the monitor's localised step (filled where a step was reached
by a confident match, hollow grey for a difflib fallback), alerts (triangles while watching, squares in the end
band for the end check), each numbered and listed under the plot. Bottom panel: P(error) per window with its axis
values, the threshold, and the end check's probability in the end band.
"""

from __future__ import annotations

from pathlib import Path

from ego_adr.stream.timeline_data import (
    COLOURS,
    FALLBACK_COLOUR,
    abbrev,
    colour,
    cut_label,
    end_band,
    end_check,
    expected_spans,
    localised,
    omitted_label,
    segment_label,
    title,
)


def _segments(ax, segments, spans, end_labels) -> set[str]:
    used = set()
    for seg in segments or []:
        if seg.get("step_index") is None or seg.get("start") is None:
            continue
        lab = segment_label(seg)
        used.add(lab)
        w = seg["end"] - seg["start"]
        ax.barh(
            seg["step_index"],
            w,
            left=seg["start"],
            height=0.72,
            color=colour(lab),
            alpha=0.55,
            edgecolor=colour(lab),
        )
        ax.text(
            seg["start"] + w * 0.03,
            seg["step_index"] - 0.12,
            abbrev(lab),
            ha="left",
            va="center",
            fontsize=7,
            clip_on=True,
        )
    for i, (lo, hi) in spans.items():
        ax.barh(
            i, hi - lo, left=lo, height=0.72, fill=False, hatch="///", edgecolor="#b2182b", lw=0.8, ls="--"
        )
        ax.text(
            lo + (hi - lo) / 2,
            i,
            "omitted?" if "not annotated" in omitted_label(end_labels) else "omitted",
            ha="center",
            va="center",
            fontsize=7,
            color="#b2182b",
            clip_on=True,
        )
    return used


def _alerts(ax, alerts, duration, band) -> None:
    for k, a in enumerate(alerts, 1):
        y = a["step_index"] if a["step_index"] is not None else -1
        at_end = a.get("kind") == "end"
        x = band[0] + (band[1] - band[0]) * 0.5 if at_end else a["t"]
        ax.plot(
            x, y, marker="s" if at_end else "v", ms=9, color=colour(a["error_type"]), mec="black", zorder=5
        )
        ax.annotate(str(k), (x, y), xytext=(6, 5), textcoords="offset points", fontsize=7, zorder=6)


def _legend(ax, used, spans, end_labels) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [
        Patch(color=COLOURS.get(lab, "#444"), alpha=0.55, label=f"annotated: {lab}") for lab in sorted(used)
    ]
    if spans:
        handles.append(
            Patch(fill=False, hatch="///", edgecolor="#b2182b", ls="--", label=omitted_label(end_labels))
        )
    handles += [
        Line2D(
            [], [], color="#333", marker="o", ms=4, label="localised step (reached: TF-IDF / model match)"
        ),
        Line2D(
            [],
            [],
            ls="",
            marker="o",
            mfc="none",
            mec=FALLBACK_COLOUR,
            label="weak match (difflib fallback, not counted as progress)",
        ),
        Line2D(
            [], [], ls="", marker="v", color="#888", mec="black", label="alert while watching (colour = type)"
        ),
        Line2D([], [], ls="", marker="s", color="#888", mec="black", label="alert of the end check"),
    ]
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.005, 1.0), frameon=False)


def _prob_panel(axp, result, band, threshold) -> None:
    ticks = [t for t in result.get("ticks") or [] if not t.get("final")]
    axp.plot(
        [t["t"] for t in ticks],
        [t["prob"] for t in ticks],
        "-o",
        ms=3,
        color="#b2182b",
        label="P(error) per window",
    )
    axp.axhline(threshold, ls="--", color="grey", lw=0.8, label=f"threshold {threshold:g}")
    end = end_check(result)
    if end is not None:
        axp.plot(
            (band[0] + band[1]) / 2,
            end["prob"],
            "s",
            color="#b2182b",
            mec="black",
            label=f"end check p={end['prob']:.2f}",
        )
    axp.set_ylim(-0.03, 1.03)
    axp.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
    axp.set_ylabel("P(error)", fontsize=8)
    axp.set_xlabel("seconds into the recording", fontsize=8)
    axp.set_xlim(0, band[1])
    axp.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.005, 1.0), frameon=False)


DPI = 110


def write_png(
    result: dict,
    steps: list[str],
    path: Path,
    segments: list[dict] | None = None,
    threshold: float = 0.5,
    note: str = "",
    end_labels: list[str] | None = None,
) -> Path:
    """The timeline of :func:`timeline_figure` as a PNG at :data:`DPI`."""
    import matplotlib.pyplot as plt

    fig, _ = timeline_figure(result, steps, segments, threshold, note, end_labels)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def timeline_figure(
    result: dict,
    steps: list[str],
    segments: list[dict] | None = None,
    threshold: float = 0.5,
    note: str = "",
    end_labels: list[str] | None = None,
):
    """(figure, step axes) of the timeline, laid out: the axes map (seconds, step row) to where the figure draws
    them, so a caller can place more on it (or find what is drawn where)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dur = max(float(result["duration"]), 1e-6)
    band = end_band(dur)
    n = max(1, len(steps))
    alerts = result.get("alerts") or []
    fig, (ax, axp) = plt.subplots(
        2,
        1,
        figsize=(13, 2.9 + 0.34 * n + 0.16 * len(alerts[:30])),
        sharex=True,
        gridspec_kw={"height_ratios": [max(2, n + 1), 2.2]},
    )
    spans = expected_spans(n, segments, dur)
    used = _segments(ax, segments, spans, end_labels)
    reached, weak = localised(result)
    if reached:
        ax.step([t for t, _ in reached], [j for _, j in reached], where="post", color="#333", lw=1)
        ax.plot([t for t, _ in reached], [j for _, j in reached], "o", color="#333", ms=4)
    if weak:
        ax.plot([t for t, _ in weak], [j for _, j in weak], "o", mfc="none", mec=FALLBACK_COLOUR, ms=5)
    _alerts(ax, alerts, dur, band)
    for a_ in (ax, axp):
        a_.axvspan(*band, color="#eeeeee", zorder=0)
    ax.text((band[0] + band[1]) / 2, -1.05, "end\ncheck", ha="center", va="top", fontsize=7, color="#555")
    ax.set_yticks(
        range(-1, n), ["(no step)"] + [f"{i + 1}. {cut_label(s, 44)}" for i, s in enumerate(steps)], fontsize=7
    )
    ax.set_ylim(n - 0.4, -1.6)
    ax.grid(axis="y", color="#eeeeee")
    ax.set_title(title(result, note), fontsize=9)
    _legend(ax, used, spans, end_labels)
    _prob_panel(axp, result, band, threshold)
    lines = [
        f"{k}. {a['t']:.1f}s{' (end)' if a.get('kind') == 'end' else ''} {abbrev(a['error_type'])} "
        f"p={a['prob']:.2f} step {'-' if a['step_index'] is None else a['step_index'] + 1}"
        for k, a in enumerate(alerts[:30], 1)
    ] + ([f"... {len(alerts) - 30} more"] if len(alerts) > 30 else [])
    if lines:
        fig.text(0.01, 0.005, "alerts: " + "   ".join(lines), fontsize=7, wrap=True, va="bottom")
    fig.tight_layout(rect=(0, 0.04 + 0.012 * min(len(lines), 30) / 3, 1, 1))
    return fig, ax
