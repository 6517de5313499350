"""From DTGL's learned adjacency matrix to the precondition graph that its online mistake check reads (Seminara et
al., NeurIPS 2024, Sec. 3.3 and 4.3), in our own code, following what DTGL's public code does at commit 536aaa7
(``task-graph-learning/DO/train_without_gt.py`` during training, ``online-mistake-detection/check_precondition_DO.py``
afterwards, both run with ``--relaxed`` as its README's commands do).

Indexing is that of DTGL's graph: node 0 is START, node ``p + 1`` the step at taxonomy position ``p``, node
``T + 1`` END (``T`` steps). An edge ``x -> y`` means *y is a precondition of x*: row ``x`` of the adjacency matrix
is a softmax over the possible preconditions of ``x``. The rules, each DTGL's:

1. **Edge threshold**: ``x -> y`` when ``A[x, y] >= 1 / (T + 2)`` (DTGL: ``1 / (num_nodes - 2)``, its matrix
   holding two more helper nodes); masked steps' rows and columns are zero first.
2. **Cycle removal**: for every simple cycle, as ``networkx.simple_cycles`` lists it, the least likely edge among
   ``cycle[0] -> cycle[1], ..., cycle[-2] -> cycle[-1]`` is removed (the closing edge ``cycle[-1] -> cycle[0]``
   is never a candidate; which node a cycle starts at is networkx's choice, so we enumerate the cycles with
   networkx, as DTGL does, rather than pick a rule of our own). Every cycle loses an edge, so the result is a DAG.
3. **Relaxed rule**: a node with exactly two preconditions, one of them START, keeps only START.
4. **Completion**: a step no step depends on becomes a precondition of END; a step without precondition gets
   START. Masked steps get neither. DTGL runs 3 before 4 after training and 4 before 3 during training, and its
   training loop tests ``node in mask`` on graph indices (one off from the step ids the mask lists); both are
   kept, as they decide when early stopping fires.
5. **Transitive reduction**: an edge ``x -> y`` is dropped when another path leads from ``x`` to ``y``
   (DTGL's ``delete_redundant_edges``; unique on a DAG).
6. Masked steps are removed from the graph.

Online (DTGL's ``check_precondition``): a step that is no node of the graph or has no precondition is a mistake
and is not added to the steps seen; otherwise it is a mistake when one of its preconditions has not been seen
(START counts as seen), and it is added to the steps seen either way.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def threshold_edges(w: np.ndarray) -> np.ndarray:
    """Rule 1 on the (already masked) graph matrix ``w`` of ``T + 2`` nodes."""
    return w >= 1.0 / w.shape[0]


def is_dag(e: np.ndarray) -> bool:
    """Kahn's algorithm on the boolean adjacency ``e``."""
    indeg = e.sum(0).astype(int)
    todo = [int(i) for i in np.flatnonzero(indeg == 0)]
    done = 0
    while todo:
        u = todo.pop()
        done += 1
        for v in np.flatnonzero(e[u]):
            indeg[v] -= 1
            if indeg[v] == 0:
                todo.append(int(v))
    return done == e.shape[0]


def remove_cycles(e: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Rule 2. The cycles are those of the graph as it is before any removal (networkx copies it first), so the
    edges removed are the union of each cycle's weakest candidate edge; the order of removal does not matter."""
    if is_dag(e):
        return e
    import networkx as nx  # a dependency of torch; only its cycle listing (and its rotation of each cycle) is used

    g = nx.DiGraph(e.astype(np.int8))  # the graph DTGL builds from its thresholded matrix
    out = e.copy()
    for cycle in nx.simple_cycles(g):
        best, edge = np.inf, None
        for a, b in zip(cycle[:-1], cycle[1:]):
            if w[a, b] < best:
                best, edge = w[a, b], (a, b)
        if edge is not None:
            out[edge] = False
    return out


def relax(e: np.ndarray) -> np.ndarray:
    """Rule 3: a node whose preconditions are exactly START and one other keeps only START."""
    out = e.copy()
    rows = (out.sum(1) == 2) & out[:, 0]
    out[rows] = False
    out[rows, 0] = True
    return out


def complete(e: np.ndarray, skip: set[int]) -> np.ndarray:
    """Rule 4; ``skip``: the graph nodes that get no completion edge."""
    out = e.copy()
    end = out.shape[0] - 1
    inner = [x for x in range(1, end) if x not in skip]
    for x in [x for x in inner if not out[:, x].any()]:
        out[end, x] = True
    for x in [x for x in inner if not out[x].any()]:
        out[x, 0] = True
    return out


def closure(e: np.ndarray) -> np.ndarray:
    """``r[u, v]``: a path of one or more edges leads from ``u`` to ``v``."""
    r = e.copy()
    while True:
        nxt = r | ((r.astype(np.int32) @ r.astype(np.int32)) > 0)
        if (nxt == r).all():
            return r
        r = nxt


def reduce(e: np.ndarray) -> np.ndarray:
    """Rule 5 on a DAG: ``x -> y`` is redundant when ``x -> z`` and ``z`` reaches ``y`` for some ``z``."""
    r = closure(e)
    redundant = (e.astype(np.int32) @ r.astype(np.int32)) > 0
    return e & ~redundant


def check_graph(w: np.ndarray, masked: set[int]) -> np.ndarray:
    """The graph DTGL's online check reads (``check_precondition_DO.py --relaxed``): rules 1, 2, 3, 4, 5.
    ``masked``: taxonomy positions of the masked steps (their graph nodes are ``p + 1``). Masked nodes are left in
    the matrix without edges; :class:`PreconditionCheck` treats them as absent (rule 6)."""
    e = relax(remove_cycles(threshold_edges(w), w))
    e = complete(e, {p + 1 for p in masked})
    return reduce(e)


def training_graph(w: np.ndarray, masked: set[int], epoch: int, early_stopping: bool) -> np.ndarray | None:
    """The graph DTGL's training loop builds after each epoch to test early stopping: rule 1, rule 2 only after
    epoch 40 and only with early stopping, rule 4 (its ``node not in mask`` test on graph indices), rule 3,
    rule 5. ``None`` when the graph is not a DAG (DTGL then scores the epoch 0)."""
    e = threshold_edges(w)
    if epoch > 40 and early_stopping:
        e = remove_cycles(e, w)
    e = relax(complete(e, set(masked)))
    if not is_dag(e):
        return None
    return reduce(e)


def preconditions(e: np.ndarray, masked: set[int]) -> dict[int, list[int]]:
    """Rule 6: each graph node kept -> its preconditions (masked nodes and edges to them removed)."""
    gone = {p + 1 for p in masked}
    return {x: [int(y) for y in np.flatnonzero(e[x]) if int(y) not in gone]
            for x in range(e.shape[0]) if x not in gone}


def sequences_accuracy(seqs: Sequence[Sequence[int]], pre: dict[int, list[int]]) -> float:
    """DTGL's ``sequences_accuracy`` (its early-stopping score), summed in its order: per sequence (graph nodes,
    START first, END last), the first node scores 1 when it has no precondition, every later node the share of
    its preconditions found earlier in the sequence (0 when it has none); the mean over positions, then over
    sequences."""
    acc = 0.0
    for seq in seqs:
        correct = 0.0
        seen: set[int] = set()
        for i, x in enumerate(seq):
            p = pre.get(x, [])
            if i == 0 and not p:
                correct += 1
            elif i > 0 and p:
                correct += len(seen.intersection(p)) / len(p)
            seen.add(x)
        acc += correct / len(seq)
    return acc / len(seqs) if seqs else 0.0


class PreconditionCheck:
    """DTGL's online rule over one recording (module docstring, last paragraph)."""

    def __init__(self, pre: dict[int, list[int]]):
        self.pre = pre
        self.seen = {0}

    def step(self, node: int | None) -> tuple[bool, list[int], list[int]]:
        """(mistake, preconditions, missing ones) for graph node ``node`` (``None``: a step the graph lacks)."""
        p = self.pre.get(node) if node is not None else None
        if not p:
            return True, [], []
        missing = [y for y in p if y not in self.seen]
        self.seen.add(node)
        return bool(missing), p, missing
