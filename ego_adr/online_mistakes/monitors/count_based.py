"""DTGL's Count-Based baseline (Seminara et al., NeurIPS 2024, Sec. 4.3 and Table 3), deterministic.

The method, as DTGL's ``TransitionGraph.create_networkx_graph`` (``lib/.../baselines/_transition_graph.py``) and
``check_precondition`` (``lib/.../mistake_detection/_mistake_detection.py``) at commit 536aaa7 compute it, in our
own code:

1. Transition counts over the training sequences, each framed ``START, s1, ..., sn, END`` (every segment counted,
   consecutive repeats included), normalised per row: ``T[a][b] = P(next = b | current = a)``.
2. The precondition score of ``a`` for step ``x`` is ``T[a][x] / sum_a' T[a'][x]``; every ``a`` with the highest
   score becomes a precondition edge ``a -> x`` (ties: all of them; a self-edge ``x -> x`` too).
3. Cycles are broken by removing, for every simple cycle, one edge of low transition probability.
4. A step left with no precondition gets its best-scoring one that keeps the graph acyclic; a step left with no
   successor gets its most likely next step that keeps it acyclic; then ``START -> x`` for every step still without
   a precondition and ``x -> END`` for every step without a successor.
5. Redundant edges are dropped (an edge whose endpoints are joined by another path): the transitive reduction.
6. Online, a step is a mistake when it is not in the graph or has no precondition (it is then not added to the
   steps seen), or when one of its preconditions has not been seen yet (``START`` counts as seen).

**Where DTGL's numbers depend on the hash seed, and our choice.** In step 3 DTGL enumerates cycles with
``networkx.simple_cycles`` and removes the least likely edge among ``cycle[0] -> cycle[1], ...,
cycle[-2] -> cycle[-1]``: the closing edge ``cycle[-1] -> cycle[0]`` is never a candidate. Which node a cycle
starts at comes from ``next(iter(component))`` over a set of node-name strings, whose order follows
``PYTHONHASHSEED``. Every cycle of these two graphs has two nodes (three on Assembly101-O, one on EPIC-Tent-O), so
the only candidate is the edge leaving the first node: a coin flip between the weaker and the stronger edge of the
cycle. (A cycle whose candidate edges all have probability 1 is not broken at all, and the later acyclicity checks
then fail for every edge they try.) We remove the weakest edge of every cycle, the closing one included -- what
the code sets out to do ("remove cycles ... with minimum probability") -- so no choice is left to the seed; an
exact tie is broken towards the edge whose endpoints come first in the order steps first appear in training.
An edge is removed exactly when it is the weakest edge of some simple cycle, i.e. when its source is reachable
from its target through strictly stronger edges, which is computed without enumerating cycles.

This lands on DTGL's result under the seeds that removed the weaker edge in every cycle: 26.0 / 23.4 macro F1 on
Assembly101-O (oracle / MiniRoad; published 26.0 / 23.2) and 56.6 / 40.4 on EPIC-Tent-O (published 56.6 / 40.4).
``docs/online_mistakes.md`` gives the spread of DTGL's own code over 50 seeds (``scripts/bench_monitoring.py
--dtgl-hashseed``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from ego_adr.monitoring.monitor import Monitor, StepOutput
from ego_adr.online_mistakes.types import StepContext, TrainingSet

START, END = "START", "END"
Node = object  # a step id (int), START or END


def _reaches(adj: dict, src, dst, ok: Callable[[object, object], bool] = lambda a, b: True) -> bool:
    """Is ``dst`` reachable from ``src`` along edges ``ok`` accepts (``src`` reaches itself)?"""
    seen, todo = {src}, [src]
    while todo:
        a = todo.pop()
        if a == dst:
            return True
        for b in adj[a]:
            if b not in seen and ok(a, b):
                seen.add(b)
                todo.append(b)
    return False


class TransitionGraph:
    """Steps 1-5 of the module docstring; :attr:`preconditions` maps each step to its set of preconditions."""

    def __init__(self, sequences) -> None:
        self.nodes: list = [START, *dict.fromkeys(s for seq in sequences for s in seq), END]
        self.rank = {n: i for i, n in enumerate(self.nodes)}
        counts: dict = defaultdict(lambda: defaultdict(int))
        for seq in sequences:
            path = [START, *seq, END]
            for a, b in zip(path, path[1:]):
                counts[a][b] += 1
        self.T = {a: {b: c / sum(row.values()) for b, c in row.items()} for a, row in counts.items()}
        self.edges = self._candidate_edges()
        self.adj = self._acyclic(self.edges)
        self._complete()
        self.preconditions = self._reduced()

    def t(self, a, b) -> float:
        return self.T.get(a, {}).get(b, 0.0)

    def precondition_scores(self, x) -> list[tuple[object, float]]:
        """``(a, score)`` for every ``a`` that ever preceded ``x``, best first (node order on ties)."""
        col = sum(self.t(a, x) for a in self.nodes)
        scores = [(a, self.t(a, x) / col) for a in self.nodes if col and self.t(a, x) > 0]
        return sorted(scores, key=lambda p: -p[1])

    def _candidate_edges(self) -> list[tuple]:
        edges = []
        for x in self.nodes:
            scores = self.precondition_scores(x)
            edges += [(a, x) for a, s in scores if s >= scores[0][1]]
        return edges

    def _strength(self, e: tuple) -> tuple:
        """A strict total order of edges: transition probability, then earlier endpoints are weaker."""
        a, b = e
        return (self.t(a, b), -self.rank[a], -self.rank[b])

    def _acyclic(self, edges: list[tuple]) -> dict:
        """The graph without the weakest edge of each of its simple cycles (step 3)."""
        adj: dict = {n: [] for n in self.nodes}
        for a, b in edges:
            adj[a].append(b)
        keep: dict = {n: [] for n in self.nodes}
        for e in edges:
            w = self._strength(e)
            weakest = e[0] == e[1] or _reaches(adj, e[1], e[0], lambda a, b, w=w: self._strength((a, b)) > w)
            if not weakest:
                keep[e[0]].append(e[1])
        return keep

    def _predecessors(self, x) -> list:
        return [a for a in self.nodes if x in self.adj[a]]

    def _acyclic_with(self, a, b) -> bool:
        return a != b and not _reaches(self.adj, b, a)

    def _complete(self) -> None:
        """Step 4: every step gets a precondition and a successor, without creating a cycle."""
        for x in self.nodes:
            if x != START and not self._predecessors(x):
                a = next((a for a, _ in self.precondition_scores(x) if self._acyclic_with(a, x)), None)
                if a is not None:
                    self.adj[a].append(x)
        for x in self.nodes:
            if x != END and not self.adj[x]:
                nxt = sorted((b for b in self.nodes if self.t(x, b) > 0), key=lambda b: -self.t(x, b))
                b = next((b for b in nxt if self._acyclic_with(x, b)), None)
                if b is not None:
                    self.adj[x].append(b)
        for x in self.nodes:
            if x not in (START, END) and not self._predecessors(x):
                self.adj[START].append(x)
        for x in self.nodes:
            if x not in (START, END) and not self.adj[x]:
                self.adj[x].append(END)

    def _reduced(self) -> dict:
        """Step 5: preconditions of each node in the transitive reduction (unique, the graph being acyclic)."""
        pre: dict = defaultdict(set)
        for a in self.nodes:
            for b in self.adj[a]:
                if not _reaches(self.adj, a, b, lambda u, v, e=(a, b): (u, v) != e):
                    pre[b].add(a)
        return dict(pre)


class CountBased(Monitor):
    """Step 6 of the module docstring over the stream, on the graph fitted to the training sequences."""

    selection = {"hyper_parameters": {}, "chosen_by": "nothing to choose: DTGL's Count-Based has no "
                 "hyper-parameter (its cycle rule is fixed as the module docstring says)"}

    def fit(self, train: TrainingSet) -> None:
        self.graph = TransitionGraph(train.sequences)

    def reset(self, ctx: StepContext) -> None:
        self.seen = {START}

    def step(self, t: int, step_id: int) -> StepOutput:
        pre = self.graph.preconditions.get(step_id)
        if not pre:
            return StepOutput(1.0, flagged=True, evidence={"preconditions": "not defined"})
        missing = sorted(str(p) for p in pre - self.seen)
        self.seen.add(step_id)
        return StepOutput(1.0 if missing else 0.0, flagged=bool(missing),
                          evidence={"preconditions": sorted(str(p) for p in pre), "missing": missing})
