"""How predictable is each error category's realisation? An n-gram detectability table for a release.

Why: the learned monitors of Table 2 reach far higher scores on our release than on the paper's, so the question
is which categories are realised in a way a surface model can spot. The probe is deliberately shallow: the error
probability of a step is the training-split rate of errors among steps with the same *n-gram context* (task,
the previous ``n - 1`` action signatures, the action's signature; a signature is the operator and its argument
types, what the learned monitors embed), backing off to shorter contexts where a context was never seen. Per
category it reports the step-level AUPRC of that probe on the test split, pooled with the correct episodes as in
Table 12, beside the positive-step rate (Random's AUPRC) -- a category the probe already finds is stereotyped.
Paper Table 12 gives the learned monitors' per-class AUPRC for comparison (:data:`PAPER_TABLE12`).
"""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from ego_adr.helpmeout.generator.goal_control import CATEGORIES
from ego_adr.helpmeout.world.domain import TASK_END, parse_action
from ego_adr.helpmeout.world.ontology import type_of
from ego_adr.monitoring.ranking import average_precision

# Table 12 (paper): per-class step-level AUPRC of the learned monitors on the 500-episode test set (the six
# classes whose rows survived extraction).
PAPER_TABLE12 = {
    "seq2seq": {
        "omission": 0.696,
        "sequence": 0.186,
        "anticipation": 0.023,
        "perseveration": 0.093,
        "object_substitution": 0.018,
        "tool_substitution": 0.003,
    },
    "seq2seq-sg": {
        "omission": 0.716,
        "sequence": 0.215,
        "anticipation": 0.085,
        "perseveration": 0.095,
        "object_substitution": 0.012,
        "tool_substitution": 0.003,
    },
    "sgt": {
        "omission": 0.730,
        "sequence": 0.814,
        "anticipation": 0.359,
        "perseveration": 0.502,
        "object_substitution": 0.038,
        "tool_substitution": 0.020,
    },
}
PAPER_TABLE12_SGT = PAPER_TABLE12["sgt"]


def signature(action: str) -> str:
    if action == TASK_END:
        return TASK_END
    a = parse_action(action)
    return " ".join([a[0]] + [type_of(x) for x in a[1:]])


class NgramProbe:
    """P(error | task, last n signatures) with add-one-free backoff: the longest context seen ``min_count`` times."""

    def __init__(self, n: int = 3, min_count: int = 3) -> None:
        self.n, self.min_count = n, min_count
        self.pos: dict[tuple, Counter] = defaultdict(Counter)
        self.tot: dict[tuple, Counter] = defaultdict(Counter)

    def _contexts(self, ep: dict):
        sigs = [signature(a) for a in ep["observed"]]
        for t in range(len(sigs)):
            yield t, [(ep["task"],) + tuple(sigs[max(0, t - k + 1) : t + 1]) for k in range(self.n, 0, -1)]

    def fit(self, train: list[dict]) -> NgramProbe:
        for ep in train:
            for t, ctxs in self._contexts(ep):
                for k, c in enumerate(ctxs):
                    self.tot[k][c] += 1
                    self.pos[k][c] += ep["labels"][t]
        return self

    def scores(self, ep: dict) -> list[float]:
        out = []
        for _t, ctxs in self._contexts(ep):
            s = 0.0
            for k, c in enumerate(ctxs):
                if self.tot[k][c] >= self.min_count:
                    s = self.pos[k][c] / self.tot[k][c]
                    break
            out.append(s)
        return out


def detectability(train: list[dict], test: list[dict], n: int = 3) -> dict[str, dict]:
    """Per primary category: episodes, error steps, positive-step rate, and the n-gram probe's AUPRC."""
    probe = NgramProbe(n).fit(train)
    scored = [(ep, np.array(probe.scores(ep)), np.array(ep["labels"], dtype=bool)) for ep in test]
    correct = [x for x in scored if not x[0]["errors"]]
    out: dict[str, dict] = {}
    for cat in CATEGORIES + ("all",):
        mine = [x for x in scored if x[0]["errors"] and (cat == "all" or x[0]["primary_category"] == cat)]
        if not mine:
            continue
        pool = mine + correct
        y = np.concatenate([x[2] for x in pool])
        s = np.concatenate([x[1] for x in pool])
        out[cat] = {
            "episodes": len(mine),
            "error_steps": int(sum(x[2].sum() for x in mine)),
            "positive_rate": float(y.mean()),
            "ngram_AUPRC": average_precision(y, s),
        }
    return out


def detectability_table(rows: dict[str, dict], learned: dict[str, dict] | None = None) -> str:
    """Markdown: per category, the probe beside Random and each learned monitor, ours / paper (Table 12)."""
    names = [m for m in PAPER_TABLE12 if m in (learned or {})] or ["sgt"]
    head = "| Category | episodes / steps | Random | n-gram probe |" + "".join(
        f" {m} ours / paper |" for m in names
    )
    lines = [head, "|---|---:|---:|---:|" + "---:|" * len(names)]

    def cell(v: float | None) -> str:
        return "–" if v is None else f"{v:.3f}"

    for cat, r in rows.items():
        cells = [
            f"{cell((learned or {}).get(m, {}).get(cat))} / {cell(PAPER_TABLE12[m].get(cat))}" for m in names
        ]
        lines.append(
            f"| {cat} | {r['episodes']} / {r['error_steps']} | {r['positive_rate']:.3f} | "
            f"{r['ngram_AUPRC']:.3f} |" + "".join(f" {c} |" for c in cells)
        )
    return "\n".join(lines)
