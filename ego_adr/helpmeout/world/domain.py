"""PDDL-style symbolic state, action notation and the replay validator.

The state is a set of ground facts, stored in indexed form for speed (the generator replays every trajectory
several times): where the person stands, what the hand holds (one object -- the paper's operators say "hand must
be empty"), where each object is (``ontop``/``inside`` a location, ``in``/``on`` a receptacle, or ``held``), what
each container holds (``contains``), and unary/binary flags (``open``, ``switched-on``, ``sliced``, ``clean``, ...).
:meth:`State.facts` renders it as PDDL facts, which is what episodes store and monitors see.

Actions are written in PDDL notation, ``(human-pick-up-at-location mug countertop)``; the end of the task is
the pseudo-action ``(task-end)`` (Figure 1: an omission "is confirmed only when the task ends").

Executing actions (preconditions and effects) lives in :mod:`.operators`, and the replay validator next to it in
:mod:`.replay`, so this module imports neither (no import circle).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ego_adr.helpmeout.world import ontology as onto

TASK_END = "(task-end)"
Action = tuple[str, ...]  # (operator, arg1, arg2, ...)


def parse_action(text: str) -> Action:
    t = text.strip()
    if not (t.startswith("(") and t.endswith(")")):
        raise ValueError(f"not a PDDL action: {text!r}")
    parts = t[1:-1].split()
    if not parts:
        raise ValueError(f"empty action: {text!r}")
    return tuple(parts)


def format_action(action: Action) -> str:
    return "(" + " ".join(action) + ")"


def parse_fact(text: str) -> tuple[str, ...]:
    return parse_action(text)


@dataclass
class State:
    """Indexed ground state. ``pos[obj] = (relation, parent)``; relation in ontop/inside/in/on/held."""

    human: str
    holding: str | None = None
    pos: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    flags: set[tuple[str, ...]] = field(default_factory=set)
    contents: dict[str, set[str]] = field(default_factory=dict)
    doses: dict[tuple[str, str], int] = field(default_factory=dict)
    locations: frozenset[str] = frozenset()

    def copy(self) -> State:
        return State(self.human, self.holding, dict(self.pos), set(self.flags),
                     {k: set(v) for k, v in self.contents.items()}, dict(self.doses), self.locations)

    # --- queries -----------------------------------------------------------------------------------------
    def has(self, *fact: str) -> bool:
        return tuple(fact) in self.flags

    def is_open(self, x: str) -> bool:
        return ("open", x) in self.flags

    def accessible_container(self, x: str) -> bool:
        """A location/receptacle whose inside can be reached: not openable, or open."""
        t = onto.type_of(x)
        if t in onto.OPENABLE_LOCATIONS or t in onto.OPENABLE_OBJECTS:
            return self.is_open(x)
        return True

    def location_of(self, obj: str) -> str | None:
        """The location an object is at (following receptacles); the person's location when held."""
        seen = 0
        x = obj
        while seen < 8:
            if onto.is_location(x):
                return x
            p = self.pos.get(x)
            if p is None:
                return None
            rel, parent = p
            if rel == "held":
                return self.human
            x = parent  # type: ignore[assignment]
            seen += 1
        return None

    def reachable_at(self, obj: str, loc: str) -> bool:
        """``obj`` is at ``loc`` (directly or in a receptacle) and nothing closed is in the way; not held."""
        x = obj
        for _ in range(8):
            p = self.pos.get(x)
            if p is None:
                return False
            rel, parent = p
            if rel == "held":
                return False
            if rel in ("inside", "in") and not self.accessible_container(parent):  # type: ignore[arg-type]
                return False
            if onto.is_location(parent):  # type: ignore[arg-type]
                return parent == loc
            x = parent  # type: ignore[assignment]
        return False

    def near(self, obj: str) -> bool:
        """Held, or reachable at the person's location."""
        return self.holding == obj or self.reachable_at(obj, self.human)

    # --- rendering ---------------------------------------------------------------------------------------
    def facts(self) -> list[str]:
        out = [f"(location {loc})" for loc in sorted(self.locations)]
        out += [f"(human-at {self.human})", "(handempty)" if self.holding is None else f"(holding {self.holding})"]
        for obj, (rel, parent) in sorted(self.pos.items()):
            if rel != "held":
                out.append(f"({rel} {obj} {parent})")
        for rec, cs in sorted(self.contents.items()):
            out.extend(f"(contains {rec} {c})" for c in sorted(cs))
        out.extend(format_action(f) for f in sorted(self.flags))
        for loc in sorted(self.locations):
            t = onto.type_of(loc)
            if (t in onto.OPENABLE_LOCATIONS) and not self.is_open(loc):
                out.append(f"(closed {loc})")
        for obj in sorted(self.pos):
            if onto.type_of(obj) in onto.OPENABLE_OBJECTS and not self.is_open(obj):
                out.append(f"(closed {obj})")
        return out

    def satisfies(self, fact: Sequence[str]) -> bool:
        """Goal test for one fact; ``("not", ...)`` negates."""
        if fact and fact[0] == "not":
            return not self.satisfies(fact[1:])
        pred = fact[0]
        if pred in ("ontop", "inside", "in", "on"):
            return self.pos.get(fact[1]) == (pred, fact[2])
        if pred == "contains":
            return fact[2] in self.contents.get(fact[1], set())
        if pred == "holding":
            return self.holding == fact[1]
        if pred == "handempty":
            return self.holding is None
        if pred == "human-at":
            return self.human == fact[1]
        if pred == "closed":
            return not self.is_open(fact[1])
        return tuple(fact) in self.flags


def initial_state(scene: Iterable[Sequence[str]], human: str, locations: Iterable[str]) -> State:
    """Build a state from scene facts: ``(rel obj parent)``, ``(contains rec x)``, flags like ``(open fridge)``."""
    st = State(human=human, locations=frozenset(locations))
    for f in scene:
        f = tuple(f)
        if f[0] in ("ontop", "inside", "in", "on"):
            st.pos[f[1]] = (f[0], f[2])
        elif f[0] == "contains":
            st.contents.setdefault(f[1], set()).add(f[2])
        else:
            st.flags.add(f)
    return st


def state_from_facts(facts: Iterable[str]) -> State:
    """Inverse of :meth:`State.facts` (what an episode stores as ``initial_scene``)."""
    human = None
    scene: list[tuple[str, ...]] = []
    locations: set[str] = set()
    for text in facts:
        f = parse_fact(text)
        if f[0] == "human-at":
            human = f[1]
        elif f[0] in ("handempty", "closed"):
            continue
        elif f[0] == "holding":
            raise ValueError("initial scenes start with an empty hand")
        elif f[0] == "location":
            locations.add(f[1])
        else:
            scene.append(f)
        for a in f[1:]:
            if onto.is_location(a):
                locations.add(a)
    if human is None:
        raise ValueError("scene has no (human-at ...) fact")
    locations.add(human)
    return initial_state(scene, human, locations)


def goal_unmet(state: State, goal: Iterable[Sequence[str]]) -> list[tuple[str, ...]]:
    return [tuple(g) for g in goal if not state.satisfies(g)]
