"""Preconditions of the processing operators (cut, slice, peel, pour, add, stir, cook, heat, toast, boil, fill,
empty, wash, rinse, dry, wipe, scrub, fold, spread, wrap, dose, write, water)."""

from __future__ import annotations

from ego_adr.helpmeout.world import ontology as onto
from ego_adr.helpmeout.world import operator_effects  # noqa: F401 - op() pairs each check with its effect
from ego_adr.helpmeout.world.domain import Action, State
from ego_adr.helpmeout.world.operator_base import Check, _at, _holds, _holds_tool, _reach, _t, op


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
op("human-peel", "obj tool loc", "Peel fruit or a vegetable with a held tool.")(
    _process("peeled", onto.PEELABLE)
)


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
        return (
            _holds(st, src) or _at(st, loc) or (None if st.accessible_container(dst) else f"{dst} is closed")
        )
    if onto.class_of(dst) != "receptacle" or _t(dst) in onto.ONTOP_RECEPTACLES:
        return f"{dst} cannot hold a liquid"
    if not st.accessible_container(dst):
        return f"{dst} is closed"
    if _t(src) in onto.OPENABLE_OBJECTS and not st.is_open(src):
        return f"{src} is closed"
    return _holds(st, src) or _at(st, loc) or _reach(st, dst, loc)


@op(
    "human-add",
    "ingredient rec tool loc",
    "Add a scoop of a bulk ingredient to a container with a held tool.",
)
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


@op(
    "human-cook",
    "food rec tool loc",
    "Cook food in a cooking vessel on a running stove, turning it with a held tool.",
)
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


@op(
    "human-boil",
    "rec loc",
    "Bring a container of water to the boil (a running kettle, or a pot on a running stove).",
)
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


@op(
    "human-wash",
    "obj loc",
    "Wash a held object at the sink, or laundry inside a running washing machine with detergent.",
)
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


op("human-wipe", "target tool loc", "Wipe a surface or object clean with a held cloth or sponge.")(
    _clean_surface
)
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
