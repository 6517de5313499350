"""The metrics of the complete-trial benchmarks, pure functions of their ``steps.jsonl`` rows.

- **Per step**, over the scored steps (``scored``: every step, corrections aside under ``corrections=exclude``):
  the cut benchmarks' metrics (:func:`ego_adr.monitoring.step_metrics.metrics`: PREGO's P/R/F1, TI-PREGO's Pb/F1b,
  DTGL's macro F1), the threshold-free ``auroc`` and ``auprc`` of ``p_error`` (:mod:`ego_adr.monitoring.ranking`),
  and 95% percentile intervals of each from a bootstrap over recordings (:func:`intervals`).
- **Per recording**, HelpMeOut's M3 (Sec. 3.4) read in steps: a recording's first mistake is alarmed ``on_target``
  (the first alarm at its step), ``early`` (before it), ``late`` (after it) or ``missed`` (never), by
  :func:`ego_adr.monitoring.episode_metrics.first_alarm_outcome` with no tolerance; the delay of on-target and late
  alarms in steps; and the false alarms before the first mistake (their mean count per recording and the share of
  recordings with one). The monitor goes on after an alarm, so every later step is still scored per step.
- Alarms are read at the operating point chosen for macro F1 where a monitor has one per metric (``flagged_for``,
  issue 34), else at its own ``flagged``.
- **Per kind and per label**: the share of steps alarmed among the steps of each source label (``correct``,
  ``mistake``, ``correction``) and of each error kind (Assembly101's remarks, EPIC-Tent's nine codes); for a kind
  that makes a step a mistake this is its recall, for the others (EPIC-Tent's motor slips, searching, ...) how often
  a monitor alarms on a correct step that carries it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ego_adr.monitoring import step_metrics
from ego_adr.monitoring.episode_metrics import detection_delay, first_alarm_outcome
from ego_adr.monitoring.ranking import auroc, average_precision
from ego_adr.monitoring.step_metrics import METRIC_KEYS, metrics
from ego_adr.online_mistakes import cv

RANK_KEYS = ("auroc", "auprc")
RESAMPLES = 1000
_CV_NAMES = {"mistake_precision": "precision", "mistake_recall": "recall", "mistake_f1": "f1",
             "balanced_precision": "balanced_precision", "balanced_f1": "balanced_f1", "macro_f1": "macro_f1"}


def scored(rows: Iterable[Mapping]) -> list[Mapping]:
    return [r for r in rows if r.get("scored", True)]


def flag(row: Mapping, point: str = "macro_f1") -> bool:
    """A row's alarm at the operating point chosen for ``point`` (``flagged_for``, issue 34), else its own flag:
    the per-recording detection reads the macro-F1 point, the metric of the goal."""
    return bool((row.get("flagged_for") or {}).get(point, row["flagged"]))


def step_block(rows: Sequence[Mapping]) -> dict:
    """The per-step metrics of ``rows`` (all of them scored), ranking included. Where the layer reads each metric
    at its own operating point (``step_metrics.scored``, issue 34) this is that, so a complete row and the cut
    benchmark's own tables read alike; otherwise every metric at the monitor's ``flagged``."""
    layer = getattr(step_metrics, "scored", None)
    if layer is not None:
        return layer(rows)
    y = [r["label"] for r in rows]
    s = [r["p_error"] for r in rows]
    return {**metrics(rows), "auroc": auroc(y, s), "auprc": average_precision(y, s)}


def _by_video(rows: Sequence[Mapping]) -> dict[str, list[Mapping]]:
    out: dict[str, list[Mapping]] = {}
    for r in rows:
        out.setdefault(str(r.get("video", r.get("episode"))), []).append(r)
    return out


def intervals(rows: Sequence[Mapping], resamples: int = RESAMPLES, seed: int = 0) -> dict[str, list[float]]:
    """95% percentile intervals of every per-step metric over ``resamples`` resamplings of the recordings (the
    layer's own ``step_metrics.intervals`` where it has one, issue 34, which reads each metric at its point)."""
    layer = getattr(step_metrics, "intervals", None)
    if layer is not None:
        return layer(rows, resamples)
    groups = list(_by_video(rows).values())
    if not groups:
        return {}
    counts = np.array([[sum(bool(r["label"]) and bool(r["flagged"]) for r in g),
                        sum(not r["label"] and bool(r["flagged"]) for r in g),
                        sum(bool(r["label"]) and not r["flagged"] for r in g),
                        sum(not r["label"] and not r["flagged"] for r in g)] for g in groups], dtype=np.float64)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(groups), size=(resamples, len(groups)))
    weights = np.stack([np.bincount(p, minlength=len(groups)) for p in picks])
    tp, fp, fn, tn = (weights @ counts).T
    m = cv.metrics(tp, fp, fn, tn)
    out = {k: _ci(m[_CV_NAMES[k]]) for k in METRIC_KEYS}
    return out | _rank_intervals(rows, weights)


def _rank_intervals(rows: Sequence[Mapping], weights: np.ndarray) -> dict[str, list[float]]:
    """AUROC and AP of every resample at once: a resample weights each row by how often its recording was drawn,
    and both are sums over the distinct scores (ties counted half in AUROC, grouped in AP, as
    :mod:`ego_adr.monitoring.ranking` does)."""
    index = {v: i for i, v in enumerate(_by_video(rows))}
    rec = np.array([index[str(r.get("video", r.get("episode")))] for r in rows])
    y = np.array([bool(r["label"]) for r in rows])
    s = np.array([float(r["p_error"]) for r in rows])
    order = np.argsort(-s, kind="mergesort")
    rec, y, s = rec[order], y[order], s[order]
    starts = np.r_[0, np.nonzero(np.diff(s))[0] + 1]  # the levels, highest score first
    w = weights.astype(np.float64)[:, rec]
    pos = np.add.reduceat(w * y, starts, axis=1)
    neg = np.add.reduceat(w * ~y, starts, axis=1)
    p_tot, n_tot = pos.sum(1), neg.sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        below = n_tot[:, None] - np.cumsum(neg, axis=1)  # negatives scored lower than each level
        roc = (pos * (below + neg / 2)).sum(1) / (p_tot * n_tot)
        cp, cn = np.cumsum(pos, axis=1), np.cumsum(neg, axis=1)
        ap = (pos / p_tot[:, None] * np.where(cp + cn > 0, cp / (cp + cn), 0.0)).sum(1)
    return {"auroc": _ci(roc), "auprc": _ci(ap)}


def _ci(v: np.ndarray) -> list[float]:
    v = v[~np.isnan(v)]
    return [float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))] if len(v) else [float("nan")] * 2


def detection(rows: Sequence[Mapping]) -> dict:
    """Per recording: the first mistake's M3 outcome in steps, the delay, and the false alarms before it."""
    outcomes = dict.fromkeys(("missed", "early", "on_target", "late"), 0)
    delays, before, clean_alarm, n, clean = [], [], 0, 0, 0
    for rs in _by_video(rows).values():
        rs = sorted(rs, key=lambda r: r["index"])
        alarms = [r["index"] for r in rs if flag(r)]
        first = alarms[0] if alarms else None
        onset = next((r["index"] for r in rs if r["label"] and r.get("scored", True)), None)
        if onset is None:
            clean += 1
            clean_alarm += first is not None
            continue
        n += 1
        verdict = first_alarm_outcome(first, onset)
        outcomes[verdict] += 1
        d = detection_delay(first, onset, verdict)
        if d is not None:
            delays.append(d)
        before.append(sum(1 for r in rs if flag(r) and r["index"] < onset and r.get("scored", True)))
    out = {k: v / n if n else float("nan") for k, v in outcomes.items()}
    out |= {"recordings": n, "counts": outcomes,
            "mean_delay_steps": float(np.mean(delays)) if delays else None,
            "false_alarms_before_first": float(np.mean(before)) if before else None,
            "share_with_false_alarm_before_first": float(np.mean([b > 0 for b in before])) if before else None,
            "recordings_without_mistake": clean,
            "false_alarm_without_mistake": clean_alarm / clean if clean else None}
    return out


def alarm_rates(rows: Sequence[Mapping]) -> dict:
    """Steps and the share alarmed, per source label and per error kind (over every row, scored or not)."""
    def rate(sel: list[Mapping]) -> dict:
        return {"steps": len(sel), "alarmed": sum(flag(r) for r in sel) / len(sel) if sel else None}

    labels = sorted({r["source_label"] for r in rows})
    kinds = sorted({k for r in rows for k in r["kinds"]})
    by_kind = {}
    for k in kinds:
        sel = [r for r in rows if k in r["kinds"]]
        n = sum(int(r["label"]) for r in sel)
        by_kind[k] = rate(sel) | {"mistake_steps": n, "mistake_kind": n == len(sel)}  # the kind makes a mistake
    return {"by_label": {lab: rate([r for r in rows if r["source_label"] == lab]) for lab in labels},
            "by_kind": by_kind}


def complete_metrics(rows: Sequence[Mapping], resamples: int = RESAMPLES) -> dict:
    """Everything ``metrics.json`` of a complete-trial monitor folder reports about its rows."""
    sc = scored(rows)
    return {**step_block(sc), "intervals": intervals(sc, resamples), "detection": detection(rows),
            **alarm_rates(rows), "steps": len(sc), "mistakes": sum(int(r["label"]) for r in sc),
            "unscored_steps": len(rows) - len(sc)}
