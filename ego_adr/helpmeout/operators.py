"""The 38 action operators (paper Appendix, Table 6), with preconditions and effects.

Table 6's extracted text names six operators verbatim (move, the two pick-ups, the three puts); the rest follow
the families the issue lists (open/close, switch on/off, cut/slice, pour, add, stir, cook/heat, wash, wipe, fold)
and are ours, 38 in all. Each operator is a pair of functions on :class:`~ego_adr.helpmeout.domain.State`:
``check`` returns ``None`` when every precondition holds, else the first failed one as text (monitors and the
replay validator report it), and ``apply`` adds/deletes facts. Type constraints come from the affordance sets of
:mod:`ego_adr.helpmeout.ontology`. Tools are deliberately permissive (any tool stirs, any tool cuts): a fork used
as a spoon is an *error* that replay cannot see, which is what makes tool substitution hard to monitor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ego_adr.helpmeout import ontology as onto
from ego_adr.helpmeout.domain import Action, State

Check = Callable[[State, tuple[str, ...]], "str | None"]
Apply = Callable[[State, tuple[str, ...]], None]


@dataclass(frozen=True)
class Operator:
    name: str
    params: tuple[str, ...]
    semantics: str
    check: Check
    apply: Apply


OPERATORS: dict[str, Operator] = {}


def op(name: str, params: str, semantics: str) -> Callable[[Check], Check]:
    def deco(check: Check) -> Check:
        OPERATORS[name] = Operator(name, tuple(params.split()), semantics, check, _EFFECTS[name])
        return check

    return deco


_EFFECTS: dict[str, Apply] = {}


def effect(name: str) -> Callable[[Apply], Apply]:
    def deco(fn: Apply) -> Apply:
        _EFFECTS[name] = fn
        return fn

    return deco


def _t(x: str) -> str:
    return onto.type_of(x)


def _at(st: State, loc: str) -> str | None:
    if st.human != loc:
        return f"person is at {st.human}, not {loc}"
    return None


def _holds(st: State, obj: str) -> str | None:
    return None if st.holding == obj else f"not holding {obj}"


def _holds_tool(st: State, tool: str) -> str | None:
    if onto.class_of(tool) != "tool":
        return f"{tool} is not a tool"
    return _holds(st, tool)


def _reach(st: State, obj: str, loc: str) -> str | None:
    return None if st.reachable_at(obj, loc) else f"{obj} is not reachable at {loc}"


def _reach_or_held(st: State, obj: str, loc: str) -> str | None:
    return None if (st.holding == obj or st.reachable_at(obj, loc)) else f"{obj} is not at {loc}"


def _clear_mixed(st: State, rec: str) -> None:
    st.flags.discard(("stirred", rec))


# --- effects -------------------------------------------------------------------------------------------------
@effect("human-move")
def _e_move(st: State, a: Action) -> None:
    st.human = a[2]


def _pick(st: State, a: Action) -> None:
    st.holding = a[1]
    st.pos[a[1]] = ("held", None)


_EFFECTS["human-pick-up-at-location"] = _pick
_EFFECTS["human-pick-up-from-receptacle-at-location"] = _pick


def _put(rel: str, parent_idx: int) -> Apply:
    def fn(st: State, a: Action) -> None:
        st.holding = None
        st.pos[a[1]] = (rel, a[parent_idx])

    return fn


_EFFECTS["human-put-inside-location"] = _put("inside", 2)
_EFFECTS["human-put-ontop-location"] = _put("ontop", 2)
_EFFECTS["human-put-inside-receptacle-at-location"] = _put("in", 2)
_EFFECTS["human-put-ontop-receptacle-at-location"] = _put("on", 2)


def _flag_on(pred: str, idx: int = 1) -> Apply:
    return lambda st, a: st.flags.add((pred, a[idx]))


def _flag_off(pred: str, idx: int = 1) -> Apply:
    return lambda st, a: st.flags.discard((pred, a[idx]))


_EFFECTS["human-open-location"] = _flag_on("open")
_EFFECTS["human-close-location"] = _flag_off("open")
_EFFECTS["human-open-receptacle"] = _flag_on("open")
_EFFECTS["human-close-receptacle"] = _flag_off("open")
_EFFECTS["human-switch-on-location"] = _flag_on("switched-on")
_EFFECTS["human-switch-off-location"] = _flag_off("switched-on")
_EFFECTS["human-switch-on-object"] = _flag_on("switched-on")
_EFFECTS["human-switch-off-object"] = _flag_off("switched-on")
_EFFECTS["human-cut"] = _flag_on("cut")
_EFFECTS["human-slice"] = _flag_on("sliced")
_EFFECTS["human-peel"] = _flag_on("peeled")
_EFFECTS["human-stir"] = _flag_on("stirred")
_EFFECTS["human-cook"] = _flag_on("cooked")
_EFFECTS["human-toast"] = _flag_on("toasted")
_EFFECTS["human-rinse"] = _flag_on("rinsed")
_EFFECTS["human-scrub"] = _flag_on("scrubbed")
_EFFECTS["human-fold"] = _flag_on("folded")
_EFFECTS["human-wrap"] = _flag_on("wrapped")
_EFFECTS["human-write"] = lambda st, a: st.flags.add(("written", a[2]))
_EFFECTS["human-water"] = _flag_on("watered")


@effect("human-pour")
def _e_pour(st: State, a: Action) -> None:
    src, dst = a[1], a[2]
    liquids = {src} if _t(src) in onto.LIQUIDS else set(st.contents.get(src, ()))
    st.contents.setdefault(dst, set()).update(liquids)
    _clear_mixed(st, dst)
    key = (dst, src)
    st.doses[key] = st.doses.get(key, 0) + 1


@effect("human-add")
def _e_add(st: State, a: Action) -> None:
    ing, rec = a[1], a[2]
    st.contents.setdefault(rec, set()).add(ing)
    _clear_mixed(st, rec)
    st.doses[(rec, ing)] = st.doses.get((rec, ing), 0) + 1


@effect("human-heat")
def _e_heat(st: State, a: Action) -> None:
    st.flags.add(("heated", a[1]))
    for c in st.contents.get(a[1], ()):
        st.flags.add(("heated", c))
    for o, (_rel, parent) in st.pos.items():
        if parent == a[1]:
            st.flags.add(("heated", o))


@effect("human-boil")
def _e_boil(st: State, a: Action) -> None:
    cs = st.contents.setdefault(a[1], set())
    cs.discard("water")
    cs.add("hot_water")
    st.flags.add(("boiled", a[1]))


@effect("human-fill")
def _e_fill(st: State, a: Action) -> None:
    st.contents.setdefault(a[1], set()).add("water")


@effect("human-empty")
def _e_empty(st: State, a: Action) -> None:
    st.contents[a[1]] = set()
    st.flags.discard(("boiled", a[1]))


@effect("human-wash")
def _e_wash(st: State, a: Action) -> None:
    st.flags.add(("clean", a[1]))
    st.flags.discard(("dirty", a[1]))
    st.flags.add(("wet", a[1]))
    st.flags.discard(("dry", a[1]))


@effect("human-dry")
def _e_dry(st: State, a: Action) -> None:
    st.flags.add(("dry", a[1]))
    st.flags.discard(("wet", a[1]))


@effect("human-wipe")
def _e_wipe(st: State, a: Action) -> None:
    st.flags.add(("clean", a[1]))
    st.flags.discard(("dirty", a[1]))


@effect("human-spread")
def _e_spread(st: State, a: Action) -> None:
    st.flags.add(("topped", a[2], a[1]))


@effect("human-take-dose")
def _e_dose(st: State, a: Action) -> None:
    st.flags.add(("dose-taken", a[1]))
    st.doses[("person", a[1])] = st.doses.get(("person", a[1]), 0) + 1


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


@op("human-pick-up-from-receptacle-at-location", "obj rec loc", "Pick an object out of/off a receptacle at a location.")
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


@op("human-put-ontop-receptacle-at-location", "obj rec loc", "Put the held object on a flat receptacle (plate, tray, board).")
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


@op("human-switch-on-location", "loc", "Switch on an appliance location (stove, microwave, washing machine, ...).")
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


def _process(flag: str, allowed: frozenset[str]) -> Check:
    def check(st: State, a: Action) -> str | None:
        obj, tool, loc = a[1], a[2], a[3]
        if _t(obj) not in allowed:
            return f"{obj} cannot be {flag}"
        if st.has(flag, obj):
            return f"{obj} is already {flag}"
        return _holds_tool(st, tool) or _at(st, loc) or _reach(st, obj, loc)

    return check


op("human-cut", "obj tool loc", "Cut food with a held tool.")(_process("cut", onto.CUTTABLE))
op("human-slice", "obj tool loc", "Slice food with a held tool.")(_process("sliced", onto.CUTTABLE))
op("human-peel", "obj tool loc", "Peel fruit or a vegetable with a held tool.")(_process("peeled", onto.PEELABLE))


@op("human-pour", "src dst loc", "Pour a held liquid (or a held vessel's contents) into a container.")
def _pour(st: State, a: Action) -> str | None:
    src, dst, loc = a[1], a[2], a[3]
    if _t(src) not in onto.LIQUIDS and not st.contents.get(src):
        return f"{src} holds nothing to pour"
    if src == dst:
        return "cannot pour into itself"
    if onto.is_location(dst):
        if _t(dst) not in onto.INSIDE_LOCATIONS or dst != loc:
            return f"cannot pour into {dst}"
        return _holds(st, src) or _at(st, loc) or (None if st.accessible_container(dst) else f"{dst} is closed")
    if onto.class_of(dst) != "receptacle" or _t(dst) in onto.ONTOP_RECEPTACLES:
        return f"{dst} cannot hold a liquid"
    if not st.accessible_container(dst):
        return f"{dst} is closed"
    if _t(src) in onto.OPENABLE_OBJECTS and not st.is_open(src):
        return f"{src} is closed"
    return _holds(st, src) or _at(st, loc) or _reach(st, dst, loc)


@op("human-add", "ingredient rec tool loc", "Add a scoop of a bulk ingredient to a container with a held tool.")
def _add(st: State, a: Action) -> str | None:
    ing, rec, tool, loc = a[1], a[2], a[3], a[4]
    if _t(ing) not in onto.BULK:
        return f"{ing} is not a bulk ingredient"
    if onto.class_of(rec) != "receptacle" or _t(rec) in onto.ONTOP_RECEPTACLES:
        return f"{rec} cannot hold {ing}"
    if not st.accessible_container(rec):
        return f"{rec} is closed"
    return _holds_tool(st, tool) or _at(st, loc) or _reach(st, ing, loc) or _reach(st, rec, loc)


@op("human-stir", "rec tool loc", "Stir a container's contents with a held tool.")
def _stir(st: State, a: Action) -> str | None:
    rec, tool, loc = a[1], a[2], a[3]
    if not st.contents.get(rec):
        return f"{rec} is empty"
    return _holds_tool(st, tool) or _at(st, loc) or _reach(st, rec, loc)


@op("human-cook", "food rec tool loc", "Cook food in a cooking vessel on a running stove, turning it with a held tool.")
def _cook(st: State, a: Action) -> str | None:
    food, rec, tool, loc = a[1], a[2], a[3], a[4]
    if onto.class_of(food) != "food":
        return f"{food} is not food"
    if not (st.pos.get(food) == ("in", rec) or food in st.contents.get(rec, ())):
        return f"{food} is not in {rec}"
    if onto.subclass_of(rec) != "cooking_vessel":
        return f"{rec} is not a cooking vessel"
    if st.pos.get(rec) != ("ontop", loc) or _t(loc) != "stove":
        return f"{rec} is not on the stove"
    if not st.has("switched-on", loc):
        return "stove is off"
    if st.has("cooked", food):
        return f"{food} is already cooked"
    return _holds_tool(st, tool) or _at(st, loc)


@op("human-heat", "obj loc", "Heat an object inside a running microwave or oven.")
def _heat(st: State, a: Action) -> str | None:
    obj, loc = a[1], a[2]
    if _t(loc) not in ("microwave", "oven"):
        return f"{loc} does not heat"
    if st.pos.get(obj) != ("inside", loc):
        return f"{obj} is not inside {loc}"
    if not st.has("switched-on", loc):
        return f"{loc} is off"
    return _at(st, loc)


@op("human-toast", "food loc", "Toast bread in a running toaster.")
def _toast(st: State, a: Action) -> str | None:
    food, loc = a[1], a[2]
    if _t(loc) != "toaster" or st.pos.get(food) != ("inside", loc):
        return f"{food} is not in the toaster"
    if not st.has("switched-on", loc):
        return "toaster is off"
    if st.has("toasted", food):
        return f"{food} is already toasted"
    return _at(st, loc)


@op("human-boil", "rec loc", "Bring a container of water to the boil (a running kettle, or a pot on a running stove).")
def _boil(st: State, a: Action) -> str | None:
    rec, loc = a[1], a[2]
    if "water" not in st.contents.get(rec, ()):
        return f"{rec} holds no water"
    if _t(rec) == "kettle":
        if not st.has("switched-on", rec):
            return "kettle is off"
        return _at(st, loc) or _reach(st, rec, loc)
    if st.pos.get(rec) != ("ontop", loc) or _t(loc) != "stove" or not st.has("switched-on", loc):
        return f"{rec} is not on a running stove"
    return _at(st, loc)


@op("human-fill", "rec loc", "Fill a held container with water at a sink or bathtub.")
def _fill(st: State, a: Action) -> str | None:
    rec, loc = a[1], a[2]
    if _t(loc) not in onto.WATER_SOURCES:
        return f"{loc} has no tap"
    if onto.class_of(rec) != "receptacle" or _t(rec) in onto.ONTOP_RECEPTACLES:
        return f"{rec} cannot hold water"
    if _t(rec) in onto.OPENABLE_OBJECTS and not st.is_open(rec):
        return f"{rec} is closed"
    return _holds(st, rec) or _at(st, loc)


@op("human-empty", "rec loc", "Empty a held container into a sink, bathtub or toilet.")
def _empty(st: State, a: Action) -> str | None:
    rec, loc = a[1], a[2]
    if _t(loc) not in onto.DRAINS:
        return f"{loc} is not a drain"
    if not st.contents.get(rec):
        return f"{rec} is already empty"
    return _holds(st, rec) or _at(st, loc)


@op("human-wash", "obj loc", "Wash a held object at the sink, or laundry inside a running washing machine with detergent.")
def _wash(st: State, a: Action) -> str | None:
    obj, loc = a[1], a[2]
    if _t(loc) == "washing_machine":
        if st.pos.get(obj) != ("inside", loc):
            return f"{obj} is not in the washing machine"
        if "detergent" not in st.contents.get(loc, ()):
            return "no detergent in the machine"
        if not st.has("switched-on", loc):
            return "washing machine is off"
        return _at(st, loc)
    if _t(loc) not in onto.WATER_SOURCES:
        return f"cannot wash at {loc}"
    return _holds(st, obj) or _at(st, loc)


@op("human-rinse", "obj loc", "Rinse a held object under the tap (no soap).")
def _rinse(st: State, a: Action) -> str | None:
    if _t(a[2]) not in onto.WATER_SOURCES:
        return f"cannot rinse at {a[2]}"
    return _holds(st, a[1]) or _at(st, a[2])


@op("human-dry", "obj loc", "Dry an object: in a running dryer, or with a held towel where it lies.")
def _dry(st: State, a: Action) -> str | None:
    obj, loc = a[1], a[2]
    if _t(loc) == "dryer":
        if st.pos.get(obj) != ("inside", loc):
            return f"{obj} is not in the dryer"
        if not st.has("switched-on", loc):
            return "dryer is off"
        return _at(st, loc)
    if st.holding is None or _t(st.holding) not in onto.DRYING_CLOTHS:
        return "not holding a towel"
    return _at(st, loc) or _reach(st, obj, loc)


def _clean_surface(st: State, a: Action) -> str | None:
    target, tool, loc = a[1], a[2], a[3]
    if st.holding != tool or not (onto.class_of(tool) == "tool" or _t(tool) in onto.DRYING_CLOTHS):
        return f"not holding a cleaning tool ({tool})"
    if target != loc and not st.reachable_at(target, loc):
        return f"{target} is not at {loc}"
    return _at(st, loc)


op("human-wipe", "target tool loc", "Wipe a surface or object clean with a held cloth or sponge.")(_clean_surface)
op("human-scrub", "target tool loc", "Scrub a surface or object with a held brush or sponge.")(_clean_surface)


@op("human-fold", "obj loc", "Fold a garment, linen or paper lying at a location (hand empty).")
def _fold(st: State, a: Action) -> str | None:
    obj, loc = a[1], a[2]
    if _t(obj) not in onto.FOLDABLE:
        return f"{obj} cannot be folded"
    if st.has("folded", obj):
        return f"{obj} is already folded"
    if st.holding is not None:
        return "both hands are needed to fold"
    return _at(st, loc) or _reach(st, obj, loc)


@op("human-spread", "spread food tool loc", "Spread butter, jam, ... onto food with a held knife.")
def _spread(st: State, a: Action) -> str | None:
    spread, food, tool, loc = a[1], a[2], a[3], a[4]
    if _t(spread) not in onto.SPREADS:
        return f"{spread} is not a spread"
    if onto.class_of(food) != "food":
        return f"{food} is not food"
    return _holds_tool(st, tool) or _at(st, loc) or _reach(st, spread, loc) or _reach(st, food, loc)


@op("human-wrap", "obj material loc", "Wrap an object lying at a location in a held wrapping material.")
def _wrap(st: State, a: Action) -> str | None:
    obj, mat, loc = a[1], a[2], a[3]
    if _t(mat) not in onto.WRAPPING:
        return f"{mat} is not a wrapping material"
    if st.has("wrapped", obj):
        return f"{obj} is already wrapped"
    return _holds(st, mat) or _at(st, loc) or _reach(st, obj, loc)


@op("human-take-dose", "med loc", "Take one dose of a held medication.")
def _dose(st: State, a: Action) -> str | None:
    if _t(a[1]) not in onto.MEDICATIONS:
        return f"{a[1]} is not a medication"
    if _t(a[1]) in onto.OPENABLE_OBJECTS and not st.is_open(a[1]):
        return f"{a[1]} is closed"
    return _holds(st, a[1]) or _at(st, a[2])


@op("human-write", "tool obj loc", "Write on paper lying at a location with a held pen.")
def _write(st: State, a: Action) -> str | None:
    tool, obj, loc = a[1], a[2], a[3]
    if onto.subclass_of(tool) != "writing_tool":
        return f"{tool} cannot write"
    if _t(obj) not in onto.WRITABLE:
        return f"cannot write on {obj}"
    return _holds(st, tool) or _at(st, loc) or _reach(st, obj, loc)


@op("human-water", "plant tool loc", "Water a plant from a held container of water.")
def _water(st: State, a: Action) -> str | None:
    plant, tool, loc = a[1], a[2], a[3]
    if _t(plant) != "plant":
        return f"{plant} is not a plant"
    if "water" not in st.contents.get(tool, ()):
        return f"{tool} holds no water"
    return _holds(st, tool) or _at(st, loc) or _reach(st, plant, loc)


if set(OPERATORS) != set(_EFFECTS):  # pragma: no cover - guards edits of this table
    raise RuntimeError(f"operators without effects: {set(OPERATORS) ^ set(_EFFECTS)}")

# Operators a person plausibly swaps for each other on the same arguments (action substitution, our category).
ACTION_CONFUSIONS: tuple[frozenset[str], ...] = (
    frozenset({"human-cut", "human-slice", "human-peel"}),
    frozenset({"human-wash", "human-rinse"}),
    frozenset({"human-wipe", "human-scrub"}),
)


def check_action(st: State, action: Action) -> str | None:
    """``None`` if ``action`` is executable in ``st``, else the first failed precondition."""
    o = OPERATORS.get(action[0])
    if o is None:
        return f"unknown operator {action[0]}"
    if len(action) - 1 != len(o.params):
        return f"{action[0]} takes {len(o.params)} arguments ({' '.join(o.params)})"
    return o.check(st, action)


def apply_action(st: State, action: Action) -> None:
    OPERATORS[action[0]].apply(st, action)
