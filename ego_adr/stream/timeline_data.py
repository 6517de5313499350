"""What a stream timeline draws, computed once from what the stream recorded (for the PNG and the HTML page).

The timeline only reads the result of :func:`ego_adr.stream.runner.stream_recording` (ticks, end check,
alerts, monitor, settings) and the annotated segments it is given; everything else is derived here:

- the **localised step** of a tick is its narration's match (``evidence.match.index``), drawn as "reached"
  only for a confident match (TF-IDF or the model's choice, the monitor's own ``CONFIDENT_METHODS``); a difflib
  fallback is drawn apart, because the monitor does not count it as progress (docs/stream.md);
- a procedure step with **no annotated segment** is marked where the procedure expected it: after the last
  segment of an earlier step and before the first segment of a later one (EgoErrorVQA annotates only part of a
  recording's steps, so such a step is "omitted or not annotated" unless the caller says the recording's
  task-end labels include Omission);
- **end alerts** (raised by the end check) are drawn in an end band to the right of the recording, one row per
  step, so they never crowd the last seconds.
"""

from __future__ import annotations

from pathlib import Path

from ego_adr.reasoning.online import CONFIDENT_METHODS
from ego_adr.taxonomy import BY_OPTION, CORRECT

COLOURS = {
    CORRECT: "#8fbf7f",
    "Wrong object": "#d95f02",
    "Wrong action": "#e7298a",
    "Wrong order": "#7570b3",
    "Omission": "#1b9e77",
    "Unintended and unnecessary action": "#e6ab02",
    "Correct wrong action": "#66a61e",
    "Equipment failure": "#a6761d",
    "Others": "#666666",
}
FALLBACK_COLOUR = "#9a9a9a"
END_BAND = 0.10  # width of the end band, as a share of the recording (at least END_BAND_MIN_S seconds)
END_BAND_MIN_S = 2.0


def colour(label: str | None) -> str:
    return COLOURS.get(label or "", "#444444")


def abbrev(label: str | None) -> str:
    return BY_OPTION[label].abbrev if label in BY_OPTION else (label or "?")


def segment_label(seg: dict) -> str:
    labs = seg.get("labels") or [CORRECT]
    return labs[0]


def localised(result: dict) -> tuple[list[tuple[float, int]], list[tuple[float, int]]]:
    """``(reached, fallback)``: (t, step index) of ticks whose narration matched a step confidently, and of
    ticks whose match was only a difflib fallback (not counted as progress by the monitor)."""
    reached, weak = [], []
    for t in result.get("ticks") or []:
        m = (t.get("evidence") or {}).get("match") or {}
        j = m.get("index")
        if j is None or t.get("final"):
            continue
        (reached if m.get("method") in CONFIDENT_METHODS else weak).append((float(t["t"]), int(j)))
    return reached, weak


def expected_spans(
    n_steps: int, segments: list[dict] | None, duration: float
) -> dict[int, tuple[float, float]]:
    """``{step index: (start, end)}`` for steps with no annotated segment: where the procedure expected them
    (between the annotated segments of the steps before and after). Empty without segments."""
    segs = [s for s in segments or [] if s.get("step_index") is not None and s.get("start") is not None]
    if not segs:
        return {}
    have = {int(s["step_index"]) for s in segs}
    out = {}
    for i in range(n_steps):
        if i in have:
            continue
        before = [s["end"] for s in segs if s["step_index"] < i]
        after = [s["start"] for s in segs if s["step_index"] > i]
        lo = max(before) if before else 0.0
        hi = min(after) if after else duration
        if hi <= lo:  # steps done out of order: mark a short span at the earlier boundary
            hi = min(duration, lo + max(duration * 0.02, 0.5))
        out[i] = (lo, hi)
    return out


def omitted_label(end_labels: list[str] | None) -> str:
    if end_labels and "Omission" in end_labels:
        return "omitted (annotated Omission): expected here"
    return "no annotated segment (omitted or not annotated): expected here"


def end_band(duration: float) -> tuple[float, float]:
    """(start, end) seconds of the band right of the recording where the end check and its alerts are drawn."""
    w = max(duration * END_BAND, END_BAND_MIN_S)
    return duration, duration + w


def end_check(result: dict) -> dict | None:
    end = result.get("end")
    return end if isinstance(end, dict) and end.get("prob") is not None else None


def title(result: dict, note: str = "") -> str:
    """Recording, task, monitor and route, model (when recorded), window/stride/frames, threshold."""
    mon = result.get("monitor") or {}
    st = result.get("settings") or {}
    model = result.get("model") or mon.get("model")
    bits = [f"monitor {mon.get('monitor', '?')}" + (f" ({mon['route']})" if mon.get("route") else "")]
    if model:
        bits.append(f"model {Path(str(model)).name}")
    if st:
        bits.append(
            f"window {st.get('window', '?')} s, stride {st.get('stride', '?')} s, {st.get('frames', '?')} frames"
        )
    if mon.get("threshold") is not None:
        bits.append(f"threshold {mon['threshold']:g}")
    rec = Path(str(result.get("video") or "?")).name
    task = f" ({result['task_id']})" if result.get("task_id") else ""
    return f"{rec}{task}: " + ", ".join(bits) + (note or "")


def cut_label(text: str, n: int) -> str:
    """At most ``n`` characters, an ellipsis where cut, so a reader sees that a step's name goes on (issue 38 point
    12: names were cut mid-word with nothing to say so)."""
    return text if len(text) <= n else text[: n - 1].rstrip() + "\u2026"


def evidence_text(evidence) -> str:
    """An alert's evidence as a reader wants it (issue 38 point 12: the page printed the raw dict): why (the
    progress rule or the end check's reason), the classifier's keywords, the narration it read, the step match."""
    if not isinstance(evidence, dict):
        return "" if evidence is None else str(evidence)
    parts = [str(evidence[k]) for k in ("progress", "reason") if evidence.get(k)]
    for c in evidence.get("classifier") or []:
        if isinstance(c, dict):
            words = c.get("anomaly", []) + c.get("other", [])
            found = ", ".join(words) or c.get("contrast") or c.get("object_mismatch")
            if found:
                parts.append(f"classifier: {found}")
        else:
            parts.append(f"classifier: {c}")
    m = evidence.get("match") or {}
    if m.get("index") is not None:
        score = f", score {m['score']:.2f}" if isinstance(m.get("score"), (int, float)) else ""
        parts.append(f"matched step {m['index'] + 1} ({m.get('method') or 'match'}{score})")
    if evidence.get("narration"):
        parts.append(f"narration: \u201c{evidence['narration']}\u201d")
    known = {"progress", "reason", "classifier", "match", "narration"}
    parts += [f"{k}: {v}" for k, v in evidence.items() if k not in known and v not in (None, "", [], {})]
    return "; ".join(parts)
