"""The three *blind* baselines of the step streams, which never look at which step was done (``flag-all``,
``never-alarm``, ``position``); the rules that read the training vocabulary are in :mod:`.reference`.

The blind rows show what a metric gives away on a benchmark's protocol (issue 34 item 1):

- ``flag-all`` alarms at every step: recall 1, balanced precision 0.5 and F1b 0.667 on any data set (TI-PREGO's
  F1b), and a macro F1 of half its mistake F1 (DTGL's);
- ``never-alarm`` never alarms: mistake F1 and F1b 0, but a macro F1 of half the correct class's F1, which is
  high when mistakes are rare (EPIC-Tent-O: 15 mistakes among 168 steps);
- ``position`` alarms at every step from the ``k``-th of the recording on. Both benchmarks cut each test recording at
  its first mistake, so the mistake is always the last step and late steps are more often mistakes whatever they
  are; ``k`` is chosen by the same cross-validation on the training recordings as every learned monitor
  (:mod:`ego_adr.online_mistakes.cv`, one ``k`` per metric: macro F1 and F1b), never on a test file.

``flag-all`` and ``never-alarm`` have no hyper-parameter, so their ``selection`` says there was nothing to choose.
"""

from __future__ import annotations

import numpy as np

from ego_adr.monitoring.monitor import Monitor, StepOutput
from ego_adr.online_mistakes import cv
from ego_adr.online_mistakes.types import StepContext, TrainingSet

NOTHING_TO_CHOOSE = {"hyper_parameters": {}, "chosen_by": "nothing to choose: the monitor has no hyper-parameter"}


class FlagAll(Monitor):
    """Alarms at every step."""

    selection = NOTHING_TO_CHOOSE

    def reset(self, ctx: StepContext) -> None:
        pass

    def step(self, t: int, step_id: int) -> StepOutput:
        return StepOutput(1.0, flagged=True)


class NeverAlarm(Monitor):
    """Never alarms (``p_error`` 0 at every step)."""

    selection = NOTHING_TO_CHOOSE

    def reset(self, ctx: StepContext) -> None:
        pass

    def step(self, t: int, step_id: int) -> StepOutput:
        return StepOutput(0.0, flagged=False)


def _positions(episodes) -> np.ndarray:
    """The 1-based position of every step of every episode, in :func:`cv.episode_labels` order."""
    return np.concatenate([np.arange(1, len(e.steps) + 1) for e in episodes]) if episodes else np.zeros(0)


class Position(Monitor):
    """Alarms at every step from the ``k``-th of the recording on, whatever the step is; ``k`` by cross-validation
    on the training recordings (one per metric; ``flagged`` at the ``k`` of :data:`cv.OBJECTIVE`). ``p_error`` is
    the validation-calibrated probability of a mistake at that position (a logistic fit on the position)."""

    def __init__(self, seed: int = 0, folds: int = 5) -> None:
        self.seed, self.k_folds = seed, folds
        self.k: dict[str, int] | None = None
        self.selection: dict = {}

    def fit(self, train: TrainingSet) -> None:
        seqs = [tuple(int(x) for x in s) for s in train.sequences if s]
        plan = cv.plan(train.benchmark, seqs, sorted(train.taxonomy), self.k_folds, self.seed, train.noise)
        val = cv.validation(seqs, plan)
        eps = [e for _, es in val for e in es]
        y, pos = cv.episode_labels(eps), _positions(eps)
        joint = cv.best_threshold(y, pos)
        points = cv.operating_points(y, pos)
        # a threshold between two positions: flag from the next whole position on
        self.k = {k: int(np.ceil(thr)) for k, (thr, _) in {"objective": joint, **points}.items()}
        self.calib = cv.calibrate(y, pos)
        self.selection = {
            "recipe": "alarm from the k-th step of the recording on; k by constructed validation mistakes, one per "
                      "metric (" + cv.OBJECTIVE + " for the monitor's own flag)",
            "folds": [list(f) for f, _ in val], "validation": cv.describe(plan, val),
            "candidates": {"k": f"1..{int(pos.max()) if len(pos) else 1}"},
            "chosen": {"k": self.k["objective"]}, "cv_score": joint[1],
            "operating_points": {m: {"k": self.k[m], "cv_value": v[m]} for m, (_, v) in points.items()},
        }

    def reset(self, ctx: StepContext) -> None:
        if self.k is None:
            raise RuntimeError(f"{self.name}: fit() must run before streaming")

    def step(self, t: int, step_id: int) -> StepOutput:
        n = t + 1
        return StepOutput(cv.calibrated(self.calib, n), evidence={"position": n}, flagged=n >= self.k["objective"],
                          flagged_for={m: n >= self.k[m] for m in cv.OPERATING_METRICS})


def position_ceiling(rows: list[dict]) -> tuple[dict[str, int], list[dict]]:
    """What ``position`` alone gives on a scored stream (its per-step rows: ``episode``, ``index``, ``label``) with
    ``k`` chosen on those very rows, per metric of :data:`cv.OPERATING_METRICS`: the best ``k`` of each (ties: the
    largest, fewest alarms) and the rows ``position`` would have written with them (``p_error`` the position scaled
    to [0, 1], so its AUROC is that of the position itself). A ceiling printed beside the rows, computed at report
    time and never used to choose anything."""
    y = np.array([r["label"] for r in rows], dtype=np.int64)
    pos = np.array([r["index"] + 1 for r in rows], dtype=np.float64)
    tp, fp, fn, tn, t = cv.counts_at(y, pos)
    m = cv.metrics(tp, fp, fn, tn)
    ks = {metric: int(t[int(np.argmax(m[metric]))]) for metric in cv.OPERATING_METRICS}
    top = float(pos.max()) if len(pos) else 1.0
    out = [{"episode": r["episode"], "index": r["index"], "label": r["label"], "p_error": (r["index"] + 1) / top,
            "flagged": r["index"] + 1 >= ks["macro_f1"],
            "flagged_for": {metric: r["index"] + 1 >= k for metric, k in ks.items()}} for r in rows]
    return ks, out
