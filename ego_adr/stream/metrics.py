"""HelpMeOut's streaming metrics (M1-M4, paper Section 3.4) on video episodes, in seconds instead of steps, and
the point-of-error F1 of online mistake detection (PREGO).

Inputs: episodes from :mod:`ego_adr.stream.episodes` and one monitor output per episode (ticks with their
window and error probability, the end-of-recording check, the alerts). A recording's step items become rows of
the monitoring layer's per-step file (:func:`step_rows`), and M1, M2 and M4 are the layer's
(:mod:`ego_adr.monitoring.episode_metrics`, the functions HelpMeOut scores with); M3 is time-based
(:mod:`ego_adr.stream.detection`, with the layer's first-alarm rule) because a video episode's onsets are times,
and its error types are the EgoErrorVQA options, not HelpMeOut's nine categories.

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

from ego_adr.monitoring.episode_metrics import m1, m2, type_f1
from ego_adr.monitoring.per_step import group_episodes, step_row
from ego_adr.monitoring.ranking import auroc
from ego_adr.monitoring.report import fmt, md_row
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


def step_rows(pairs: list[tuple[dict, dict]]) -> list[dict]:
    """The layer's per-step rows of these recordings: every annotated segment (scored by :func:`segment_scores`,
    typed by the tick that gave the score), then the task-end step (the end check; positive for an omission)."""
    rows = []
    for e, o in pairs:
        truth = {"errorful": not e["correct"], "error_types": e["categories"]}
        items = [(seg["error"], score, etype) for seg, (score, etype) in zip(e["segments"], segment_scores(e, o),
                                                                            strict=True)]
        items.append((bool(e["end_labels"]), o["end"]["prob"], o["end"].get("error_type")))
        rows += [step_row(e["id"], k, y, s, truth, category=c) for k, (y, s, c) in enumerate(items)]
    return rows


def tick_scores(pairs: list[tuple[dict, dict]]) -> np.ndarray:
    """The old recording score (``M1_max_tick``): the highest tick or end-check probability."""
    return np.array([max([t["prob"] for t in o["ticks"]] + [o["end"]["prob"]]) for _, o in pairs], float)


def _m2(eps) -> dict:
    """The layer's M2, its ``mid`` (the steps before the task end) being the annotated segments."""
    m = m2(eps)
    n_seg = sum(len(e.labels) - 1 for e in eps)
    return {"all": m["all"], "segments": m["mid"], "end": m["end"], "positive_rate_all": m["positive_rate_all"],
            "positive_rate_segments": m["positive_rate_mid"], "positive_rate_end": m["positive_rate_end"],
            "n_segments": n_seg}


def _m4(pairs: list[tuple[dict, dict]]) -> dict:
    """The layer's type-set F1: the types a recording's alerts name against its annotated types."""
    per, macro, present = type_f1([set(e["categories"]) for e, _ in pairs],
                                  [{a["error_type"] for a in o.get("alerts") or []} for _, o in pairs], ERROR_TYPES)
    return {"macro": macro, "per_type": per, "types_present": present}


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
    eps = group_episodes(step_rows(pairs))
    step_score = np.array([max(ep.probs) for ep in eps])
    outcomes = [m3_outcome(e, o, tolerance) for e, o in pairs]
    duration = sum(o["duration"] for _, o in pairs)
    processing = sum(o["processing_s"] for _, o in pairs)
    return {
        "scoring": SCORING, "episodes": len(pairs), "failed_episodes": failed,
        "errorful_episodes": int(errorful.sum()),
        "fully_annotated_episodes": sum(e.get("annotation") == "full" for e, _ in pairs),
        "M1": m1(eps), "M1_normalisation": "per-step", "M1_max_tick": auroc(errorful, tick_scores(pairs)),
        "M2": _m2(eps), "M3": m3_summary(outcomes, tolerance), "M4": _m4(pairs),
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
    return str(x) if isinstance(x, int) and not pct else fmt(x, missing="-", pct=pct)


def _sec(x) -> str:
    return fmt(x, 1, missing="-")


def metrics_table(results: dict[str, dict]) -> str:
    """Markdown table, one row per monitor (``results[name]`` is one :func:`compute_stream_metrics` result)."""
    head = ("| monitor | recordings | M1 AUROC (per step) | M2 AUPRC (pos. rate) | M3 missed / early / on target / "
            "late | false alarm | delay s (median) | PoE P / R / F1 | PoE F1 (PREGO cut) | M4 macro F1 | "
            "real-time factor |")
    lines = [head, "|---|---:|---:|---:|---|---:|---:|---|---:|---:|---:|"]
    for name, m in results.items():
        if not m or not m.get("episodes"):
            lines.append(md_row([name, 0] + ["-"] * 9))
            continue
        m3, poe = m["M3"], m["PoE"]["all"]
        lines.append(
            f"| {name} | {m['episodes']} | {_f(m['M1'])} | {_f(m['M2']['all'])} ({_f(m['M2']['positive_rate_all'])}) | "
            f"{_f(m3['missed'], True)} / {_f(m3['early'], True)} / {_f(m3['on_target'], True)} / "
            f"{_f(m3['late'], True)} | {_f(m3['false_alarm'], True)} | {_sec(m3['delay_median_s'])} | "
            f"{_f(poe['precision'])} / {_f(poe['recall'])} / {_f(poe['f1'])} | {_f(m['PoE']['prego']['f1'])} | "
            f"{_f(m['M4']['macro'])} | {_f(m['real_time_factor'])} |")
    return "\n".join(lines)
