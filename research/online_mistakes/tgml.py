"""A DO-like precondition graph (research only): our implementation of the Task Graph Maximum Likelihood idea of
DTGL (Seminara et al., NeurIPS 2024, Sec. 3) from its description, to see what DO's precondition check does on
our validation -- and, with ``--test``, a logged look at the configuration chosen there, beside the "flag only a
step no training recording contains" baseline that explains much of the published Assembly101-O numbers.

The graph: nodes START, the training steps, END; ``A[i, :]`` a softmax over the possible preconditions of ``i``
(no self loops, END precedes nothing). Per recording (first occurrences), each step ``k`` after the set ``J`` done
so far costs ``beta * log(sum_{h not in J} A[h, J]) - log(A[k, J])``; full-batch Adam (lr 0.1, 300 epochs,
seeded). Preconditions of ``i``: ``A[i, j] >= tau``; a step is a mistake when one of them has not been done, or
when it is no node. ``beta`` and ``tau`` are chosen on the constructed validation of ``cv.py``.

    PYTHONPATH=$PWD python research/online_mistakes/tgml.py [--test]
"""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from ego_adr.monitoring.next_step_model import Adam  # noqa: E402
from ego_adr.online_mistakes import cv  # noqa: E402
from research.online_mistakes.bench import DATASETS, STREAMS, score, test_streams, training_set  # noqa: E402

BETAS = (0.005, 0.05, 0.5)


def _firsts(s):
    out = []
    for x in s:
        if x not in out:
            out.append(x)
    return out


def learn(seqs, beta: float, epochs: int = 300, seed: int = 0):
    import torch

    steps = sorted({int(x) for s in seqs for x in s})
    idx = {x: i + 1 for i, x in enumerate(steps)}
    n = len(steps) + 2
    end = n - 1
    js, ks = [], []
    for s in seqs:
        f = [0] + [idx[x] for x in _firsts(s)] + [end]
        for t in range(1, len(f)):
            j = np.zeros(n, dtype=np.float32)
            j[f[:t]] = 1
            js.append(j)
            ks.append(f[t])
    J, K = torch.tensor(np.array(js)), torch.tensor(ks)
    allowed = ~torch.eye(n, dtype=torch.bool)
    allowed[:, end] = False
    allowed[0, 0] = True  # START's row is never used; keep its softmax finite
    z = torch.rand(n, n, generator=torch.Generator().manual_seed(seed)).requires_grad_()
    opt = Adam([z], 0.1)
    for _ in range(epochs):
        a = torch.softmax(torch.where(allowed, z, torch.tensor(-1e9)), dim=1)
        num = (a[K] * J).sum(1) + 1e-6
        den = ((1 - J) * (J @ a.T)).sum(1) + 1e-6
        loss = (beta * torch.log(den) - torch.log(num)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return torch.softmax(torch.where(allowed, z, torch.tensor(-1e9)), dim=1).numpy(), idx


def flags(a, idx, steps, tau):
    done, out = {0}, []
    for b in steps:
        if b not in idx:
            out.append(True)
            continue
        out.append(not set(np.flatnonzero(a[idx[b]] >= tau).tolist()) <= done)
        done.add(idx[b])
    return out


def select(bench: str):
    train = training_set(bench)
    seqs = [tuple(s) for s in train.sequences]
    val = cv.validation(seqs, cv.plan(bench, seqs, sorted(train.taxonomy)))
    y = np.concatenate([cv.episode_labels(eps) for _, eps in val])
    n = len({x for s in seqs for x in s})
    taus = (1 / n, 2 / n, 0.05, 0.1, 0.2, 0.3, 0.5)
    table = []
    for beta in BETAS:
        graphs = [learn([seqs[i] for i in fit], beta) for fit, _ in val]
        for tau in taus:
            f = [x for (a, idx), (_, eps) in zip(graphs, val) for e in eps for x in flags(a, idx, e.steps, tau)]
            table.append(((beta, round(tau, 4)), cv.flags_metrics(y, np.array(f))))
    best = max(table, key=lambda r: r[1]["objective"])
    return train, seqs, best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--test", action="store_true", help="also score the chosen setting on the test streams (logged)")
    args = ap.parse_args()
    for bench in DATASETS:
        train, seqs, ((beta, tau), m) = select(bench)
        print(f"{bench}: chosen beta {beta} tau {tau}; validation " + " ".join(f"{k} {v:.3f}" for k, v in m.items()))
        if not args.test:
            continue
        a, idx = learn(seqs, beta)
        known = {x for s in seqs for x in s}
        for stream in STREAMS:
            recs = test_streams(bench, stream)
            labels = [int(i == len(s) - 1) for _, s in recs for i in range(len(s))]
            for name, fl in (("tgml", [x for _, s in recs for x in flags(a, idx, s, tau)]),
                             ("unknown-only", [x not in known for _, s in recs for x in s])):
                r = score(labels, fl)
                print(f"  {stream:13s} {name:12s} P {100 * r['P']:5.1f} R {100 * r['R']:5.1f} F1b {100 * r['F1b']:5.1f} "
                      f"macroF1 {100 * r['macroF1']:5.1f}")
    if args.test:
        with open(HERE / "NOTES.md", "a") as f:
            f.write(f"- {datetime.datetime.now().isoformat(timespec='seconds')}: tgml.py --test: the TGML "
                    "precondition graph at its validation-chosen setting, and the unknown-step-only baseline "
                    "(diagnostic; nothing in the package follows from it)\n")


if __name__ == "__main__":
    main()
