"""Error generator: the goal-control model, the nine categories, Table 9's feasibility gates, onset rules.

Errors are edits of the *subgoal program* (the template's blocks in the episode's order), realised by the same
planner that makes the correct reference -- so an errorful trajectory is executable by construction and is
replay-validated again afterwards (paper Figure 2: sample, edit, validate by symbolic replay, derive onsets).
Everything the person did not get wrong is planned exactly as in the reference, so the two trajectories of a
pair differ only where the error (and its natural consequences) are.

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
from dataclasses import dataclass, field, replace

from ego_adr.helpmeout import ontology as onto
from ego_adr.helpmeout.domain import State, goal_unmet
from ego_adr.helpmeout.lifting import LiftConfig
from ego_adr.helpmeout.planner import DEFAULT_TOOLS, PlanError, Planner, Step
from ego_adr.helpmeout.replay import replay
from ego_adr.helpmeout.templates import Block, Scene, Subgoal, Template

CATEGORIES = ("omission", "sequence", "anticipation", "perseveration", "action_addition",
              "object_substitution", "tool_substitution", "location_substitution", "action_substitution")
PROGRESSION = CATEGORIES[:5]
CURRENT_ACTION = CATEGORIES[5:]
COMMISSION = CATEGORIES[1:]

# Table 4: omission 0.44 / commission 0.56; commission weights sequence 0.22, object substitution 0.17,
# perseveration 0.15 (paper). The rest are ours: anticipation 0.10 and tool substitution 0.05 from Table 12's
# test counts (17 and 9 of 312 errorful episodes), action addition 0.05 (Figure 7: 2.8% target), and the two
# categories the extraction lost share the remainder equally (0.13 each). Sums to 1.00.
COMMISSION_WEIGHTS = {"sequence": 0.22, "object_substitution": 0.17, "perseveration": 0.15, "anticipation": 0.10,
                      "tool_substitution": 0.05, "action_addition": 0.05, "location_substitution": 0.13,
                      "action_substitution": 0.13}
OMISSION_SHARE = 0.44


def target_shares(omission: float = OMISSION_SHARE, weights: dict[str, float] | None = None) -> dict[str, float]:
    w = weights or COMMISSION_WEIGHTS
    tot = sum(w.values())
    out = {"omission": omission}
    out.update({c: (1 - omission) * w[c] / tot for c in COMMISSION})
    return out


@dataclass(frozen=True)
class GeneratorConfig:
    """Table 8's hyperparameters plus the episode mix."""

    goal_salience: float = 0.48  # Table 8: baseline goal salience
    activation_decay: float = 0.20  # Table 8: per-subgoal activation decay (cognitive load)
    commission_prob: float = 0.12  # Table 8: commission-error probability
    omit_threshold: float = 0.30  # Table 8: OMIT_THRESHOLD
    activation_noise_std: float = 0.10  # Table 8: ACTIVATION_NOISE_STD
    min_length: int = 10  # Table 8: shorter trajectories are filtered
    correct_share: float = 188 / 500  # Table 2: 188 correct of the 500 test episodes
    max_attempts: int = 120  # template/scene redraws before an episode's category is given up
    max_sites: int = 12  # edit sites tried per draw
    p_distractor: float = 0.5  # chance that a used object gets a look-alike next to it (scene instantiation)
    lift: LiftConfig = field(default_factory=LiftConfig)  # per-episode grounding of the lifted template


TOOL_KEYS = {"stirred": "stir", "sliced": "sliced", "cut": "cut", "peeled": "peeled", "cooked": "cook",
             "scrubbed": "scrub", "topped": "spread", "wrapped": "wrap", "written": "write", "watered": "water"}
PROCESSING = ("sliced", "cut", "peeled", "cooked", "toasted", "heated", "clean", "dry", "folded", "wrapped",
              "topped", "written", "rinsed")
PLACEMENT = ("ontop", "inside", "in", "on")
ADDITIONS = ("contains", "dose-taken")
OP_SWAP = {"sliced": ("cut", "peeled"), "cut": ("sliced", "peeled"), "peeled": ("sliced", "cut"),
           "clean": ("rinsed",), "rinsed": ("clean",), "scrubbed": ("clean",)}


def tool_key(fact: tuple[str, ...]) -> str | None:
    p = fact[0]
    if p == "contains" and fact[2] in onto.BULK:
        return "add"
    if p == "clean" and onto.is_location(fact[1]):
        return "wipe"
    return TOOL_KEYS.get(p)


@dataclass
class Item:
    """One subgoal of the program; ``tag`` marks the error it carries."""

    block: Block
    fact: tuple[str, ...]
    transient: bool = False
    force: bool = False
    tag: int | None = None


@dataclass
class ErrorRecord:
    category: str
    block: str
    detail: str
    onset_rule: str  # "end" | "first" | "key" | "first_touch"
    touch: str | None = None  # object whose first touch marks the onset (substitutions)
    onset: int = -1


@dataclass
class Realised:
    steps: list[Step]
    items_of_step: list[int]  # program item index per step


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
        p.achieve(it.fact, it.block, force=it.force)
        per_step.extend([i] * (len(p.steps) - len(per_step)))
    p.end_block()
    per_step.extend([len(items) - 1] * (len(p.steps) - len(per_step)))
    return Realised(p.steps, per_step)


class GoalControlModel:
    """Appendix A.6 / Table 8: block activations, lapses and commission failures (see module docstring)."""

    def __init__(self, cfg: GeneratorConfig) -> None:
        self.cfg = cfg

    def activations(self, n_blocks: int, rng: random.Random) -> list[float]:
        c = self.cfg
        return [c.goal_salience - c.activation_decay * k / max(1, n_blocks) + rng.gauss(0.0, c.activation_noise_std)
                for k in range(n_blocks)]

    def omission_order(self, act: list[float]) -> list[int]:
        """Blocks to try deleting: lapses (below threshold) first, lowest activation first."""
        return sorted(range(len(act)), key=lambda k: (act[k] >= self.cfg.omit_threshold, act[k]))

    def commission_order(self, sites: list[tuple[int, object]], act: list[float],
                         rng: random.Random) -> list[tuple[int, object]]:
        """Sites (block index, payload): where control failed (Bernoulli p_commit) first, then weaker goals."""
        keyed = [((rng.random() >= self.cfg.commission_prob), act[k] + rng.gauss(0, 0.05), i, (k, x))
                 for i, (k, x) in enumerate(sites)]
        keyed.sort(key=lambda z: z[:3])
        return [z[3] for z in keyed]

    def second_error(self, act: list[float], rng: random.Random) -> bool:
        lapse_prone = min(act) < self.cfg.omit_threshold
        return lapse_prone and rng.random() < self.cfg.commission_prob


@dataclass
class Injection:
    items: list[Item]
    errors: list[ErrorRecord] = field(default_factory=list)


def _block_index(items: list[Item], order: tuple[str, ...], i: int) -> int:
    return order.index(items[i].block.id)


def candidates(category: str, inj: Injection, template: Template, scene: Scene, order: tuple[str, ...],
               act: list[float], model: GoalControlModel, rng: random.Random) -> list[tuple[list[Item], ErrorRecord]]:
    """Table 9's feasibility gates: every edit of ``category`` whose structural condition holds, best first."""
    items = inj.items
    tagged_blocks = {it.block.id for it in items if it.tag is not None}
    free = [i for i, it in enumerate(items) if it.tag is None]
    out: list[tuple[list[Item], ErrorRecord]] = []
    n_err = len(inj.errors)

    def tag(it: Item, **kw: object) -> Item:
        return replace(it, tag=n_err, **kw)  # type: ignore[arg-type]

    if category == "omission":
        for k in model.omission_order(act):
            bid = order[k]
            if bid in tagged_blocks:
                continue
            rest = [it for it in items if it.block.id != bid]
            if len(rest) == len(items):
                continue
            out.append((rest, ErrorRecord("omission", bid, f"block {bid} skipped", "end")))
        return out

    sites: list[tuple[int, object]] = []
    if category == "sequence":
        # (a) a stir that follows several additions to one container is done before the last addition
        for i in free:
            it = items[i]
            if it.fact[0] != "stirred":
                continue
            adds = [j for j in free if j < i and items[j].block.id == it.block.id and items[j].fact[0] == "contains"
                    and items[j].fact[1] == it.fact[1]]
            if len(adds) >= 2:
                sites.append((_block_index(items, order, i), ("stir", i, adds[-1])))
        # (b) a step-order norm: a block that should follow another by norm is done first
        for k, bid in enumerate(order):
            b = template.block(bid)
            present = {it.block.id for it in items}  # an earlier omission may have deleted either block
            for prior in b.norm_after:
                if prior in order and order.index(prior) < k and bid not in tagged_blocks and prior not in tagged_blocks \
                        and {bid, prior} <= present:
                    sites.append((k, ("norm", bid, prior)))
    elif category == "anticipation":
        # a placement (store/serve/pack) of an object done before the processing it needs
        for i in free:
            it = items[i]
            if it.fact[0] not in PLACEMENT:
                continue
            obj = it.fact[1]
            procs = [j for j in free if j < i and items[j].fact[0] in PROCESSING + ("closed",)
                     and items[j].fact[1] in (obj, it.fact[2])]
            if procs and not onto.is_location(obj):
                sites.append((_block_index(items, order, i), ("antic", i, procs[0])))
            if it.fact[0] in ("in", "on"):  # closing a box before its contents are in
                for j in free:
                    if j > i and items[j].fact[0] == "closed" and items[j].fact[1] == it.fact[2]:
                        sites.append((_block_index(items, order, i), ("close_early", j, i)))
    elif category == "perseveration":
        for i in free:
            it = items[i]
            if it.fact[0] in ADDITIONS and not it.transient:
                later = [j for j in range(i + 2, min(len(items), i + 5) + 1)]
                for j in later[:2]:
                    sites.append((_block_index(items, order, i), ("repeat", i, j)))
    elif category in ("object_substitution", "tool_substitution"):
        want_tool = category == "tool_substitution"
        imitated: dict[str, list[str]] = {}
        for y, x in scene.distractors.items():
            imitated.setdefault(x, []).append(y)
        planner_names = template.objects() | {a for f in template.scene for a in f[1:]}
        for i in free:
            it = items[i]
            if want_tool:
                key = tool_key(it.fact)
                if key is None:
                    continue
                tool = it.block.tool(key) or next((c for c in DEFAULT_TOOLS.get(key, ()) if c in planner_names), None)
                for y in imitated.get(tool or "", ()):
                    if onto.class_of(y) == "tool":
                        sites.append((_block_index(items, order, i), ("tool", i, key, tool, y)))
            else:
                for pos, a in enumerate(it.fact[1:], start=1):
                    if onto.class_of(a) in ("food", "receptacle", "thing") and a in imitated:
                        for y in imitated[a]:
                            sites.append((_block_index(items, order, i), ("obj", i, pos, a, y)))
    elif category == "location_substitution":
        for i in free:
            it = items[i]
            if it.fact[0] in ("inside", "ontop"):
                for alt in onto.confusables(it.fact[2]):
                    if alt in scene.locations and onto.TYPE_SUBCLASS.get(alt) == onto.TYPE_SUBCLASS.get(it.fact[2]):
                        sites.append((_block_index(items, order, i), ("loc", i, alt)))
    elif category == "action_substitution":
        for i in free:
            it = items[i]
            for alt in OP_SWAP.get(it.fact[0], ()):
                if it.fact[0] == "clean" and onto.is_location(it.fact[1]) and alt == "rinsed":
                    alt = "scrubbed"
                if alt == "clean" and not onto.is_location(it.fact[1]) and it.fact[0] == "scrubbed":
                    continue
                sites.append((_block_index(items, order, i), ("act", i, alt)))
    elif category == "action_addition":
        used = template.objects()
        extra_locs = sorted(loc for loc in scene.locations if loc not in used)
        movable = sorted(scene.distractors) + sorted(
            f[1] for f in template.scene if f[0] in PLACEMENT and not any(f[1] in it.fact for it in items))
        surfaces = sorted(x for x in scene.locations if onto.type_of(x) in onto.ONTOP_LOCATIONS)
        for i in free:
            k = _block_index(items, order, i)
            for loc in extra_locs + [x for x in sorted(scene.locations) if onto.type_of(x) in onto.OPENABLE_LOCATIONS]:
                if onto.type_of(loc) in onto.OPENABLE_LOCATIONS:
                    sites.append((k, ("add", i, ("open", loc))))
                if onto.type_of(loc) in onto.SWITCHABLE_LOCATIONS and onto.type_of(loc) not in onto.CLOSED_TO_RUN:
                    sites.append((k, ("add", i, ("switched-on", loc))))
            for y in movable[:4]:
                for s in surfaces[:3]:
                    sites.append((k, ("add", i, ("ontop", y, s))))
    else:
        raise ValueError(f"unknown error category {category!r}; expected one of {CATEGORIES}")

    for _k, payload in model.commission_order(sites, act, rng):
        kind = payload[0]  # type: ignore[index]
        new = list(items)
        if kind == "stir":
            _, i, j = payload  # type: ignore[misc]
            stir = tag(new.pop(i))
            new.insert(j, stir)
            out.append((new, ErrorRecord(category, stir.block.id, f"stirred {stir.fact[1]} before the last addition", "key")))
        elif kind == "norm":
            _, bid, prior = payload  # type: ignore[misc]
            moved = [tag(it) if n == 0 else it for n, it in enumerate(x for x in new if x.block.id == bid)]
            rest = [x for x in new if x.block.id != bid]
            at = next(n for n, x in enumerate(rest) if x.block.id == prior)
            new = rest[:at] + moved + rest[at:]
            out.append((new, ErrorRecord(category, bid, f"{bid} done before {prior} (order norm)", "key")))
        elif kind == "antic":
            _, i, j = payload  # type: ignore[misc]
            put = tag(new.pop(i))
            new.insert(j, put)
            out.append((new, ErrorRecord(category, put.block.id, f"({' '.join(put.fact)}) before processing", "key")))
        elif kind == "close_early":
            _, j, i = payload  # type: ignore[misc]
            close = tag(new.pop(j))
            new.insert(i, close)
            out.append((new, ErrorRecord(category, close.block.id, f"closed {close.fact[1]} too early", "key")))
        elif kind == "repeat":
            _, i, j = payload  # type: ignore[misc]
            new.insert(j, tag(items[i], force=True))
            out.append((new, ErrorRecord(category, items[i].block.id, f"repeated ({' '.join(items[i].fact)})", "key")))
        elif kind == "tool":
            _, i, key, tool, y = payload  # type: ignore[misc]
            it = new[i]
            using = dict(it.block.using)
            using[key] = y
            new[i] = tag(it, block=replace(it.block, using=tuple(sorted(using.items()))))
            out.append((new, ErrorRecord(category, it.block.id, f"{y} instead of {tool}", "first_touch", touch=y)))
        elif kind == "obj":
            _, i, pos, a, y = payload  # type: ignore[misc]
            it = new[i]
            fact = list(it.fact)
            fact[pos] = y
            new[i] = tag(it, fact=tuple(fact))
            out.append((new, ErrorRecord(category, it.block.id, f"{y} instead of {a}", "first_touch", touch=y)))
        elif kind == "loc":
            _, i, alt = payload  # type: ignore[misc]
            it = new[i]
            new[i] = tag(it, fact=(it.fact[0], it.fact[1], alt))
            out.append((new, ErrorRecord(category, it.block.id, f"{it.fact[1]} put in {alt} instead of {it.fact[2]}", "key")))
        elif kind == "act":
            _, i, alt = payload  # type: ignore[misc]
            it = new[i]
            new[i] = tag(it, fact=(alt,) + it.fact[1:])
            out.append((new, ErrorRecord(category, it.block.id, f"{alt} instead of {it.fact[0]} on {it.fact[1]}", "key")))
        elif kind == "add":
            _, i, fact = payload  # type: ignore[misc]
            new.insert(i, Item(items[i].block, fact, transient=True, tag=n_err))
            out.append((new, ErrorRecord(category, items[i].block.id, f"unnecessary ({' '.join(fact)})", "first")))
    return out


def try_inject(category: str, inj: Injection, template: Template, scene: Scene, state: State,
               order: tuple[str, ...], act: list[float], model: GoalControlModel, rng: random.Random,
               reference: list[Step], max_sites: int) -> tuple[Injection, Realised] | None:
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
        res = replay(state, actions)
        if not res.ok:
            continue
        n = len(inj.errors)
        mine = [t for t, idx in enumerate(real.items_of_step) if items[idx].tag == n]
        if category != "omission" and not mine:
            continue  # the edited subgoal already held: nothing was done differently
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


def subgoal_texts(block: Block) -> list[str]:
    return [Subgoal(s.fact, s.transient).text() for s in block.subgoals]
