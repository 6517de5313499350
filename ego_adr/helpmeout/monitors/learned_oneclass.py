"""One-class rows beside Tables 2 and 11-15's learned monitors: the Seq2Seq, Seq2Seq+SG and SGT input families of
:mod:`ego_adr.helpmeout.monitors.learned`, trained on **correct sequences only** as next-step likelihood models
(:class:`ego_adr.monitoring.next_step_model.NextStepModel`, the model the step-stream benchmarks' one-class monitors use).

Why: the paper's Seq2Seq is weak (M1 0.50 in Table 2, Sec. 4) although it is trained with error labels. The
step-stream benchmarks can only train one-class; trained that way here, the same families say whether the
weakness is the supervised regime (an error head learning from ~4% positive steps) or the data.

- **Token**: what the supervised monitors see of an action, its operator and argument types by position
  (``learned._tokens``), joined into one string and mapped to an integer id by a vocabulary of the training
  sequences; an action never seen in training is unknown (probability 0, so always flagged).
- **Conditioning**: leading context tokens, inputs only (never predicted, never scored): ``task:<name>`` for
  ``seq2seq``; the task plus the variant's subgoal tokens (``learned.subgoal_tokens``: the lifted template's
  subgoals, public input) for ``seq2seq-sg`` and ``sgt``. ``seq2seq*`` is a GRU, ``sgt`` a causal transformer.
- **Training data**: the training split's correct episodes, whole (``(task-end)`` included, so a sequence that ends
  too early is unlikely). Not the prefixes of errorful episodes before their first onset: cutting there reads the
  onset label, and the step-stream benchmarks have no such prefixes either; ``prefixes=True`` adds them for an
  ablation. No label and no error step is ever a training target.
- **Capacity and epochs** (:func:`ego_adr.monitoring.next_step_model.capacity`): hidden size in :data:`HIDDEN`, epochs
  2, 4, ... :data:`MAX_EPOCHS` (stopped after two evaluations without improvement), by the mean NLL per step on
  the validation split's correct episodes; the model at that epoch is kept (not refitted on validation, whose
  episodes then choose the alarm threshold).
- **Score**: surprisal ``-log p(action | prefix)`` or margin ``log max p - log p(action)``, whichever gives the
  higher episode AUROC (M1's definition) on the validation split (ties: surprisal); the one choice here that
  reads validation labels, as every monitor's threshold does. ``prob`` is ``1 - exp(-score)``, a monotone map
  needing no labels: for surprisal the model's probability that some other action came next, for margin
  ``1 - p(action) / max p``. The alarm threshold is the harness's, as for every monitor (Youden's J on
  ``val.jsonl``, :mod:`ego_adr.helpmeout.evaluation.evalrun`).
- **Type**: a next-step model has no error-type head, so ``category`` is always None: the monitor names no type,
  its M4 is 0 by construction (no type is ever a true positive), not a measurement.

Weights are cached as ``oneclass_<name>.pt`` in the output directory (with a JSON sidecar) and reused when the
digest of the training and held-out sequences and the settings is the same. Deterministic for a seed.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np

from ego_adr.helpmeout.monitors.base import EpisodeContext, Monitor, StepOutput
from ego_adr.helpmeout.monitors.learned import _tokens, subgoal_tokens
from ego_adr.monitoring.next_step_model import PRECISION, SCORES, Fold, NextStepModel, capacity, score_of
from ego_adr.monitoring.ranking import auroc

FAMILIES = {"seq2seq": "gru", "seq2seq-sg": "gru", "sgt": "transformer"}
HIDDEN = (32, 64, 128)
MAX_EPOCHS = 30
POSITIONS = 256  # context (task + up to 48 subgoal tokens) + BOS + the longest episodes


def action_token(action: str) -> str:
    """The supervised monitors' view of an action (operator + argument types by position) as one token."""
    return " ".join(_tokens(action))


class OneClassMonitor(Monitor):
    """``seq2seq-oneclass``, ``seq2seq-sg-oneclass``, ``sgt-oneclass`` (module docstring)."""

    name = "seq2seq-oneclass"

    def __init__(self, arch: str = "seq2seq", cache_dir: str | None = None, seed: int = 0, threads: int = 1,
                 templates_dir: str | None = None, hidden: tuple[int, ...] = HIDDEN, max_epochs: int = MAX_EPOCHS,
                 prefixes: bool = False) -> None:
        if arch not in FAMILIES:
            raise ValueError(f"arch must be one of {tuple(FAMILIES)}, got {arch!r}")
        self.arch, self.cache_dir = arch, Path(cache_dir) if cache_dir else None
        self.seed, self.threads, self.templates_dir = seed, threads, templates_dir
        self.hidden, self.max_epochs, self.prefixes = tuple(hidden), max_epochs, prefixes
        self.model: NextStepModel | None = None
        self.recipe: dict = {}

    # --- what the model is trained on ----------------------------------------------------------------------
    def context(self, task: str, blocks) -> list[str]:
        out = ["task:" + task]
        if self.arch != "seq2seq":
            out += subgoal_tokens(task, list(blocks) if blocks else None, self.templates_dir)
        return out

    def sequences(self, eps: list[dict], prefixes: bool = False) -> list[tuple[list[str], list[str]]]:
        """(context, action tokens) of each correct episode, and with ``prefixes`` of each errorful one's steps
        before its first onset; nothing of an errorful episode from its onset on."""
        out = []
        for ep in eps:
            steps = ep["observed"] if ep["correct"] else ep["observed"][: ep["first_onset"]] if prefixes else []
            if steps:
                out.append((self.context(ep["task"], ep.get("template_blocks")), [action_token(a) for a in steps]))
        return out

    def _ids(self, pairs) -> tuple[tuple, tuple]:
        ctx = tuple(tuple(self.vocab.get(x, -1) for x in c) for c, _ in pairs)
        seqs = tuple(tuple(self.vocab.get(x, -1) for x in s) for _, s in pairs)
        return seqs, ctx

    # --- fitting -------------------------------------------------------------------------------------------
    def fit(self, train: list[dict], val: list[dict] | None = None) -> None:
        import torch

        torch.set_num_threads(self.threads)
        tr = self.sequences(train, self.prefixes)
        if not tr:
            raise ValueError(f"{self.arch}-oneclass needs correct training episodes (--train FILE)")
        held = self.sequences(val) if val else tr[4::5]  # no validation split: every fifth training sequence
        if not val:
            tr = [p for i, p in enumerate(tr) if i % 5 != 4]
        settings = {"arch": self.arch, "hidden": self.hidden, "max_epochs": self.max_epochs, "seed": self.seed,
                    "prefixes": self.prefixes, "positions": POSITIONS, "precision": PRECISION}
        digest = hashlib.sha256(json.dumps([settings, tr, held, self._val_key(val)]).encode()).hexdigest()[:16]
        cache = self.cache_dir / f"oneclass_{self.arch}.pt" if self.cache_dir else None
        if cache and cache.is_file() and self._load(torch.load(cache, weights_only=False), digest):
            return
        self.vocab = {x: i for i, x in enumerate(sorted({x for c, s in tr for x in c + s}))}
        fit_seqs, fit_ctx = self._ids(tr)
        held_seqs, held_ctx = self._ids(held)
        fold = Fold(fit_seqs, held_seqs, fit_ctx, held_ctx)
        (h, e, v), curves, models = capacity([fold], FAMILIES[self.arch], self.seed, self.hidden, self.max_epochs,
                                             positions=POSITIONS)
        self.model = models[0]
        self.score, by_score = self._choose_score(val)
        self.recipe = {
            "recipe": "one-class next-step likelihood on correct sequences only; capacity and epochs by held-out "
                      "NLL on the validation split's correct episodes; score by validation episode AUROC",
            "training_sequences": len(tr), "heldout_sequences": len(held), "prefixes": self.prefixes,
            "context": "task name" if self.arch == "seq2seq" else "task name + subgoal tokens",
            "vocab": len(self.vocab), "known_actions": len(self.model.index),
            "candidates": {"hidden": list(self.hidden), "epochs": f"2..{self.max_epochs} step 2, stopped after 2 "
                           "evaluations without improvement", "score": list(SCORES)},
            "heldout_nll": {str(k): c for k, c in curves.items()},
            "chosen": {"hidden": h, "epochs": e, "heldout_nll": v, "score": self.score},
            "val_auroc_by_score": by_score, "prob": "1 - exp(-score)", "category": None,
        }
        if cache:
            self._save(cache, digest)

    @staticmethod
    def _val_key(val: list[dict] | None) -> list:
        return [[ep["id"], ep["correct"], len(ep["observed"])] for ep in val or []]

    def _choose_score(self, val: list[dict] | None) -> tuple[str, dict]:
        """The score of higher validation episode AUROC (an episode's score: its highest step score)."""
        if not val or all(ep["correct"] for ep in val) or not any(ep["correct"] for ep in val):
            return SCORES[0], {}
        pairs = [(self.context(ep["task"], ep.get("template_blocks")), [action_token(a) for a in ep["observed"]])
                 for ep in val]
        seqs, ctx = self._ids(pairs)
        y = np.array([not ep["correct"] for ep in val], dtype=float)
        got = {s: [] for s in SCORES}
        for s, c in zip(seqs, ctx):  # one episode at a time: the same forward pass the stream makes
            sc = self.model.step_scores([s], [c])
            for k in SCORES:
                got[k].append(float(np.nan_to_num(sc[k].max(), posinf=1e9)))
        by = {k: round(float(auroc(y, np.array(v))), 4) for k, v in got.items()}
        return max(SCORES, key=lambda k: (by[k], k == SCORES[0])), by

    def _save(self, cache: Path, digest: str) -> None:
        import torch

        cache.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"digest": digest, "vocab": self.vocab, "score": self.score, "recipe": self.recipe,
                    "model": self.model.state()}, cache)
        side = {"digest": digest, "arch": self.arch, **self.recipe}
        (cache.parent / f"oneclass_{self.arch}.json").write_text(json.dumps(side, indent=2) + "\n")

    def _load(self, blob: dict, digest: str) -> bool:
        if blob.get("digest") != digest:
            return False
        self.vocab, self.score, self.recipe = blob["vocab"], blob["score"], blob["recipe"]
        self.model = NextStepModel.from_state(blob["model"])
        return True

    # --- streaming -----------------------------------------------------------------------------------------
    def reset(self, ctx: EpisodeContext) -> None:
        if self.model is None:
            raise RuntimeError(f"{self.name}: fit() must run before streaming")
        self.ctx_ids = [self.vocab.get(x, -1) for x in self.context(ctx.task, ctx.template_blocks)]
        self.prefix: list[int] = []

    def step(self, t: int, action: str) -> StepOutput:
        x = self.vocab.get(action_token(action), -1)
        lp = self.model.logprobs([self.prefix + [x]], [self.ctx_ids])[0][-1]
        sc = score_of(lp, self.model.cls(x))
        self.prefix.append(x)
        value = sc[self.score]
        prob = 1.0 if math.isinf(value) else float(-math.expm1(-value))
        ev = {"score": None if math.isinf(value) else round(value, 4),  # None: an action never seen in training
              "p_step": round(float(np.exp(-sc["surprisal"])), 4)}
        return StepOutput(prob, t, None, evidence=ev)
