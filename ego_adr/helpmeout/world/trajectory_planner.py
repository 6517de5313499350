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

from ego_adr.helpmeout.world import ontology as onto
from ego_adr.helpmeout.world.domain import Action, State, format_action, initial_state
from ego_adr.helpmeout.world.operators import apply_action, check_action
from ego_adr.helpmeout.world.subgoal_methods import PlanError, SubgoalMethods
from ego_adr.helpmeout.world.templates import Block, Scene, Template

DEFAULT_TOOLS = {
    "add": ("spoon", "teaspoon", "tablespoon"),
    "stir": ("spoon", "teaspoon", "tablespoon", "whisk"),
    "sliced": ("knife", "bread_knife"),
    "cut": ("knife", "bread_knife"),
    "peeled": ("peeler", "knife"),
    "cook": ("spatula", "tongs", "ladle"),
    "wipe": ("cloth", "sponge", "dish_towel"),
    "scrub": ("scrub_brush", "sponge"),
    "dry": ("dish_towel", "towel", "cloth"),
    "spread": ("butter_knife", "knife"),
    "write": ("pen", "pencil", "marker"),
    "wrap": ("wrapping_paper", "aluminum_foil", "plastic_wrap"),
    "water": ("watering_can", "jug"),
}


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


class Planner(SubgoalMethods):
    """Plans from ``state`` (modified in place as actions are emitted)."""

    def __init__(self, state: State, template: Template, deadline: float | None = None) -> None:
        self.st = state
        self.t = template
        self.steps: list[Step] = []
        self.block = ""
        self.opened: set[str] = set()  # locations this planner opened and will close on leaving
        self.deadline = deadline
        self.names = template.objects() | {a for f in template.scene for a in f[1:]}
        # An errorful person may *attempt* an action whose precondition does not hold (stirring an empty mug): with
        # ``attempt`` set, such an action is recorded without effect and its step index kept in ``failed``.
        self.attempt = False
        self.failed: list[int] = []

    # --- primitives ------------------------------------------------------------------------------------
    def do(self, *action: str) -> None:
        why = check_action(self.st, action)
        if why is not None and not self.attempt:
            raise PlanError(f"{self.t.name}/{self.block}: {format_action(action)} not executable: {why}")
        if why is None:
            apply_action(self.st, action)
        else:
            self.failed.append(len(self.steps))
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
        raise PlanError(
            f"{self.t.name}/{block.id}: no tool for {key!r} in the scene (add `using: {{{key}: ...}}`)"
        )

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


def plan(
    template: Template,
    scene: Scene,
    order: Sequence[str] | None = None,
    state: State | None = None,
    budget_s: float | None = None,
) -> list[Step]:
    """Solve the blocks in ``order`` from ``state`` (default: the scene's initial state)."""
    st = state.copy() if state is not None else scene_state(scene)
    deadline = time.perf_counter() + budget_s if budget_s is not None else None
    p = Planner(st, template, deadline)
    for bid in order or template.canonical_order():
        p.solve_block(template.block(bid))
    return p.steps


def scene_state(scene: Scene) -> State:
    return initial_state(scene.facts, scene.start, scene.locations)


def plan_goals(
    template: Template,
    state: State,
    goals: Sequence[tuple[Block, Sequence[str]]],
    budget_s: float | None = None,
) -> list[Step]:
    """Plan for an explicit list of (block, fact) subgoals from ``state`` -- what the re-planner needs."""
    deadline = time.perf_counter() + budget_s if budget_s is not None else None
    p = Planner(state.copy(), template, deadline)
    for block, fact in goals:
        p.block = block.id
        p.achieve(fact, block)
    return p.steps
