"""What the step-stream likelihood monitors share: how the alarm is chosen and how a step is answered.

``seq2seq-oneclass`` / ``sgt-oneclass`` (:mod:`.neural_oneclass`) and ``ngram-oneclass`` / ``ngram-task``
(:mod:`.ngram`) differ only in the next-step model fitted on the correct recordings. Both then score a step by how
unlikely it is after the prefix (surprisal or margin, :func:`ego_adr.monitoring.next_step_model.score_of`), and
both turn that score into an alarm the same way, written here once so the two cannot drift apart:

- :func:`choose`: on the out-of-fold scores of the constructed validation steps (:mod:`ego_adr.online_mistakes.cv`),
  the score with the better objective (the first of ``SCORES`` on a tie) and its threshold, one threshold per
  metric scored, and the logistic calibration of ``prob``; with the tail of the selection record.
- :class:`LikelihoodMonitor`: a monitor that takes a fit's :class:`Fitted` and answers each step from the model's
  log-probabilities (evidence, alarm at the chosen threshold, alarm per metric).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ego_adr.monitoring.monitor import Monitor, StepOutput
from ego_adr.monitoring.next_step_model import SCORES, score_of
from ego_adr.online_mistakes import cv


@dataclass
class Choice:
    """What :func:`choose` returns: the chosen score and threshold, the calibration (a, b) of
    ``prob = sigmoid(a * score + b)``, the threshold chosen per metric, and the selection record's tail
    (``cv_scores``, ``cv_score``, ``operating_points``)."""

    score: str
    threshold: float
    calib: tuple[float, float]
    points: dict[str, float]
    record: dict


def choose(labels: np.ndarray, oof: dict[str, np.ndarray]) -> Choice:
    """The score, threshold and calibration from the validation steps' ``labels`` and the out-of-fold scores
    ``oof`` (one array per name in ``SCORES``)."""
    by_score = {s: cv.best_threshold(labels, oof[s]) for s in SCORES}
    chosen = max(SCORES, key=lambda s: (by_score[s][1]["objective"], s == SCORES[0]))
    points = cv.operating_points(labels, oof[chosen])
    record = {
        "cv_scores": {s: by_score[s][1] | {"threshold": round(by_score[s][0], 6)} for s in SCORES},
        "cv_score": by_score[chosen][1], "operating_points": cv.describe_points(points),
    }
    return Choice(chosen, by_score[chosen][0], cv.calibrate(labels, oof[chosen]),
                  {k: t for k, (t, _) in points.items()}, record)


@dataclass
class Fitted:
    """A likelihood monitor's fit: the refitted model, the chosen score and threshold, the calibration, the
    selection record, the validation steps' labels and every out-of-fold score, the threshold per metric, and
    (where a monitor built on it needs them, as the stacked one does) the folds' validation episodes."""

    model: Any
    score: str
    threshold: float
    calib: tuple[float, float]
    selection: dict
    labels: np.ndarray
    oof: dict[str, np.ndarray]
    points: dict[str, float]
    validation: list | None = None


class LikelihoodMonitor(Monitor):
    """The part of :class:`.neural_oneclass.OneClassMonitor` and :class:`.ngram.NGramMonitor` that does not
    depend on the model: taking the fit, the prefix, and the step's answer."""

    model: Any = None

    def adopt(self, f: Fitted) -> None:
        self.model, self.score, self.threshold, self.calib, self.selection = (
            f.model, f.score, f.threshold, f.calib, f.selection)
        self.points = f.points

    def reset(self, ctx) -> None:
        if self.model is None:
            raise RuntimeError(f"{self.name}: fit() must run before streaming")
        self.prefix: list[int] = []

    def answer(self, t: int, step_id: int, logprobs: np.ndarray, expected: int | None) -> StepOutput:
        """The output for ``step_id`` at ``t`` given the model's ``logprobs`` of the next step after the prefix
        (``expected``: the step it found most likely); the step joins the prefix."""
        sc = score_of(logprobs, self.model.cls(int(step_id)))
        self.prefix.append(int(step_id))
        value = sc[self.score]
        ev = {"score": self.score, "value": round(value, 4), "threshold": round(self.threshold, 4),
              "p_step": round(float(np.exp(-sc["surprisal"])), 4), "expected": expected}
        return StepOutput(cv.calibrated(self.calib, value), onset=t, evidence=ev, flagged=value >= self.threshold,
                          flagged_for={k: value >= thr for k, thr in self.points.items()})

