"""A one-class n-gram monitor: the next step's likelihood under a Witten-Bell interpolated n-gram model of the
correct training recordings; a step is a mistake when it is unlikely after the last ``n - 1`` steps.

The classic count model beside the neural ones (:mod:`.neural_oneclass`), for the same reason PREGO's symbolic
anticipation works at all: on a dozen recordings (EPIC-Tent-O has 13) a model with no weights to fit is hard to
beat. Witten-Bell interpolation (Witten & Bell, 1991; the form in Chen & Goodman, 1998, Sec. 2.3) has no
smoothing constant: each context ``h`` backs off to the shorter one with weight ``N1+(h .) / (c(h) + N1+(h .))``
(the number of distinct steps seen after ``h``), down to an add-one unigram over the known steps plus one class for
a step never seen in training. The order ``n`` (1-4) is chosen by held-out likelihood over the folds of
:mod:`ego_adr.online_mistakes.cv`; the score (surprisal or margin below the most likely step, as in
:mod:`.neural_oneclass`) and its threshold by the constructed validation mistakes, chosen as there
(:mod:`.likelihood`); ``prob`` is the validation-calibrated probability. Deterministic (integer counts, sorted
vocabularies).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from ego_adr.monitoring.monitor import StepOutput
from ego_adr.monitoring.next_step_model import SCORES, score_of
from ego_adr.online_mistakes import cv
from ego_adr.online_mistakes.monitors.likelihood import Fitted, LikelihoodMonitor, choose
from ego_adr.online_mistakes.types import StepContext, TrainingSet

BOS = -1
ORDERS = (1, 2, 3, 4)


def task_of(video: str) -> str | None:
    """The task of a recording from its name: the toy id of an Assembly101 recording (``9044-a08`` -> ``a08``,
    as PREGO's ``get_toy`` reads it); None for a name without one (EPIC-Tent's recordings share one task)."""
    parts = str(video).split("-")
    return parts[2].split("_")[0] if len(parts) > 2 and parts[2] else None


def _wb(p: np.ndarray, counts: Counter | None, index: dict[int, int]) -> np.ndarray:
    """One Witten-Bell level: ``counts`` of the steps seen after a context, interpolated with the lower-order
    distribution ``p`` by weight ``N1+ / (c + N1+)``."""
    if not counts:
        return p
    total, types = sum(counts.values()), len(counts)
    seen = np.zeros_like(p)
    for x, k in counts.items():
        seen[index[x]] = k
    return (seen + types * p) / (total + types)


class NGramModel:
    """Witten-Bell n-gram of the step sequences. With ``tasks`` (one per recording), a task-specific model sits on
    top: its levels (the task's step counts, then its contexts up to ``order - 1``) are interpolated, Witten-Bell
    again, onto the global model's distribution, so a task with recordings of its own sharpens the global model
    and a task without any falls back to it exactly."""

    def __init__(self, order: int = 3) -> None:
        self.order = order

    def fit(self, seqs: Sequence[Sequence[int]], tasks: Sequence[str | None] | None = None) -> NGramModel:
        self.steps = sorted({int(x) for s in seqs for x in s})
        self.index = {x: i + 1 for i, x in enumerate(self.steps)}  # class 0: never seen in training
        self.uni = np.ones(len(self.steps) + 1)
        self.counts: dict[tuple, Counter] = {}
        self.task_counts: dict[tuple, Counter] = {}
        for j, s in enumerate(seqs):
            task = tasks[j] if tasks is not None else None
            pad = (BOS,) * (self.order - 1) + tuple(int(x) for x in s)
            for i in range(self.order - 1, len(pad)):
                self.uni[self.index[pad[i]]] += 1
                for n in range(self.order):
                    if n:
                        self.counts.setdefault(pad[i - n : i], Counter())[pad[i]] += 1
                    if task is not None:
                        self.task_counts.setdefault((task, *pad[i - n : i]), Counter())[pad[i]] += 1
        self.uni /= self.uni.sum()
        self.tasks = sorted({k[0] for k in self.task_counts})
        self._cache: dict[tuple, np.ndarray] = {}
        return self

    def cls(self, step: int) -> int:
        return self.index.get(int(step), 0)

    def dist(self, history: Sequence[int], task: str | None = None) -> np.ndarray:
        """log p(next | the last ``order - 1`` steps of ``history`` [, the task]) over the classes (0: unseen)."""
        h = ((BOS,) * (self.order - 1) + tuple(int(x) for x in history))[len(history) :] if self.order > 1 else ()
        key = (task, *h)
        got = self._cache.get(key)
        if got is None:
            p = self.uni
            for n in range(1, len(h) + 1):  # shortest context first
                p = _wb(p, self.counts.get(h[len(h) - n :]), self.index)
            if task is not None and (task,) in self.task_counts:
                for n in range(len(h) + 1):
                    p = _wb(p, self.task_counts.get((task, *h[len(h) - n :])), self.index)
            got = self._cache[key] = np.log(p)
        return got

    def nll(self, seqs: Sequence[Sequence[int]], tasks: Sequence[str | None] | None = None) -> float:
        tot = sum(-self.dist(s[:i], tasks[j] if tasks else None)[self.cls(x)]
                  for j, s in enumerate(seqs) for i, x in enumerate(s))
        return float(tot / max(sum(len(s) for s in seqs), 1))

    def step_scores(self, seqs: Sequence[Sequence[int]], tasks: Sequence[str | None] | None = None) -> dict:
        rows = [score_of(self.dist(s[:i], tasks[j] if tasks else None), self.cls(x))
                for j, s in enumerate(seqs) for i, x in enumerate(s)]
        return {k: np.array([r[k] for r in rows]) for k in SCORES}


def select_and_fit(seqs: Sequence[Sequence[int]], plan: cv.Plan, tasks: Sequence[str | None] | None = None) -> Fitted:
    """With ``tasks`` (one per recording), the task-specific models are candidates beside the global ones."""
    return _select_and_fit(tuple(tuple(int(x) for x in s) for s in seqs), plan, tuple(tasks) if tasks else None)


@lru_cache(maxsize=32)  # the final fit and the 5 outer folds of the selection, per family
def _select_and_fit(seqs, plan, tasks) -> Fitted:
    val = cv.validation(seqs, plan)
    curve = {}
    for use_task in (False, True) if tasks else (False,):
        tk = tasks if use_task else None
        for n in ORDERS:
            nlls = []
            for fit, _ in val:
                keep = set(fit)
                m = NGramModel(n).fit([seqs[i] for i in fit], [tk[i] for i in fit] if tk else None)
                held = [i for i in range(len(seqs)) if i not in keep]
                nlls.append(m.nll([seqs[i] for i in held], [tk[i] for i in held] if tk else None))
            curve[n, use_task] = round(float(np.mean(nlls)), 4)
    order, use_task = min(curve, key=lambda c: (curve[c], c[1], c[0]))
    tk = tasks if use_task else None
    y = np.concatenate([cv.episode_labels(eps) for _, eps in val])
    got = [NGramModel(order).fit([seqs[i] for i in fit], [tk[i] for i in fit] if tk else None).step_scores(
        [e.steps for e in eps], [tk[e.source] for e in eps] if tk else None) for fit, eps in val]
    oof = {s: np.concatenate([g[s] for g in got]) for s in SCORES}
    c = choose(y, oof)
    selection = {
        "recipe": "Witten-Bell n-gram; order (and, given the tasks, task-specific or not) by held-out NLL, score "
                  "and threshold by constructed validation mistakes (" + cv.OBJECTIVE + ")",
        "folds": [list(f) for f, _ in val], "validation": cv.describe(plan, val),
        "candidates": {"order": list(ORDERS), "task_specific": [False, True] if tasks else [False],
                       "score": list(SCORES)},
        "heldout_nll": {f"{n}{'+task' if u else ''}": v for (n, u), v in curve.items()},
        "chosen": {"order": order, "task_specific": use_task, "score": c.score, "threshold": round(c.threshold, 6)},
        **c.record,
    }
    model = NGramModel(order).fit(seqs, tk)
    model.task_specific = use_task
    return Fitted(model, c.score, c.threshold, c.calib, selection, y, oof, c.points)


class NGramMonitor(LikelihoodMonitor):
    """``ngram-oneclass``; with ``task=True`` (``ngram-task``) it also reads each recording's task (the toy of an
    Assembly101 recording, from its name) and may choose the task-specific model."""

    name = "ngram-oneclass"

    def __init__(self, seed: int = 0, folds: int = 5, task: bool = False) -> None:
        self.seed, self.k, self.use_task = seed, folds, task
        self.model: NGramModel | None = None
        self.selection: dict = {}

    def fit(self, train: TrainingSet) -> None:
        keep = [i for i, s in enumerate(train.sequences) if s]
        seqs = [train.sequences[i] for i in keep]
        tasks = [task_of(train.videos[i]) for i in keep] if self.use_task and train.videos else None
        f = select_and_fit(seqs, cv.plan(train.benchmark, seqs, sorted(train.taxonomy), self.k, self.seed, train.noise), tasks)
        self.adopt(f)

    def reset(self, ctx: StepContext) -> None:
        super().reset(ctx)
        self.task = task_of(ctx.video) if self.use_task and self.model.task_specific else None

    def step(self, t: int, step_id: int) -> StepOutput:
        lp = self.model.dist(self.prefix, self.task)
        out = self.answer(t, step_id, lp, self.model.steps[int(np.argmax(lp[1:]))] if self.model.steps else None)
        if self.task is not None:
            out.evidence["task"] = self.task
        return out
