"""Baseline monitors of Table 2: Random, CUSUM change-point, precondition check and the template-goal re-planner.

- **Random**: a uniform probability per step and a uniformly drawn type (Table 2 averages 20 seeds).
- **CUSUM**: a per-task action bigram model fitted on the training references gives each step a surprisal;
  a one-sided CUSUM of the standardised surprisal (drift ``k = 0.5``) is mapped to ``1 - exp(-S / h)``.
- **Precondition check**: replays the stream and alarms when an action is not executable. Our generator only
  emits executable trajectories, so -- like the paper's (M1 0.513, missed 0.95) -- it almost never fires.
- **Re-planner**: after every step it re-plans the unmet goals from the replayed state and alarms when the
  remaining plan stops shrinking; at the task end, unmet goals mean an omission. Two variants (Table 15):
  ``goal="template"`` plans the lifted template's goal, its roles bound from the scene and the person's first
  touches (:class:`~ego_adr.helpmeout.monitors.knowledge.RoleResolver`); ``goal="grounded"`` is the privileged
  reference that receives the episode's grounded goal. Each episode has a planning budget; an episode that
  exhausts it is *timed out* and left out of M3, as in Table 15.
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter, defaultdict

from ego_adr.helpmeout.generator.goal_control import CATEGORIES
from ego_adr.helpmeout.monitors.base import EpisodeContext, Monitor, StepOutput
from ego_adr.helpmeout.monitors.knowledge import RoleResolver, grounded_template, task_variant
from ego_adr.helpmeout.monitors.rules import guess_category
from ego_adr.helpmeout.world.domain import TASK_END, goal_unmet, parse_action, state_from_facts
from ego_adr.helpmeout.world.operators import apply_action, check_action
from ego_adr.helpmeout.world.trajectory_planner import PlanError, PlanTimeout, plan_goals


class RandomMonitor(Monitor):
    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    def reset(self, ctx: EpisodeContext) -> None:
        pass

    def step(self, t: int, action: str) -> StepOutput:
        return StepOutput(self.rng.random(), t, self.rng.choice(CATEGORIES))


class CusumMonitor(Monitor):
    name = "cusum"

    def __init__(self, drift: float = 0.5, h: float = 4.0, alpha: float = 1.0) -> None:
        self.k, self.h, self.alpha = drift, h, alpha
        self.bigram: dict[str, Counter] = defaultdict(Counter)
        self.unigram: dict[str, Counter] = defaultdict(Counter)
        self.prev_count: dict[str, Counter] = defaultdict(Counter)
        self.mu, self.sigma = 0.0, 1.0
        self.mid_category = "sequence"

    def fit(self, train: list[dict]) -> None:
        if not train:
            raise ValueError("CUSUM needs training episodes (--train FILE or train.jsonl next to the test file)")
        for ep in train:
            seq = ["<s>"] + ep["reference"]
            for a, b in zip(seq, seq[1:], strict=False):
                self.bigram[ep["task"]][(a, b)] += 1
                self.unigram[ep["task"]][b] += 1
                self.prev_count[ep["task"]][a] += 1
        xs = [self._surprisal(ep["task"], a, b) for ep in train[:400]
              for a, b in zip(["<s>"] + ep["reference"], ep["reference"], strict=False)]
        self.mu = sum(xs) / len(xs)
        self.sigma = max(1e-3, math.sqrt(sum((x - self.mu) ** 2 for x in xs) / len(xs)))
        mids = Counter(e["category"] for ep in train for e in ep["errors"] if not e["at_end"])
        if mids:
            self.mid_category = mids.most_common(1)[0][0]

    def _surprisal(self, task: str, prev: str, cur: str) -> float:
        uni = self.unigram.get(task, Counter())
        total = sum(uni.values()) + len(uni) + 1
        p_uni = (uni.get(cur, 0) + 1) / total
        c_prev = self.prev_count[task].get(prev, 0) if task in self.prev_count else 0
        p = ((self.bigram[task].get((prev, cur), 0) if task in self.bigram else 0) + self.alpha * p_uni) / (c_prev + self.alpha)
        return -math.log(max(p, 1e-12))

    def reset(self, ctx: EpisodeContext) -> None:
        self.task, self.prev, self.s = ctx.task, "<s>", 0.0

    def step(self, t: int, action: str) -> StepOutput:
        x = (self._surprisal(self.task, self.prev, action) - self.mu) / self.sigma
        self.prev = action
        self.s = max(0.0, self.s + x - self.k)
        prob = 1.0 - math.exp(-self.s / self.h)
        cat = "omission" if action == TASK_END else self.mid_category
        return StepOutput(prob, t, cat)


class PreconditionMonitor(Monitor):
    name = "precondition"

    def reset(self, ctx: EpisodeContext) -> None:
        self.state = state_from_facts(ctx.initial_scene)

    def step(self, t: int, action: str) -> StepOutput:
        if action == TASK_END:
            return StepOutput(0.0)
        act = parse_action(action)
        why = check_action(self.state, act)
        if why is not None:
            return StepOutput(1.0, t, "sequence", {"precondition": why})
        apply_action(self.state, act)
        return StepOutput(0.0)


class ReplannerMonitor(Monitor):
    name = "replanner"

    def __init__(self, budget_s: float = 5.0, templates_dir: str | None = None, slope: float = 1.5,
                 goal: str = "template") -> None:
        if goal not in ("template", "grounded"):
            raise ValueError("goal must be 'template' or 'grounded'")
        self.budget_s, self.templates_dir, self.slope, self.goal = budget_s, templates_dir, slope, goal
        self.name = "replanner" if goal == "template" else "replanner-privileged"

    def reset(self, ctx: EpisodeContext) -> None:
        self.state = state_from_facts(ctx.initial_scene)
        self.resolver = None
        if self.goal == "grounded":
            self.t = grounded_template(ctx, self.templates_dir)
            self.known = self.t.objects() | self.t.scene_locations()
        else:
            self.resolver = RoleResolver(task_variant(ctx, self.templates_dir), self.state)
            self.t = self.resolver.template()
            self.known = self.resolver.known()
        self.history: list = []
        self.deadline = time.perf_counter() + self.budget_s
        self.prev = self._cost()

    def _cost(self) -> int | None:
        """Shortest plan over the possible next blocks (the person may do any ready block next)."""
        t, st = self.t, self.state
        left = [b for b in t.blocks if any(not st.satisfies(g) for g in b.goal)]
        if not left:
            return 0
        done = {b.id for b in t.blocks} - {b.id for b in left}
        ready = [b for b in left if all(p in done for p in b.after)] or left[:1]
        best = None
        for first in ready:
            order = [first] + [b for b in left if b is not first]
            goals = [(b, s.fact) for b in order for s in b.subgoals]
            remaining = self.deadline - time.perf_counter()
            if remaining <= 0:
                raise PlanTimeout("episode budget exhausted")
            try:
                n = len(plan_goals(t, st, goals, budget_s=remaining))
            except PlanTimeout:
                raise
            except PlanError:
                continue
            best = n if best is None else min(best, n)
        return best

    def step(self, t: int, action: str) -> StepOutput:
        if self.timed_out:
            return StepOutput(0.0)
        if action == TASK_END:
            unmet = goal_unmet(self.state, self.t.goal)
            return StepOutput(0.97, t, "omission") if unmet else StepOutput(0.03)
        act = parse_action(action)
        if self.resolver is not None:
            self.resolver.observe(act)
            self.t = self.resolver.template()
        why = check_action(self.state, act)
        cat = guess_category(act, self.known, self.history)
        self.history.append(act)
        if why is not None:
            return StepOutput(0.95, t, cat, {"precondition": why})
        apply_action(self.state, act)
        try:
            cost = self._cost()
        except PlanTimeout:
            self.timed_out = True
            return StepOutput(0.0)
        if cost is None:
            return StepOutput(0.9, t, cat, {"plan": "goal unreachable"})
        prev = self.prev if self.prev is not None else cost + 1
        self.prev = cost
        d = cost - (prev - 1)
        prob = 1.0 / (1.0 + math.exp(-self.slope * (d - 1.5)))
        return StepOutput(prob, t, cat, {"cost": cost, "delta": d})
