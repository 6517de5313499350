"""The replay validator: execute a trajectory from a state with the operators' preconditions and effects.

It sits next to :mod:`.operators` (which needs :mod:`.domain`'s state) rather than in :mod:`.domain`, so the two
modules do not import each other.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ego_adr.helpmeout.world.domain import Action, State, format_action, parse_action
from ego_adr.helpmeout.world.operators import apply_action, check_action


@dataclass
class ReplayResult:
    ok: bool
    steps: int  # number of actions executed successfully
    failed_at: int | None = None
    reason: str | None = None
    state: State | None = None


def replay(state: State, actions: Sequence[Action | str], may_fail: Collection[int] = ()) -> ReplayResult:
    """Execute actions from ``state`` (copied); the first failed precondition makes the trajectory invalid.

    A step in ``may_fail`` (an error onset) may be a failed attempt: its precondition does not hold, so it has no
    effect (the person stirs an empty mug; the precondition monitor of Table 2 fires there)."""
    st = state.copy()
    for i, a in enumerate(actions):
        act = parse_action(a) if isinstance(a, str) else a
        if act == ("task-end",):
            continue
        why = check_action(st, act)
        if why is not None and i in may_fail:
            continue
        if why is not None:
            return ReplayResult(False, i, i, f"{format_action(act)}: {why}", st)
        apply_action(st, act)
    return ReplayResult(True, len(actions), state=st)
