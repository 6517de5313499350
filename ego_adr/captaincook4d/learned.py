"""DTGL's Direct Optimisation (DO) of one recipe's task graph as its CaptainCook4D experiment trains it
(Seminara et al., NeurIPS 2024, Sec. 3 and 4.1, Table 1; ``task-graph-learning/DO/train_with_gt.py`` with the configs
of ``configs/CaptainCook4D-DO/`` at commit 536aaa7), on our TGML loss of :mod:`ego_adr.online_mistakes.monitors.
dtgl_train` (the same loss, vectorised, float64 on one thread).

What ``train_with_gt.py`` does, and so what this does:

- **Input**: the recipe's recordings, each reduced to the first occurrence of every step, and each distinct such
  sequence once (``if sequences not in train_sequences``); the nodes are the graph's, START first and END last;
  the matrix adds DTGL's two helper nodes (``BETA`` before START, ``GAMMA`` after END), so node ``k`` is row
  ``k + 1``.
- **Training**: ``torch.manual_seed(seed)`` and ``np.random.seed(seed)`` (seed 42, every config), the matrix from
  ``torch.rand``, full-batch Adam at lr 0.1, the TGML loss with beta 0.005, at most 1,000 epochs (every config).
  No sequence has a repeat, so DTGL's per-epoch random de-duplication draws nothing.
- **The graph after each epoch**: an edge *y is a precondition of x* where ``A[x, y] >= 1 / n`` (``n`` graph nodes;
  DTGL: ``1 / (num_nodes - 2)``); END gets every step that no step depends on, a step without precondition gets
  START (in that order); then DTGL's ``delete_redundant_edges``: for each node in order, for each of its edges in
  insertion order, the edge is removed and put back when no other path joins its ends (the transitive reduction on
  an acyclic graph; order-dependent on a cyclic one, so the order is DTGL's: a node's matrix edges in column order,
  then the completion edges). No cycle is removed.
- **Early stopping**: on an acyclic graph, DTGL's ``sequences_accuracy`` on the training sequences; above 0.95 it
  counts: an epoch at 1.0 equal to the best so far, or one below the best, adds one to a counter that a new best
  resets; training stops when the counter reaches 25. The graph scored is the last epoch's.

For the monitors of the benchmark, :func:`monitor_graph` turns the trained matrix into the graph DTGL's online check
reads (:func:`ego_adr.online_mistakes.monitors.dtgl_graph.check_graph`: threshold, cycle removal, relaxed rule,
completion, reduction), the rules of its ``check_precondition_DO.py --relaxed``.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from ego_adr.online_mistakes.monitors import dtgl_graph as DG
from ego_adr.online_mistakes.monitors import dtgl_train as DT

CODE_VERSION = "1"


@dataclass(frozen=True)
class DoSettings:
    """``configs/CaptainCook4D-DO/*.yaml`` (all 24 alike) and ``train_with_gt.py``'s constants."""

    beta: float = 0.005
    epochs: int = 1000
    seed: int = 42
    accuracy_floor: float = 0.95  # train_with_gt.py: sequences_accuracy_score > 0.95
    patience: int = 25  # train_with_gt.py: early_stopping_counter == 25
    float32: bool = False


#: DTGL's seeds for its error bars (``train_all.py --more_seeds``); the published row is their mean.
SEEDS = (42, 1337, 2024, 2025, 2026)


def first_occurrences(sequences: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
    """Each sequence reduced to first occurrences, each distinct result once, in order of appearance."""
    out: list[tuple[int, ...]] = []
    for seq in sequences:
        s = tuple(dict.fromkeys(seq))
        if s not in out:
            out.append(s)
    return out


def extract(w: np.ndarray) -> tuple[np.ndarray, list[list[int]]]:
    """``train_with_gt.py``'s graph from the ``n x n`` matrix ``w`` (START 0, END ``n - 1``): the boolean adjacency
    (``e[x, y]``: y precondition of x) and each node's edges in DTGL's insertion order (module docstring)."""
    n = w.shape[0]
    e = w >= 1.0 / n
    succ = [[int(y) for y in np.flatnonzero(e[x])] for x in range(n)]
    end, start = n - 1, 0
    for x in [x for x in range(n) if not e[:, x].any() and x not in (start, end)]:
        e[end, x] = True
        succ[end].append(x)
    for x in [x for x in range(n) if not e[x].any() and x not in (start, end)]:
        e[x, start] = True
        succ[x].append(start)
    return e, succ


def _has_path(adj: list[set[int]], a: int, b: int) -> bool:
    seen, todo = {a}, [a]
    while todo:
        for v in adj[todo.pop()]:
            if v == b:
                return True
            if v not in seen:
                seen.add(v)
                todo.append(v)
    return False


def delete_redundant(e: np.ndarray, succ: list[list[int]]) -> np.ndarray:
    """DTGL's ``delete_redundant_edges`` in its order (module docstring)."""
    adj = [set(int(v) for v in np.flatnonzero(row)) for row in e]
    for u in range(len(succ)):
        for v in succ[u]:
            adj[u].discard(v)
            if not _has_path(adj, u, v):
                adj[u].add(v)
    out = np.zeros_like(e)
    for u, vs in enumerate(adj):
        out[u, list(vs)] = True
    return out


def epoch_graph(w: np.ndarray) -> np.ndarray:
    e, succ = extract(w)
    return delete_redundant(e, succ)


def edge_pairs(e: np.ndarray) -> frozenset[tuple[int, int]]:
    return frozenset((int(x), int(y)) for x, y in zip(*np.nonzero(e)))


def train(n: int, sequences: Sequence[Sequence[int]], cfg: DoSettings = DoSettings()) -> dict:
    """DO on graph nodes ``0 .. n-1`` (START 0, END ``n - 1``) from ``sequences`` of inner nodes: the final matrix
    ``w`` (``n x n``, float64 rows), the final graph's edges (x, y), the epochs run and the last accuracy."""
    import torch

    seqs = [tuple(k + 1 for k in s) for s in first_occurrences(sequences)]
    big = n + 2  # BETA, START .. END, GAMMA
    acc_seqs = [[0, *(k - 1 for k in s), n - 1] for s in seqs]
    with DT.deterministic():
        dtype = torch.float32 if cfg.float32 else torch.float64
        z = torch.rand(big, big, generator=torch.Generator().manual_seed(cfg.seed)).to(dtype).requires_grad_()
        allowed = torch.from_numpy(DT.allowed_mask(big))
        opt = torch.optim.Adam([z], lr=DT.LR, foreach=False)
        rates, best, counter, score, ran = DT.Terms(big), -float("inf"), 0, 0.0, 0
        batch = rates.batch(seqs)
        for epoch in range(1, cfg.epochs + 1):
            ran = epoch
            loss = DT.tgml_loss(z, allowed, batch, cfg.beta)
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                w = DT.adjacency(z, allowed).numpy()[1:-1, 1:-1].copy()
            e = epoch_graph(w)
            score = 0.0
            if DG.is_dag(e):
                score = DG.sequences_accuracy(acc_seqs, {x: [int(y) for y in np.flatnonzero(e[x])] for x in range(n)})
                if score > cfg.accuracy_floor:
                    if score == 1 and score == best:
                        counter += 1
                    elif score >= best:
                        best, counter = score, 0
                    else:
                        counter += 1
            if counter == cfg.patience:
                break
    return {"w": w.astype(np.float64).tolist(), "edges": sorted(edge_pairs(e)), "epochs": ran,
            "accuracy": score, "settings": asdict(cfg)}


def cache_key(n: int, sequences: Sequence[Sequence[int]], cfg: DoSettings) -> str:
    doc = {"n": n, "sequences": [list(s) for s in first_occurrences(sequences)], "settings": asdict(cfg),
           "code": CODE_VERSION}
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:20]


def trained(n: int, sequences: Sequence[Sequence[int]], cfg: DoSettings = DoSettings()) -> dict:
    """:func:`train`, kept under the cache root (``captaincook4d-do/<key>/graph.json``): a second call trains
    nothing (``train_seconds`` is that of the first)."""
    from ego_adr.store import build_once, cache_root, write_json

    final = cache_root() / "captaincook4d-do" / cache_key(n, sequences, cfg)

    def build(dest) -> None:
        t0 = time.perf_counter()
        rec = train(n, sequences, cfg)
        rec["train_seconds"] = round(time.perf_counter() - t0, 3)
        write_json(dest / "graph.json", rec)

    build_once(final, build, lambda f: (f / "graph.json").is_file())
    return json.loads((final / "graph.json").read_text())


def monitor_graph(w: np.ndarray, masked: set[int]) -> frozenset[tuple[int, int]]:
    """The precondition edges (x, y) DTGL's online check reads from ``w`` (module docstring); ``masked``: the
    graph nodes of steps no training sequence holds (DTGL's mask: they get no edge and are left out)."""
    w = np.array(w, dtype=np.float64)
    for m in masked:  # DTGL's graph_matrix: a masked step's row and column are zero before thresholding
        w[m, :] = 0.0
        w[:, m] = 0.0
    e = DG.check_graph(w, {m - 1 for m in masked})
    pre = DG.preconditions(e, {m - 1 for m in masked})
    return frozenset((x, y) for x, ys in pre.items() for y in ys)
