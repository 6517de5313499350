"""Learned monitors of Tables 2 and 11-15: Seq2Seq, Seq2Seq+SG and SGT, small enough to train on two CPU cores.

Each observed step is embedded as its operator plus its argument *types* by position (an EmbeddingBag), plus
the task name. Two heads give, per step, the error probability (BCE with positive weighting: onsets are ~4% of
steps) and the error type.

- ``seq2seq``: a one-layer GRU reads the action prefix causally (task name + prefix: the Figure 1c input).
- ``seq2seq-sg``: the same GRU with *subgoal context*: a bag of the task variant's subgoal tokens (predicate and
  argument types of every subgoal of the lifted template) added to every step's input.
- ``sgt``: the paper's description of SGT did not survive in our copy; the closest reading of its name and of
  its place beside the Seq2Seq rows is a *subgoal transformer*: a two-layer causal transformer encoder over the
  subgoal-context token followed by the action prefix, re-run on the whole prefix at every step.

Trained on the train split; the weights are cached as ``learned_<arch>.pt`` in the output directory and reused
when the training file and settings are the same.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ego_adr.helpmeout.generator.goal_control import CATEGORIES
from ego_adr.helpmeout.monitors.base import EpisodeContext, Monitor, StepOutput
from ego_adr.helpmeout.world.domain import parse_action
from ego_adr.helpmeout.world.ontology import type_of

MAX_ARGS = 4
MAX_SG = 48
ARCHS = ("seq2seq", "seq2seq-sg", "sgt")


def _tokens(action: str) -> list[str]:
    a = parse_action(action)
    return [a[0]] + [f"{i}:{type_of(x)}" for i, x in enumerate(a[1 : MAX_ARGS + 1])]


def subgoal_tokens(
    task: str, blocks: list[str] | tuple[str, ...] | None, templates_dir: str | None = None
) -> list[str]:
    """The lifted template's subgoals of the task variant as tokens (public input: no grounding)."""
    from ego_adr.helpmeout.world.lifting import restrict
    from ego_adr.helpmeout.world.templates import template_by_name

    try:
        t = restrict(template_by_name(task, templates_dir), tuple(blocks) if blocks else None)
    except KeyError:
        return []
    out = []
    for b in t.blocks:
        for s in b.subgoals:
            out.append("sg:" + s.fact[0])
            out.extend(f"sg{i}:{type_of(x)}" for i, x in enumerate(s.fact[1:3]))
    return out[:MAX_SG]


def _net(arch: str, n_tok: int, n_task: int, h: int):
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok = nn.EmbeddingBag(n_tok, h, mode="sum", padding_idx=0)
            self.sg = nn.EmbeddingBag(n_tok, h, mode="mean", padding_idx=0)
            self.task = nn.Embedding(n_task, h)
            if arch == "sgt":
                self.pos = nn.Embedding(256, h)
                layer = nn.TransformerEncoderLayer(h, 4, 2 * h, dropout=0.0, batch_first=True)
                self.enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
            else:
                self.gru = nn.GRU(h, h, batch_first=True)
            self.err = nn.Linear(h, 1)
            self.cat = nn.Linear(h, len(CATEGORIES))

        def forward(self, toks, task, sg, hx=None):  # toks (B, T, K), sg (B, S)
            b, t, k = toks.shape
            x = self.tok(toks.reshape(b * t, k)).reshape(b, t, -1) + self.task(task)[:, None, :]
            ctx = self.sg(sg) if arch != "seq2seq" else None
            if arch == "sgt":
                seq = torch.cat([ctx[:, None, :], x], dim=1)
                seq = seq + self.pos(torch.arange(t + 1).clamp(max=255))[None]
                mask = torch.triu(torch.full((t + 1, t + 1), float("-inf")), diagonal=1)
                y = self.enc(seq, mask=mask)[:, 1:]
            else:
                if ctx is not None:
                    x = x + ctx[:, None, :]
                y, hx = self.gru(torch.tanh(x), hx)
            return self.err(y).squeeze(-1), self.cat(y), hx

    return Net()


class LearnedMonitor(Monitor):
    name = "seq2seq"

    def __init__(
        self,
        arch: str = "seq2seq",
        cache_dir: str | None = None,
        epochs: int = 20,
        patience: int = 3,
        hidden: int = 64,
        seed: int = 0,
        threads: int = 1,
        templates_dir: str | None = None,
    ) -> None:
        if arch not in ARCHS:
            raise ValueError(f"arch must be one of {ARCHS}")
        self.arch, self.cache_dir = arch, Path(cache_dir) if cache_dir else None
        self.epochs, self.patience, self.hidden, self.seed = epochs, patience, hidden, seed
        self.threads, self.templates_dir = threads, templates_dir
        self.net = None
        self.recipe: dict = {}

    def _encode(self, action: str) -> list[int]:
        ids = [self.vocab.get(tok, 1) for tok in _tokens(action)]
        return ids + [0] * (MAX_ARGS + 1 - len(ids))

    def _sg(self, task: str, blocks) -> list[int]:
        ids = [self.vocab.get(tok, 1) for tok in subgoal_tokens(task, blocks, self.templates_dir)] or [0]
        return ids + [0] * (MAX_SG - len(ids))

    def fit(self, train: list[dict], val: list[dict] | None = None) -> None:
        """Train on ``train``; with ``val``, keep the epoch of lowest validation loss and stop after ``patience``
        epochs without improvement (Table 10: the validation split is for "checkpoint selection")."""
        import torch

        if not train:
            raise ValueError(f"{self.arch} needs training episodes (--train FILE)")
        torch.set_num_threads(self.threads)
        key = f"{self.arch}:{self.epochs}:{self.patience}:{self.hidden}:{self.seed}:" + "".join(
            ep["id"] + str(len(ep["observed"])) for ep in train + (val or [])
        )
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        cache = self.cache_dir / f"learned_{self.arch}.pt" if self.cache_dir else None
        if cache and cache.is_file() and self._load(torch.load(cache, weights_only=False), digest):
            return
        sgs = {(ep["task"], tuple(ep.get("template_blocks") or ())) for ep in train}
        toks = {tok for ep in train for a in ep["observed"] for tok in _tokens(a)}
        toks |= {tok for task, blocks in sgs for tok in subgoal_tokens(task, blocks, self.templates_dir)}
        self.vocab = {tok: i + 2 for i, tok in enumerate(sorted(toks))}  # 0 pad, 1 unknown
        self.tasks = {t: i + 1 for i, t in enumerate(sorted({ep["task"] for ep in train}))}
        torch.manual_seed(self.seed)
        self.net = _net(self.arch, len(self.vocab) + 2, len(self.tasks) + 1, self.hidden)
        self.recipe = self._train(self._tensors(train), self._tensors(val) if val else None)
        self.net.eval()
        if cache:
            cache.parent.mkdir(parents=True, exist_ok=True)
            torch.save(
                {
                    "digest": digest,
                    "vocab": self.vocab,
                    "tasks": self.tasks,
                    "state": self.net.state_dict(),
                    "recipe": self.recipe,
                },
                cache,
            )
            (cache.parent / f"learned_{self.arch}.json").write_text(
                json.dumps(
                    {
                        "digest": digest,
                        "arch": self.arch,
                        "hidden": self.hidden,
                        "train_episodes": len(train),
                        "val_episodes": len(val or []),
                        "vocab": len(self.vocab),
                        **self.recipe,
                    },
                    indent=2,
                )
                + "\n"
            )

    def _load(self, blob: dict, digest: str) -> bool:
        if blob.get("digest") != digest:
            return False
        self.vocab, self.tasks, self.recipe = blob["vocab"], blob["tasks"], blob.get("recipe", {})
        self.net = _net(self.arch, len(self.vocab) + 2, len(self.tasks) + 1, self.hidden)
        self.net.load_state_dict(blob["state"])
        self.net.eval()
        return True

    def _tensors(self, eps: list[dict]) -> dict:
        import torch

        cat_idx = {c: i for i, c in enumerate(CATEGORIES)}
        yc = []
        for ep in eps:
            row = torch.full((len(ep["observed"]),), -100, dtype=torch.long)
            for e in ep["errors"]:
                row[e["onset"]] = cat_idx[e["category"]]
            yc.append(row)
        return {
            "x": [torch.tensor([self._encode(a) for a in ep["observed"]]) for ep in eps],
            "y": [torch.tensor(ep["labels"], dtype=torch.float32) for ep in eps],
            "yc": yc,
            "sg": torch.tensor([self._sg(ep["task"], ep.get("template_blocks")) for ep in eps]),
            "task": torch.tensor([self.tasks.get(ep["task"], 0) for ep in eps]),
        }

    def _loss(self, d: dict, b: list[int], bce, ce):
        import torch

        pad = torch.nn.utils.rnn.pad_sequence
        xb = pad([d["x"][i] for i in b], batch_first=True)
        yb = pad([d["y"][i] for i in b], batch_first=True)
        cb = pad([d["yc"][i] for i in b], batch_first=True, padding_value=-100)
        mask = pad([torch.ones(len(d["y"][i])) for i in b], batch_first=True)
        le, lc, _ = self.net(xb, d["task"][b], d["sg"][b])
        return (bce(le, yb) * mask).sum() / mask.sum() + 0.5 * ce(
            lc.reshape(-1, lc.shape[-1]), cb.reshape(-1)
        )

    def _train(self, tr: dict, va: dict | None) -> dict:
        """Adam (lr 3e-3), batches of 32, BCE with positive weighting + 0.5 x type cross-entropy; up to ``epochs``
        epochs, the best validation epoch kept (early stopping with ``patience``) when a validation split is given."""
        import copy

        import torch

        pos = float(sum(t.sum() for t in tr["y"]))
        neg = float(sum(len(t) for t in tr["y"])) - pos
        bce = torch.nn.BCEWithLogitsLoss(
            reduction="none", pos_weight=torch.tensor(min(30.0, neg / max(1.0, pos)))
        )
        ce = torch.nn.CrossEntropyLoss(ignore_index=-100)
        opt = torch.optim.Adam(self.net.parameters(), lr=3e-3)
        g = torch.Generator().manual_seed(self.seed)
        best, best_epoch, best_state, history = float("inf"), 0, None, []
        for epoch in range(1, self.epochs + 1):
            self.net.train()
            perm = torch.randperm(len(tr["x"]), generator=g).tolist()
            for s in range(0, len(perm), 32):
                loss = self._loss(tr, perm[s : s + 32], bce, ce)
                opt.zero_grad()
                loss.backward()
                opt.step()
            if va is None:
                continue
            self.net.eval()
            with torch.no_grad():
                idx = list(range(len(va["x"])))
                vl = sum(
                    float(self._loss(va, idx[s : s + 64], bce, ce)) * len(idx[s : s + 64])
                    for s in range(0, len(idx), 64)
                ) / len(idx)
            history.append(round(vl, 5))
            if vl < best:
                best, best_epoch, best_state = vl, epoch, copy.deepcopy(self.net.state_dict())
            elif epoch - best_epoch >= self.patience:
                break
        if best_state is not None:
            self.net.load_state_dict(best_state)
        ran = len(history) if va is not None else self.epochs
        return {
            "max_epochs": self.epochs,
            "patience": self.patience if va is not None else None,
            "epochs_run": ran,
            "best_epoch": best_epoch if va is not None else self.epochs,
            "val_loss": history,
            "selection": "lowest validation loss" if va is not None else "last epoch",
        }

    # --- streaming ---------------------------------------------------------------------------------------
    def reset(self, ctx: EpisodeContext) -> None:
        import torch

        if self.net is None:
            raise RuntimeError("LearnedMonitor.fit() must run before streaming")
        self.task_id = torch.tensor([self.tasks.get(ctx.task, 0)])
        self.sg_ids = torch.tensor([self._sg(ctx.task, ctx.template_blocks)])
        self.hx = None
        self.prefix: list[list[int]] = []

    def step(self, t: int, action: str) -> StepOutput:
        import torch

        with torch.no_grad():
            if self.arch == "sgt":  # causal attention over the whole prefix (recomputed: prefixes are short)
                self.prefix.append(self._encode(action))
                le, lc, _ = self.net(torch.tensor([self.prefix]), self.task_id, self.sg_ids)
                le, lc = le[:, -1:], lc[:, -1:]
            else:
                le, lc, self.hx = self.net(
                    torch.tensor([[self._encode(action)]]), self.task_id, self.sg_ids, self.hx
                )
        prob = float(torch.sigmoid(le[0, 0]))
        cat = CATEGORIES[int(lc[0, 0].argmax())]
        return StepOutput(prob, t, cat)
