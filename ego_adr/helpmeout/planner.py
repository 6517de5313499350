"""Means-ends planner: solves subgoal blocks into a correct reference trajectory (paper Figure 5).

Each subgoal predicate has one *method* that decomposes it into primitive operators given the current state --
fetch the object (opening and afterwards closing whatever it is in), bring it where it goes, pick up the tool,
act -- so planning is linear in the plan length and a template is solved in well under a millisecond. That matters
twice: the generator plans 20,000 episodes, and the re-planner baseline replans after every observed step.
Every emitted action is checked against the operator preconditions as it is planned, and the finished
trajectory is replayed and goal-checked, so a plan is correct by construction or a :class:`PlanError`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from ego_adr.helpmeout import ontology as onto
from ego_adr.helpmeout.domain import Action, State, format_action, initial_state
from ego_adr.helpmeout.operators import apply_action, check_action
from ego_adr.helpmeout.templates import Block, Scene, Template

DEFAULT_TOOLS = {
    "add": ("spoon", "teaspoon", "tablespoon"), "stir": ("spoon", "teaspoon", "tablespoon", "whisk"),
    "sliced": ("knife", "bread_knife"), "cut": ("knife", "bread_knife"), "peeled": ("peeler", "knife"),
    "cook": ("spatula", "tongs", "ladle"), "wipe": ("cloth", "sponge", "dish_towel"),
    "scrub": ("scrub_brush", "sponge"), "dry": ("dish_towel", "towel", "cloth"),
    "spread": ("butter_knife", "knife"), "write": ("pen", "pencil", "marker"),
    "wrap": ("wrapping_paper", "aluminum_foil", "plastic_wrap"), "water": ("watering_can", "jug"),
}


class PlanError(RuntimeError):
    pass


class PlanTimeout(PlanError):
    pass


@dataclass
class Step:
    """One planned action and the subgoal block it serves (the block bands of Figure 5)."""

    action: Action
    block: str

    @property
    def text(self) -> str:
        return format_action(self.action)


class Planner:
    """Plans from ``state`` (modified in place as actions are emitted)."""

    def __init__(self, state: State, template: Template, deadline: float | None = None) -> None:
        self.st = state
        self.t = template
        self.steps: list[Step] = []
        self.block = ""
        self.opened: set[str] = set()  # locations this planner opened and will close on leaving
        self.deadline = deadline
        self.names = template.objects() | {a for f in template.scene for a in f[1:]}

    # --- primitives ------------------------------------------------------------------------------------
    def do(self, *action: str) -> None:
        why = check_action(self.st, action)
        if why is not None:
            raise PlanError(f"{self.t.name}/{self.block}: {format_action(action)} not executable: {why}")
        apply_action(self.st, action)
        self.steps.append(Step(tuple(action), self.block))
        if self.deadline is not None and len(self.steps) % 8 == 0 and time.perf_counter() > self.deadline:
            raise PlanTimeout("planning budget exhausted")
        if len(self.steps) > 400:
            raise PlanError("plan too long")

    def close_opened_here(self) -> None:
        here = self.st.human
        if here in self.opened:
            self.opened.discard(here)
            if self.st.is_open(here):
                self.do("human-close-location", here)

    def goto(self, loc: str) -> None:
        if self.st.human != loc:
            self.close_opened_here()
            self.do("human-move", self.st.human, loc)

    def open_loc(self, loc: str) -> None:
        if onto.type_of(loc) in onto.OPENABLE_LOCATIONS and not self.st.is_open(loc):
            self.goto(loc)
            self.do("human-open-location", loc)
            self.opened.add(loc)

    def close_loc(self, loc: str) -> None:
        if self.st.is_open(loc):
            self.goto(loc)
            self.do("human-close-location", loc)
        self.opened.discard(loc)

    def surface(self) -> str:
        if self.t.work_surface in self.st.locations:
            return self.t.work_surface
        ontop = sorted(x for x in self.st.locations if onto.type_of(x) in onto.ONTOP_LOCATIONS)
        if not ontop:
            raise PlanError("scene has no surface to put things down")
        return ontop[0]

    def release(self) -> None:
        """Put the held object down on the current surface (or the work surface)."""
        obj = self.st.holding
        if obj is None:
            return
        if onto.type_of(self.st.human) not in onto.ONTOP_LOCATIONS:
            self.goto(self.surface())
        self.do("human-put-ontop-location", obj, self.st.human)

    def tool(self, key: str, block: Block) -> str:
        name = block.tool(key)
        if name:
            return name
        for cand in DEFAULT_TOOLS.get(key, ()):
            if cand in self.names:
                return cand
        raise PlanError(f"{self.t.name}/{block.id}: no tool for {key!r} in the scene (add `using: {{{key}: ...}}`)")

    def get(self, obj: str) -> None:
        st = self.st
        if st.holding == obj:
            return
        self.release()
        if obj not in st.pos:
            raise PlanError(f"{obj} is not in the scene")
        loc = st.location_of(obj)
        if loc is None:
            raise PlanError(f"{obj} has no location")
        self.goto(loc)
        rel, parent = st.pos[obj]
        if rel in ("in", "on"):
            rrel, rloc = st.pos[parent]  # type: ignore[index]
            if rrel == "inside":
                self.open_loc(rloc)  # type: ignore[arg-type]
            if rel == "in" and onto.type_of(parent) in onto.OPENABLE_OBJECTS and not st.is_open(parent):
                self.do("human-open-receptacle", parent, loc)  # type: ignore[arg-type]
            self.do("human-pick-up-from-receptacle-at-location", obj, parent, loc)  # type: ignore[arg-type]
        else:
            if rel == "inside":
                self.open_loc(loc)
            self.do("human-pick-up-at-location", obj, loc)

    def put(self, obj: str, rel: str, target: str) -> None:
        self.get(obj)
        st = self.st
        if rel in ("ontop", "inside"):
            self.goto(target)
            if rel == "inside":
                self.open_loc(target)
            self.do(f"human-put-{rel}-location", obj, target)
            return
        loc = st.location_of(target)
        if loc is None:
            raise PlanError(f"{target} has no location")
        self.goto(loc)
        if st.pos.get(target, ("", ""))[0] == "inside":
            self.open_loc(loc)
        if rel == "in" and onto.type_of(target) in onto.OPENABLE_OBJECTS and not st.is_open(target):
            self.do("human-open-receptacle", target, loc)
        verb = "inside" if rel == "in" else "ontop"
        self.do(f"human-put-{verb}-receptacle-at-location", obj, target, loc)

    def lay_out(self, obj: str, board: str | None = None) -> None:
        """Make ``obj`` lie reachable on a surface (or on ``board``), not held and not behind a door."""
        st = self.st
        if board and st.pos.get(obj) != ("on", board):
            self.put(obj, "on", board)
            return
        if st.holding == obj:
            self.release()
            return
        loc = st.location_of(obj)
        if loc is None:
            raise PlanError(f"{obj} is not in the scene")
        if onto.type_of(loc) in onto.INSIDE_LOCATIONS:
            self.get(obj)
            self.release()

    def bring_next_to(self, obj: str, other: str) -> None:
        """Put ``obj`` down at ``other``'s location unless it is already reachable there."""
        loc = self.st.location_of(other)
        if loc is None:
            raise PlanError(f"{other} is not in the scene")
        if self.st.reachable_at(obj, loc):
            return
        self.get(obj)
        self.goto(loc)
        if onto.type_of(loc) in onto.ONTOP_LOCATIONS:
            self.do("human-put-ontop-location", obj, loc)
        else:
            self.release()

    def use(self, tool: str, target: str) -> str:
        """Hold ``tool`` and stand where ``target`` is; returns that location."""
        if self.st.holding != tool:
            if self.st.holding == target:
                self.release()
            self.get(tool)
        loc = self.st.location_of(target) if not onto.is_location(target) else target
        if loc is None:
            raise PlanError(f"{target} is not in the scene")
        self.goto(loc)
        if onto.type_of(loc) in onto.OPENABLE_LOCATIONS:
            self.open_loc(loc)
        return loc

    # --- subgoal methods -------------------------------------------------------------------------------
    def achieve(self, fact: Sequence[str], block: Block, force: bool = False) -> None:
        """Reach one subgoal; ``force`` repeats its final action even when it already holds (perseveration)."""
        st = self.st
        if not force and st.satisfies(fact):
            return
        p = fact[0]
        if p in ("ontop", "inside", "in", "on"):
            self.put(fact[1], p, fact[2])
        elif p == "contains":
            self._contains(fact[1], fact[2], block)
        elif p == "stirred":
            rec = fact[1]
            if st.holding == rec:
                self.release()
            self.do("human-stir", rec, self.tool("stir", block), self.use(self.tool("stir", block), rec))
        elif p in ("sliced", "cut", "peeled"):
            obj = fact[1]
            self.lay_out(obj, block.tool("board"))
            tool = self.tool(p, block)
            loc = self.use(tool, obj)
            self.do({"sliced": "human-slice", "cut": "human-cut", "peeled": "human-peel"}[p], obj, tool, loc)
        elif p == "cooked":
            self._cook(fact[1], block)
        elif p == "boiled":
            self._boil(fact[1], block)
        elif p == "toasted":
            self.put(fact[1], "inside", "toaster")
            self.goto("toaster")
            if not st.has("switched-on", "toaster"):
                self.do("human-switch-on-location", "toaster")
            self.do("human-toast", fact[1], "toaster")
            self.do("human-switch-off-location", "toaster")
        elif p == "heated":
            app = block.tool("heat") or "microwave"
            self.put(fact[1], "inside", app)
            self.close_loc(app)
            if not st.has("switched-on", app):
                self.do("human-switch-on-location", app)
            self.do("human-heat", fact[1], app)
            self.do("human-switch-off-location", app)
        elif p == "clean":
            self._clean(fact[1], block)
        elif p in ("rinsed",):
            self.get(fact[1])
            sink = block.tool("sink") or "sink"
            self.goto(sink)
            self.do("human-rinse", fact[1], sink)
        elif p == "scrubbed":
            tool = self.tool("scrub", block)
            loc = self.use(tool, fact[1])
            self.do("human-scrub", fact[1], tool, loc)
        elif p == "dry":
            self._dry(fact[1], block)
        elif p == "folded":
            obj = fact[1]
            where = block.tool("fold_on")
            if where and st.location_of(obj) != where:
                self.put(obj, "ontop", where)
            else:
                self.lay_out(obj)
            self.release()
            loc = st.location_of(obj)
            self.goto(loc)  # type: ignore[arg-type]
            self.do("human-fold", obj, loc)  # type: ignore[arg-type]
        elif p == "topped":
            food, spread = fact[1], fact[2]
            self.lay_out(food, block.tool("board"))
            self.bring_next_to(spread, food)
            tool = self.tool("spread", block)
            self.do("human-spread", spread, food, tool, self.use(tool, food))
        elif p == "wrapped":
            obj = fact[1]
            self.lay_out(obj)
            mat = self.tool("wrap", block)
            self.do("human-wrap", obj, mat, self.use(mat, obj))
        elif p == "dose-taken":
            med = fact[1]
            self.get(med)
            if onto.type_of(med) in onto.OPENABLE_OBJECTS and not st.is_open(med):
                self.do("human-open-receptacle", med, st.human)
            self.do("human-take-dose", med, st.human)
        elif p == "written":
            obj = fact[1]
            self.lay_out(obj)
            tool = self.tool("write", block)
            self.do("human-write", tool, obj, self.use(tool, obj))
        elif p == "watered":
            can = self.tool("water", block)
            if "water" not in st.contents.get(can, ()):
                self._fill(can, block)
            self.do("human-water", fact[1], can, self.use(can, fact[1]))
        elif p == "open":
            self._open_close(fact[1], True)
        elif p == "closed":
            self._open_close(fact[1], False)
        elif p == "switched-on":
            self._switch(fact[1], True)
        elif p == "not" and len(fact) >= 3 and fact[1] in ("switched-on", "open"):
            if fact[1] == "switched-on":
                self._switch(fact[2], False)
            else:
                self._open_close(fact[2], False)
        else:
            raise PlanError(f"{self.t.name}/{block.id}: no method for subgoal ({' '.join(fact)})")

    def _open_close(self, x: str, want_open: bool) -> None:
        if onto.is_location(x):
            if want_open:
                self.open_loc(x)
                self.opened.discard(x)
            else:
                self.close_loc(x)
            return
        loc = self.st.location_of(x)
        self.goto(loc)  # type: ignore[arg-type]
        self.do("human-open-receptacle" if want_open else "human-close-receptacle", x, loc)  # type: ignore[arg-type]

    def _switch(self, x: str, on: bool) -> None:
        word = "on" if on else "off"
        if onto.is_location(x):
            self.goto(x)
            if on and onto.type_of(x) in onto.CLOSED_TO_RUN:
                self.close_loc(x)
            self.do(f"human-switch-{word}-location", x)
        else:
            if self.st.holding == x:
                self.release()
            loc = self.st.location_of(x)
            self.goto(loc)  # type: ignore[arg-type]
            self.do(f"human-switch-{word}-object", x, loc)  # type: ignore[arg-type]

    def _fill(self, rec: str, block: Block) -> None:
        self.get(rec)
        sink = block.tool("tap") or "sink"
        self.goto(sink)
        self.do("human-fill", rec, sink)

    def _contains(self, rec: str, what: str, block: Block) -> None:
        st = self.st
        if what == "water":
            self._fill(rec, block)
            return
        if what in onto.BULK:
            if st.holding == rec:
                self.release()
            self.lay_out(rec)
            self.bring_next_to(what, rec)
            tool = self.tool("add", block)
            self.do("human-add", what, rec, tool, self.use(tool, rec))
            return
        if onto.type_of(what) in onto.LIQUIDS:
            src = what
        else:
            srcs = sorted(o for o, cs in st.contents.items() if what in cs and o != rec)
            if not srcs:
                raise PlanError(f"nothing in the scene contains {what}")
            src = srcs[0]
        if st.holding == rec:
            self.release()
        if not onto.is_location(rec):
            self.lay_out(rec)
        self.get(src)
        if onto.type_of(src) in onto.OPENABLE_OBJECTS and not st.is_open(src):
            self.do("human-open-receptacle", src, st.human)
        loc = rec if onto.is_location(rec) else st.location_of(rec)
        self.goto(loc)  # type: ignore[arg-type]
        if onto.is_location(rec):
            self.open_loc(rec)
        self.do("human-pour", src, rec, loc)  # type: ignore[arg-type]

    def _cook(self, food: str, block: Block) -> None:
        st = self.st
        vessel = block.tool("vessel")
        if vessel is None:
            cands = [o for o in self.names if onto.subclass_of(o) == "cooking_vessel"]
            if not cands:
                raise PlanError("no cooking vessel")
            vessel = sorted(cands)[0]
        if st.pos.get(vessel) != ("ontop", "stove"):
            self.put(vessel, "ontop", "stove")
        if not (st.pos.get(food) == ("in", vessel) or food in st.contents.get(vessel, ())):
            if onto.type_of(food) in onto.BULK:
                self._contains(vessel, food, block)
            else:
                self.put(food, "in", vessel)
        self.goto("stove")
        if not st.has("switched-on", "stove"):
            self.do("human-switch-on-location", "stove")
        tool = self.tool("cook", block)
        self.do("human-cook", food, vessel, tool, self.use(tool, vessel))

    def _boil(self, rec: str, block: Block) -> None:
        st = self.st
        if "water" not in st.contents.get(rec, ()):
            self._fill(rec, block)
        if onto.type_of(rec) == "kettle":
            base = block.tool("base") or self.surface()
            if st.pos.get(rec) != ("ontop", base):
                self.put(rec, "ontop", base)
            if not st.has("switched-on", rec):
                self.do("human-switch-on-object", rec, base)
            self.do("human-boil", rec, base)
            self.do("human-switch-off-object", rec, base)
            return
        if st.pos.get(rec) != ("ontop", "stove"):
            self.put(rec, "ontop", "stove")
        self.goto("stove")
        if not st.has("switched-on", "stove"):
            self.do("human-switch-on-location", "stove")
        self.do("human-boil", rec, "stove")

    def _clean(self, x: str, block: Block) -> None:
        st = self.st
        if onto.is_location(x):
            tool = self.tool("wipe", block)
            self.do("human-wipe", x, tool, self.use(tool, x))
            return
        machine = block.tool("wash")
        if machine == "washing_machine" or st.pos.get(x) == ("inside", "washing_machine"):
            if st.pos.get(x) != ("inside", "washing_machine"):
                self.put(x, "inside", "washing_machine")
            if "detergent" not in st.contents.get("washing_machine", ()):
                self._contains("washing_machine", "detergent", block)
            self.close_loc("washing_machine")
            self.goto("washing_machine")
            if not st.has("switched-on", "washing_machine"):
                self.do("human-switch-on-location", "washing_machine")
            self.do("human-wash", x, "washing_machine")
            return
        if block.tool("wipe"):
            self.lay_out(x)
            tool = self.tool("wipe", block)
            self.do("human-wipe", x, tool, self.use(tool, x))
            return
        self.get(x)
        sink = block.tool("sink") or "sink"
        self.goto(sink)
        self.do("human-wash", x, sink)

    def _dry(self, x: str, block: Block) -> None:
        st = self.st
        if block.tool("dry") == "dryer" or st.pos.get(x) == ("inside", "dryer"):
            if st.pos.get(x) != ("inside", "dryer"):
                self.put(x, "inside", "dryer")
            self.close_loc("dryer")
            self.goto("dryer")
            if not st.has("switched-on", "dryer"):
                self.do("human-switch-on-location", "dryer")
            self.do("human-dry", x, "dryer")
            return
        if st.holding == x:
            self.release()
        self.lay_out(x)
        towel = self.tool("dry", block)
        loc = self.use(towel, x)
        self.do("human-dry", x, loc)

    # --- blocks ----------------------------------------------------------------------------------------
    def end_block(self) -> None:
        self.close_opened_here()
        for loc in sorted(self.opened):
            self.close_loc(loc)

    def solve_block(self, block: Block) -> None:
        self.block = block.id
        for s in block.subgoals:
            self.achieve(s.fact, block)
        self.end_block()
        unmet = [s.fact for s in block.subgoals if not s.transient and not self.st.satisfies(s.fact)]
        if unmet:
            raise PlanError(f"{self.t.name}/{block.id}: subgoals undone by later ones: {unmet}")


def plan(template: Template, scene: Scene, order: Sequence[str] | None = None,
         state: State | None = None, budget_s: float | None = None) -> list[Step]:
    """Solve the blocks in ``order`` from ``state`` (default: the scene's initial state)."""
    st = state.copy() if state is not None else scene_state(scene)
    deadline = time.perf_counter() + budget_s if budget_s is not None else None
    p = Planner(st, template, deadline)
    for bid in order or template.canonical_order():
        p.solve_block(template.block(bid))
    return p.steps


def scene_state(scene: Scene) -> State:
    return initial_state(scene.facts, scene.start, scene.locations)


def plan_goals(template: Template, state: State, goals: Sequence[tuple[Block, Sequence[str]]],
               budget_s: float | None = None) -> list[Step]:
    """Plan for an explicit list of (block, fact) subgoals from ``state`` -- what the re-planner needs."""
    deadline = time.perf_counter() + budget_s if budget_s is not None else None
    p = Planner(state.copy(), template, deadline)
    for block, fact in goals:
        p.block = block.id
        p.achieve(fact, block)
    return p.steps
