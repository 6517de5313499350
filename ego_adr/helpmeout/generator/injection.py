"""Error generator: the goal-control model, the nine categories, Table 9's feasibility gates, onset rules.

Errors are edits of the *subgoal program* (the template's blocks in the episode's order), realised by the same
planner that makes the correct reference -- so an errorful trajectory is executable by construction and is
replay-validated again afterwards (paper Figure 2: sample, edit, validate by symbolic replay, derive onsets).
Everything the person did not get wrong is planned exactly as in the reference, so the two trajectories of a
pair differ only where the error (and its natural consequences) are. One exception to "executable": an error's own
key step may be a *failed attempt* (a stir before any addition, of a still-empty container) -- recorded without
effect and allowed only at its labelled onset, which is where the paper's precondition check fires (Table 15:
on target for 5% of errors). The per-category gates and edits are in :mod:`.generator_sites`.

Categories (Figure 4's axis). Progression-level: omission, sequence, anticipation, perseveration, action
addition. Current-action errors corrupt the choice of object, tool, location or action; Figure 4 names those four
choices, so the two categories the extraction lost are ``location_substitution`` (right object put in a look-alike
place: milk in the freezer) and ``action_substitution`` (right object, a sibling operator: peel instead of slice,
rinse instead of wash, scrub instead of wipe).

Goal-control model (Appendix A.6, Table 8). Block ``k`` of ``K`` (in execution order) gets goal activation
``a_k = g0 - decay * k / K + N(0, sigma)``: salience ``g0 = 0.48`` erodes with the cognitive load of subgoals
already executed (decay 0.20) and fluctuates (sigma 0.10). A block whose activation falls below the omission
threshold 0.30 is a lapse: omissions delete the lowest-activation deletable block first. Executive control fails
on a subgoal with the commission probability 0.12; commission edits prefer subgoals where that Bernoulli fired,
then lower-activation blocks. A second error follows when control fails again (Bernoulli 0.12) in a lapse-prone
profile (some ``a_k`` below threshold) -- a few percent of errorful episodes, as in the release (12,817 errors
in about 12,400 errorful episodes). Which *category* an episode gets is planned by :mod:`.episodes` to hit
Table 4's shares ("the released episodes were selected per category").

Onset rules (Section A.5; the paper's exact rules were lost in extraction, these are ours): an omission is
confirmed at the task-end step (Figure 1); object/tool substitution and action addition at the first step that
touches the wrong object / the first added step; sequence, anticipation, perseveration, location and action
substitution at the key action of the displaced/repeated/altered subgoal (its last planned step: the early stir,
the premature put, the repeated addition, the misplacement, the wrong operator).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ego_adr.helpmeout.generator.generator_sites import (  # noqa: F401 - re-exported: the generator's public names
    ADDITIONS,
    OP_SWAP,
    PLACEMENT,
    PROCESSING,
    SITES,
    TOOL_KEYS,
    ErrorRecord,
    Item,
    Sites,
    apply_site,
    tool_key,
)
from ego_adr.helpmeout.generator.goal_control import (  # noqa: F401 - re-exported: the generator's public names
    CATEGORIES,
    COMMISSION,
    COMMISSION_WEIGHTS,
    CURRENT_ACTION,
    OMISSION_SHARE,
    PROGRESSION,
    GeneratorConfig,
    GoalControlModel,
    target_shares,
)
from ego_adr.helpmeout.world.domain import State, goal_unmet
from ego_adr.helpmeout.world.replay import replay
from ego_adr.helpmeout.world.templates import Scene, Template
from ego_adr.helpmeout.world.trajectory_planner import PlanError, Planner, Step


@dataclass
class Realised:
    steps: list[Step]
    items_of_step: list[int]  # program item index per step
    failed: list[int] = field(default_factory=list)  # steps attempted without effect (a precondition failed)


def program(template: Template, order: tuple[str, ...]) -> list[Item]:
    items: list[Item] = []
    for bid in order:
        b = template.block(bid)
        items.extend(Item(b, s.fact, s.transient) for s in b.subgoals)
    return items


def realise(template: Template, state: State, items: list[Item]) -> Realised:
    """Plan a program tolerantly (no 'undone subgoal' check: an errorful person may undo their own work)."""
    p = Planner(state.copy(), template)
    per_step: list[int] = []
    cur: str | None = None
    for i, it in enumerate(items):
        if cur is not None and it.block.id != cur:
            p.end_block()
            per_step.extend([i - 1] * (len(p.steps) - len(per_step)))
        cur = it.block.id
        p.block = it.block.id
        p.attempt = it.attempt
        p.achieve(it.fact, it.block, force=it.force)
        p.attempt = False
        per_step.extend([i] * (len(p.steps) - len(per_step)))
    p.end_block()
    per_step.extend([len(items) - 1] * (len(p.steps) - len(per_step)))
    return Realised(p.steps, per_step, p.failed)


@dataclass
class Injection:
    items: list[Item]
    errors: list[ErrorRecord] = field(default_factory=list)


def candidates(
    category: str,
    inj: Injection,
    template: Template,
    scene: Scene,
    order: tuple[str, ...],
    act: list[float],
    model: GoalControlModel,
    rng: random.Random,
) -> list[tuple[list[Item], ErrorRecord]]:
    """Table 9's feasibility gates: every edit of ``category`` whose structural condition holds, best first."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown error category {category!r}; expected one of {CATEGORIES}")
    ctx = Sites(
        inj.items,
        template,
        scene,
        order,
        {it.block.id for it in inj.items if it.tag is not None},
        [i for i, it in enumerate(inj.items) if it.tag is None],
        len(inj.errors),
    )
    if category == "omission":
        return ctx.omissions(model.omission_order(act))
    sites = SITES[category](ctx, category)
    return [apply_site(ctx, category, payload) for _k, payload in model.commission_order(sites, act, rng)]


def try_inject(
    category: str,
    inj: Injection,
    template: Template,
    scene: Scene,
    state: State,
    order: tuple[str, ...],
    act: list[float],
    model: GoalControlModel,
    rng: random.Random,
    reference: list[Step],
    max_sites: int,
) -> tuple[Injection, Realised] | None:
    """First feasible edit of ``category``: realisable, valid on replay, really different, long enough."""
    ref_actions = [s.action for s in reference]
    for items, rec in candidates(category, inj, template, scene, order, act, model, rng)[:max_sites]:
        try:
            real = realise(template, state, items)
        except PlanError:
            continue
        actions = [s.action for s in real.steps]
        if actions == ref_actions or len(actions) < model.cfg.min_length:
            continue
        n = len(inj.errors)
        mine = [t for t, idx in enumerate(real.items_of_step) if items[idx].tag == n]
        if real.failed and (len(real.failed) > 1 or real.failed[-1] != (mine or [-1])[-1]):
            continue  # only the error's own key step may be a failed attempt (it is then the onset)
        res = replay(state, actions, may_fail=real.failed)
        if not res.ok:
            continue
        if category != "omission" and not mine:
            continue  # the edited subgoal already held: nothing was done differently
        if rec.onset_rule == "first_touch" and not any(rec.touch in real.steps[t].action[1:] for t in mine):
            continue  # the look-alike was never handled (it already sat where the goal wanted it): no substitution
        unmet = goal_unmet(res.state, template.goal)  # type: ignore[arg-type]
        if category == "omission" and not unmet:
            continue  # the skipped block's goals were reached anyway: not an omission
        if category == "perseveration" and unmet:
            continue  # Table 9: "with all goals still met"
        return Injection(items, inj.errors + [rec]), real
    return None


def onsets(inj: Injection, real: Realised) -> list[int]:
    """Category-specific onset step of every error (the task-end step is ``len(steps)``)."""
    end = len(real.steps)
    out = []
    for n, rec in enumerate(inj.errors):
        mine = [t for t, idx in enumerate(real.items_of_step) if inj.items[idx].tag == n]
        if rec.onset_rule == "end" or not mine:
            out.append(end)
        elif rec.onset_rule == "first_touch":
            out.append(next((t for t in mine if rec.touch in real.steps[t].action[1:]), mine[0]))
        elif rec.onset_rule == "first":
            out.append(mine[0])
        else:
            out.append(mine[-1])
    return out
