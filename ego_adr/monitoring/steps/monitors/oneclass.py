"""One-class learned monitors: HelpMeOut's Seq2Seq (a GRU over the prefix) and SGT (a causal transformer) families
trained on correct sequences only, as next-step likelihood models. A step is a mistake when it is unlikely after
the observed prefix.

Both benchmarks give correct training sequences only (PREGO, Flaborea et al., CVPR 2024, Sec. 3: mistakes are
open-set, so the detector is a one-class model), so the supervised recipe of HelpMeOut's learned monitors (an error
head trained on labelled onsets) has nothing to learn from here. The one-class recipe, in three steps, each chosen
without the test files (:mod:`ego_adr.monitoring.steps.cv`):

1. **Capacity and training length** (hidden size, epochs) by held-out next-step likelihood: k folds over the
   training recordings, the mean held-out negative log-likelihood per step after every second epoch; the pair of
   lowest mean is kept. This needs no mistakes at all.
2. **The score and its threshold** on validation mistakes built from the held-out recordings (the constructions
   in :mod:`~ego_adr.monitoring.steps.cv`): the score is either the step's surprisal ``-log p(step | prefix)``
   or its *margin* below the most likely step, ``log max p - log p(step)`` (low when the prefix leaves several
   steps equally open, as EPIC-Tent's interleaved instruction steps do); which one, and the threshold, by
   :data:`~ego_adr.monitoring.steps.cv.OBJECTIVE` on the pooled validation steps.
3. The model is refitted on all training recordings with the chosen capacity and epochs.

A step id never seen in training has probability 0 under the model (surprisal and margin +inf), so it is always
flagged, as the graph monitor and every published method flag such a step (DTGL masks those nodes). ``prob`` is
the validation-calibrated probability of a mistake (a logistic fit of the score on the validation steps);
``flagged`` is the score at or above the chosen threshold.

Architectures (written for integer step tokens; HelpMeOut's ``ego_adr/helpmeout/monitors/learned.py`` builds the
same two families over its action tokens, but that module sits above this layer, so nothing is imported from it:
HelpMeOut can instead point its learned monitors at :class:`NextStepModel` and :func:`select_and_fit`, which take
any integer token sequences).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ego_adr.monitoring.protocol import Monitor, StepOutput
from ego_adr.monitoring.steps import cv
from ego_adr.monitoring.steps.types import StepContext, TrainingSet

ARCHS = ("gru", "transformer")
SCORES = ("surprisal", "margin")
PAD, BOS, UNK = 0, 1, 2  # input ids; known steps start at 3. Class 0 of a distribution: a step never seen.


def _net(arch: str, n_in: int, n_out: int, hidden: int):
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(n_in, hidden, padding_idx=PAD)
            if arch == "transformer":
                self.pos = nn.Embedding(128, hidden)
                layer = nn.TransformerEncoderLayer(hidden, 4, 2 * hidden, dropout=0.0, batch_first=True)
                self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            else:
                self.gru = nn.GRU(hidden, hidden, batch_first=True)
            self.drop = nn.Dropout(0.1)
            self.out = nn.Linear(hidden, n_out)

        def forward(self, x):  # x (B, T) -> logits (B, T, n_out)
            h = self.drop(self.emb(x))
            if arch == "transformer":
                t = x.shape[1]
                h = h + self.pos(torch.arange(t).clamp(max=127))[None]
                mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
                h = self.enc(h, mask=mask, src_key_padding_mask=x == PAD)
            else:
                h, _ = self.gru(h)
            return self.out(self.drop(h))

    return Net()


class _Adam:
    """Adam (Kingma & Ba, 2015; beta 0.9 / 0.999, eps 1e-8) in a few tensor operations. ``torch.optim.Adam``
    would do the same, but its first construction imports ``torch._dynamo`` (2.5 s or more on a busy core), which
    alone would take most of a step-stream monitor's time budget (fit and selection in a few seconds)."""

    def __init__(self, params: list, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        import torch

        self.params, self.lr, self.betas, self.eps, self.t = params, lr, betas, eps, 0
        self.m = [torch.zeros_like(p) for p in params]
        self.v = [torch.zeros_like(p) for p in params]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        import torch

        self.t += 1
        b1, b2 = self.betas
        with torch.no_grad():
            for p, m, v in zip(self.params, self.m, self.v):
                if p.grad is None:
                    continue
                m.mul_(b1).add_(p.grad, alpha=1 - b1)
                v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                denom = (v / (1 - b2**self.t)).sqrt_().add_(self.eps)
                p.addcdiv_(m, denom, value=-self.lr / (1 - b1**self.t))


class NextStepModel:
    """p(next step | prefix) over integer step ids, trained on correct sequences (cross-entropy on every next step).

    Adam (lr 1e-2), minibatches of 32 recordings (shuffled by a seeded generator), dropout 0.1 on the embeddings
    and before the output layer. :meth:`start` then :meth:`epoch` lets :func:`select_and_fit` train the folds in
    lockstep and watch their held-out likelihood.
    """

    def __init__(self, arch: str = "gru", hidden: int = 32, seed: int = 0) -> None:
        if arch not in ARCHS:
            raise ValueError(f"arch must be one of {ARCHS}, got {arch!r}")
        self.arch, self.hidden, self.seed = arch, hidden, seed
        self.net = None

    def _vocab(self, seqs: Sequence[Sequence[int]]) -> None:
        known = sorted({int(x) for s in seqs for x in s})
        self.index = {x: i for i, x in enumerate(known)}  # output class i + 1, input id i + 3

    def _inputs(self, seqs: Sequence[Sequence[int]]):
        import torch

        rows = [[BOS] + [self.index[x] + 3 if x in self.index else UNK for x in s] for s in seqs]
        width = max(len(r) for r in rows)
        return torch.tensor([r + [PAD] * (width - len(r)) for r in rows])

    def _targets(self, seqs: Sequence[Sequence[int]]):
        import torch

        width = max(len(s) for s in seqs) + 1
        rows = [[self.index[x] for x in s] for s in seqs]  # training targets: known steps only
        return torch.tensor([r + [-100] * (width - len(r)) for r in rows])

    def start(self, seqs: Sequence[Sequence[int]]) -> None:
        """A fresh network and optimiser for ``seqs`` (seeded): then :meth:`epoch` as often as wanted."""
        import torch

        torch.manual_seed(self.seed)
        self._vocab(seqs)
        self.net = _net(self.arch, len(self.index) + 3, len(self.index), self.hidden)
        self._opt = _Adam(list(self.net.parameters()), lr=1e-2)
        # input BOS + s predicts s position by position; the last input (the last step) predicts nothing
        self._x, self._y = self._inputs(seqs), self._targets(seqs)
        self._gen = torch.Generator().manual_seed(self.seed)
        self.epochs = 0

    def epoch(self) -> None:
        import torch

        self.net.train()
        ce = torch.nn.CrossEntropyLoss(ignore_index=-100)
        perm = torch.randperm(len(self._x), generator=self._gen)
        for s in range(0, len(perm), 32):
            b = perm[s : s + 32]
            logits = self.net(self._x[b])
            loss = ce(logits.reshape(-1, logits.shape[-1]), self._y[b].reshape(-1))
            self._opt.zero_grad()
            loss.backward()
            self._opt.step()
        self.net.eval()
        self.epochs += 1

    def fit(self, seqs: Sequence[Sequence[int]], epochs: int) -> NextStepModel:
        self.start(seqs)
        for _ in range(epochs):
            self.epoch()
        return self

    def logprobs(self, seqs: Sequence[Sequence[int]]) -> list[np.ndarray]:
        """Per recording, (len, 1 + known steps) log-probabilities of the next step after each prefix ``s[:i]``;
        column 0, a step never seen in training, is -inf."""
        import torch

        self.net.eval()
        with torch.no_grad():
            lp = torch.log_softmax(self.net(self._inputs(seqs)), dim=-1).numpy()
        lp = np.concatenate([np.full(lp.shape[:2] + (1,), -np.inf), lp], axis=-1)
        return [lp[i, : len(s)] for i, s in enumerate(seqs)]

    def nll(self, seqs: Sequence[Sequence[int]]) -> float:
        """Mean NLL per step over the steps the model knows (a step it has never seen costs every candidate the
        same infinite amount, so it is left out of the comparison)."""
        tot, n = 0.0, 0
        for s, lp in zip(seqs, self.logprobs(seqs)):
            known = [(i, self.cls(x)) for i, x in enumerate(s) if self.cls(x)]
            tot -= sum(float(lp[i, c]) for i, c in known)
            n += len(known)
        return tot / max(n, 1)

    def cls(self, step: int) -> int:
        return self.index[step] + 1 if step in self.index else 0

    def step_scores(self, seqs: Sequence[Sequence[int]]) -> dict[str, np.ndarray]:
        """Every step's surprisal and margin, concatenated in order (what the validation steps are scored by)."""
        out = {k: [] for k in SCORES}
        for s, lp in zip(seqs, self.logprobs(seqs)):
            for i, x in enumerate(s):
                sc = score_of(lp[i], self.cls(x))
                for k in SCORES:
                    out[k].append(sc[k])
        return {k: np.asarray(v) for k, v in out.items()}


def score_of(logp: np.ndarray, cls: int) -> dict[str, float]:
    """Surprisal and margin of output class ``cls`` under one next-step distribution (log-probabilities)."""
    known = logp[1:] if len(logp) > 1 else logp  # class 0 (never seen) is never the most likely step
    return {"surprisal": float(-logp[cls]), "margin": float(known.max() - logp[cls])}


HIDDEN = (32, 64)
MAX_EPOCHS = 16


@dataclass
class Fitted:
    """What :func:`select_and_fit` returns: the refitted model, the chosen score and threshold, the calibration
    (a, b) of ``prob = sigmoid(a * score + b)``, the selection record, and the out-of-fold validation it was
    chosen on (the folds' episodes, their step labels and every score of every step) for monitors built on it."""

    model: NextStepModel
    score: str
    threshold: float
    calib: tuple[float, float]
    selection: dict
    validation: list
    labels: np.ndarray
    oof: dict[str, np.ndarray]


def _capacity(seqs, val, arch, seed, hidden, max_epochs, every=2, patience=2):
    """Per hidden size, the fold models trained in lockstep, the mean held-out NLL per step after every ``every``
    epochs, stopping once it has not improved for ``patience`` evaluations (or at ``max_epochs``). Returns the
    (hidden, epochs, NLL) of lowest mean (ties: smaller, then shorter), the curves, and per (hidden, fold) the
    model with its weights at the best epoch of that hidden size."""
    curves, best_states = {}, {}
    for h in hidden:
        models, helds = [], []
        for j, (fit, _) in enumerate(val):
            keep = set(fit)
            models.append(NextStepModel(arch, h, seed + j))
            models[-1].start([seqs[i] for i in fit])
            helds.append([s for i, s in enumerate(seqs) if i not in keep])
        curve, best, since = [], (np.inf, 0), 0
        for epoch in range(1, max_epochs + 1):
            for m in models:
                m.epoch()
            if epoch % every:
                continue
            v = round(float(np.mean([m.nll(hs) for m, hs in zip(models, helds)])), 4)
            curve.append((epoch, v))
            if v < best[0]:
                best, since = (v, epoch), 0
                best_states[h] = [copy.deepcopy(m.net.state_dict()) for m in models]
            else:
                since += 1
                if since >= patience:
                    break
        curves[h] = curve
        for j, m in enumerate(models):
            m.net.load_state_dict(best_states[h][j])
        best_states[h] = models
    h, e, v = min(((h, e, v) for h in hidden for e, v in curves[h]), key=lambda t: (t[2], t[0], t[1]))
    return (h, e, v), curves, best_states[h]


def select_and_fit(seqs: Sequence[Sequence[int]], arch: str, plan: cv.Plan, hidden: Sequence[int] = HIDDEN,
                   max_epochs: int = MAX_EPOCHS) -> Fitted:
    """The one-class recipe of the module docstring, on integer token sequences, validated as ``plan`` says."""
    seqs = [tuple(int(x) for x in s) for s in seqs]
    return _select_and_fit(tuple(seqs), arch, plan, tuple(hidden), max_epochs)


@lru_cache(maxsize=8)
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
    by_score = {s: cv.best_threshold(y, oof[s]) for s in SCORES}
    chosen = max(SCORES, key=lambda s: (by_score[s][1]["objective"], s == SCORES[0]))
    thr = by_score[chosen][0]
    model = NextStepModel(arch, best_h, seed)
    model.fit(seqs, best_e)
    selection = {
        "recipe": "one-class next-step likelihood; capacity by held-out NLL, score and threshold by constructed "
                  "validation mistakes (" + cv.OBJECTIVE + ")",
        "folds": [list(f) for f, _ in val], "validation": cv.describe(plan, val),
        "candidates": {"hidden": list(hidden), "epochs": f"2..{max_epochs} step 2, stopped after 2 evaluations "
                       "without improvement", "score": list(SCORES)},
        "heldout_nll": {str(h): curves[h] for h in hidden},
        "chosen": {"hidden": best_h, "epochs": best_e, "heldout_nll": best_nll, "score": chosen,
                   "threshold": round(thr, 6)},
        "cv_scores": {s: by_score[s][1] | {"threshold": round(by_score[s][0], 6)} for s in SCORES},
    }
    return Fitted(model, chosen, thr, cv.calibrate(y, oof[chosen]), selection, val, y, oof)


class OneClassMonitor(Monitor):
    """``seq2seq-oneclass`` (``arch="gru"``) and ``sgt-oneclass`` (``arch="transformer"``)."""

    name = "seq2seq-oneclass"

    def __init__(self, arch: str = "gru", seed: int = 0, folds: int = 5, threads: int = 1) -> None:
        if arch not in ARCHS:
            raise ValueError(f"arch must be one of {ARCHS}, got {arch!r}")
        self.arch, self.seed, self.k, self.threads = arch, seed, folds, threads
        self.model: NextStepModel | None = None
        self.selection: dict = {}

    def fit(self, train: TrainingSet) -> None:
        import torch

        torch.set_num_threads(self.threads)
        seqs = [s for s in train.sequences if s]
        plan = cv.plan(train.benchmark, seqs, sorted(train.taxonomy), self.k, self.seed)
        f = select_and_fit(seqs, self.arch, plan)
        self.model, self.score, self.threshold, self.calib, self.selection = (
            f.model, f.score, f.threshold, f.calib, f.selection)

    def reset(self, ctx: StepContext) -> None:
        if self.model is None:
            raise RuntimeError(f"{self.name}: fit() must run before streaming")
        self.prefix: list[int] = []

    def step(self, t: int, step_id: int) -> StepOutput:
        lp = self.model.logprobs([self.prefix + [int(step_id)]])[0][-1]
        sc = score_of(lp, self.model.cls(int(step_id)))
        top = int(np.argmax(lp[1:])) if len(lp) > 1 else 0
        expected = sorted(self.model.index)[top] if self.model.index else None
        self.prefix.append(int(step_id))
        value = sc[self.score]
        ev = {"score": self.score, "value": round(value, 4), "threshold": round(self.threshold, 4),
              "p_step": round(float(np.exp(-sc["surprisal"])), 4), "expected": expected}
        return StepOutput(cv.calibrated(self.calib, value), onset=t, evidence=ev, flagged=value >= self.threshold)
