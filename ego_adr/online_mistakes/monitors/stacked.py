"""The stacked monitor: the Ego-ADR task-graph checks and the one-class likelihoods (GRU, n-gram), weighed
together by a logistic regression fitted on constructed validation mistakes.

The families fail in different places on the validation mistakes (:mod:`ego_adr.online_mistakes.cv`): the
graph's checks are sharp on a step never seen and on a step that skips its preconditions, but blind to a step
that is merely unusual after this prefix; the likelihood models see those and are soft where the graph is sharp.
None of them needs mistakes to train, but how much each signal counts does; so:

1. the GRU is selected and fitted exactly as ``seq2seq-oneclass`` (:func:`.neural_oneclass.select_and_fit`), the n-gram
   as ``ngram-oneclass`` (:func:`.ngram.select_and_fit`), on the same folds and validation episodes; each gives
   its out-of-fold surprisal and margin on every validation step. The GRU's capacity grid is the options
   ``hidden`` and ``max_epochs``, as ``seq2seq-oneclass``'s (so ``--monitor all --monitor-option hidden=16`` gives
   both monitors the same GRU, fitted once);
2. the graph of each fold gives every check's confidence on the same steps (:func:`.graph.validation_strengths`);
3. features: the five check confidences and the four likelihood scores, standardised (an infinite surprisal, a
   step the GRU never saw, capped at the largest finite one + 1); an L2-regularised logistic regression predicts
   "this step is the constructed mistake". The feature set (every non-empty combination of the three families),
   its penalty and the graph's ``support`` are chosen, and the threshold set, on *cross-fitted* scores: the
   regression for the steps of fold ``j`` is fitted on the other folds' steps only, so the objective that
   chooses is never measured on the steps it was fitted on;
4. the final regression is fitted on all validation steps; the models and the graph are refitted on all
   recordings. Its threshold for macro F1 and for F1b alone (``flagged_for``) are set on the same cross-fitted
   scores.

``prob`` is the regression's probability (calibrated on the validation steps), ``flagged`` its score at or above
the chosen threshold; ``category`` is that of the graph check with the largest positive contribution, else
``Wrong order`` for a known step the models find unlikely (a step correct in itself, at the wrong point) and
``Unintended and unnecessary action`` for an unknown one.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence

import numpy as np

from ego_adr.monitoring.monitor import Monitor, StepOutput
from ego_adr.monitoring.registry import MonitorOption, int_list
from ego_adr.online_mistakes import cv
from ego_adr.online_mistakes.monitors import graph as G
from ego_adr.online_mistakes.monitors import neural_oneclass as O
from ego_adr.online_mistakes.monitors import ngram as N
from ego_adr.online_mistakes.types import StepContext, TrainingSet

FAMILIES = {"graph": G.CHECKS, "gru": ("gru-surprisal", "gru-margin"), "ngram": ("ngram-surprisal", "ngram-margin")}
FEATURES = tuple(f for fs in FAMILIES.values() for f in fs)
PENALTIES = (1e-4, 1e-3, 1e-2)
#: The feature sets compared: every non-empty combination of the three families (one family alone is a
#: candidate too: a combination is only used where it validates better).
FEATURE_SETS = tuple("+".join(c) for n in (3, 2, 1) for c in itertools.combinations(FAMILIES, n))


def _design(strength: dict[str, np.ndarray], gru: dict[str, np.ndarray], ngram: dict[str, np.ndarray]) -> np.ndarray:
    cols = [strength[c] for c in G.CHECKS] + [gru["surprisal"], gru["margin"], ngram["surprisal"], ngram["margin"]]
    return np.c_[tuple(cols)]


def _caps(x: np.ndarray) -> np.ndarray:
    """Per feature, the largest finite value seen (+1): a step never seen in training has infinite surprisal
    under the GRU; capped, it stays the most surprising step without breaking the standardisation (the graph's
    unknown-step check says the rest)."""
    finite = np.where(np.isfinite(x), x, -np.inf)
    return np.where(np.isfinite(finite.max(axis=0)), finite.max(axis=0) + 1.0, 1.0)


def _mask(features: str) -> np.ndarray:
    keep = {f for fam in features.split("+") for f in FAMILIES[fam]}
    return np.array([f in keep for f in FEATURES])


class StackedMonitor(Monitor):
    name = "stacked"
    OPTIONS = (MonitorOption("hidden", int_list, O.HIDDEN, "its GRU's candidate hidden sizes (seq2seq-oneclass's)"),
               MonitorOption("max_epochs", int, O.MAX_EPOCHS, "its GRU's most epochs (seq2seq-oneclass's)"))

    check_options = staticmethod(O.OneClassMonitor.check_options)  # the same grid rules as seq2seq-oneclass's

    def __init__(self, seed: int = 0, folds: int = 5, threads: int = 1, hidden: Sequence[int] = O.HIDDEN,
                 max_epochs: int = O.MAX_EPOCHS) -> None:
        self.seed, self.k, self.threads = seed, folds, threads
        self.hidden, self.max_epochs = tuple(int(h) for h in hidden), int(max_epochs)
        self.check_options({"hidden": self.hidden, "max_epochs": self.max_epochs})
        self.graph: G.TaskGraph | None = None
        self.selection: dict = {}

    def fit(self, train: TrainingSet) -> None:
        import torch

        torch.set_num_threads(self.threads)
        seqs = [tuple(int(x) for x in s) for s in train.sequences if s]
        plan = cv.plan(train.benchmark, seqs, sorted(train.taxonomy), self.k, self.seed, train.noise)
        lm, ng = O.select_and_fit(seqs, "gru", plan, self.hidden, self.max_epochs), N.select_and_fit(seqs, plan)
        strengths = G.validation_strengths(seqs, lm.validation)
        y = lm.labels
        fold = np.concatenate([np.full(len(cv.episode_labels(eps)), j) for j, (_, eps) in enumerate(lm.validation)])
        table = []
        for feats in FEATURE_SETS:
            for m in G.SUPPORT if "graph" in feats else G.SUPPORT[:1]:
                x = _design(strengths[m], lm.oof, ng.oof)
                x = np.minimum(x, _caps(x))[:, _mask(feats)]
                for l2 in PENALTIES:
                    thr, score = cv.best_threshold(y, cv.cross_fitted(x, y, fold, l2))
                    table.append(({"features": feats, "support": m, "l2": l2}, thr, score))
        best = max(range(len(table)), key=lambda i: (table[i][2]["objective"], -i))
        chosen, self.threshold, cv_score = table[best]
        keep = _mask(chosen["features"])
        x = _design(strengths[chosen["support"]], lm.oof, ng.oof)
        # the threshold of each metric on the chosen regression's cross-fitted scores (issue 34 item 4)
        points = cv.operating_points(y, cv.cross_fitted(np.minimum(x, _caps(x))[:, keep], y, fold, chosen["l2"]))
        self.points = {k: t for k, (t, _) in points.items()}
        self.cap = _caps(x)
        x = np.minimum(x, self.cap)
        self.mu, self.sd = x.mean(axis=0), x.std(axis=0) + 1e-9
        w = cv.logistic(((x - self.mu) / self.sd)[:, keep], y, chosen["l2"])
        self.w = np.r_[np.zeros(len(FEATURES)), w[-1]]
        self.w[np.flatnonzero(keep)] = w[:-1]
        self.support, self.lm, self.ngram = chosen["support"], lm.model, ng.model
        self.graph = G.TaskGraph.learn(seqs)
        self.selection = {
            "recipe": "logistic regression over the graph checks and the one-class GRU scores, fitted on "
                      "constructed validation mistakes; support, penalty and threshold on cross-fitted scores ("
                      + cv.OBJECTIVE + ")",
            "folds": [list(f) for f, _ in lm.validation], "validation": lm.selection["validation"],
            "gru": lm.selection["chosen"], "ngram": ng.selection["chosen"],
            "candidates": {"features": list(FEATURE_SETS), "support": list(G.SUPPORT), "l2": list(PENALTIES)},
            "chosen": chosen | {"threshold": round(self.threshold, 6)}, "cv_score": cv_score,
            "operating_points": cv.describe_points(points),
            "cv_table": [p | {"objective": s["objective"]} for p, _, s in table],
            "weights": {f: round(float(v), 4) for f, v in zip((*FEATURES, "intercept"), self.w)},
        }

    def reset(self, ctx: StepContext) -> None:
        if self.graph is None:
            raise RuntimeError(f"{self.name}: fit() must run before streaming")
        self.taxonomy = dict(ctx.taxonomy)
        self.done: Counter = Counter()
        self.last, self.prefix = G.START, []

    def step(self, t: int, step_id: int) -> StepOutput:
        b = int(step_id)
        s, why = self.graph.strengths(self.done, self.last, b, self.support)
        sc = O.score_of(self.lm.logprobs([self.prefix + [b]])[0][-1], self.lm.cls(b))
        nc = O.score_of(self.ngram.dist(self.prefix), self.ngram.cls(b))
        feats = [s[c] for c in G.CHECKS] + [sc["surprisal"], sc["margin"], nc["surprisal"], nc["margin"]]
        x = (np.minimum(np.array(feats), self.cap) - self.mu) / self.sd
        contrib = x * self.w[:-1]
        z = float(contrib.sum() + self.w[-1])
        graph_part = [(contrib[i], c) for i, c in enumerate(G.CHECKS) if s[c] > 0 and contrib[i] > 0]
        if graph_part:
            category = G.CATEGORY[max(graph_part)[1]]
        else:
            category = "Wrong order" if b in self.graph.steps else "Unintended and unnecessary action"
        ev = {"z": round(z, 4), "threshold": round(self.threshold, 4),
              "contributions": {f: round(float(v), 3) for f, v in zip(FEATURES, contrib) if abs(v) >= 0.05},
              "p_step": round(float(np.exp(-sc["surprisal"])), 4)}
        for c, v in why.items():
            if s[c] > 0:
                ev[f"{c}_step"] = str(self.taxonomy.get(v, v))
        self.done[b] += 1
        self.last = b
        self.prefix.append(b)
        return StepOutput(cv.calibrated((1.0, 0.0), z), onset=t, category=category, evidence=ev,
                          flagged=z >= self.threshold, flagged_for={k: z >= v for k, v in self.points.items()})
