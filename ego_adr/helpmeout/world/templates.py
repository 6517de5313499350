"""Task templates: YAML under ``procedures/helpmeout/`` (paper Appendix, Table 7 and Figure 5).

A template gives a task name, its family and anchor (the clinical instrument it comes from: NAT, Lawton IADL,
Katz ADL, ...), a complexity (simple / medium / complex, the grouping of Table 14), the initial scene and the
*subgoal blocks*. Each block is an ordered list of subgoal facts; a fact whose predicate starts with ``~`` is
*transient* (it must be reached on the way, e.g. clothes inside the washing machine, but is not part of the final
goal). ``after`` lists blocks that must come first (the partial order; the planner randomises the rest, Figure 5);
``norm_after`` is an order that is a social/step-order norm rather than a physical necessity, which Table 9 lists
as a gate for sequence errors. ``using`` names the tool or appliance a subgoal uses (e.g. ``stir: spoon``).

Scene instantiation adds, at random, same-subclass *distractors* next to objects the task uses and the usual
look-alike location of each target location (a freezer beside a fridge): they are what Table 9's feasibility
gates for object/tool/location substitution need, and they leave the correct plan unchanged.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from ego_adr.helpmeout.world import ontology as onto

DEFAULT_DIR = Path(__file__).resolve().parents[3] / "procedures" / "helpmeout"
FAMILIES = (
    "F1_food_preparation", "F2_beverage_preparation", "F3_kitchen_cleanup", "F4_house_cleaning",
    "F5_laundry_and_clothing", "F6_medication_and_health", "F7_personal_care", "F8_household_management",
)
COMPLEXITIES = ("simple", "medium", "complex")
PLACE_PREDICATES = ("ontop", "inside", "in", "on")
_IMPLIED = {"cooked": ("stove",), "toasted": ("toaster",), "rinsed": ("sink",), "boiled": ("sink",),
            "clean": ("sink",), "watered": ("sink",)}


@dataclass(frozen=True)
class Subgoal:
    fact: tuple[str, ...]  # e.g. ("sliced", "apple"), ("not", "switched-on", "stove")
    transient: bool = False

    def text(self) -> str:
        return "(" + " ".join(self.fact) + ")"


@dataclass(frozen=True)
class Block:
    id: str
    subgoals: tuple[Subgoal, ...]
    after: tuple[str, ...] = ()
    norm_after: tuple[str, ...] = ()
    using: tuple[tuple[str, str], ...] = ()
    text: str = ""

    @property
    def goal(self) -> tuple[tuple[str, ...], ...]:
        return tuple(s.fact for s in self.subgoals if not s.transient)

    def tool(self, key: str) -> str | None:
        return dict(self.using).get(key)


@dataclass(frozen=True)
class Template:
    name: str
    family: str
    anchor: str
    complexity: str
    start: str
    scene: tuple[tuple[str, ...], ...]
    blocks: tuple[Block, ...]
    locations: tuple[str, ...] = ()
    work_surface: str = "countertop"
    description: str = ""

    @property
    def goal(self) -> tuple[tuple[str, ...], ...]:
        return tuple(f for b in self.blocks for f in b.goal)

    def block(self, bid: str) -> Block:
        for b in self.blocks:
            if b.id == bid:
                return b
        raise KeyError(f"template {self.name} has no block {bid!r}")

    def objects(self) -> set[str]:
        """Every object and location the template names (scene, subgoals, tools)."""
        return set(_objects(self))

    def _objects(self) -> set[str]:
        names: set[str] = {self.start, self.work_surface, *self.locations}
        for f in self.scene:
            names.update(a for a in f[1:] if onto.class_of(a))
        for b in self.blocks:
            for s in b.subgoals:
                names.update(a for a in s.fact[1:] if onto.class_of(a))
            names.update(v for _, v in b.using)
        return names

    def scene_locations(self) -> set[str]:
        """Locations named anywhere, plus those a subgoal implies (cooking needs the stove, washing a sink)."""
        locs = {n for n in self.objects() if onto.is_location(n)}
        for b in self.blocks:
            for s in b.subgoals:
                f = s.fact
                if f[0] == "boiled" and onto.type_of(f[1]) != "kettle":
                    locs.add("stove")
                if f[0] == "clean" and onto.is_location(f[1]):
                    continue
                locs.update(_IMPLIED.get(f[0], ()))
                if f[0] == "contains" and f[2] == "water":
                    locs.add("sink")
                if f[0] == "heated" and not b.tool("heat"):
                    locs.add("microwave")
        return locs

    def random_order(self, rng: random.Random) -> tuple[str, ...]:
        """A uniformly chosen next block among those whose predecessors are done (random topological order)."""
        done: list[str] = []
        left = [b for b in self.blocks]
        while left:
            ready = [b for b in left if all(p in done for p in b.after + b.norm_after)]
            if not ready:
                raise ValueError(f"template {self.name}: cyclic block order")
            b = rng.choice(ready)
            done.append(b.id)
            left.remove(b)
        return tuple(done)

    def canonical_order(self) -> tuple[str, ...]:
        return tuple(b.id for b in self.blocks)


@lru_cache(maxsize=8192)
def _objects(t: Template) -> frozenset[str]:
    return frozenset(t._objects())


def _word(x: object) -> str:
    """YAML 1.1 reads a bare ``on``/``off`` as a boolean; our facts mean the word."""
    if x is True:
        return "on"
    if x is False:
        return "off"
    return str(x)


def _fact(item: list | tuple) -> Subgoal:
    parts = [_word(x) for x in item]
    if not parts:
        raise ValueError("empty subgoal")
    transient = parts[0].startswith("~")
    if transient:
        parts[0] = parts[0][1:]
    return Subgoal(tuple(parts), transient)


def _parse(raw: dict, family: str, source: str) -> Template:
    name = raw.get("name")
    if not name:
        raise ValueError(f"{source}: a template without a name")
    blocks = []
    for b in raw.get("blocks") or []:
        subs = tuple(_fact(s) for s in b.get("subgoals") or [])
        if not subs:
            raise ValueError(f"{source}:{name}: block {b.get('id')} has no subgoals")
        blocks.append(Block(str(b["id"]), subs, tuple(b.get("after") or ()), tuple(b.get("norm_after") or ()),
                            tuple(sorted((str(k), str(v)) for k, v in (b.get("using") or {}).items())),
                            str(b.get("text") or b["id"].replace("_", " "))))
    if not blocks:
        raise ValueError(f"{source}:{name}: no blocks")
    ids = {b.id for b in blocks}
    for b in blocks:
        missing = set(b.after + b.norm_after) - ids
        if missing:
            raise ValueError(f"{source}:{name}: block {b.id} comes after unknown blocks {sorted(missing)}")
    complexity = str(raw.get("complexity", "medium"))
    if complexity not in COMPLEXITIES:
        raise ValueError(f"{source}:{name}: complexity must be one of {COMPLEXITIES}")
    t = Template(
        name=str(name), family=family, anchor=str(raw.get("anchor", "")), complexity=complexity,
        start=str(raw.get("start", "countertop")),
        scene=tuple(tuple(_word(x) for x in f) for f in raw.get("scene") or []),
        blocks=tuple(blocks), locations=tuple(raw.get("locations") or ()),
        work_surface=str(raw.get("work_surface", "countertop")), description=str(raw.get("description", "")),
    )
    unknown = sorted(n for n in _names(t) if onto.class_of(n) is None)
    if unknown:
        raise ValueError(f"{source}:{name}: unknown object types {unknown} (see ego_adr/helpmeout/world/ontology.py)")
    return t


def _names(t: Template) -> set[str]:
    out: set[str] = {t.start, t.work_surface, *t.locations}
    for f in t.scene:
        out.update(f[1:] if f[0] != "contains" else f[1:2])
    for b in t.blocks:
        for s in b.subgoals:
            args = s.fact[1:] if s.fact[0] != "not" else s.fact[2:]
            if s.fact[0] in ("contains",):
                args = args[:1]
            out.update(args)
        out.update(v for _, v in b.using)
    return out


@lru_cache(maxsize=8)
def load_templates(directory: str | Path | None = None) -> tuple[Template, ...]:
    """All templates of every ``*.yaml`` file in ``directory`` (default: the repo's procedures/helpmeout)."""
    d = Path(directory) if directory else DEFAULT_DIR
    files = sorted(d.glob("*.yaml"))
    if not files:
        raise FileNotFoundError(f"no HelpMeOut templates (*.yaml) in {d}; pass --templates DIR")
    out: list[Template] = []
    for f in files:
        data = yaml.safe_load(f.read_text()) or {}
        family = str(data.get("family") or f.stem)
        for raw in data.get("templates") or []:
            out.append(_parse(raw, family, f.name))
    names = [t.name for t in out]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError(f"duplicate template names: {sorted(dup)}")
    return tuple(out)


def template_by_name(name: str, directory: str | Path | None = None) -> Template:
    for t in load_templates(directory):
        if t.name == name:
            return t
    raise KeyError(f"unknown HelpMeOut template {name!r}")


@dataclass
class Scene:
    """One instantiated initial scene: the template's facts plus distractors and look-alike locations."""

    facts: list[tuple[str, ...]]
    locations: set[str]
    start: str
    distractors: dict[str, str] = field(default_factory=dict)  # distractor -> the object it imitates


def instantiate_scene(t: Template, rng: random.Random, p_distractor: float = 0.5, max_distractors: int = 4,
                      p_alt_location: float = 0.7) -> Scene:
    facts = [tuple(f) for f in t.scene]
    present = {a for f in facts for a in f[1:]} | t.objects()
    locations = t.scene_locations()
    used = sorted(n for n in t.objects() if not onto.is_location(n))
    distractors: dict[str, str] = {}
    posmap = {f[1]: f for f in facts if f[0] in PLACE_PREDICATES}
    for obj in used:
        if len(distractors) >= max_distractors or obj not in posmap or rng.random() >= p_distractor:
            continue
        cands = [c for c in onto.confusables(obj)[:3] if c not in present]
        if not cands:
            continue
        y = rng.choice(cands)
        rel, _, parent = posmap[obj]
        facts.append((rel, y, parent))
        present.add(y)
        distractors[y] = obj
    for b in t.blocks:
        for s in b.subgoals:
            if s.fact[0] in ("inside", "ontop") and rng.random() < p_alt_location:
                alts = [a for a in onto.confusables(s.fact[2]) if a not in locations]
                if alts:
                    locations.add(alts[0])
    return Scene(facts, locations, t.start, distractors)
