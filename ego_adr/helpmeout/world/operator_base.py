"""The operator table's machinery: the :class:`Operator` record, the registries and the shared precondition helpers.

Split out of :mod:`.operators` (the public face: ``OPERATORS``, ``check_action``, ``apply_action``) so each part
stays readable: effects in :mod:`.operator_effects`, the preconditions of moving, handling, opening and switching
in :mod:`.operator_checks`, those of processing (cut, pour, cook, wash, ...) in :mod:`.operator_process`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ego_adr.helpmeout.world import ontology as onto
from ego_adr.helpmeout.world.domain import State

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
