"""The trajectory planner's subgoal methods: one per subgoal predicate, each decomposing it into primitive operators.

Split out of :mod:`.trajectory_planner` (which keeps the primitives -- fetch, bring, open/close what it opened --
and the block loop). :meth:`SubgoalMethods.achieve` dispatches on the predicate through :data:`_METHODS`; every method
reads the current state, so the same subgoal yields different actions from different scenes (Figure 5).
"""

from __future__ import annotations

from collections.abc import Sequence

from ego_adr.helpmeout.world import ontology as onto
from ego_adr.helpmeout.world.templates import Block

_PROCESS_OPS = {"sliced": "human-slice", "cut": "human-cut", "peeled": "human-peel"}


class PlanError(RuntimeError):
    pass


class SubgoalMethods:
    """Mixed into :class:`ego_adr.helpmeout.world.trajectory_planner.Planner`, which provides ``st``, ``do`` and the
    primitives."""

    def achieve(self, fact: Sequence[str], block: Block, force: bool = False) -> None:
        """Reach one subgoal; ``force`` repeats its final action even when it already holds (perseveration)."""
        if not force and self.st.satisfies(fact):
            return
        p = fact[0]
        if p == "not" and len(fact) >= 3 and fact[1] in ("switched-on", "open"):
            if fact[1] == "switched-on":
                self._switch(fact[2], False)
            else:
                self._open_close(fact[2], False)
            return
        method = _METHODS.get(p)
        if method is None:
            raise PlanError(f"{self.t.name}/{block.id}: no method for subgoal ({' '.join(fact)})")
        method(self, fact, block)

    # --- one method per predicate (fact, block) ----------------------------------------------------------
    def _m_put(self, fact, block) -> None:
        self.put(fact[1], fact[0], fact[2])

    def _m_contains(self, fact, block) -> None:
        self._contains(fact[1], fact[2], block)

    def _m_stirred(self, fact, block) -> None:
        rec = fact[1]
        if self.st.holding == rec:
            self.release()
        self.do("human-stir", rec, self.tool("stir", block), self.use(self.tool("stir", block), rec))

    def _m_process(self, fact, block) -> None:
        obj = fact[1]
        self.lay_out(obj, block.tool("board"))
        tool = self.tool(fact[0], block)
        loc = self.use(tool, obj)
        self.do(_PROCESS_OPS[fact[0]], obj, tool, loc)

    def _m_cooked(self, fact, block) -> None:
        self._cook(fact[1], block)

    def _m_boiled(self, fact, block) -> None:
        self._boil(fact[1], block)

    def _m_toasted(self, fact, block) -> None:
        self.put(fact[1], "inside", "toaster")
        self.goto("toaster")
        if not self.st.has("switched-on", "toaster"):
            self.do("human-switch-on-location", "toaster")
        self.do("human-toast", fact[1], "toaster")
        self.do("human-switch-off-location", "toaster")

    def _m_heated(self, fact, block) -> None:
        app = block.tool("heat") or "microwave"
        self.put(fact[1], "inside", app)
        self.close_loc(app)
        if not self.st.has("switched-on", app):
            self.do("human-switch-on-location", app)
        self.do("human-heat", fact[1], app)
        self.do("human-switch-off-location", app)

    def _m_clean(self, fact, block) -> None:
        self._clean(fact[1], block)

    def _m_rinsed(self, fact, block) -> None:
        self.get(fact[1])
        sink = block.tool("sink") or "sink"
        self.goto(sink)
        self.do("human-rinse", fact[1], sink)

    def _m_scrubbed(self, fact, block) -> None:
        tool = self.tool("scrub", block)
        loc = self.use(tool, fact[1])
        self.do("human-scrub", fact[1], tool, loc)

    def _m_dry(self, fact, block) -> None:
        self._dry(fact[1], block)

    def _m_folded(self, fact, block) -> None:
        obj = fact[1]
        where = block.tool("fold_on")
        if where and self.st.location_of(obj) != where:
            self.put(obj, "ontop", where)
        else:
            self.lay_out(obj)
        self.release()
        loc = self.st.location_of(obj)
        self.goto(loc)  # type: ignore[arg-type]
        self.do("human-fold", obj, loc)  # type: ignore[arg-type]

    def _m_topped(self, fact, block) -> None:
        food, spread = fact[1], fact[2]
        self.lay_out(food, block.tool("board"))
        self.bring_next_to(spread, food)
        tool = self.tool("spread", block)
        self.do("human-spread", spread, food, tool, self.use(tool, food))

    def _m_wrapped(self, fact, block) -> None:
        obj = fact[1]
        self.lay_out(obj)
        mat = self.tool("wrap", block)
        self.do("human-wrap", obj, mat, self.use(mat, obj))

    def _m_dose(self, fact, block) -> None:
        med = fact[1]
        self.get(med)
        if onto.type_of(med) in onto.OPENABLE_OBJECTS and not self.st.is_open(med):
            self.do("human-open-receptacle", med, self.st.human)
        self.do("human-take-dose", med, self.st.human)

    def _m_written(self, fact, block) -> None:
        obj = fact[1]
        self.lay_out(obj)
        tool = self.tool("write", block)
        self.do("human-write", tool, obj, self.use(tool, obj))

    def _m_watered(self, fact, block) -> None:
        can = self.tool("water", block)
        if "water" not in self.st.contents.get(can, ()):
            self._fill(can, block)
        self.do("human-water", fact[1], can, self.use(can, fact[1]))

    def _m_open(self, fact, block) -> None:
        self._open_close(fact[1], True)

    def _m_closed(self, fact, block) -> None:
        self._open_close(fact[1], False)

    def _m_switched_on(self, fact, block) -> None:
        self._switch(fact[1], True)

    # --- shared decompositions ---------------------------------------------------------------------------
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


_S = SubgoalMethods
_METHODS = {
    "ontop": _S._m_put,
    "inside": _S._m_put,
    "in": _S._m_put,
    "on": _S._m_put,
    "contains": _S._m_contains,
    "stirred": _S._m_stirred,
    "sliced": _S._m_process,
    "cut": _S._m_process,
    "peeled": _S._m_process,
    "cooked": _S._m_cooked,
    "boiled": _S._m_boiled,
    "toasted": _S._m_toasted,
    "heated": _S._m_heated,
    "clean": _S._m_clean,
    "rinsed": _S._m_rinsed,
    "scrubbed": _S._m_scrubbed,
    "dry": _S._m_dry,
    "folded": _S._m_folded,
    "topped": _S._m_topped,
    "wrapped": _S._m_wrapped,
    "dose-taken": _S._m_dose,
    "written": _S._m_written,
    "watered": _S._m_watered,
    "open": _S._m_open,
    "closed": _S._m_closed,
    "switched-on": _S._m_switched_on,
}
