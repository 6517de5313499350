"""A recipe's task graph: its steps and which must come before which (CaptainCook4D's ``task_graphs/<recipe>.json``,
or DTGL's ``ground_truth_task_graphs/<recipe>.json``), and the edge precision / recall / F1 of a learned graph.

**The file** (``ANNOTATIONS.md``, "Task Graphs"): ``steps`` maps a node id to its text, the smallest id is
``START`` and the largest ``END``; ``edges`` lists ``[a, b]`` pairs, *a before b*. A node's text is the
description of one of the recipe's step ids (``step_idx_description.json``), which is how a recording's step is
found in the graph. CaptainCook4D's own graphs give a step that the recipe repeats one node per repetition (three
``Continue slicing with floss`` nodes in ``pinwheels``; two in ``dressedupmeatballs`` and ``sautedmushrooms``), while
a recording names every repetition by the same step id; DTGL's copies of those graphs merge them into one node per
step id (:func:`compare` measures the differences). Here the ``k``-th occurrence of a step id in a recording is
the ``k``-th of its nodes in topological order (its last node for any later occurrence).

**Bad input** (one line, the file and the item, exit 2): steps without ``START`` and ``END``, a node whose text is
no step of the recipe, an edge to a node the steps lack, a cycle.

**Edge scores** (DTGL, Seminara et al., NeurIPS 2024, Sec. 4.1, its ``train_with_gt.py`` and
``baselines/evaluation.py``): with edges read as *y is a precondition of x* over all nodes, START and END included,
precision, recall and F1 of the predicted edges against the ground truth's (scikit-learn's on the flattened
adjacency matrices, a ratio with a zero denominator 0); DTGL averages each over the 24 recipes
(``utils/calculate_results.py``: the mean of the per-recipe values).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

from ego_adr.captaincook4d import sources as S
from ego_adr.errors import UserError


@dataclass(frozen=True)
class RecipeGraph:
    recipe: str
    text: Mapping[int, str]  # node -> text
    step: Mapping[int, int]  # node -> step id (START and END have none)
    edges: frozenset[tuple[int, int]]  # (before, after)
    start: int
    end: int
    source: str = ""

    @cached_property
    def preds(self) -> dict[int, frozenset[int]]:
        out: dict[int, set[int]] = {n: set() for n in self.text}
        for a, b in self.edges:
            out[b].add(a)
        return {n: frozenset(v) for n, v in out.items()}

    @cached_property
    def order(self) -> tuple[int, ...]:
        """A topological order (Kahn's, smallest node first among those ready)."""
        indeg = {n: len(p) for n, p in self.preds.items()}
        succ: dict[int, list[int]] = {n: [] for n in self.text}
        for a, b in self.edges:
            succ[a].append(b)
        ready, out = sorted(n for n, d in indeg.items() if d == 0), []
        while ready:
            n = ready.pop(0)
            out.append(n)
            for m in succ[n]:
                indeg[m] -= 1
                if indeg[m] == 0:
                    ready = sorted([*ready, m])
        return tuple(out)

    @cached_property
    def ancestors(self) -> dict[int, frozenset[int]]:
        """Every node that must come before each node (the transitive predecessors)."""
        out: dict[int, frozenset[int]] = {}
        for n in self.order:
            acc: set[int] = set()
            for p in self.preds[n]:
                acc |= {p} | out[p]
            out[n] = frozenset(acc)
        return out

    @cached_property
    def nodes_of(self) -> dict[int, tuple[int, ...]]:
        """step id -> its nodes in topological order."""
        out: dict[int, list[int]] = {}
        for n in self.order:
            if n in self.step:
                out.setdefault(self.step[n], []).append(n)
        return {s: tuple(v) for s, v in out.items()}

    def node(self, step_id: int, occurrence: int = 0) -> int | None:
        """The node of the ``occurrence``-th (0-based) doing of ``step_id`` (module docstring); None: no node."""
        nodes = self.nodes_of.get(step_id)
        return None if not nodes else nodes[min(occurrence, len(nodes) - 1)]

    def precondition_pairs(self) -> frozenset[tuple[int, int]]:
        """DTGL's reading of the edges: (x, y) for *y is a precondition of x*."""
        return frozenset((b, a) for a, b in self.edges)


def _cycle_edge(text: Mapping[int, str], edges: Iterable[tuple[int, int]]) -> tuple[int, int] | None:
    """An edge on a cycle, or None when the graph is acyclic."""
    succ: dict[int, list[int]] = {n: [] for n in text}
    for a, b in edges:
        succ[a].append(b)
    state: dict[int, int] = {}

    def visit(root: int) -> tuple[int, int] | None:
        stack = [(root, iter(succ[root]))]
        state[root] = 1
        while stack:
            n, it = stack[-1]
            m = next(it, None)
            if m is None:
                state[n] = 2
                stack.pop()
            elif state.get(m) == 1:
                return n, m
            elif m not in state:
                state[m] = 1
                stack.append((m, iter(succ[m])))
        return None

    for n in sorted(text):
        if n not in state and (e := visit(n)):
            return e
    return None


def parse(doc, where: str, recipe: str, step_of_text: Mapping[str, int]) -> RecipeGraph:
    """A graph document checked (module docstring); ``step_of_text``: the recipe's step texts -> step ids."""
    try:
        text = {int(k): str(v) for k, v in doc["steps"].items()}
        edges = [(int(a), int(b)) for a, b in doc["edges"]]
    except (KeyError, TypeError, ValueError, AttributeError):
        raise UserError(f"{where}: not a task graph ({{\"steps\": {{id: text}}, \"edges\": [[a, b], ...]}})") from None
    if not text or text[min(text)] != "START" or text[max(text)] != "END":
        raise UserError(f"{where}: its smallest node must be START and its largest END")
    start, end = min(text), max(text)
    step = {}
    for n, t in text.items():
        if n in (start, end):
            continue
        if t not in step_of_text:
            raise UserError(f"{where}: node {n} ({t[:60]!r}) is no step of recipe {recipe!r}")
        step[n] = step_of_text[t]
    for a, b in edges:
        if a not in text or b not in text:
            raise UserError(f"{where}: edge [{a}, {b}] names node {a if a not in text else b}, which its steps lack")
    if (e := _cycle_edge(text, edges)) is not None:
        raise UserError(f"{where}: the edges have a cycle (through edge [{e[0]}, {e[1]}]); a task graph is acyclic")
    return RecipeGraph(recipe, text, step, frozenset(edges), start, end, where)


def step_texts(src: S.Sources, recipe: str) -> dict[str, int]:
    return {src.descriptions[i]: i for i in src.recipe_steps[recipe]}


def load_graphs(src: S.Sources, folder: str = S.GRAPHS) -> dict[str, RecipeGraph]:
    """The graph of every recipe of ``src`` from ``folder`` of the data root (one file per recipe)."""
    out = {}
    for recipe in sorted(src.recipe_steps):
        rel = f"{folder}/{recipe}.json"
        out[recipe] = parse(S.read_json(src.root, rel), str(S.path(src.root, rel)), recipe, step_texts(src, recipe))
    return out


def prf(truth: frozenset, predicted: frozenset) -> tuple[float, float, float]:
    """Precision, recall, F1 of ``predicted`` pairs against ``truth`` (a zero denominator gives 0)."""
    tp = len(truth & predicted)
    p = tp / len(predicted) if predicted else 0.0
    r = tp / len(truth) if truth else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def compare(a: RecipeGraph, b: RecipeGraph) -> dict:
    """How two graphs of one recipe differ: nodes, edges, whether the numbering differs, and the edges of each
    read as step-id pairs (START / END by name) that the other lacks."""
    def pairs(g: RecipeGraph) -> set[tuple[str, str]]:
        name = {**{n: str(s) for n, s in g.step.items()}, g.start: "START", g.end: "END"}
        return {(name[x], name[y]) for x, y in g.edges}

    pa, pb = pairs(a), pairs(b)
    same_numbering = dict(a.text) == dict(b.text)
    return {"nodes": [len(a.text), len(b.text)], "edges": [len(a.edges), len(b.edges)],
            "same_file_content": same_numbering and a.edges == b.edges, "same_numbering": same_numbering,
            "step_edges_only_first": len(pa - pb), "step_edges_only_second": len(pb - pa)}


def data_root_graphs(root: str | os.PathLike) -> tuple[S.Sources, dict[str, RecipeGraph]]:
    """The sources and the recipes' own graphs (CaptainCook4D's ``task_graphs/``)."""
    src = S.load(root)
    return src, load_graphs(src)
