"""Rule-based error-type guesses shared by the symbolic monitors (re-planner, Ego-ADR shallow mode)."""

from __future__ import annotations

from ego_adr.helpmeout.world import ontology as onto
from ego_adr.helpmeout.world.domain import Action
from ego_adr.helpmeout.world.operators import ACTION_CONFUSIONS

REPEATABLE = ("human-add", "human-pour", "human-take-dose", "human-fill")
PUTS = ("human-put-inside-location", "human-put-ontop-location", "human-put-inside-receptacle-at-location",
        "human-put-ontop-receptacle-at-location")


def stranger(action: Action, known: set[str]) -> str | None:
    """The first argument the task never mentions, if any."""
    for a in action[1:]:
        if a not in known:
            return a
    return None


def guess_category(action: Action, known: set[str], history: list[Action],
                   expected_ops: dict[str, set[str]] | None = None) -> str:
    """Which of the nine categories a deviating action most resembles."""
    odd = stranger(action, known)
    if odd is not None:
        cls = onto.class_of(odd)
        if cls == "tool":
            return "tool_substitution"
        if cls == "location":
            return "location_substitution"
        return "object_substitution"
    if action[0] in REPEATABLE and action in history:
        return "perseveration"
    if expected_ops is not None and len(action) > 1:
        exp = expected_ops.get(action[1], set())
        for group in ACTION_CONFUSIONS:
            if action[0] in group and action[0] not in exp and exp & group:
                return "action_substitution"
    if action[0] in PUTS:
        return "anticipation"
    return "sequence"
