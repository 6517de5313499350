"""Where each error category can be injected (Table 9's feasibility gates) and how an edit is applied.

Split out of :mod:`.injection` (which keeps the program, the tolerant realisation, the replay checks and the
onset rules). A *site* is ``(block index, payload)``: the block index lets the goal-control model order sites by
activation (:meth:`GoalControlModel.commission_order`); the payload names the edit, which :func:`apply_site`
turns into the edited subgoal program and its :class:`ErrorRecord`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ego_adr.helpmeout.world import ontology as onto
from ego_adr.helpmeout.world.templates import Block, Scene, Template
from ego_adr.helpmeout.world.trajectory_planner import DEFAULT_TOOLS

TOOL_KEYS = {
    "stirred": "stir",
    "sliced": "sliced",
    "cut": "cut",
    "peeled": "peeled",
    "cooked": "cook",
    "scrubbed": "scrub",
    "topped": "spread",
    "wrapped": "wrap",
    "written": "write",
    "watered": "water",
}
PROCESSING = (
    "sliced",
    "cut",
    "peeled",
    "cooked",
    "toasted",
    "heated",
    "clean",
    "dry",
    "folded",
    "wrapped",
    "topped",
    "written",
    "rinsed",
)
PLACEMENT = ("ontop", "inside", "in", "on")
ADDITIONS = ("contains", "dose-taken")
OP_SWAP = {
    "sliced": ("cut", "peeled"),
    "cut": ("sliced", "peeled"),
    "peeled": ("sliced", "cut"),
    "clean": ("rinsed",),
    "rinsed": ("clean",),
    "scrubbed": ("clean",),
}


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
    attempt: bool = False  # may be attempted although its precondition fails (no effect, see Planner.attempt)


@dataclass
class ErrorRecord:
    category: str
    block: str
    detail: str
    onset_rule: str  # "end" | "first" | "key" | "first_touch"
    touch: str | None = None  # object whose first touch marks the onset (substitutions)
    onset: int = -1


Site = tuple[int, tuple]


@dataclass
class Sites:
    """The program being edited and what every gate needs to know about it."""

    items: list[Item]
    template: Template
    scene: Scene
    order: tuple[str, ...]
    tagged_blocks: set[str]
    free: list[int]  # items no earlier error touched
    n_err: int

    def k(self, i: int) -> int:
        return self.order.index(self.items[i].block.id)

    def tag(self, it: Item, **kw: object) -> Item:
        return replace(it, tag=self.n_err, **kw)  # type: ignore[arg-type]

    def omissions(self, block_order: list[int]) -> list[tuple[list[Item], ErrorRecord]]:
        """Delete one whole block, lowest activation first (Table 9: the trajectory must stay executable)."""
        out = []
        for k in block_order:
            bid = self.order[k]
            if bid in self.tagged_blocks:
                continue
            rest = [it for it in self.items if it.block.id != bid]
            if len(rest) < len(self.items):
                out.append((rest, ErrorRecord("omission", bid, f"block {bid} skipped", "end")))
        return out


def _sequence(c: Sites, _cat: str) -> list[Site]:
    items, sites = c.items, []
    # (a) a stir that follows several additions to one container is done before one of them (before the first:
    # the container may still be empty, a failed attempt the precondition check sees)
    for i in c.free:
        it = items[i]
        if it.fact[0] != "stirred":
            continue
        adds = [
            j
            for j in c.free
            if j < i
            and items[j].block.id == it.block.id
            and items[j].fact[0] == "contains"
            and items[j].fact[1] == it.fact[1]
        ]
        if len(adds) >= 2:  # Table 9: the stir comes before *some* of the additions, not always the last one
            sites.extend((c.k(i), ("stir", i, j, m, len(adds))) for m, j in enumerate(adds))

    # (b) a step-order norm: a block that should follow another by norm is done first
    present = {it.block.id for it in items}  # an earlier omission may have deleted either block
    for k, bid in enumerate(c.order):
        for prior in c.template.block(bid).norm_after:
            if (
                prior in c.order
                and c.order.index(prior) < k
                and bid not in c.tagged_blocks
                and prior not in c.tagged_blocks
                and {bid, prior} <= present
            ):
                sites.append((k, ("norm", bid, prior)))
    return sites


def _anticipation(c: Sites, _cat: str) -> list[Site]:
    """A placement (store/serve/pack) done before the processing it needs, or a box closed before it is filled."""
    items, sites = c.items, []
    for i in c.free:
        it = items[i]
        if it.fact[0] not in PLACEMENT:
            continue
        obj = it.fact[1]
        procs = [
            j
            for j in c.free
            if j < i
            and items[j].fact[0] in PROCESSING + ("closed",)
            and items[j].fact[1] in (obj, it.fact[2])
        ]
        if procs and not onto.is_location(obj):
            sites.append((c.k(i), ("antic", i, procs[0])))
        if it.fact[0] in ("in", "on"):
            for j in c.free:
                if j > i and items[j].fact[0] == "closed" and items[j].fact[1] == it.fact[2]:
                    sites.append((c.k(i), ("close_early", j, i)))
    return sites


def _perseveration(c: Sites, _cat: str) -> list[Site]:
    """Table 9: "an addition (or dose) can be repeated after intervening actions" -- after any number of them
    (any later subgoal, to the end of the task), not only one or two subgoals later."""
    sites = []
    for i in c.free:
        it = c.items[i]
        if it.fact[0] in ADDITIONS and not it.transient:
            sites.extend((c.k(i), ("repeat", i, j)) for j in range(i + 2, len(c.items) + 1))
    return sites


def _substitution(c: Sites, category: str) -> list[Site]:
    want_tool = category == "tool_substitution"
    imitated: dict[str, list[str]] = {}
    for y, x in c.scene.distractors.items():
        imitated.setdefault(x, []).append(y)
    planner_names = c.template.objects() | {a for f in c.template.scene for a in f[1:]}
    sites = []
    for i in c.free:
        it = c.items[i]
        if want_tool:
            key = tool_key(it.fact)
            if key is None:
                continue
            tool = it.block.tool(key) or next(
                (x for x in DEFAULT_TOOLS.get(key, ()) if x in planner_names), None
            )
            for y in imitated.get(tool or "", ()):
                if onto.class_of(y) == "tool":
                    sites.append((c.k(i), ("tool", i, key, tool, y)))
        else:
            for pos, a in enumerate(it.fact[1:], start=1):
                if onto.class_of(a) in ("food", "receptacle", "thing") and a in imitated:
                    for y in imitated[a]:
                        sites.append((c.k(i), ("obj", i, pos, a, y)))
    return sites


def _location(c: Sites, _cat: str) -> list[Site]:
    sites = []
    for i in c.free:
        it = c.items[i]
        if it.fact[0] in ("inside", "ontop"):
            for alt in onto.confusables(it.fact[2]):
                if alt in c.scene.locations and onto.TYPE_SUBCLASS.get(alt) == onto.TYPE_SUBCLASS.get(
                    it.fact[2]
                ):
                    sites.append((c.k(i), ("loc", i, alt)))
    return sites


def _action(c: Sites, _cat: str) -> list[Site]:
    sites = []
    for i in c.free:
        it = c.items[i]
        for alt in OP_SWAP.get(it.fact[0], ()):
            if it.fact[0] == "clean" and onto.is_location(it.fact[1]) and alt == "rinsed":
                alt = "scrubbed"
            if alt == "clean" and not onto.is_location(it.fact[1]) and it.fact[0] == "scrubbed":
                continue
            sites.append((c.k(i), ("act", i, alt)))
    return sites


def _addition(c: Sites, _cat: str) -> list[Site]:
    scene, items = c.scene, c.items
    used = c.template.objects()
    extra_locs = sorted(loc for loc in scene.locations if loc not in used)
    openable = [x for x in sorted(scene.locations) if onto.type_of(x) in onto.OPENABLE_LOCATIONS]
    movable = sorted(scene.distractors) + sorted(
        f[1] for f in c.template.scene if f[0] in PLACEMENT and not any(f[1] in it.fact for it in items)
    )
    surfaces = sorted(x for x in scene.locations if onto.type_of(x) in onto.ONTOP_LOCATIONS)
    sites = []
    for i in c.free:
        k = c.k(i)
        for loc in extra_locs + openable:
            t = onto.type_of(loc)
            if t in onto.OPENABLE_LOCATIONS:
                sites.append((k, ("add", i, ("open", loc))))
            if t in onto.SWITCHABLE_LOCATIONS and t not in onto.CLOSED_TO_RUN:
                sites.append((k, ("add", i, ("switched-on", loc))))
        for y in movable[:4]:
            for s in surfaces[:3]:
                sites.append((k, ("add", i, ("ontop", y, s))))
    return sites


SITES = {
    "sequence": _sequence,
    "anticipation": _anticipation,
    "perseveration": _perseveration,
    "object_substitution": _substitution,
    "tool_substitution": _substitution,
    "location_substitution": _location,
    "action_substitution": _action,
    "action_addition": _addition,
}


def _moved(c: Sites, cat: str, payload: tuple) -> tuple[list[Item], ErrorRecord]:
    """The order edits: an item (or a block) moved earlier."""
    kind, new = payload[0], list(c.items)
    if kind == "norm":
        _, bid, prior = payload
        moved = [c.tag(it) if n == 0 else it for n, it in enumerate(x for x in new if x.block.id == bid)]
        rest = [x for x in new if x.block.id != bid]
        at = next(n for n, x in enumerate(rest) if x.block.id == prior)
        return rest[:at] + moved + rest[at:], ErrorRecord(
            cat, bid, f"{bid} done before {prior} (order norm)", "key"
        )
    if kind == "stir":
        _, i, j, m, n = payload
        it = c.tag(new.pop(i), attempt=True)
        new.insert(j, it)
        return new, ErrorRecord(
            cat, it.block.id, f"stirred {it.fact[1]} before addition {m + 1} of {n}", "key"
        )
    _, i, j = payload  # the item at i goes to position j
    it = c.tag(new.pop(i))
    new.insert(j, it)
    detail = {
        "antic": f"({' '.join(it.fact)}) before processing",
        "close_early": f"closed {it.fact[1]} too early",
    }
    return new, ErrorRecord(cat, it.block.id, detail[kind], "key")


def apply_site(c: Sites, cat: str, payload: tuple) -> tuple[list[Item], ErrorRecord]:
    """The edited program and its record for one site's payload."""
    kind, new, items = payload[0], list(c.items), c.items
    if kind in ("stir", "norm", "antic", "close_early"):
        return _moved(c, cat, payload)
    if kind == "repeat":
        _, i, j = payload
        new.insert(j, c.tag(items[i], force=True))
        return new, ErrorRecord(cat, items[i].block.id, f"repeated ({' '.join(items[i].fact)})", "key")
    if kind == "add":
        _, i, fact = payload
        new.insert(i, Item(items[i].block, fact, transient=True, tag=c.n_err))
        return new, ErrorRecord(cat, items[i].block.id, f"unnecessary ({' '.join(fact)})", "first")
    i, it = payload[1], items[payload[1]]
    if kind == "tool":
        _, _, key, tool, y = payload
        using = dict(it.block.using)
        using[key] = y
        new[i] = c.tag(it, block=replace(it.block, using=tuple(sorted(using.items()))))
        return new, ErrorRecord(cat, it.block.id, f"{y} instead of {tool}", "first_touch", touch=y)
    if kind == "obj":
        _, _, pos, a, y = payload
        fact = list(it.fact)
        fact[pos] = y
        new[i] = c.tag(it, fact=tuple(fact))
        return new, ErrorRecord(cat, it.block.id, f"{y} instead of {a}", "first_touch", touch=y)
    if kind == "loc":
        alt = payload[2]
        new[i] = c.tag(it, fact=(it.fact[0], it.fact[1], alt))
        return new, ErrorRecord(cat, it.block.id, f"{it.fact[1]} put in {alt} instead of {it.fact[2]}", "key")
    alt = payload[2]  # "act"
    new[i] = c.tag(it, fact=(alt,) + it.fact[1:])
    return new, ErrorRecord(cat, it.block.id, f"{alt} instead of {it.fact[0]} on {it.fact[1]}", "key")
