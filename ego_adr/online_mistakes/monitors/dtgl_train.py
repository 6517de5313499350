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

**Ours beside DTGL's code.** A rate depends only on the set ``J`` before a position and the node there, so the
loss is computed once per distinct ``J`` (one matrix product for all of them) and per distinct (``J``, node) pair,
each weighted by how often it occurs, instead of a Python loop per position; the graph is built only when early
stopping needs it; in float64 on one thread with deterministic algorithms, so the same inputs give the same graph whatever the thread count (DTGL:
float32). Everything else -- initialisation, random draws, loss, optimiser, stopping -- is DTGL's.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

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
    # another step-stream data set: DTGL has no config for it; its early-stopping thresholds are set per data set,
    # so the settings shared by all its DO configs without one
    "other/no-early-stopping": DoConfig("none (DTGL's shared DO settings, no early stopping)", 0.005, 1200, 42,
                                        False, None, True),
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


class Terms:
    """The distinct rates of a training run. A rate depends only on the set ``J`` of nodes before a position and
    the node there, so each distinct ``J`` and each distinct (``J``, node) pair gets an index once (kept across
    epochs: an epoch's sequences are mostly those of the epoch before), and an epoch is how often each occurs."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.sets: dict[frozenset, int] = {}
        self.pairs: dict[tuple[int, int], int] = {}
        self.memo: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray]] = {}
        self._tensors: tuple | None = None

    def _ids(self, seq: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        """Set and pair indices of the rates of ``BETA, START, *seq, END, GAMMA`` (DTGL's positions 1 .. len-2)."""
        if seq not in self.memo:
            f = (0, 1, *seq, self.n - 2, self.n - 1)
            sets, pairs = [], []
            for i in range(1, len(f) - 1):
                k = self.sets.setdefault(frozenset(f[:i]), len(self.sets))
                sets.append(k)
                pairs.append(self.pairs.setdefault((k, f[i]), len(self.pairs)))
            self.memo[seq] = (np.array(sets), np.array(pairs))
            self._tensors = None
        return self.memo[seq]

    def batch(self, seqs: Sequence[Sequence[int]], counts: Sequence[int] | None = None):
        """``J`` one-hot ``(U, n)``, the nodes of ``START .. END`` not in ``J``, each pair's set and node, and
        how often each set and each pair occurs in ``seqs`` (sequence ``b`` counted ``counts[b]`` times)."""
        import torch

        ids = [self._ids(tuple(q)) for q in seqs]
        c = np.ones(len(seqs)) if counts is None else np.asarray(counts, dtype=np.float64)
        set_n = np.bincount(np.concatenate([a for a, _ in ids]), np.repeat(c, [len(a) for a, _ in ids]),
                            minlength=len(self.sets))
        pair_n = np.bincount(np.concatenate([b for _, b in ids]), np.repeat(c, [len(b) for _, b in ids]),
                             minlength=len(self.pairs))
        if self._tensors is None:
            onehot = np.zeros((len(self.sets), self.n))
            for j, k in self.sets.items():
                onehot[k, list(j)] = 1.0
            in_range = (np.arange(self.n) >= 1) & (np.arange(self.n) <= self.n - 2)
            key = np.array(list(self.pairs), dtype=np.int64).reshape(-1, 2)
            self._tensors = (torch.from_numpy(onehot), torch.from_numpy(((onehot == 0) & in_range) * 1.0),
                             torch.from_numpy(key[:, 0].copy()), torch.from_numpy(key[:, 1].copy()))
        onehot, not_in, pair_set, pair_node = self._tensors
        return onehot, not_in, torch.from_numpy(set_n), pair_set, pair_node, torch.from_numpy(pair_n)


def terms(seqs: Sequence[Sequence[int]], n: int, counts: Sequence[int] | None = None):
    """:meth:`Terms.batch` of ``seqs`` alone."""
    return Terms(n).batch(seqs, counts)


def tgml_loss(z, allowed, batch, beta: float):
    """The TGML loss of the module docstring over :func:`terms` ``batch``: ``sum over rates of beta * log(den) -
    log(num)``, each distinct ``den`` and ``num`` computed once and weighted by how often it occurs."""
    import torch

    onehot, not_in, set_n, pair_set, pair_node, pair_n = batch
    a = adjacency(z, allowed) + EPS
    q = onehot.to(z.dtype) @ a.T  # (U, n): q[J, h] = sum over j in J of A'[h, j]
    den = (q * not_in.to(z.dtype)).sum(-1)
    num = q[pair_set, pair_node]
    return beta * (set_n.to(z.dtype) * torch.log(den)).sum() - (pair_n.to(z.dtype) * torch.log(num)).sum()


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
        losses, score, epoch, rates = [], None, 0, Terms(data.n)
        for epoch in range(1, cfg.epochs + 1):
            seqs = Counter(fixed + [tuple(dedupe(s, rng.uniform)) for s in data.variants[2]])
            loss = tgml_loss(z, allowed, rates.batch(list(seqs), list(seqs.values())), cfg.beta)
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
