"""HelpMeOut's streaming metrics (M1-M4, paper Section 3.4) on video episodes, in seconds instead of steps.

Inputs: episodes from :mod:`ego_adr.stream.episodes` and one monitor output per episode (ticks with their
window and error probability, the end-of-recording check, the alerts). AUROC and AP are HelpMeOut's own
functions (:func:`ego_adr.helpmeout.metrics.auroc`, :func:`~ego_adr.helpmeout.metrics.average_precision`);
the step-based M3/M4 are restated here because a video episode's onsets are times and its error types are the
EgoErrorVQA options, not HelpMeOut's nine categories.

- **M1**: does the recording contain an error? AUROC of the episode score (the highest probability of any
  tick or of the end check); errorful recordings are the positives.
- **M2**: segment-level AUPRC. A segment's score is the highest probability of a tick whose window overlaps it;
  each episode adds one task-end item scored by the end check, positive when an omission is annotated without
  a segment. ``segments`` pools the annotated segments, ``end`` the task-end items, ``all`` both. A constant or
  random monitor scores about the positive rate, which is reported beside it.
- **M3**: the first alarm (first alert, the end check's included) against the first erroneous segment
  ``[s, e]``: *missed* (none), *early* (before ``s``), *on target* (``s`` to ``e + tolerance``), *late*; shares of
  the errorful recordings that have an erroneous segment. *False alarm*: share of correct recordings with any
  alarm. *Detection delay*: first alarm minus ``s`` over on-target and late alarms (mean and median, seconds).
  Recordings whose only error is an unsegmented omission: share first alarmed at the end check / before it.
- **M4**: per-type F1 of the set of error types named by a recording's alerts against its annotated set, over
  all scored recordings (correct ones have an empty set), macro over the types present.
- **Real-time factor**: processing seconds (decoding + model) over recording seconds, pooled.
"""

from __future__ import annotations

import numpy as np

from ego_adr.helpmeout.metrics import auroc, average_precision
from ego_adr.taxonomy import CORRECT, OPTIONS

ERROR_TYPES = tuple(o for o in OPTIONS if o != CORRECT)


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


def first_alarm(output: dict) -> dict | None:
    alerts = sorted(output.get("alerts") or [], key=lambda a: (a["t"], a["kind"] != "window"))
    return alerts[0] if alerts else None


def _f1(tp: int, fp: int, fn: int) -> float:
    return 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)


def compute_stream_metrics(episodes: list[dict], outputs: list[dict], tolerance: float = 8.0) -> dict:
    """Metrics over the episodes that have an output without ``failure`` (the others are counted)."""
    if len(episodes) != len(outputs):
        raise ValueError(f"{len(episodes)} episodes but {len(outputs)} outputs")
    pairs = [(e, o) for e, o in zip(episodes, outputs, strict=True) if not o.get("failure")]
    failed = len(episodes) - len(pairs)
    if not pairs:
        return {"episodes": 0, "failed_episodes": failed}
    errorful = np.array([not e["correct"] for e, _ in pairs])
    ep_score = np.array([max([t["prob"] for t in o["ticks"]] + [o["end"]["prob"]]) for _, o in pairs])
    y_seg, s_seg, y_end, s_end = [], [], [], []
    for e, o in pairs:
        for seg, (score, _) in zip(e["segments"], segment_scores(e, o), strict=True):
            y_seg.append(seg["error"])
            s_seg.append(score)
        y_end.append(bool(e["end_labels"]))
        s_end.append(o["end"]["prob"])
    y_all, s_all = np.array(y_seg + y_end, float), np.array(s_seg + s_end, float)
    m2 = {"all": average_precision(y_all, s_all),
          "segments": average_precision(np.array(y_seg, float), np.array(s_seg, float)) if y_seg else float("nan"),
          "end": average_precision(np.array(y_end, float), np.array(s_end, float)),
          "positive_rate_all": float(y_all.mean()),
          "positive_rate_segments": float(np.mean(y_seg)) if y_seg else float("nan"),
          "positive_rate_end": float(np.mean(y_end)), "n_segments": len(y_seg)}
    m3 = {"missed": 0, "early": 0, "on_target": 0, "late": 0}
    delays: list[float] = []
    n_seg_err = n_correct = fa = om_n = om_end = om_before = 0
    for e, o in pairs:
        first = first_alarm(o)
        if e["correct"]:
            n_correct += 1
            fa += first is not None
            continue
        if e["first_error_start"] is None:  # only an unsegmented omission
            om_n += 1
            om_end += first is not None and first["kind"] == "end"
            om_before += first is not None and first["kind"] == "window"
            continue
        n_seg_err += 1
        s = e["first_error_start"]
        seg_end = min(seg["end"] for seg in e["segments"] if seg["error"] and seg["start"] == s)
        if first is None:
            m3["missed"] += 1
        elif first["t"] < s:
            m3["early"] += 1
        elif first["t"] <= seg_end + tolerance:
            m3["on_target"] += 1
            delays.append(first["t"] - s)
        else:
            m3["late"] += 1
            delays.append(first["t"] - s)
    m3r: dict = {k: v / max(1, n_seg_err) for k, v in m3.items()}
    m3r.update({"false_alarm": fa / max(1, n_correct) if n_correct else float("nan"),
                "omission_end": om_end / om_n if om_n else float("nan"),
                "omission_before": om_before / om_n if om_n else float("nan"),
                "delay_mean_s": float(np.mean(delays)) if delays else float("nan"),
                "delay_median_s": float(np.median(delays)) if delays else float("nan"),
                "n_segment_error_episodes": n_seg_err, "n_correct_episodes": n_correct,
                "n_omission_only_episodes": om_n, "tolerance_s": tolerance})
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
    duration = sum(o["duration"] for _, o in pairs)
    processing = sum(o["processing_s"] for _, o in pairs)
    return {
        "episodes": len(pairs), "failed_episodes": failed, "errorful_episodes": int(errorful.sum()),
        "M1": auroc(errorful, ep_score), "M2": m2, "M3": m3r,
        "M4": {"macro": float(np.mean([per[c] for c in present])) if present else float("nan"),
               "per_type": per, "types_present": present},
        "recording_s": round(duration, 3), "processing_s": round(processing, 3),
        "real_time_factor": processing / duration if duration else float("nan"),
    }


def _f(x, pct: bool = False) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "-"
    return f"{100 * x:.1f}" if pct else f"{x:.3f}" if isinstance(x, float) else str(x)


def _sec(x) -> str:
    return "-" if x is None or np.isnan(x) else f"{x:.1f}"


def metrics_table(results: dict[str, dict]) -> str:
    """Markdown table, one row per monitor."""
    head = ("| monitor | recordings | M1 AUROC | M2 AUPRC (pos. rate) | M3 missed / early / on target / late | "
            "false alarm | delay s (median) | M4 macro F1 | real-time factor |")
    lines = [head, "|---|---:|---:|---:|---|---:|---:|---:|---:|"]
    for name, m in results.items():
        if not m.get("episodes"):
            lines.append(f"| {name} | 0 | - | - | - | - | - | - | - |")
            continue
        m3 = m["M3"]
        lines.append(
            f"| {name} | {m['episodes']} | {_f(m['M1'])} | {_f(m['M2']['all'])} ({_f(m['M2']['positive_rate_all'])}) | "
            f"{_f(m3['missed'], True)} / {_f(m3['early'], True)} / {_f(m3['on_target'], True)} / "
            f"{_f(m3['late'], True)} | {_f(m3['false_alarm'], True)} | {_sec(m3['delay_median_s'])} | "
            f"{_f(m['M4']['macro'])} | {_f(m['real_time_factor'])} |")
    return "\n".join(lines)
