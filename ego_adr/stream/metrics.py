"""HelpMeOut's streaming metrics (M1-M4, paper Section 3.4) on video episodes, in seconds instead of steps, and
the point-of-error F1 of online mistake detection (PREGO).

Inputs: episodes from :mod:`ego_adr.stream.episodes` and one monitor output per episode (ticks with their
window and error probability, the end-of-recording check, the alerts). AUROC and AP are HelpMeOut's own
functions (:func:`ego_adr.helpmeout.metrics.auroc`, :func:`~ego_adr.helpmeout.metrics.average_precision`);
the step-based M3/M4 are restated here because a video episode's onsets are times and its error types are the
EgoErrorVQA options, not HelpMeOut's nine categories.

- **Step items.** HelpMeOut scores a monitor's probability per *step* (one action). Here a recording's steps are
  its annotated segments, each scored by the highest probability of a tick whose window overlaps it, and its
  task-end step, scored by the end check (positive when the recording has an omission: omissions are confirmed
  at the task end, HelpMeOut Figure 2).
- **M1**: does the recording contain an error? AUROC of the recording's score = the highest probability of its
  *steps* (per-step normalisation, HelpMeOut's definition: an episode's score is its highest step probability).
  A maximum over *ticks* grows with the recording's length (more draws), so a longer recording looked more
  errorful to any monitor with noise; ticks in unannotated time do not count either (nobody labelled them).
  What remains: a longer *segment* still overlaps more ticks than a short one, and a recording with more steps
  has more items, as a longer HelpMeOut episode has.
  ``M1_max_tick`` keeps the old maximum over every tick and the end check, for comparison.
- **M2**: step-level AUPRC over those items. ``segments`` pools the annotated segments, ``end`` the task-end
  items, ``all`` both. A constant or random monitor scores about the positive rate, which is reported beside it.
- **M3**, detection delay, false alarms and the **point-of-error F1**: :mod:`ego_adr.stream.detection` (an end
  alarm earns nothing unless the error is an omission; the delay runs from the error's onset).
- **M4**: per-type F1 of the set of error types named by a recording's alerts against its annotated set, over
  all scored recordings (correct ones have an empty set), macro over the types present.
- **Real-time factor**: processing seconds (decoding + model) over recording seconds, pooled.

:func:`compute_stream_metrics` scores one set of recordings; :func:`scored_subsets` scores all of them and the
fully annotated ones apart (a "correct" partially annotated recording only has correct annotated segments).
"""

from __future__ import annotations

import numpy as np

from ego_adr.helpmeout.metrics import auroc, average_precision
from ego_adr.taxonomy import CORRECT, OPTIONS

ERROR_TYPES = tuple(o for o in OPTIONS if o != CORRECT)
# Our choices where the papers give video no rule, written into every metrics.json beside the numbers.
SCORING = {"version": "2", "M1": "per-step (max over annotated segments and the task-end step)",
           "end_alarms": "count only for omissions; on a correct recording a false alarm",
           "delay": "from the error's onset", "point_of_error": "PREGO-style precision/recall/F1 of mistake steps, "
           "window alarms by time (erroneous unit first), end alarms one per omitted step"}


def segment_scores(episode: dict, output: dict) -> list[tuple[float, str | None]]:
    """(score, error type at that score) of every annotated segment: ticks whose window overlaps it."""
    out = []
    for seg in episode["segments"]:
        best, etype = 0.0, None
        for t in output["ticks"]:
            lo, hi = t["window"]
            if lo < seg["end"] and hi > seg["start"] and t["prob"] > best:
                best, etype = t["prob"], t.get("error_type")
        out.append((best, etype))
    return out


def _f1(tp: int, fp: int, fn: int) -> float:
    return 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)


def step_items(pairs: list[tuple[dict, dict]]) -> tuple[list, list, list, list]:
    """(labels, scores) of every annotated segment and of every task-end step, in recording order."""
    y_seg, s_seg, y_end, s_end = [], [], [], []
    for e, o in pairs:
        for seg, (score, _) in zip(e["segments"], segment_scores(e, o), strict=True):
            y_seg.append(seg["error"])
            s_seg.append(score)
        y_end.append(bool(e["end_labels"]))
        s_end.append(o["end"]["prob"])
    return y_seg, s_seg, y_end, s_end


def m1_scores(pairs: list[tuple[dict, dict]]) -> tuple[np.ndarray, np.ndarray]:
    """Per-step (the highest step item) and per-tick (the highest tick or end check) recording scores."""
    step = [max([sc for sc, _ in segment_scores(e, o)] + [o["end"]["prob"]]) for e, o in pairs]
    tick = [max([t["prob"] for t in o["ticks"]] + [o["end"]["prob"]]) for _, o in pairs]
    return np.array(step, float), np.array(tick, float)


def _m2(y_seg, s_seg, y_end, s_end) -> dict:
    y_all, s_all = np.array(y_seg + y_end, float), np.array(s_seg + s_end, float)
    return {"all": average_precision(y_all, s_all),
            "segments": average_precision(np.array(y_seg, float), np.array(s_seg, float)) if y_seg else float("nan"),
            "end": average_precision(np.array(y_end, float), np.array(s_end, float)),
            "positive_rate_all": float(y_all.mean()),
            "positive_rate_segments": float(np.mean(y_seg)) if y_seg else float("nan"),
            "positive_rate_end": float(np.mean(y_end)), "n_segments": len(y_seg)}


def _m4(pairs: list[tuple[dict, dict]]) -> dict:
    per: dict[str, float] = {}
    for c in ERROR_TYPES:
        tp = fp = fn = 0
        for e, o in pairs:
            t, p = c in e["categories"], c in {a["error_type"] for a in o.get("alerts") or []}
            tp += t and p
            fp += p and not t
            fn += t and not p
        per[c] = _f1(tp, fp, fn)
    present = [c for c in ERROR_TYPES if any(c in e["categories"] for e, _ in pairs)]
    return {"macro": float(np.mean([per[c] for c in present])) if present else float("nan"),
            "per_type": per, "types_present": present}


def compute_stream_metrics(episodes: list[dict], outputs: list[dict], tolerance: float = 8.0) -> dict:
    """Metrics over the episodes that have an output without ``failure`` (the others are counted)."""
    from ego_adr.stream.detection import m3_outcome, m3_summary, point_of_error, point_of_error_summary

    if len(episodes) != len(outputs):
        raise ValueError(f"{len(episodes)} episodes but {len(outputs)} outputs")
    pairs = [(e, o) for e, o in zip(episodes, outputs, strict=True) if not o.get("failure")]
    failed = len(episodes) - len(pairs)
    if not pairs:
        return {"episodes": 0, "failed_episodes": failed}
    errorful = np.array([not e["correct"] for e, _ in pairs])
    step_score, tick_score = m1_scores(pairs)
    outcomes = [m3_outcome(e, o, tolerance) for e, o in pairs]
    duration = sum(o["duration"] for _, o in pairs)
    processing = sum(o["processing_s"] for _, o in pairs)
    return {
        "scoring": SCORING, "episodes": len(pairs), "failed_episodes": failed,
        "errorful_episodes": int(errorful.sum()),
        "fully_annotated_episodes": sum(e.get("annotation") == "full" for e, _ in pairs),
        "M1": auroc(errorful, step_score), "M1_normalisation": "per-step", "M1_max_tick": auroc(errorful, tick_score),
        "M2": _m2(*step_items(pairs)), "M3": m3_summary(outcomes, tolerance), "M4": _m4(pairs),
        "PoE": {"all": point_of_error_summary([point_of_error(e, o, tolerance) for e, o in pairs]),
                "prego": point_of_error_summary([point_of_error(e, o, tolerance, prego=True) for e, o in pairs])},
        "recordings": {e["id"]: {"annotation": e.get("annotation", "partial"), "m1_step_score": float(sc), **oc}
                       for (e, _), sc, oc in zip(pairs, step_score, outcomes, strict=True)},
        "recording_s": round(duration, 3), "processing_s": round(processing, 3),
        "real_time_factor": processing / duration if duration else float("nan"),
    }


def scored_subsets(episodes: list[dict], outputs: list[dict], tolerance: float = 8.0) -> dict:
    """``{"all": ..., "fully_annotated": ...}`` (the second ``None`` when no recording is fully annotated)."""
    full = [k for k, e in enumerate(episodes) if e.get("annotation") == "full"]
    return {"all": compute_stream_metrics(episodes, outputs, tolerance),
            "fully_annotated": compute_stream_metrics([episodes[k] for k in full], [outputs[k] for k in full],
                                                      tolerance) if full else None}


def _f(x, pct: bool = False) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "-"
    return f"{100 * x:.1f}" if pct else f"{x:.3f}" if isinstance(x, float) else str(x)


def _sec(x) -> str:
    return "-" if x is None or np.isnan(x) else f"{x:.1f}"


def metrics_table(results: dict[str, dict]) -> str:
    """Markdown table, one row per monitor (``results[name]`` is one :func:`compute_stream_metrics` result)."""
    head = ("| monitor | recordings | M1 AUROC (per step) | M2 AUPRC (pos. rate) | M3 missed / early / on target / "
            "late | false alarm | delay s (median) | PoE P / R / F1 | PoE F1 (PREGO cut) | M4 macro F1 | "
            "real-time factor |")
    lines = [head, "|---|---:|---:|---:|---|---:|---:|---|---:|---:|---:|"]
    for name, m in results.items():
        if not m or not m.get("episodes"):
            lines.append(f"| {name} | 0 | - | - | - | - | - | - | - | - | - |")
            continue
        m3, poe = m["M3"], m["PoE"]["all"]
        lines.append(
            f"| {name} | {m['episodes']} | {_f(m['M1'])} | {_f(m['M2']['all'])} ({_f(m['M2']['positive_rate_all'])}) | "
            f"{_f(m3['missed'], True)} / {_f(m3['early'], True)} / {_f(m3['on_target'], True)} / "
            f"{_f(m3['late'], True)} | {_f(m3['false_alarm'], True)} | {_sec(m3['delay_median_s'])} | "
            f"{_f(poe['precision'])} / {_f(poe['recall'])} / {_f(poe['f1'])} | {_f(m['PoE']['prego']['f1'])} | "
            f"{_f(m['M4']['macro'])} | {_f(m['real_time_factor'])} |")
    return "\n".join(lines)
