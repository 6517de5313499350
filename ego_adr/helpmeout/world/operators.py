"""The 38 action operators (paper Appendix, Table 6), with preconditions and effects.

Table 6's extracted text names six operators verbatim (move, the two pick-ups, the three puts); the rest follow
the families the issue lists (open/close, switch on/off, cut/slice, pour, add, stir, cook/heat, wash, wipe, fold)
and are ours, 38 in all. Each operator is a pair of functions on :class:`~ego_adr.helpmeout.world.domain.State`:
``check`` returns ``None`` when every precondition holds, else the first failed one as text (monitors and the
replay validator report it), and ``apply`` adds/deletes facts. Type constraints come from the affordance sets of
:mod:`ego_adr.helpmeout.world.ontology`. Tools are deliberately permissive (any tool stirs, any tool cuts): a fork used
as a spoon is an *error* that replay cannot see, which is what makes tool substitution hard to monitor.
"""

from __future__ import annotations

from ego_adr.helpmeout.world import operator_checks, operator_effects, operator_process  # noqa: F401 - fill the table
from ego_adr.helpmeout.world.domain import Action, State
from ego_adr.helpmeout.world.operator_base import _EFFECTS, OPERATORS, Operator

__all__ = ["ACTION_CONFUSIONS", "OPERATORS", "Operator", "apply_action", "check_action"]

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
