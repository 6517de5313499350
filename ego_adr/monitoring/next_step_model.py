"""The one-class next-step model shared by every benchmark's one-class learned monitors: p(next token | prefix)
over integer tokens, trained on correct sequences only, and its capacity chosen by held-out likelihood.

HelpMeOut's learned families (Seq2Seq: a GRU over the prefix; SGT: a causal transformer; Tables 2, 11-15 of the
HelpMeOut paper) are trained there with error labels. The step-stream benchmarks give correct sequences only
(PREGO, Flaborea et al., CVPR 2024, Sec. 3: mistakes are open-set), so the same two families are trained here as
next-step likelihood models instead; a step is a mistake when it is unlikely after the observed prefix. What is
benchmark-specific (how validation is built, what a token is, how the score becomes an alarm) stays with the
benchmark: :mod:`ego_adr.online_mistakes.monitors.neural_oneclass` (Assembly101-O, EPIC-Tent-O) and
:mod:`ego_adr.helpmeout.monitors.learned_oneclass` (HelpMeOut's one-class rows). This module knows neither.

- :class:`NextStepModel`: the network, trained with cross-entropy on every next token. A sequence may carry
  leading *context* tokens (a separate input vocabulary, never predicted nor scored): they condition the
  sequence, as a task name or a task's subgoals do.
- :func:`score_of`: surprisal ``-log p(token | prefix)`` and margin ``log max p - log p(token)`` of one token.
- :func:`capacity`: the fold models of each hidden size trained in lockstep, the mean held-out NLL per token after
  every second epoch, early stopped; the (hidden, epochs) of lowest held-out NLL. This needs no mistakes at all.

A token never seen in training is output class 0, whose probability is 0 (surprisal and margin +inf).

The network trains and scores in float64 on one thread with torch's deterministic algorithms
(:func:`ego_adr.monitoring.numerics.fixed_numerics`): in float32 the choice of CPU kernels alone moved a chosen
threshold, so the same data gave other alarms on another machine.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ego_adr.monitoring.numerics import fixed_numerics

ARCHS = ("gru", "transformer")
SCORES = ("surprisal", "margin")
PAD, BOS, UNK = 0, 1, 2  # input ids; known tokens start at 3, then context tokens. Output class 0: never seen.
HIDDEN = (32, 64)
PRECISION = "float64"  # what the weights are trained in (a weights cache keyed without it would serve float32 ones)
MAX_EPOCHS = 16


def _net(arch: str, n_in: int, n_out: int, hidden: int, positions: int = 128):
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(n_in, hidden, padding_idx=PAD)
            if arch == "transformer":
                self.pos = nn.Embedding(positions, hidden)
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
                h = h + self.pos(torch.arange(t).clamp(max=positions - 1))[None]
                mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
                h = self.enc(h, mask=mask, src_key_padding_mask=x == PAD)
            else:
                h, _ = self.gru(h)
            return self.out(self.drop(h))

    return Net()


class Adam:
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


Seqs = Sequence[Sequence[int]]


class NextStepModel:
    """p(next token | context, prefix) over integer tokens, trained on correct sequences (cross-entropy on every
    next token; context tokens are inputs only).

    Adam (lr 1e-2), minibatches of 32 sequences (shuffled by a seeded generator), dropout 0.1 on the embeddings
    and before the output layer. :meth:`start` then :meth:`epoch` lets :func:`capacity` train folds in lockstep
    and watch their held-out likelihood. ``ctx`` (one tuple of context tokens per sequence) is optional
    everywhere; without it the input is ``BOS + s``. ``positions`` bounds the transformer's position table.
    """

    def __init__(self, arch: str = "gru", hidden: int = 32, seed: int = 0, positions: int = 128) -> None:
        if arch not in ARCHS:
            raise ValueError(f"arch must be one of {ARCHS}, got {arch!r}")
        self.arch, self.hidden, self.seed, self.positions = arch, hidden, seed, positions
        self.net = None
        self.index: dict[int, int] = {}
        self.ctx_index: dict[int, int] = {}

    def _vocab(self, seqs: Seqs, ctx: Seqs | None) -> None:
        known = sorted({int(x) for s in seqs for x in s})
        self.index = {x: i for i, x in enumerate(known)}  # output class i + 1, input id i + 3
        ctx_known = sorted({int(x) for c in ctx or () for x in c})
        self.ctx_index = {x: i for i, x in enumerate(ctx_known)}  # input id len(index) + 3 + i

    def _build(self) -> None:
        n = len(self.index)
        with fixed_numerics():  # float64 weights (module docstring)
            self.net = _net(self.arch, n + 3 + len(self.ctx_index), n, self.hidden, self.positions)

    def _rows(self, seqs: Seqs, ctx: Seqs | None) -> tuple[list[list[int]], list[int]]:
        n = len(self.index) + 3
        rows, offs = [], []
        for j, s in enumerate(seqs):
            head = [self.ctx_index[x] + n if x in self.ctx_index else UNK for x in ctx[j]] if ctx else []
            rows.append(head + [BOS] + [self.index[x] + 3 if x in self.index else UNK for x in s])
            offs.append(len(head))
        return rows, offs

    def _inputs(self, seqs: Seqs, ctx: Seqs | None = None):
        import torch

        rows, _ = self._rows(seqs, ctx)
        width = max(len(r) for r in rows)
        return torch.tensor([r + [PAD] * (width - len(r)) for r in rows])

    def _targets(self, seqs: Seqs, ctx: Seqs | None = None):
        import torch

        heads = [len(ctx[j]) if ctx else 0 for j in range(len(seqs))]
        width = max(h + len(s) for h, s in zip(heads, seqs)) + 1
        rows = [[-100] * h + [self.index[x] for x in s] for h, s in zip(heads, seqs)]  # known tokens only
        return torch.tensor([r + [-100] * (width - len(r)) for r in rows])

    def start(self, seqs: Seqs, ctx: Seqs | None = None) -> None:
        """A fresh network and optimiser for ``seqs`` (seeded): then :meth:`epoch` as often as wanted."""
        import torch

        torch.manual_seed(self.seed)
        self._vocab(seqs, ctx)
        self._build()
        self._opt = Adam(list(self.net.parameters()), lr=1e-2)
        # input [ctx] BOS + s predicts s position by position; the last input (the last token) predicts nothing
        self._x, self._y = self._inputs(seqs, ctx), self._targets(seqs, ctx)
        self._gen = torch.Generator().manual_seed(self.seed)
        self.epochs = 0

    def epoch(self) -> None:
        with fixed_numerics():
            self._epoch()

    def _epoch(self) -> None:
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

    def fit(self, seqs: Seqs, epochs: int, ctx: Seqs | None = None) -> NextStepModel:
        self.start(seqs, ctx)
        for _ in range(epochs):
            self.epoch()
        return self

    def logprobs(self, seqs: Seqs, ctx: Seqs | None = None) -> list[np.ndarray]:
        """Per sequence, (len, 1 + known tokens) log-probabilities of the next token after each prefix ``s[:i]``
        (and the context); column 0, a token never seen in training, is -inf."""
        import torch

        self.net.eval()
        _, offs = self._rows(seqs, ctx)
        with torch.no_grad(), fixed_numerics():
            lp = torch.log_softmax(self.net(self._inputs(seqs, ctx)), dim=-1).numpy()
        lp = np.concatenate([np.full(lp.shape[:2] + (1,), -np.inf), lp], axis=-1)
        return [lp[i, o : o + len(s)] for i, (s, o) in enumerate(zip(seqs, offs))]

    def nll(self, seqs: Seqs, ctx: Seqs | None = None) -> float:
        """Mean NLL per token over the tokens the model knows (a token it has never seen costs every candidate the
        same infinite amount, so it is left out of the comparison)."""
        tot, n = 0.0, 0
        for s, lp in zip(seqs, self.logprobs(seqs, ctx)):
            known = [(i, self.cls(x)) for i, x in enumerate(s) if self.cls(x)]
            tot -= sum(float(lp[i, c]) for i, c in known)
            n += len(known)
        return tot / max(n, 1)

    def cls(self, step: int) -> int:
        return self.index[step] + 1 if step in self.index else 0

    def step_scores(self, seqs: Seqs, ctx: Seqs | None = None) -> dict[str, np.ndarray]:
        """Every token's surprisal and margin, concatenated in order."""
        out = {k: [] for k in SCORES}
        for s, lp in zip(seqs, self.logprobs(seqs, ctx)):
            for i, x in enumerate(s):
                sc = score_of(lp[i], self.cls(x))
                for k in SCORES:
                    out[k].append(sc[k])
        return {k: np.asarray(v) for k, v in out.items()}

    def state(self) -> dict:
        """What :meth:`from_state` rebuilds the fitted model from (for a weights cache)."""
        return {"arch": self.arch, "hidden": self.hidden, "seed": self.seed, "positions": self.positions,
                "index": dict(self.index), "ctx_index": dict(self.ctx_index), "weights": self.net.state_dict()}

    @classmethod
    def from_state(cls, blob: dict) -> NextStepModel:
        m = cls(blob["arch"], blob["hidden"], blob["seed"], blob["positions"])
        m.index, m.ctx_index = dict(blob["index"]), dict(blob["ctx_index"])
        m._build()
        m.net.load_state_dict(blob["weights"])
        m.net.eval()
        return m


def score_of(logp: np.ndarray, cls: int) -> dict[str, float]:
    """Surprisal and margin of output class ``cls`` under one next-token distribution (log-probabilities)."""
    known = logp[1:] if len(logp) > 1 else logp  # class 0 (never seen) is never the most likely token
    return {"surprisal": float(-logp[cls]), "margin": float(known.max() - logp[cls])}


@dataclass(frozen=True)
class Fold:
    """One fit / held-out pair for :func:`capacity`: the sequences a fold model trains on, those its held-out
    NLL is measured on, and their context tokens (or None)."""

    fit: tuple
    held: tuple
    fit_ctx: tuple | None = None
    held_ctx: tuple | None = None


def capacity(folds: Sequence[Fold], arch: str, seed: int, hidden: Sequence[int], max_epochs: int, every: int = 2,
             patience: int = 2, positions: int = 128):
    """Per hidden size, the fold models (fold ``j`` seeded ``seed + j``) trained in lockstep, the mean held-out
    NLL per token after every ``every`` epochs, stopping once it has not improved for ``patience`` evaluations
    (or at ``max_epochs``). Returns the (hidden, epochs, NLL) of lowest mean (ties: smaller, then shorter), the
    curves, and the fold models of that hidden size with their weights at its best epoch."""
    curves, best_states = {}, {}
    for h in hidden:
        models = []
        for j, f in enumerate(folds):
            models.append(NextStepModel(arch, h, seed + j, positions))
            models[-1].start(f.fit, f.fit_ctx)
        curve, best, since = [], (np.inf, 0), 0
        for epoch in range(1, max_epochs + 1):
            for m in models:
                m.epoch()
            if epoch % every:
                continue
            v = round(float(np.mean([m.nll(f.held, f.held_ctx) for m, f in zip(models, folds)])), 4)
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
