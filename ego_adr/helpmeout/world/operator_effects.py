"""Effects of the 38 operators (Table 6): the facts each one adds and deletes."""

from __future__ import annotations

from ego_adr.helpmeout.world import ontology as onto
from ego_adr.helpmeout.world.domain import Action, State
from ego_adr.helpmeout.world.operator_base import _EFFECTS, Apply, _clear_mixed, _t, effect


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
