"""The step-stream metrics, as pure functions of the per-step rows of ``steps.jsonl`` (one row per observed step:
``label`` 1 for the mistake, ``flagged`` whether the monitor alarmed there).

Three conventions of the field are computed side by side, because each published table uses one of them:

- PREGO (Flaborea et al., CVPR 2024, Sec. 5, its ``get_metrics``): precision, recall and F1 of the *mistake*
  class, pooled over every step of every test sequence (a step is a mistake when it is outside the anticipated
  next steps; the last step of each sequence is the positive).
- TI-PREGO (Plini et al., Table 2): *balanced* precision ``Pb = TP / (TP + FP * N+ / N-)``, which rescales the false
  positives as if both classes were equally frequent, and ``F1b``, the F1 of Pb and recall. Balancing makes a
  monitor that always alarms score Pb 0.5 / F1b 0.667 on any data set, which is why an F1b is only readable beside
  the ``flag-all`` row.
- DTGL (Seminara et al., NeurIPS 2024, Table 3): the macro average of the F1 of both classes (correct, mistake),
  scikit-learn's ``f1_score(average="macro")``. Always alarming scores half the mistake F1 there (the correct
  class gets F1 0), but never alarming scores half the correct class's F1, which is high where mistakes are rare
  (EPIC-Tent-O: 47.7, above published rows). No metric here resists every blind rule: each is readable only
  beside the blind baselines (always, never, and "from the k-th step on", which wins on a protocol that cuts every
  recording at its first mistake).

A ratio whose denominator is zero is 0.0 (scikit-learn's ``zero_division`` default). All values are fractions in
[0, 1]; the counts ``tp fp fn tn`` are kept beside them.

A thresholded monitor may alarm at a different operating point for each metric (issue 34 item 4: its threshold is
chosen by cross-validation for the metric a row reports); a row then carries ``flagged_for`` ({metric: flag}) beside
its own ``flagged``. :func:`scored` reads each column at its point (:data:`COLUMN_POINT`), adds the threshold-free
AUROC and AUPRC of ``p_error`` (:mod:`ego_adr.monitoring.ranking`), and :func:`intervals` a 95% bootstrap over
recordings of every one of them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np

from ego_adr.monitoring.ranking import auroc, average_precision

METRIC_KEYS = ("mistake_precision", "mistake_recall", "mistake_f1", "balanced_precision", "balanced_f1",
               "macro_f1")
COUNT_KEYS = ("tp", "fp", "fn", "tn")
RANK_KEYS = ("auroc", "auprc")
#: The operating points a row may carry (``flagged_for``), and the one each column is read at: P, R, F1, Pb and F1b
#: at the point chosen for F1b (TI-PREGO reads Pb, R and F1b off one confusion matrix), macro F1 at its own.
OPERATING_POINTS = ("macro_f1", "balanced_f1")
COLUMN_POINT = {"mistake_precision": "balanced_f1", "mistake_recall": "balanced_f1", "mistake_f1": "balanced_f1",
                "balanced_precision": "balanced_f1", "balanced_f1": "balanced_f1", "macro_f1": "macro_f1"}
#: Bootstrap resamples of the intervals and their seed (recordings drawn with replacement).
RESAMPLES, SEED = 1000, 0


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


def _f1(p: float, r: float) -> float:
    return _ratio(2 * p * r, p + r)


def counts(rows: Iterable[Mapping]) -> dict[str, int]:
    """``tp fp fn tn`` with the mistake as the positive class (``label`` 1 / 0, ``flagged`` true / false)."""
    c = dict.fromkeys(COUNT_KEYS, 0)
    for r in rows:
        pos, alarm = bool(r["label"]), bool(r["flagged"])
        c[("tp" if alarm else "fn") if pos else ("fp" if alarm else "tn")] += 1
    return c


def mistake_scores(c: Mapping[str, int]) -> tuple[float, float, float]:
    """PREGO's precision, recall, F1 of the mistake class."""
    p = _ratio(c["tp"], c["tp"] + c["fp"])
    r = _ratio(c["tp"], c["tp"] + c["fn"])
    return p, r, _f1(p, r)


def balanced_precision(c: Mapping[str, int]) -> float:
    """TI-PREGO's Pb = TP / (TP + FP * N+ / N-), N+ = TP + FN the mistakes, N- = FP + TN the correct steps."""
    n_pos, n_neg = c["tp"] + c["fn"], c["fp"] + c["tn"]
    fp_scaled = c["fp"] * _ratio(n_pos, n_neg)
    return _ratio(c["tp"], c["tp"] + fp_scaled)


def macro_f1(c: Mapping[str, int]) -> float:
    """DTGL's mean of the two classes' F1 (the correct class's F1 uses TN as its true positives)."""
    _, _, f_mistake = mistake_scores(c)
    p_ok = _ratio(c["tn"], c["tn"] + c["fn"])
    r_ok = _ratio(c["tn"], c["tn"] + c["fp"])
    return (f_mistake + _f1(p_ok, r_ok)) / 2


def metrics(rows: Iterable[Mapping]) -> dict:
    """Every metric of the three conventions and the counts, from per-step rows."""
    c = counts(rows)
    p, r, f = mistake_scores(c)
    pb = balanced_precision(c)
    return {"mistake_precision": p, "mistake_recall": r, "mistake_f1": f, "balanced_precision": pb,
            "balanced_f1": _f1(pb, r), "macro_f1": macro_f1(c), **c}


def flag_at(row: Mapping, point: str) -> bool:
    """A row's alarm at operating point ``point``: its ``flagged_for`` entry, else its own ``flagged``."""
    return bool((row.get("flagged_for") or {}).get(point, row["flagged"]))


def at_point(rows: Iterable[Mapping], point: str) -> dict:
    """:func:`metrics` with every row flagged as at ``point``."""
    return metrics({"label": r["label"], "flagged": flag_at(r, point)} for r in rows)


def _arrays(rows: list[Mapping]) -> dict[str, np.ndarray]:
    """label, p_error and the flag at each operating point, one array each (row order)."""
    out = {"label": np.array([bool(r["label"]) for r in rows], dtype=bool),
           "p": np.array([float(r["p_error"]) for r in rows], dtype=float)}
    return out | {pt: np.array([flag_at(r, pt) for r in rows], dtype=bool) for pt in OPERATING_POINTS}


def _counts(y: np.ndarray, f: np.ndarray) -> dict[str, int]:
    return {"tp": int((y & f).sum()), "fp": int((~y & f).sum()), "fn": int((y & ~f).sum()),
            "tn": int((~y & ~f).sum())}


def _point(c: Mapping[str, int]) -> dict:
    p, r, f = mistake_scores(c)
    pb = balanced_precision(c)
    return {"mistake_precision": p, "mistake_recall": r, "mistake_f1": f, "balanced_precision": pb,
            "balanced_f1": _f1(pb, r), "macro_f1": macro_f1(c), **c}


def _columns(a: dict[str, np.ndarray], ix: np.ndarray | None = None) -> dict:
    """Every column on the rows ``ix`` (all when None) of :func:`_arrays`; ``points``: each point's metrics."""
    a = a if ix is None else {k: v[ix] for k, v in a.items()}
    pts = {pt: _point(_counts(a["label"], a[pt])) for pt in OPERATING_POINTS}
    out = {k: pts[COLUMN_POINT[k]][k] for k in METRIC_KEYS}
    for k, f in (("auroc", auroc), ("auprc", average_precision)):
        v = f(a["label"], a["p"]) if len(a["label"]) else float("nan")
        out[k] = None if np.isnan(v) else v
    return out | {"points": pts}


def scored(rows: Iterable[Mapping]) -> dict:
    """What a row of a table shows: each metric at its operating point (:data:`COLUMN_POINT`), the counts of the
    F1b point (those of P, R, F1, Pb, F1b), AUROC / AUPRC of ``p_error`` (None when a class is absent), and
    ``operating_points``: every metric and count at each point and at the monitor's own flag (``flagged``)."""
    rows = list(rows)
    got = _columns(_arrays(rows))
    pts = got.pop("points")
    return got | {c: pts["balanced_f1"][c] for c in COUNT_KEYS} | {
        "operating_points": pts | {"flagged": metrics(rows)}}


def _safe(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b > 0, a / np.where(b > 0, b, 1), 0.0)


def _vector_columns(w: np.ndarray, a: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every column for each row of weights ``w`` (draws x steps: how often each step is in the draw), at once:
    the weighted counts give the thresholded metrics, weighted sums per distinct ``p_error`` the two rankings (ties
    counted half for AUROC, grouped for AUPRC, as :mod:`ego_adr.monitoring.ranking` does)."""
    y = a["label"]
    out = {}
    pts = {}
    for pt in OPERATING_POINTS:
        f = a[pt]
        tp, fp, fn, tn = (w @ (y & f), w @ (~y & f), w @ (y & ~f), w @ (~y & ~f))
        p, r = _safe(tp, tp + fp), _safe(tp, tp + fn)
        pb = _safe(tp, tp + fp * _safe(tp + fn, fp + tn))
        p0, r0 = _safe(tn, tn + fn), _safe(tn, tn + fp)
        f1, f0 = _safe(2 * p * r, p + r), _safe(2 * p0 * r0, p0 + r0)
        pts[pt] = {"mistake_precision": p, "mistake_recall": r, "mistake_f1": f1, "balanced_precision": pb,
                   "balanced_f1": _safe(2 * pb * r, pb + r), "macro_f1": (f1 + f0) / 2}
    out = {k: pts[COLUMN_POINT[k]][k] for k in METRIC_KEYS}
    _, level = np.unique(a["p"], return_inverse=True)
    onehot = np.zeros((len(y), level.max() + 1))
    onehot[np.arange(len(y)), level] = 1.0
    pos, neg = (w * y) @ onehot, (w * ~y) @ onehot  # draws x levels, ascending p_error
    n_pos, n_neg = pos.sum(axis=1), neg.sum(axis=1)
    below = np.cumsum(neg, axis=1) - neg
    out["auroc"] = _safe(((below + neg / 2) * pos).sum(axis=1), n_pos * n_neg)
    tps, fps = np.cumsum(pos[:, ::-1], axis=1), np.cumsum(neg[:, ::-1], axis=1)
    rec = _safe(tps, n_pos[:, None])
    out["auprc"] = (np.diff(np.c_[np.zeros(len(w)), rec], axis=1) * _safe(tps, tps + fps)).sum(axis=1)
    return out


def intervals(rows: Iterable[Mapping], resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, list[float]]:
    """95% percentile bootstrap over recordings (``episode``, the layer's key; ``video`` read too): the recordings drawn with replacement ``resamples``
    times (numpy's default_rng(``seed``)), every column of :func:`scored` recomputed on the pooled steps of each
    draw; {metric: [lo, hi]}. Recordings, not steps, are the unit: the steps of one recording are not independent
    and each holds exactly one mistake."""
    rows = list(rows)
    if not rows:
        return {}
    videos: dict[str, int] = {}
    vid = np.array([videos.setdefault(r.get("episode", r.get("video")), len(videos)) for r in rows])
    draw = np.random.default_rng(seed).integers(0, len(videos), size=(resamples, len(videos)))
    times = np.zeros((resamples, len(videos)))
    np.add.at(times, (np.arange(resamples)[:, None], draw), 1.0)
    got = _vector_columns(times[:, vid], _arrays(rows))
    return {k: [round(float(np.percentile(v, 2.5)), 4), round(float(np.percentile(v, 97.5)), 4)]
            for k, v in got.items()}


def read_steps(path: str | os.PathLike) -> list[dict]:
    """The rows of a ``steps.jsonl`` file."""
    with open(Path(path), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def metrics_of_file(path: str | os.PathLike) -> dict:
    """:func:`metrics` of a ``steps.jsonl`` file: what every ``metrics.json`` of the step benchmarks holds."""
    return metrics(read_steps(path))
