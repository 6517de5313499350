"""Preconditions of moving, picking up, putting, opening/closing and switching (Table 6's first six names and
their families); registered into the operator table in the docs' order."""

from __future__ import annotations

from ego_adr.helpmeout.world import ontology as onto
from ego_adr.helpmeout.world import operator_effects  # noqa: F401 - op() pairs each check with its effect
from ego_adr.helpmeout.world.domain import Action, State
from ego_adr.helpmeout.world.operator_base import _at, _holds, _reach, _reach_or_held, _t, op


# --- preconditions (registration order = the operator list of the docs) -----------------------------------
@op("human-move", "from to", "Move between two non-movable locations.")
def _move(st: State, a: Action) -> str | None:
    if not (onto.is_location(a[1]) and onto.is_location(a[2])):
        return "move needs two locations"
    if a[2] not in st.locations:
        return f"{a[2]} is not in this scene"
    if a[1] == a[2]:
        return "already there"
    return _at(st, a[1])


@op("human-pick-up-at-location", "obj loc", "Pick an object off/out of a location (hand must be empty).")
def _pick_loc(st: State, a: Action) -> str | None:
    obj, loc = a[1], a[2]
    if onto.class_of(obj) in (None, "location"):
        return f"{obj} is not movable"
    if st.holding is not None:
        return f"hand is not empty (holding {st.holding})"
    if st.pos.get(obj, ("", ""))[1] != loc:
        return f"{obj} is not directly at {loc}"
    return _at(st, loc) or _reach(st, obj, loc)


@op(
    "human-pick-up-from-receptacle-at-location",
    "obj rec loc",
    "Pick an object out of/off a receptacle at a location.",
)
def _pick_rec(st: State, a: Action) -> str | None:
    obj, rec, loc = a[1], a[2], a[3]
    if st.holding is not None:
        return f"hand is not empty (holding {st.holding})"
    if st.pos.get(obj, ("", ""))[1] != rec:
        return f"{obj} is not in/on {rec}"
    return _at(st, loc) or _reach(st, obj, loc)


@op("human-put-inside-location", "obj loc", "Put the held object inside a location.")
def _put_in_loc(st: State, a: Action) -> str | None:
    if _t(a[2]) not in onto.INSIDE_LOCATIONS:
        return f"{a[2]} has no inside"
    if not st.accessible_container(a[2]):
        return f"{a[2]} is closed"
    return _holds(st, a[1]) or _at(st, a[2])


@op("human-put-ontop-location", "obj loc", "Put the held object on top of a location.")
def _put_on_loc(st: State, a: Action) -> str | None:
    if _t(a[2]) not in onto.ONTOP_LOCATIONS:
        return f"{a[2]} is not a surface"
    return _holds(st, a[1]) or _at(st, a[2])


@op("human-put-inside-receptacle-at-location", "obj rec loc", "Put the held object inside a receptacle.")
def _put_in_rec(st: State, a: Action) -> str | None:
    obj, rec, loc = a[1], a[2], a[3]
    if onto.class_of(rec) != "receptacle" or _t(rec) in onto.ONTOP_RECEPTACLES:
        return f"{rec} is not a receptacle with an inside"
    if obj == rec:
        return "cannot put an object into itself"
    if not st.accessible_container(rec):
        return f"{rec} is closed"
    return _holds(st, obj) or _at(st, loc) or _reach(st, rec, loc)


@op(
    "human-put-ontop-receptacle-at-location",
    "obj rec loc",
    "Put the held object on a flat receptacle (plate, tray, board).",
)
def _put_on_rec(st: State, a: Action) -> str | None:
    obj, rec, loc = a[1], a[2], a[3]
    if _t(rec) not in onto.ONTOP_RECEPTACLES:
        return f"{rec} is not a flat receptacle"
    if obj == rec:
        return "cannot put an object onto itself"
    return _holds(st, obj) or _at(st, loc) or _reach(st, rec, loc)


def _openable_loc(st: State, loc: str, want_open: bool) -> str | None:
    if _t(loc) not in onto.OPENABLE_LOCATIONS:
        return f"{loc} cannot be opened or closed"
    if st.is_open(loc) == want_open:
        return f"{loc} is already {'open' if want_open else 'closed'}"
    if _t(loc) in onto.SWITCHABLE_LOCATIONS and want_open and st.has("switched-on", loc):
        return f"{loc} is running"
    return _at(st, loc)


@op("human-open-location", "loc", "Open a location's door (cabinet, fridge, microwave, ...).")
def _open_loc(st: State, a: Action) -> str | None:
    return _openable_loc(st, a[1], True)


@op("human-close-location", "loc", "Close a location's door.")
def _close_loc(st: State, a: Action) -> str | None:
    return _openable_loc(st, a[1], False)


def _openable_rec(st: State, rec: str, loc: str, want_open: bool) -> str | None:
    if _t(rec) not in onto.OPENABLE_OBJECTS:
        return f"{rec} has no lid"
    if st.is_open(rec) == want_open:
        return f"{rec} is already {'open' if want_open else 'closed'}"
    return _at(st, loc) or _reach_or_held(st, rec, loc)


@op("human-open-receptacle", "rec loc", "Open a lidded receptacle (jar, box, bottle).")
def _open_rec(st: State, a: Action) -> str | None:
    return _openable_rec(st, a[1], a[2], True)


@op("human-close-receptacle", "rec loc", "Close a lidded receptacle.")
def _close_rec(st: State, a: Action) -> str | None:
    return _openable_rec(st, a[1], a[2], False)


def _switch_loc(st: State, loc: str, on: bool) -> str | None:
    if _t(loc) not in onto.SWITCHABLE_LOCATIONS:
        return f"{loc} has no switch"
    if st.has("switched-on", loc) == on:
        return f"{loc} is already {'on' if on else 'off'}"
    if on and _t(loc) in onto.CLOSED_TO_RUN and st.is_open(loc):
        return f"{loc} door is open"
    return _at(st, loc)


@op(
    "human-switch-on-location",
    "loc",
    "Switch on an appliance location (stove, microwave, washing machine, ...).",
)
def _on_loc(st: State, a: Action) -> str | None:
    return _switch_loc(st, a[1], True)


@op("human-switch-off-location", "loc", "Switch off an appliance location.")
def _off_loc(st: State, a: Action) -> str | None:
    return _switch_loc(st, a[1], False)


def _switch_obj(st: State, obj: str, loc: str, on: bool) -> str | None:
    if _t(obj) not in onto.SWITCHABLE_OBJECTS:
        return f"{obj} has no switch"
    if st.has("switched-on", obj) == on:
        return f"{obj} is already {'on' if on else 'off'}"
    return _at(st, loc) or _reach(st, obj, loc)


@op("human-switch-on-object", "obj loc", "Switch on a device standing at a location (kettle, lamp, iron).")
def _on_obj(st: State, a: Action) -> str | None:
    return _switch_obj(st, a[1], a[2], True)


@op("human-switch-off-object", "obj loc", "Switch off a device.")
def _off_obj(st: State, a: Action) -> str | None:
    return _switch_obj(st, a[1], a[2], False)
