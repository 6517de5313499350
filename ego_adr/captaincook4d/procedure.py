"""Following a recording through its recipe's task graph, one observed step at a time: what the procedure monitors
(:mod:`.monitors`), the supervised monitor's features and the no-video EgoErrorVQA answers (:mod:`.egoerrorvqa`)
all read.

At each step done (the ``k``-th doing of a step id is its ``k``-th node, :mod:`.graphs`):

- **early**: a direct predecessor of its node is not done yet (the step came before one it needs; DTGL's online
  check, Sec. 4.3, on the recipe's graph);
- **late**: an already done node needs this one (it is among that node's ancestors): the step came after one
  that needs it -- the same order violation seen from its other end, which CaptainCook4D's annotators often tag on
  the later step (``1_136``: "Step performed after adding cheese");
- **unknown**: the graph has no node for it (a step of the learned graph's mask, or a repetition beyond the recipe's
  nodes does not count: it takes the last node).

Every ancestor of the node not done by then is *known missing* from that moment (the omission is visible there:
the rule of :func:`.benchmark.targets`); at the end of the recording, **end** lists the steps END needs that were
never done and were not known missing before (each omission is reported once).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ego_adr.captaincook4d.graphs import RecipeGraph


@dataclass(frozen=True)
class Check:
    node: int | None
    early: tuple[int, ...] = ()  # direct predecessors not done
    late: tuple[int, ...] = ()  # done nodes that need this one
    newly_missing: tuple[int, ...] = ()  # ancestors not done, not known missing before
    unknown: bool = False
    end: bool = False
    repeat: bool = False  # a doing beyond the step's nodes in the graph


class Tracker:
    """The state of one recording in one graph (module docstring)."""

    def __init__(self, g: RecipeGraph) -> None:
        self.g = g
        self.done: set[int] = {g.start}
        self.count: Counter = Counter()
        self.missing: set[int] = set()

    def observe(self, step_id: int) -> Check:
        g = self.g
        k = self.count[step_id]
        self.count[step_id] += 1
        node = g.node(step_id, k)
        if node is None:
            return Check(None, unknown=True)
        repeat = k >= len(g.nodes_of.get(step_id, ()))
        early = tuple(sorted(g.preds[node] - self.done))
        late = tuple(sorted(d for d in self.done if node in g.ancestors[d]))
        absent = (g.ancestors[node] - self.done) - {g.start}
        newly = tuple(sorted(absent - self.missing))
        self.missing |= absent
        self.missing.discard(node)
        self.done.add(node)
        return Check(node, early, late, newly, repeat=repeat)

    def finish(self) -> Check:
        """The end of the recording: the required steps never done and not known missing before."""
        g = self.g
        absent = (g.ancestors[g.end] - self.done) - {g.start}
        newly = tuple(sorted(absent - self.missing))
        self.missing |= absent
        return Check(g.end, early=newly, newly_missing=newly, end=True)

    def names(self, nodes) -> list[str]:
        return [self.g.text[n] for n in nodes]
