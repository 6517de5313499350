"""The monitors of the CaptainCook4D benchmarks beyond the registered step-stream ones (:mod:`.registry` lists them):

- ``procedure-official``: the recipe's official task graph (CaptainCook4D's ``task_graphs/``, the task input here:
  Ego-ADR takes the procedure as its task input) followed step by step (:mod:`.procedure`): it alarms at a step
  done before one it needs (``early``), after one that needs it (``late``), an unknown step, and at the end of the
  recording for a required step never done (``end``). Which checks alarm (``checks``) is chosen on the validation
  split (:data:`CHOICES`), like a threshold;
- ``procedure-learned``: the same monitor on the graph DTGL's DO learns per recipe from the correct training
  recordings (:mod:`.learned`: ``train_with_gt.py``'s training, then the graph its online check reads);
- ``supervised``: a logistic regression over the official graph's checks, trained on the labelled steps of every
  training recording (the split's 912 errorful steps included): supervised, and said so;
- the reference rules are the step streams' own (``unseen-step``, ``unseen-transition``: :mod:`.registry`).
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from ego_adr.captaincook4d import benchmark as B
from ego_adr.captaincook4d import graphs as G
from ego_adr.captaincook4d import learned as L
from ego_adr.captaincook4d.procedure import Check, Tracker
from ego_adr.monitoring.monitor import Monitor, StepOutput
from ego_adr.monitoring.registry import MonitorOption
from ego_adr.online_mistakes import cv
from ego_adr.online_mistakes.types import StepContext

CHECKS = ("early", "late", "end")
#: what the validation split chooses among for the procedure monitors (every non-empty set of checks)
CHOICES = {"checks": ("early,late,end", "early,late", "early,end", "late,end", "early", "late", "end")}
#: ``--monitor-option checks=validation`` (the default): the evaluation chooses the checks among :data:`CHOICES`
CHOSEN = "validation"


def _checks(text: str) -> frozenset[str]:
    out = frozenset(x.strip() for x in str(text).split(",") if x.strip())
    if not out or not out <= set(CHECKS):
        raise ValueError(f"checks must name some of {', '.join(CHECKS)}")
    return out


def checks_option(text: str) -> str:
    """``--monitor-option checks=``: ``validation`` or a set of checks, written in :data:`CHECKS`' order."""
    if str(text).strip() == CHOSEN:
        return CHOSEN
    return ",".join(c for c in CHECKS if c in _checks(text))


def learned_graphs(train: B.Training, seed: int = 42) -> dict[str, G.RecipeGraph]:
    """Per recipe, DO's graph from the recipe's correct training sequences (:mod:`.learned`); nodes START 0, the
    recipe's steps in id order, END; a step no training sequence holds is masked (no node)."""
    out = {}
    for recipe, ids in sorted(train.recipe_steps.items()):
        node = {s: i + 1 for i, s in enumerate(ids)}
        n = len(ids) + 2
        seqs = [[node[s] for s in seq if s != B.END_ID] for seq, r in zip(train.sequences, train.recipes) if r == recipe]
        held = {x for s in seqs for x in s}
        masked = {m for m in node.values() if m not in held}
        pairs = L.monitor_graph(np.array(L.trained(n, seqs, L.DoSettings(seed=seed))["w"]), masked) if seqs else {}
        text = {0: "START", n - 1: "END", **{m: train.taxonomy[s] for s, m in node.items() if m not in masked}}
        step = {m: s for s, m in node.items() if m not in masked}
        out[recipe] = G.RecipeGraph(recipe, text, step, frozenset((y, x) for x, y in pairs), 0, n - 1, "dtgl-do")
    return out


class Procedure(Monitor):
    """Alarms where the recording leaves its recipe's graph (module docstring)."""

    OPTIONS = (MonitorOption("checks", checks_option, CHOSEN, "the checks that alarm: validation (chosen on the "
                             "validation split among " + " | ".join(CHOICES["checks"]) + "), or any of early, late, "
                             "end (given, not chosen)"),)

    def __init__(self, graph: str = "official", checks: str = "early,late,end", seed: int = 42) -> None:
        self.graph, self.checks, self.seed = graph, _checks(checks), seed
        self.selection = {"hyper_parameters": {"checks": ",".join(c for c in CHECKS if c in self.checks),
                                               "graph": graph},
                          "chosen_by": "the validation split (captaincook4d evaluation) among " +
                                       " | ".join(CHOICES["checks"])}

    def fit(self, train: B.Training) -> None:
        self.graphs = dict(train.graphs) if self.graph == "official" else learned_graphs(train, self.seed)
        self.edges = sum(len(g.edges) for g in self.graphs.values())
        if self.graph != "official":
            self.selection["hyper_parameters"]["do"] = asdict(L.DoSettings(seed=self.seed))
            self.deviations = ["DO trained in float64 on one thread (DTGL: float32)"]

    def stats(self) -> dict:
        return {"graph": self.graph, "edges": self.edges}

    def reset(self, ctx: StepContext) -> None:
        self.tracker = Tracker(self.graphs[B.recipe_of(ctx.video)])

    def step(self, t: int, step_id: int) -> StepOutput:
        tr = self.tracker
        c = tr.finish() if step_id == B.END_ID else tr.observe(step_id)
        fired = []
        if c.unknown and "early" in self.checks:
            fired.append("unknown step")
        if c.end and c.early and "end" in self.checks:
            fired.append("omission")
        if not c.end and c.early and "early" in self.checks:
            fired.append("order: before a step it needs")
        if c.late and "late" in self.checks:
            fired.append("order: after a step that needs it")
        ev = {"missing_before": tr.names(c.early), "done_after": tr.names(c.late), "unknown": c.unknown}
        return StepOutput(1.0 if fired else 0.0, flagged=bool(fired), category=fired[0] if fired else None,
                          evidence=ev)


def features(c: Check, t: int) -> list[float]:
    """The supervised monitor's features of one observation."""
    return [float(bool(c.early) and not c.end), float(len(c.early)) * (not c.end), float(bool(c.late)),
            float(len(c.late)), float(len(c.newly_missing)), float(c.end), float(c.end and bool(c.early)),
            float(c.unknown), float(c.repeat), float(np.log1p(t))]


def _rows(g: G.RecipeGraph, steps) -> list[list[float]]:
    tr = Tracker(g)
    return [features(tr.finish() if s == B.END_ID else tr.observe(s), t) for t, s in enumerate(steps)]


class Supervised(Monitor):
    """Logistic regression over :func:`features` of the official graph, fitted on every labelled training step."""

    L2 = 1e-3  # cv.logistic's default penalty; fixed, not tuned

    def fit(self, train: B.Training) -> None:
        self.graphs = dict(train.graphs)
        x = np.array([f for r in train.labelled for f in _rows(self.graphs[r.recipe], r.steps)])
        y = np.array([v for r in train.labelled for v in r.labels])
        self.mu, self.sd = x.mean(axis=0), x.std(axis=0) + 1e-9
        self.w = cv.logistic((x - self.mu) / self.sd, y, self.L2)
        self.selection = {"hyper_parameters": {"l2": self.L2, "features": 10},
                          "chosen_by": "nothing chosen: fixed features and penalty; trained on the labels of the "
                                       f"{len(train.labelled)} training recordings ({int(y.sum())} positives of "
                                       f"{len(y)} observations)"}

    def reset(self, ctx: StepContext) -> None:
        self.tracker = Tracker(self.graphs[B.recipe_of(ctx.video)])

    def step(self, t: int, step_id: int) -> StepOutput:
        c = self.tracker.finish() if step_id == B.END_ID else self.tracker.observe(step_id)
        z = float(np.r_[(np.array(features(c, t)) - self.mu) / self.sd, 1.0] @ self.w)
        return StepOutput(float(1 / (1 + np.exp(-np.clip(z, -30, 30)))), evidence={"logit": round(z, 4)})
