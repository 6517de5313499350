"""One-class learned monitors: HelpMeOut's Seq2Seq (a GRU over the prefix) and SGT (a causal transformer) families
trained on correct sequences only, as next-step likelihood models. A step is a mistake when it is unlikely after
the observed prefix.

Both benchmarks give correct training sequences only (PREGO, Flaborea et al., CVPR 2024, Sec. 3: mistakes are
open-set, so the detector is a one-class model), so the supervised recipe of HelpMeOut's learned monitors (an error
head trained on labelled onsets) has nothing to learn from here. The one-class recipe, in three steps, each chosen
without the test files (:mod:`ego_adr.online_mistakes.cv`):

1. **Capacity and training length** (hidden size, epochs) by held-out next-step likelihood: k folds over the
   training recordings, the mean held-out negative log-likelihood per step after every second epoch; the pair of
   lowest mean is kept. This needs no mistakes at all.
2. **The score and its threshold** on validation mistakes built from the held-out recordings (the constructions
   in :mod:`~ego_adr.online_mistakes.cv`): the score is either the step's surprisal ``-log p(step | prefix)``
   or its *margin* below the most likely step, ``log max p - log p(step)`` (low when the prefix leaves several
   steps equally open, as EPIC-Tent's interleaved instruction steps do); which one, and the threshold, by
   :data:`~ego_adr.online_mistakes.cv.OBJECTIVE` on the pooled validation steps (the monitor's own alarm); on
   the chosen score, a threshold for macro F1 alone and one for F1b alone (``flagged_for``, the operating point
   each of those metrics is reported at).
3. The model is refitted on all training recordings with the chosen capacity and epochs.

A step id never seen in training has probability 0 under the model (surprisal and margin +inf), so it is always
flagged, as the graph monitor and every published method flag such a step (DTGL masks those nodes). ``prob`` is
the validation-calibrated probability of a mistake (a logistic fit of the score on the validation steps);
``flagged`` is the score at or above the chosen threshold.

The network, its training and the capacity selection are the monitoring layer's
(:mod:`ego_adr.monitoring.next_step_model`, shared with HelpMeOut's one-class rows); what is here is the step-stream
validation (folds over the training recordings, constructed mistakes), the score and threshold choice on them and
the monitor; what it shares with the n-gram monitor (the score and threshold choice, the step's answer) is
:mod:`.likelihood`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from ego_adr.monitoring.monitor import StepOutput
from ego_adr.monitoring.next_step_model import (
    ARCHS,
    HIDDEN,
    MAX_EPOCHS,
    PRECISION,
    SCORES,
    Fold,
    NextStepModel,
    capacity,
    score_of,
)
from ego_adr.monitoring.registry import MonitorOption, int_list
from ego_adr.online_mistakes import cv
from ego_adr.online_mistakes.monitors.likelihood import Fitted, LikelihoodMonitor, choose
from ego_adr.online_mistakes.types import TrainingSet

__all__ = ["ARCHS", "HIDDEN", "MAX_EPOCHS", "SCORES", "Fitted", "NextStepModel", "OneClassMonitor", "score_of",
           "select_and_fit"]


def _capacity(seqs, val, arch, seed, hidden, max_epochs):
    """:func:`ego_adr.monitoring.next_step_model.capacity` on the CV folds: each fold fits on its training recordings and
    is held out on the rest."""
    folds = []
    for fit, _ in val:
        keep = set(fit)
        folds.append(Fold(tuple(seqs[i] for i in fit), tuple(s for i, s in enumerate(seqs) if i not in keep)))
    return capacity(folds, arch, seed, hidden, max_epochs)


def select_and_fit(seqs: Sequence[Sequence[int]], arch: str, plan: cv.Plan, hidden: Sequence[int] = HIDDEN,
                   max_epochs: int = MAX_EPOCHS) -> Fitted:
    """The one-class recipe of the module docstring, on integer token sequences, validated as ``plan`` says; the
    :class:`~.likelihood.Fitted` keeps the folds' validation episodes for monitors built on it."""
    seqs = [tuple(int(x) for x in s) for s in seqs]
    return _select_and_fit(tuple(seqs), arch, plan, tuple(hidden), max_epochs)


@lru_cache(maxsize=32)  # the final fit and the 5 outer folds of the selection, per family
def _select_and_fit(seqs, arch, plan, hidden, max_epochs) -> Fitted:
    # memoised: a monitor built on this one (the stacked monitor) reuses the same fit in the same process
    val = cv.validation(seqs, plan)
    seed = plan.seed
    (best_h, best_e, best_nll), curves, models = _capacity(seqs, val, arch, seed, hidden, max_epochs)
    scores = {s: [] for s in SCORES}
    for m, (_, eps) in zip(models, val):
        got = m.step_scores([e.steps for e in eps])
        for s in SCORES:
            scores[s].append(got[s])
    y = np.concatenate([cv.episode_labels(eps) for _, eps in val])
    oof = {s: np.concatenate(v) for s, v in scores.items()}
    c = choose(y, oof)
    model = NextStepModel(arch, best_h, seed)
    model.fit(seqs, best_e)
    selection = {
        "recipe": "one-class next-step likelihood; capacity by held-out NLL, score and threshold by constructed "
                  "validation mistakes (" + cv.OBJECTIVE + ")",
        "numerics": f"{PRECISION}, one thread, deterministic algorithms (ego_adr/monitoring/numerics.py)",
        "folds": [list(f) for f, _ in val], "validation": cv.describe(plan, val),
        "candidates": {"hidden": list(hidden), "epochs": f"2..{max_epochs} step 2, stopped after 2 evaluations "
                       "without improvement", "score": list(SCORES)},
        "heldout_nll": {str(h): curves[h] for h in hidden},
        "chosen": {"hidden": best_h, "epochs": best_e, "heldout_nll": best_nll, "score": c.score,
                   "threshold": round(c.threshold, 6)},
        **c.record,
    }
    return Fitted(model, c.score, c.threshold, c.calib, selection, y, oof, c.points, val)


class OneClassMonitor(LikelihoodMonitor):
    """``seq2seq-oneclass`` (``arch="gru"``) and ``sgt-oneclass`` (``arch="transformer"``)."""

    name = "seq2seq-oneclass"
    #: ``--monitor-option``s: the seed, the folds and the candidate grid (a smaller grid is a quicker, other run)
    OPTIONS = (MonitorOption("seed", int, 0, "seed of the folds, the constructed mistakes and the network"),
               MonitorOption("folds", int, 5, "cross-validation folds over the training recordings"),
               MonitorOption("hidden", int_list, HIDDEN, "candidate hidden sizes, e.g. 32,64"),
               MonitorOption("max_epochs", int, MAX_EPOCHS, "most epochs of the held-out-likelihood search"))

    def __init__(self, arch: str = "gru", seed: int = 0, folds: int = 5, threads: int = 1,
                 hidden: Sequence[int] = HIDDEN, max_epochs: int = MAX_EPOCHS) -> None:
        if arch not in ARCHS:
            raise ValueError(f"arch must be one of {ARCHS}, got {arch!r}")
        self.arch, self.seed, self.k, self.threads = arch, seed, folds, threads
        self.hidden, self.max_epochs = tuple(int(h) for h in hidden), int(max_epochs)
        self.model: NextStepModel | None = None
        self.selection: dict = {}
        self.check_options({"folds": folds, "hidden": self.hidden, "max_epochs": max_epochs})

    @staticmethod
    def check_options(options: dict) -> None:
        if options.get("folds", 5) < 2 or min(options.get("hidden", HIDDEN)) < 1 or options.get("max_epochs", 2) < 2:
            raise ValueError("folds must be >= 2, every hidden size >= 1 and max_epochs >= 2")

    def fit(self, train: TrainingSet) -> None:
        seqs = [s for s in train.sequences if s]
        plan = cv.plan(train.benchmark, seqs, sorted(train.taxonomy), self.k, self.seed, train.noise)
        self.adopt(select_and_fit(seqs, self.arch, plan, self.hidden, self.max_epochs))

    def step(self, t: int, step_id: int) -> StepOutput:
        lp = self.model.logprobs([self.prefix + [int(step_id)]])[0][-1]
        top = int(np.argmax(lp[1:])) if len(lp) > 1 else 0
        return self.answer(t, step_id, lp, sorted(self.model.index)[top] if self.model.index else None)
