"""The Ego-ADR monitor for step streams: the procedure as a task graph learned from the correct training recordings,
and Ego-ADR's progress logic over the stream.

The task graph (:class:`TaskGraph`) holds what the correct recordings show about the procedure:

- its steps (a step no correct recording contains is not part of the procedure);
- which steps may follow which (the transitions seen, ``START`` included);
- which steps must come before which: ``a`` is a *precondition* of ``b`` with confidence = the share of the
  recordings containing ``b`` in which ``a`` is done before ``b`` (first occurrences); ``b`` *comes before* ``c``
  with confidence = the share of the recordings containing both in which ``b`` is first;
- how often a step is done in one recording.

The progress logic is Ego-ADR's (``ego_adr/reasoning/online.py``: a step again, a step before the ones it needs,
a step after one it should precede), on the graph instead of a recipe's step list. For each observed step, with the
steps done so far:

========================  ===============================================  ==================================
check                     fires when                                       category
========================  ===============================================  ==================================
``unknown-step``          the step is no node of the graph                 Unintended and unnecessary action
``repeated``              done again (not the step just done) more often   Unintended and unnecessary action
                          than at least ``tau_repeat`` of the recordings
``out-of-order``          done for the first time after a step it comes    Wrong order
                          before with confidence >= ``tau_order``
``skipped``               a precondition of confidence >= ``tau_skip`` is  Omission
                          not done yet
``unseen-transition``     no correct recording has this step right after   Wrong order
                          the previous one
========================  ===============================================  ==================================

Confidences count only with ``support`` recordings behind them. ``support``, the three ``tau`` and whether the
transition check is on are chosen together by cross-validation (:mod:`ego_adr.online_mistakes.cv`: k folds over
the training recordings, constructed validation mistakes, :data:`~ego_adr.online_mistakes.cv.OBJECTIVE`), and once
more for each of macro F1 and F1b alone (``flagged_for``: the operating point of each metric); the unknown-step
check is always on. ``prob`` is, for the first check that fired (the table's order), the share of
validation steps where that check fired first that were mistakes; for a step where none fired, the share of
validation mistakes among such steps.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ego_adr.monitoring.monitor import Monitor, StepOutput
from ego_adr.online_mistakes import cv
from ego_adr.online_mistakes.types import StepContext, TrainingSet

START = -1
CHECKS = ("unknown-step", "repeated", "out-of-order", "skipped", "unseen-transition")
CATEGORY = {"unknown-step": "Unintended and unnecessary action", "repeated": "Unintended and unnecessary action",
            "out-of-order": "Wrong order", "skipped": "Omission", "unseen-transition": "Wrong order"}
OFF = 2.0  # a threshold no confidence reaches
SUPPORT = (1, 2, 3, 5)
TAUS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, OFF)
TAUS_REPEAT = (0.5, 0.7, 0.9, 1.0, OFF)


@dataclass(frozen=True)
class TaskGraph:
    steps: frozenset[int]
    transitions: Counter  # (a, b) -> times b right after a (a = START for the first step)
    recordings: Counter  # b -> recordings containing b
    first: Counter  # (a, b) -> recordings in which a's first occurrence precedes b's
    together: Counter  # (a, b) -> recordings containing both
    times: Counter  # (b, n) -> recordings doing b at least n times

    @classmethod
    def learn(cls, sequences: Sequence[Sequence[int]]) -> TaskGraph:
        tr, rec, first, tog, times = Counter(), Counter(), Counter(), Counter(), Counter()
        for s in sequences:
            for a, b in zip((START, *s), s):
                tr[a, b] += 1
            pos: dict[int, int] = {}
            for i, x in enumerate(s):
                pos.setdefault(int(x), i)
            for x, n in Counter(int(x) for x in s).items():
                rec[x] += 1
                for m in range(1, n + 1):
                    times[x, m] += 1
            for a, b in itertools.permutations(sorted(pos), 2):
                tog[a, b] += 1
                if pos[a] < pos[b]:
                    first[a, b] += 1
        return cls(frozenset(rec), tr, rec, first, tog, times)

    def preconditions(self, b: int, support: int) -> list[tuple[int, float]]:
        """(a, share of b's recordings with a before b), highest first, when b has ``support`` recordings."""
        n = self.recordings[b]
        if n < support:
            return []
        out = [(a, self.first[a, b] / n) for a in sorted(self.steps) if a != b and self.first[a, b]]
        return sorted(out, key=lambda t: (-t[1], t[0]))

    def strengths(self, done: Counter, last: int, b: int, support: int) -> tuple[dict[str, float], dict]:
        """Each check's confidence for step ``b`` after the steps ``done`` (with counts), ``last`` the previous one;
        and the steps each check blames."""
        s = dict.fromkeys(CHECKS, 0.0)
        why: dict = {}
        if b not in self.steps:
            s["unknown-step"] = 1.0
            return s, why
        s["unseen-transition"] = float(self.transitions[last, b] == 0)
        if done[b] and last != b:
            n = self.recordings[b]
            s["repeated"] = 1.0 - self.times[b, done[b] + 1] / n if n >= support else 0.0
        if not done[b]:
            late = [(c, self.first[b, c] / self.together[b, c]) for c in sorted(done)
                    if c != b and self.together[b, c] >= support]
            if late:
                c, conf = max(late, key=lambda t: (t[1], -t[0]))
                s["out-of-order"], why["out-of-order"] = conf, c
            missing = [(a, conf) for a, conf in self.preconditions(b, support) if not done[a]]
            if missing:
                s["skipped"], why["skipped"] = missing[0][1], missing[0][0]
        return s, why


def _episode_strengths(graph: TaskGraph, steps: Sequence[int], support: int) -> list[dict[str, float]]:
    done: Counter = Counter()
    last, out = START, []
    for b in steps:
        out.append(graph.strengths(done, last, int(b), support)[0])
        done[int(b)] += 1
        last = int(b)
    return out


def validation_strengths(sequences: Sequence[Sequence[int]], val: list) -> dict[int, dict[str, np.ndarray]]:
    """Per support value, each check's confidence on every validation step (the graph of each fold learnt from
    that fold's fit recordings), in the order of :func:`ego_adr.online_mistakes.cv.episode_labels`."""
    out = {}
    graphs = [TaskGraph.learn([sequences[i] for i in fit]) for fit, _ in val]
    for m in SUPPORT:
        rows = [r for g, (_, eps) in zip(graphs, val) for e in eps for r in _episode_strengths(g, e.steps, m)]
        out[m] = {c: np.array([r[c] for r in rows]) for c in CHECKS}
    return out


def _grid() -> list[dict]:
    return [{"support": m, "tau_skip": ts, "tau_order": to, "tau_repeat": tr, "transitions": tt}
            for m in SUPPORT for ts in TAUS for to in TAUS for tr in TAUS_REPEAT for tt in (False, True)]


def _fired(strength: dict[str, np.ndarray], p: dict) -> np.ndarray:
    """(steps, checks) booleans: which checks fire under setting ``p``."""
    return np.stack([strength["unknown-step"] >= 1.0, strength["repeated"] >= p["tau_repeat"],
                     strength["out-of-order"] >= p["tau_order"], strength["skipped"] >= p["tau_skip"],
                     (strength["unseen-transition"] >= 1.0) & p["transitions"]], axis=1)


def select(sequences: Sequence[Sequence[int]], plan: cv.Plan):
    """The setting of highest validation objective (ties: the earlier in grid order), the per-check calibration and
    the selection record."""
    val = cv.validation(sequences, plan)
    labels = np.concatenate([cv.episode_labels(eps) for _, eps in val])
    by_support = validation_strengths(sequences, val)
    grid = _grid()
    scores = []
    for p in grid:
        flags = _fired(by_support[p["support"]], p).any(axis=1)
        scores.append(cv.flags_metrics(labels, flags))
    best = int(np.argmax([s["objective"] for s in scores]))
    chosen = grid[best]
    by_metric = {k: int(np.argmax([s[k] for s in scores])) for k in cv.OPERATING_METRICS}
    fired = _fired(by_support[chosen["support"]], chosen)
    first = np.where(fired.any(axis=1), fired.argmax(axis=1), -1)
    calib = {}
    for j, c in enumerate(("none", *CHECKS)):
        sel = first == j - 1
        calib[c] = round(float((labels[sel].sum() + 0.5) / (sel.sum() + 1.0)), 4)
    top = sorted(range(len(grid)), key=lambda i: -scores[i]["objective"])[:10]
    selection = {
        "recipe": "task graph from the correct recordings + progress checks; support, thresholds and the "
                  "transition check by constructed validation mistakes (" + cv.OBJECTIVE + ")",
        "folds": [list(f) for f, _ in val], "validation": cv.describe(plan, val),
        "candidates": {"support": list(SUPPORT), "tau_skip": list(TAUS), "tau_order": list(TAUS),
                       "tau_repeat": list(TAUS_REPEAT), "transitions": [False, True], "off": OFF},
        "chosen": chosen, "cv_score": scores[best], "calibration": calib,
        "operating_points": {k: {"setting": grid[i], "cv_value": scores[i][k]} for k, i in by_metric.items()},
        "cv_top10": [grid[i] | {"objective": scores[i]["objective"]} for i in top],
    }
    return chosen, calib, selection, {k: grid[i] for k, i in by_metric.items()}


class GraphMonitor(Monitor):
    name = "egoadr-graph"

    def __init__(self, seed: int = 0, folds: int = 5, params: dict | None = None) -> None:
        """``params`` (support, tau_skip, tau_order, tau_repeat, transitions) fixes the setting instead of
        cross-validating it (for reading the progress logic on a hand-made procedure; ``prob`` is then 1.0 for
        a step a check flags and 0.0 otherwise)."""
        self.seed, self.k, self.fixed = seed, folds, params
        self.graph: TaskGraph | None = None
        self.selection: dict = {}

    def fit(self, train: TrainingSet) -> None:
        seqs = [tuple(int(x) for x in s) for s in train.sequences if s]
        if self.fixed is not None:
            self.params = dict(self.fixed)
            self.calib = {c: 1.0 for c in CHECKS} | {"none": 0.0}
            self.selection = {"chosen": self.params, "chosen_by": "fixed by the caller (no cross-validation)"}
            self.points = dict.fromkeys(cv.OPERATING_METRICS, self.params)
        else:
            plan = cv.plan(train.benchmark, seqs, sorted(train.taxonomy), self.k, self.seed, train.noise)
            self.params, self.calib, self.selection, self.points = select(seqs, plan)
        self.graph = TaskGraph.learn(seqs)

    def reset(self, ctx: StepContext) -> None:
        if self.graph is None:
            raise RuntimeError(f"{self.name}: fit() must run before streaming")
        self.taxonomy = dict(ctx.taxonomy)
        self.done: Counter = Counter()
        self.last = START

    def _name(self, step: int) -> str:
        return str(self.taxonomy.get(step, step))

    def step(self, t: int, step_id: int) -> StepOutput:
        b = int(step_id)
        s, why = self.graph.strengths(self.done, self.last, b, self.params["support"])
        fired = _fired({c: np.array([v]) for c, v in s.items()}, self.params)[0]
        names = [c for c, f in zip(CHECKS, fired) if f]
        flagged_for = {}
        for k, p in self.points.items():  # the setting chosen for each metric (issue 34 item 4)
            sk = s if p["support"] == self.params["support"] else self.graph.strengths(
                self.done, self.last, b, p["support"])[0]
            flagged_for[k] = bool(_fired({c: np.array([v]) for c, v in sk.items()}, p)[0].any())
        ev = {"checks": names, "confidence": {c: round(s[c], 3) for c in names}}
        for c in names:
            if c in why:
                ev[f"{c}_step"] = self._name(why[c])
        if "unseen-transition" in names:
            ev["after"] = "START" if self.last == START else self._name(self.last)
        self.done[b] += 1
        self.last = b
        first = names[0] if names else "none"
        return StepOutput(self.calib[first], onset=t, category=CATEGORY.get(first), evidence=ev,
                          flagged=bool(names), flagged_for=flagged_for)
