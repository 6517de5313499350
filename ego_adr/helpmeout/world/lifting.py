"""Lifted templates, grounded per episode (paper Figure 5: a template expands into subgoals that a planner solves).

A template in ``procedures/helpmeout/*.yaml`` names concrete objects, but those names are *defaults of roles*:
"slice a fruit", "stir with a spoon-like tool", "serve on a table-like surface". Each episode grounds the roles
afresh, so the goal of an episode is not the template's text:

- **which object of a subclass**: a food / thing / receptacle role takes another member of its subclass with the
  same affordances (so every operator still applies: a cuttable fruit stays cuttable, a liquid stays a liquid);
- **which tool among confusable ones**: a tool role takes another tool that can do the same jobs
  (:data:`ego_adr.helpmeout.world.trajectory_planner.DEFAULT_TOOLS` groups: spoon / teaspoon / tablespoon for stirring);
- **which location**: a goal location takes a look-alike with the same relation and affordances (serve on the
  kitchen island instead of the table, store in the pantry instead of the cabinet);
- **where things start**: an item stored in a closed cupboard or drawer may instead start out on the work
  surface (the scene is not always tidy; this also sets how long the trajectory is);
- **which subtasks** (the task variant): a random subset of the blocks, closed under their ``after``
  prerequisites and at least two. Unlike the roles this is *public*: it is the procedure the person was asked to
  follow, stored in the episode as ``template_blocks`` and given to every monitor that reads the template.

Block order is randomised separately (:meth:`Template.random_order`). The grounding is a plain mapping
(default name -> episode name) recorded in every episode, so a privileged monitor can rebuild the grounded goal and
a non-privileged one (which reads only the lifted template) cannot: it must infer the roles from the scene and
the person's actions. The probabilities are ours (the paper's were lost in extraction); they are chosen so that
trajectory length and composition match Table 2's Random row (see docs/helpmeout.md) and are configurable in
:class:`LiftConfig`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from functools import lru_cache

from ego_adr.helpmeout.world import ontology as onto
from ego_adr.helpmeout.world.templates import Subgoal, Template

# Types whose operators are special-cased by name (the kettle boils, the washer washes): never re-grounded.
NO_LIFT = frozenset({"kettle", "washing_machine", "dryer", "sink", "stove", "toaster", "microwave", "oven",
                     "dishwasher", "bathtub", "toilet", "refrigerator", "freezer", "plant", "gift"})
_AFFORDANCES = ("OPENABLE_OBJECTS", "SWITCHABLE_OBJECTS", "ONTOP_RECEPTACLES", "LIQUIDS", "BULK", "SPREADS",
                "CUTTABLE", "PEELABLE", "FOLDABLE", "MEDICATIONS", "WRITABLE", "WRAPPING", "DRYING_CLOTHS",
                "OPENABLE_LOCATIONS", "SWITCHABLE_LOCATIONS", "CLOSED_TO_RUN", "WATER_SOURCES", "DRAINS")
_STORES = frozenset({"cabinet", "drawer", "pantry", "closet", "medicine_cabinet", "refrigerator"})


@dataclass(frozen=True)
class LiftConfig:
    p_object: float = 0.6  # a food/thing/receptacle role takes another member of its subclass
    p_tool: float = 0.5  # a tool role takes another tool of the same job group
    p_location: float = 0.3  # a goal location takes a look-alike location
    p_out: float = 0.9  # an item stored in a cupboard/drawer starts out on the work surface instead
    p_keep_block: float = 0.05  # a block is part of this episode's task variant (prerequisites always are)
    min_blocks: int = 1  # a one-block variant admits no omission (the generator then draws a longer one)
    extra_blocks: int = 0  # added by the generator after failed draws (a category that needs more blocks)


def signature(name: str) -> tuple[bool, ...]:
    t = onto.type_of(name)
    return tuple(t in getattr(onto, s) for s in _AFFORDANCES)


def _tool_groups() -> dict[str, frozenset[str]]:
    from ego_adr.helpmeout.world.trajectory_planner import DEFAULT_TOOLS

    out: dict[str, frozenset[str]] = {}
    for group in DEFAULT_TOOLS.values():
        for t in group:
            out[t] = out[t] & frozenset(group) if t in out else frozenset(group)
    return out


def role_candidates(name: str, taken: set[str]) -> list[str]:
    """Other names that can fill ``name``'s role, best look-alikes first (deterministic order)."""
    t = onto.type_of(name)
    if t in NO_LIFT or onto.class_of(t) is None:
        return []
    sig = signature(t)
    if onto.is_location(t):
        pool = list(onto.CONFUSABLE_LOCATIONS.get(t, ()))
        return [x for x in pool if x not in taken and x not in NO_LIFT and signature(x) == sig
                and onto.subclass_of(x) == onto.subclass_of(t)]
    groups = _tool_groups()
    if t in groups:  # a tool the planner looks up by job (also a vessel such as the watering can): same job only
        return [x for x in sorted(groups[t]) if x != t and x not in taken and signature(x) == sig
                and onto.class_of(x) == onto.class_of(t)]
    pool = [x for x in onto.HIERARCHY[onto.class_of(t)][onto.subclass_of(t)] if x != t]  # type: ignore[index]
    return [x for x in pool if x not in taken and signature(x) == sig]


def _names(t: Template) -> set[str]:
    from ego_adr.helpmeout.world.templates import _names as names

    return names(t) | t.objects()


def _goal_locations(t: Template) -> list[str]:
    out = []
    for b in t.blocks:
        for s in b.subgoals:
            if s.fact[0] in ("ontop", "inside") and onto.is_location(s.fact[2]) and s.fact[2] not in out:
                out.append(s.fact[2])
    return out


def restrict(t: Template, keep: tuple[str, ...] | list[str] | None) -> Template:
    """The task variant with only the blocks in ``keep`` (order edges to dropped blocks are dropped too)."""
    if keep is None or set(keep) == {b.id for b in t.blocks}:
        return t
    ks = set(keep)
    blocks = tuple(replace(b, after=tuple(x for x in b.after if x in ks), norm_after=tuple(x for x in b.norm_after
                                                                                       if x in ks))
                   for b in t.blocks if b.id in ks)
    return replace(t, blocks=blocks)


def draw_blocks(t: Template, rng: random.Random, cfg: LiftConfig) -> tuple[str, ...]:
    """The first ``k`` blocks of a random topological order (always closed under prerequisites); each block
    counts towards ``k`` with probability ``p_keep_block``, at least ``min_blocks``."""
    order = t.random_order(rng)
    k = max(min(cfg.min_blocks, len(order)), sum(rng.random() < cfg.p_keep_block for _ in order)) + cfg.extra_blocks
    keep = set(order[:k])
    return tuple(b.id for b in t.blocks if b.id in keep)


def apply_grounding(t: Template, mapping: dict[str, str], moved: tuple[str, ...] = ()) -> Template:
    """The template with every default name replaced by its episode name; ``moved`` items start on the surface."""
    if not mapping and not moved:
        return t

    def sub(x: str) -> str:
        return mapping.get(x, x)

    scene = []
    for f in t.scene:
        if f[0] == "inside" and f[1] in moved:
            scene.append(("ontop", sub(f[1]), sub(t.work_surface)))
        else:
            scene.append(tuple(sub(a) for a in f))
    blocks = tuple(replace(b, subgoals=tuple(Subgoal(tuple(sub(a) for a in s.fact), s.transient) for s in b.subgoals),
                           using=tuple(sorted((k, sub(v)) for k, v in b.using)))
                   for b in t.blocks)
    return replace(t, scene=tuple(scene), blocks=blocks, start=sub(t.start), work_surface=sub(t.work_surface),
                   locations=tuple(sub(x) for x in t.locations))


@lru_cache(maxsize=4096)
def _roles(t: Template) -> tuple[tuple[tuple[str, tuple[str, ...]], ...], tuple[tuple[str, tuple[str, ...]], ...]]:
    """Per template (cached): object/tool roles and goal-location roles with their candidate fillers."""
    names = _names(t)
    fixed = {t.start, t.work_surface}
    objs = tuple((n, tuple(role_candidates(n, names))) for n in sorted(names) if not onto.is_location(n))
    locs = tuple((n, tuple(c for c in role_candidates(n, names) if c not in fixed))
                 for n in _goal_locations(t) if n not in fixed)
    return objs, locs


def draw_grounding(t: Template, rng: random.Random, cfg: LiftConfig | None = None) -> tuple[dict[str, str], tuple]:
    """One random grounding of ``t``'s roles: (mapping default -> episode name, items moved out to the surface)."""
    cfg = cfg or LiftConfig()
    objs, locs = _roles(t)
    taken: set[str] = set()
    mapping: dict[str, str] = {}
    for name, cands in objs:
        p = cfg.p_tool if onto.class_of(name) == "tool" else cfg.p_object
        if rng.random() >= p:
            continue
        free = [c for c in cands if c not in taken]
        if free:
            y = rng.choice(free)
            mapping[name] = y
            taken.add(y)
    for loc, cands in locs:
        if rng.random() >= cfg.p_location:
            continue
        free = [c for c in cands if c not in taken]
        if free:
            y = rng.choice(free)
            mapping[loc] = y
            taken.add(y)
    goal_objs = {s.fact[1] for b in t.blocks for s in b.subgoals if s.fact[0] in ("inside", "ontop")}
    moved = tuple(f[1] for f in t.scene
                  if f[0] == "inside" and f[2] in _STORES and f[1] not in goal_objs and rng.random() < cfg.p_out)
    return mapping, moved


def ground(t: Template, rng: random.Random, cfg: LiftConfig | None = None) -> tuple[Template, dict, tuple, tuple]:
    """(grounded template, role mapping, items moved out, kept blocks) for one episode."""
    cfg = cfg or LiftConfig()
    keep = draw_blocks(t, rng, cfg)
    variant = restrict(t, keep)
    mapping, moved = draw_grounding(variant, rng, cfg)
    return apply_grounding(variant, mapping, moved), mapping, moved, keep
