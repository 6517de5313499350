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
  class gets F1 0), so it cannot be gamed by either extreme: the fairest single number of the three.

A ratio whose denominator is zero is 0.0 (scikit-learn's ``zero_division`` default). All values are fractions in
[0, 1]; the counts ``tp fp fn tn`` are kept beside them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

METRIC_KEYS = ("mistake_precision", "mistake_recall", "mistake_f1", "balanced_precision", "balanced_f1",
               "macro_f1")
COUNT_KEYS = ("tp", "fp", "fn", "tn")


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


def read_steps(path: str | os.PathLike) -> list[dict]:
    """The rows of a ``steps.jsonl`` file."""
    with open(Path(path), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def metrics_of_file(path: str | os.PathLike) -> dict:
    """:func:`metrics` of a ``steps.jsonl`` file: what every ``metrics.json`` of the step benchmarks holds."""
    return metrics(read_steps(path))
