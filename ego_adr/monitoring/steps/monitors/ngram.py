"""A one-class n-gram monitor: the next step's likelihood under a Witten-Bell interpolated n-gram model of the
correct training recordings; a step is a mistake when it is unlikely after the last ``n - 1`` steps.

The classic count model beside the neural ones (:mod:`.oneclass`), for the same reason PREGO's symbolic
anticipation works at all: on a dozen recordings (EPIC-Tent-O has 13) a model with no weights to fit is hard to
beat. Witten-Bell interpolation (Witten & Bell, 1991; the form in Chen & Goodman, 1998, Sec. 2.3) has no
smoothing constant: each context ``h`` backs off to the shorter one with weight ``N1+(h .) / (c(h) + N1+(h .))``
(the number of distinct steps seen after ``h``), down to an add-one unigram over the known steps plus one class for
a step never seen in training. The order ``n`` (1-4) is chosen by held-out likelihood over the folds of
:mod:`ego_adr.monitoring.steps.cv`; the score (surprisal or margin below the most likely step, as in
:mod:`.oneclass`) and its threshold by the constructed validation mistakes; ``prob`` is the validation-calibrated
probability. Deterministic (integer counts, sorted vocabularies).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ego_adr.monitoring.protocol import Monitor, StepOutput
from ego_adr.monitoring.steps import cv
from ego_adr.monitoring.steps.monitors.oneclass import SCORES, score_of
from ego_adr.monitoring.steps.types import StepContext, TrainingSet

BOS = -1
ORDERS = (1, 2, 3, 4)


class NGramModel:
    def __init__(self, order: int = 3) -> None:
        self.order = order

    def fit(self, seqs: Sequence[Sequence[int]]) -> NGramModel:
        self.steps = sorted({int(x) for s in seqs for x in s})
        self.index = {x: i + 1 for i, x in enumerate(self.steps)}  # class 0: never seen in training
        self.uni = np.ones(len(self.steps) + 1)
        self.counts: dict[tuple, Counter] = {}
        for s in seqs:
            pad = (BOS,) * (self.order - 1) + tuple(int(x) for x in s)
            for i in range(self.order - 1, len(pad)):
                self.uni[self.index[pad[i]]] += 1
                for n in range(1, self.order):
                    self.counts.setdefault(pad[i - n : i], Counter())[pad[i]] += 1
        self.uni /= self.uni.sum()
        self._cache: dict[tuple, np.ndarray] = {}
        return self

    def cls(self, step: int) -> int:
        return self.index.get(int(step), 0)

    def dist(self, history: Sequence[int]) -> np.ndarray:
        """log p(next | the last ``order - 1`` steps of ``history``) over the classes (0: never seen)."""
        h = ((BOS,) * (self.order - 1) + tuple(int(x) for x in history))[len(history) :] if self.order > 1 else ()
        got = self._cache.get(h)
        if got is None:
            p = self.uni
            for n in range(1, len(h) + 1):  # shortest context first
                c = self.counts.get(h[len(h) - n :])
                if not c:
                    continue
                total, types = sum(c.values()), len(c)
                seen = np.zeros_like(p)
                for x, k in c.items():
                    seen[self.index[x]] = k
                p = (seen + types * p) / (total + types)
            got = self._cache[h] = np.log(p)
        return got

    def nll(self, seqs: Sequence[Sequence[int]]) -> float:
        tot = sum(-self.dist(s[:i])[self.cls(x)] for s in seqs for i, x in enumerate(s))
        return float(tot / max(sum(len(s) for s in seqs), 1))

    def step_scores(self, seqs: Sequence[Sequence[int]]) -> dict[str, np.ndarray]:
        rows = [score_of(self.dist(s[:i]), self.cls(x)) for s in seqs for i, x in enumerate(s)]
        return {k: np.array([r[k] for r in rows]) for k in SCORES}


@dataclass
class Fitted:
    """As :class:`.oneclass.Fitted`: the refitted model, the chosen score, threshold, calibration, selection, and
    the out-of-fold scores of every validation step."""

    model: NGramModel
    score: str
    threshold: float
    calib: tuple[float, float]
    selection: dict
    labels: np.ndarray
    oof: dict[str, np.ndarray]


def select_and_fit(seqs: Sequence[Sequence[int]], plan: cv.Plan) -> Fitted:
    return _select_and_fit(tuple(tuple(int(x) for x in s) for s in seqs), plan)


@lru_cache(maxsize=8)
def _select_and_fit(seqs, plan) -> Fitted:
    val = cv.validation(seqs, plan)
    curve = {}
    for n in ORDERS:
        nlls = []
        for fit, _ in val:
            keep = set(fit)
            m = NGramModel(n).fit([seqs[i] for i in fit])
            nlls.append(m.nll([s for i, s in enumerate(seqs) if i not in keep]))
        curve[n] = round(float(np.mean(nlls)), 4)
    order = min(ORDERS, key=lambda n: (curve[n], n))
    y = np.concatenate([cv.episode_labels(eps) for _, eps in val])
    got = [NGramModel(order).fit([seqs[i] for i in fit]).step_scores([e.steps for e in eps]) for fit, eps in val]
    oof = {s: np.concatenate([g[s] for g in got]) for s in SCORES}
    by_score = {s: cv.best_threshold(y, oof[s]) for s in SCORES}
    chosen = max(SCORES, key=lambda s: (by_score[s][1]["objective"], s == SCORES[0]))
    thr = by_score[chosen][0]
    selection = {
        "recipe": "Witten-Bell n-gram; order by held-out NLL, score and threshold by constructed validation "
                  "mistakes (" + cv.OBJECTIVE + ")",
        "folds": [list(f) for f, _ in val], "validation": cv.describe(plan, val),
        "candidates": {"order": list(ORDERS), "score": list(SCORES)}, "heldout_nll": {str(n): curve[n] for n in ORDERS},
        "chosen": {"order": order, "score": chosen, "threshold": round(thr, 6)},
        "cv_scores": {s: by_score[s][1] | {"threshold": round(by_score[s][0], 6)} for s in SCORES},
    }
    return Fitted(NGramModel(order).fit(seqs), chosen, thr, cv.calibrate(y, oof[chosen]), selection, y, oof)


class NGramMonitor(Monitor):
    name = "ngram-oneclass"

    def __init__(self, seed: int = 0, folds: int = 5) -> None:
        self.seed, self.k = seed, folds
        self.model: NGramModel | None = None
        self.selection: dict = {}

    def fit(self, train: TrainingSet) -> None:
        seqs = [s for s in train.sequences if s]
        f = select_and_fit(seqs, cv.plan(train.benchmark, seqs, sorted(train.taxonomy), self.k, self.seed))
        self.model, self.score, self.threshold, self.calib, self.selection = (
            f.model, f.score, f.threshold, f.calib, f.selection)

    def reset(self, ctx: StepContext) -> None:
        if self.model is None:
            raise RuntimeError(f"{self.name}: fit() must run before streaming")
        self.prefix: list[int] = []

    def step(self, t: int, step_id: int) -> StepOutput:
        lp = self.model.dist(self.prefix)
        sc = score_of(lp, self.model.cls(int(step_id)))
        expected = self.model.steps[int(np.argmax(lp[1:]))] if self.model.steps else None
        self.prefix.append(int(step_id))
        value = sc[self.score]
        ev = {"score": self.score, "value": round(value, 4), "threshold": round(self.threshold, 4),
              "p_step": round(float(np.exp(-sc["surprisal"])), 4), "expected": expected}
        return StepOutput(cv.calibrated(self.calib, value), onset=t, evidence=ev, flagged=value >= self.threshold)
