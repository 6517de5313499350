"""A small learned sequence monitor (the Seq2Seq+SG row of Table 2, in miniature), trained on CPU.

Each observed step is embedded as its operator plus its argument *types* by position, plus the task name (the
"+SG" context: which template is being executed). A one-layer GRU reads the stream causally and two heads give,
per step, the error probability (BCE with positive weighting: onsets are ~2% of steps) and the error type. Trained
on the train split in well under a minute on two cores; the weights are cached as ``learned_monitor.pt`` in the
output directory and reused when the training file is the same.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ego_adr.helpmeout.domain import parse_action
from ego_adr.helpmeout.generator import CATEGORIES
from ego_adr.helpmeout.monitors.base import EpisodeContext, Monitor, StepOutput
from ego_adr.helpmeout.ontology import type_of

MAX_ARGS = 4


def _tokens(action: str) -> list[str]:
    a = parse_action(action)
    return [a[0]] + [f"{i}:{type_of(x)}" for i, x in enumerate(a[1:MAX_ARGS + 1])]


class LearnedMonitor(Monitor):
    name = "learned"

    def __init__(self, cache_dir: str | None = None, epochs: int = 8, hidden: int = 64, seed: int = 0,
                 threads: int = 1) -> None:
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.epochs, self.hidden, self.seed, self.threads = epochs, hidden, seed, threads
        self.net = None

    # --- model -------------------------------------------------------------------------------------------
    def _build(self, n_tok: int, n_task: int):
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self, n_tok: int, n_task: int, h: int) -> None:
                super().__init__()
                self.tok = nn.EmbeddingBag(n_tok, h, mode="sum", padding_idx=0)
                self.task = nn.Embedding(n_task, h)
                self.gru = nn.GRU(h, h, batch_first=True)
                self.err = nn.Linear(h, 1)
                self.cat = nn.Linear(h, len(CATEGORIES))

            def forward(self, toks, task, hx=None):  # toks (B, T, K)
                b, t, k = toks.shape
                x = self.tok(toks.reshape(b * t, k)).reshape(b, t, -1) + self.task(task)[:, None, :]
                y, hx = self.gru(torch.tanh(x), hx)
                return self.err(y).squeeze(-1), self.cat(y), hx

        torch.manual_seed(self.seed)
        return Net(n_tok, n_task, self.hidden)

    def _encode(self, action: str) -> list[int]:
        ids = [self.vocab.get(tok, 1) for tok in _tokens(action)]
        return ids + [0] * (MAX_ARGS + 1 - len(ids))

    def fit(self, train: list[dict]) -> None:
        import torch

        if not train:
            raise ValueError("the learned monitor needs training episodes (--train FILE)")
        torch.set_num_threads(self.threads)
        digest = hashlib.sha256("".join(ep["id"] + str(len(ep["observed"])) for ep in train).encode()).hexdigest()[:16]
        cache = self.cache_dir / "learned_monitor.pt" if self.cache_dir else None
        if cache and cache.is_file():
            blob = torch.load(cache, weights_only=False)
            if blob.get("digest") == digest and blob.get("hidden") == self.hidden:
                self.vocab, self.tasks = blob["vocab"], blob["tasks"]
                self.net = self._build(len(self.vocab) + 2, len(self.tasks) + 1)
                self.net.load_state_dict(blob["state"])
                self.net.eval()
                return
        toks = sorted({tok for ep in train for a in ep["observed"] for tok in _tokens(a)})
        self.vocab = {tok: i + 2 for i, tok in enumerate(toks)}  # 0 pad, 1 unknown
        self.tasks = {t: i + 1 for i, t in enumerate(sorted({ep["task"] for ep in train}))}
        self.net = self._build(len(self.vocab) + 2, len(self.tasks) + 1)
        x = [torch.tensor([self._encode(a) for a in ep["observed"]]) for ep in train]
        y = [torch.tensor(ep["labels"], dtype=torch.float32) for ep in train]
        cat_idx = {c: i for i, c in enumerate(CATEGORIES)}
        yc = []
        for ep in train:
            row = torch.full((len(ep["observed"]),), -100, dtype=torch.long)
            for e in ep["errors"]:
                row[e["onset"]] = cat_idx[e["category"]]
            yc.append(row)
        task = torch.tensor([self.tasks[ep["task"]] for ep in train])
        pos = float(sum(t.sum() for t in y))
        neg = float(sum(len(t) for t in y)) - pos
        bce = torch.nn.BCEWithLogitsLoss(reduction="none", pos_weight=torch.tensor(min(30.0, neg / max(1.0, pos))))
        ce = torch.nn.CrossEntropyLoss(ignore_index=-100)
        opt = torch.optim.Adam(self.net.parameters(), lr=3e-3)
        g = torch.Generator().manual_seed(self.seed)
        pad = torch.nn.utils.rnn.pad_sequence
        self.net.train()
        for _ in range(self.epochs):
            perm = torch.randperm(len(train), generator=g).tolist()
            for s in range(0, len(perm), 32):
                b = perm[s:s + 32]
                xb = pad([x[i] for i in b], batch_first=True)
                yb = pad([y[i] for i in b], batch_first=True)
                cb = pad([yc[i] for i in b], batch_first=True, padding_value=-100)
                mask = pad([torch.ones(len(y[i])) for i in b], batch_first=True)
                le, lc, _ = self.net(xb, task[b])
                loss = (bce(le, yb) * mask).sum() / mask.sum() + 0.5 * ce(lc.reshape(-1, lc.shape[-1]), cb.reshape(-1))
                opt.zero_grad()
                loss.backward()
                opt.step()
        self.net.eval()
        if cache:
            cache.parent.mkdir(parents=True, exist_ok=True)
            torch.save({"digest": digest, "hidden": self.hidden, "vocab": self.vocab, "tasks": self.tasks,
                        "state": self.net.state_dict()}, cache)
            (cache.parent / "learned_monitor.json").write_text(json.dumps(
                {"digest": digest, "epochs": self.epochs, "hidden": self.hidden, "train_episodes": len(train),
                 "vocab": len(self.vocab)}, indent=2) + "\n")

    # --- streaming ---------------------------------------------------------------------------------------
    def reset(self, ctx: EpisodeContext) -> None:
        if self.net is None:
            raise RuntimeError("LearnedMonitor.fit() must run before streaming")
        self.task_id = self.tasks.get(ctx.task, 0)
        self.hx = None

    def step(self, t: int, action: str) -> StepOutput:
        import torch

        with torch.no_grad():
            xb = torch.tensor([[self._encode(action)]])
            le, lc, self.hx = self.net(xb, torch.tensor([self.task_id]), self.hx)
        prob = float(torch.sigmoid(le[0, 0]))
        cat = CATEGORIES[int(lc[0, 0].argmax())]
        return StepOutput(prob, t, cat)
