"""DTGL's Direct Optimisation (DO) of a task graph (Seminara et al., NeurIPS 2024, Sec. 3.1-3.2), trained as its
public code trains it for online mistake detection (``task-graph-learning/DO/train_without_gt.py --augmentation
--relaxed`` at commit 536aaa7, the command of its README), in our own vectorised code.

**Model.** A free matrix ``Z`` over ``T + 4`` nodes (DTGL's order: a helper node ``BETA``, ``START``, the ``T`` steps
in taxonomy order, ``END``, a helper ``GAMMA``), initialised ``torch.rand`` after ``torch.manual_seed(seed)``;
``A = softmax`` of each row over the allowed entries (no self edge, nothing precedes ``START`` but ``BETA``, nothing
precedes ``GAMMA`` but ``END``, ``END`` and ``GAMMA`` precede nothing). ``A[x, y]``: how likely ``y`` is a
precondition of ``x``.

**Loss (TGML, Sec. 3.2, Eq. 5).** For a sequence ``BETA, START, s1, ..., END, GAMMA`` and each node ``x`` from
``START`` to ``END`` with ``J`` the nodes before it, ``beta * log(sum_{h not in J} sum_{j in J} A'[h, j]) -
log(sum_{j in J} A'[x, j])``, ``A' = A + 1e-6``, ``h`` ranging over ``START .. END``; summed over positions and
sequences. ``beta`` = 0.005 (every DO config of the two benchmarks).

**The three sequence variants** (``--augmentation``), each training recording giving one of each: (1) the first
occurrence of each step, (2) the last occurrence of each step, (3) every occurrence, de-duplicated afresh at each
epoch: a repeated step moves to its later place with probability 0.5 (one ``np.random.uniform()`` per repeat,
after ``np.random.seed(seed)``, in DTGL's order).

**Optimiser.** Full batch, ``torch.optim.Adam`` at lr 0.1, for the config's epochs (1200). With early stopping
(threshold ``tau``), after every epoch the graph of :func:`~.dtgl_graph.training_graph` is scored by DTGL's
``sequences_accuracy`` on the training sequences (all three variants, 0 when the graph has a cycle) and training
stops after the first epoch that scores above ``tau``.

**Ours beside DTGL's code.** The loss is computed in one pass over all sequences (a cumulative sum over each
sequence's columns of ``A'``) instead of a Python loop per position, and the graph is built only when early stopping
needs it; equal sequences of an epoch are computed once and counted as often as they occur; in float64 on one
thread with deterministic algorithms, so the same inputs give the same graph whatever the thread count (DTGL:
float32). Everything else -- initialisation, random draws, loss, optimiser, stopping -- is DTGL's.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ego_adr.online_mistakes.monitors import dtgl_graph as G

EPS = 1e-6  # DTGL's DO.forward: ``values + eps`` before the logs
LR = 0.1  # train_without_gt.py: torch.optim.Adam(net.parameters(), lr=0.1)


@dataclass(frozen=True)
class DoConfig:
    """One of DTGL's DO training configs (``configs/<dataset>/<file>``) with the mask its online check uses."""

    file: str
    beta: float
    epochs: int
    seed: int
    train_mask: bool  # MASK set in the training config
    early_stopping: float | None
    check_mask: bool  # MASK set in the Online_Mistake_Detection config that reads this graph

    def key(self) -> dict:
        return {"file": self.file, "beta": self.beta, "epochs": self.epochs, "seed": self.seed,
                "train_mask": self.train_mask, "early_stopping": self.early_stopping, "check_mask": self.check_mask}


#: DTGL's configs (commit 536aaa7). Assembly101-O's DO* row reads the graph of ``DO-without-early-stopping`` and its
#: DO+ row (MiniRoad steps) that of ``DO-with-early-stopping`` (``configs/Online_Mistake_Detection/Assembly101-O-DO-
#: {GT,PRED}.yaml``); both EPIC-Tent-O rows read ``EPIC-Tent-O/DO.yaml``'s.
CONFIGS = {
    "assembly101-o/no-early-stopping": DoConfig("Assembly101-O/DO-without-early-stopping.yaml", 0.005, 1200, 42,
                                                False, None, True),
    "assembly101-o/early-stopping": DoConfig("Assembly101-O/DO-with-early-stopping.yaml", 0.005, 1200, 42,
                                             True, 0.79, True),
    "epic-tent-o/early-stopping": DoConfig("EPIC-Tent-O/DO.yaml", 0.005, 1200, 42, False, 0.97, False),
}


@dataclass(frozen=True)
class Data:
    """The training recordings in DTGL's node indices (matrix indices: step at taxonomy position ``p`` is ``p + 2``)."""

    n: int  # T + 4
    variants: tuple[tuple[tuple[int, ...], ...], ...]  # (first occurrences, last occurrences, all occurrences)
    masked: frozenset[int]  # taxonomy positions of the steps no training recording holds


def prepare(sequences: Sequence[Sequence[int]], order: Sequence[int]) -> Data:
    """``order``: the taxonomy's step ids in its file order (DTGL numbers nodes in that order). The mask of DTGL's
    Assembly101-O configs lists exactly the steps no training recording holds; we derive it so from the data."""
    pos = {s: i + 2 for i, s in enumerate(order)}
    firsts, lasts, alls = [], [], []
    for seq in sequences:
        nodes = [pos[s] for s in seq]
        firsts.append(tuple(dict.fromkeys(nodes)))
        lasts.append(tuple(reversed(dict.fromkeys(reversed(nodes)))))
        alls.append(tuple(nodes))
    held = {s for seq in sequences for s in seq}
    return Data(len(order) + 4, (tuple(firsts), tuple(lasts), tuple(alls)),
                frozenset(i for i, s in enumerate(order) if s not in held))


def allowed_mask(n: int) -> np.ndarray:
    """DTGL's ``DO.get_adjacency_matrix`` mask (row 0, BETA, has no allowed entry: DTGL's softmax gives NaN there,
    a row no loss term and no graph reads; we allow its diagonal to keep it finite)."""
    m = np.ones((n, n), dtype=bool)
    m[0, :] = False
    m[1, :] = False
    m[1, 0] = True
    m[:, -1] = False
    m[:, -2] = False
    m[-1, :] = False
    m[-1, -2] = True
    m &= ~np.eye(n, dtype=bool)
    m[0, 0] = True
    return m


def adjacency(z, allowed):
    import torch

    return torch.softmax(torch.where(allowed, z, torch.tensor(-float("inf"), dtype=z.dtype)), dim=1)


def dedupe(seq: Sequence[int], draw) -> list[int]:
    """DTGL's per-epoch de-duplication of a sequence with repeats (``_loss.py``): a step seen again moves to the end
    when the draw is below 0.5."""
    out: list[int] = []
    for x in seq:
        if x not in out:
            out.append(x)
        elif draw() < 0.5:
            out.remove(x)
            out.append(x)
    return out


@lru_cache(maxsize=8192)
def _framed(seq: tuple[int, ...], n: int) -> np.ndarray:
    """One framed sequence ``BETA, START, ..., END, GAMMA`` (each node once) as ``(3, L, n)`` 0/1 rows: at each
    position ``t`` the nodes before it (``J``), the nodes of ``START .. END`` not before it, the node at ``t``.
    Memoised: an epoch's sequences are mostly those of the epoch before."""
    f = [0, 1, *seq, n - 2, n - 1]
    first = np.full(n, len(f))  # position of each node, ``len(f)`` when absent
    first[f] = np.arange(len(f))
    t = np.arange(len(f))[:, None]
    in_range = (np.arange(n) >= 1) & (np.arange(n) <= n - 2)
    return np.stack([first < t, (first >= t) & in_range, first == t]).astype(np.float64)


def _batch(seqs: Sequence[Sequence[int]], n: int):
    """:func:`_framed` of each sequence, padded to one width, and which positions have a rate (DTGL's
    ``1 .. len - 2``: ``START`` to ``END``)."""
    import torch

    rows = [_framed(tuple(s), n) for s in seqs]
    width = max(r.shape[1] for r in rows)
    out = np.zeros((3, len(rows), width, n))
    valid = np.zeros((len(rows), width), dtype=bool)
    for b, r in enumerate(rows):
        out[:, b, :r.shape[1]] = r
        valid[b, 1:r.shape[1] - 1] = True
    return (*(torch.from_numpy(x) for x in out), torch.from_numpy(valid))


def tgml_loss(z, allowed, batch, beta: float, counts=None):
    """The TGML loss of the module docstring, summed over every rate of every sequence of ``batch`` (each counted
    ``counts[b]`` times: equal sequences have equal rates, so each is computed once)."""
    import torch

    before, not_before, here, valid = (x.to(z.dtype) if x.is_floating_point() else x for x in batch)
    a = adjacency(z, allowed) + EPS
    q = before @ a.T  # (B, L, n): q[b, t, h] = sum over j before t of A'[h, j]
    den = (q * not_before).sum(-1)
    num = (q * here).sum(-1)
    rates = beta * torch.log(torch.where(valid, den, 1.0)) - torch.log(torch.where(valid, num, 1.0))
    per_seq = rates.sum(1)
    return per_seq.sum() if counts is None else (per_seq * torch.as_tensor(counts, dtype=z.dtype)).sum()


@contextlib.contextmanager
def deterministic():
    """One thread and deterministic algorithms while training (restored after), so the reduction order is fixed."""
    import torch

    threads, det = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(det)
        torch.set_num_threads(threads)


def graph_matrix(z, allowed, masked: frozenset[int]) -> np.ndarray:
    """DTGL's thresholding input: ``A`` with masked steps' rows and columns zeroed, BETA and GAMMA sliced off."""
    import torch

    with torch.no_grad():
        a = adjacency(z, allowed).numpy().copy()
    for p in masked:
        a[p + 2, :] = 0
        a[:, p + 2] = 0
    return a[1:-1, 1:-1]


def train(data: Data, cfg: DoConfig, seed: int, float32: bool = False) -> dict:
    """Train as the module docstring says; the final ``Z`` (float64 list of rows), the epochs run, the last
    early-stopping score and the loss of each epoch."""
    import torch

    with deterministic():
        dtype = torch.float32 if float32 else torch.float64
        z = torch.rand(data.n, data.n, generator=torch.Generator().manual_seed(seed)).to(dtype).requires_grad_()
        rng = np.random.RandomState(seed)
        allowed = torch.from_numpy(allowed_mask(data.n))
        opt = torch.optim.Adam([z], lr=LR, foreach=False)
        fixed = [*data.variants[0], *data.variants[1]]
        masked = data.masked if cfg.train_mask else frozenset()
        acc_seqs = [[0, *(x - 1 for x in s), data.n - 3] for v in data.variants for s in v]
        losses, score, epoch = [], None, 0
        for epoch in range(1, cfg.epochs + 1):
            seqs = Counter(fixed + [tuple(dedupe(s, rng.uniform)) for s in data.variants[2]])
            loss = tgml_loss(z, allowed, _batch(list(seqs), data.n), cfg.beta, list(seqs.values()))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
            if cfg.early_stopping is None:
                continue
            e = G.training_graph(graph_matrix(z, allowed, masked), set(masked), epoch, True)
            score = 0.0 if e is None else G.sequences_accuracy(acc_seqs, G.preconditions(e, set(masked)))
            if score > cfg.early_stopping:
                break
    return {"z": z.detach().double().tolist(), "epochs": epoch, "score": score, "losses": losses}
