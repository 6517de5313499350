"""What HelpMeOut's Ego-ADR monitors share (``egoadr``, ``egoadr-deep``, ``egoadr-knowledge``,
``egoadr-privileged``): an action in words, the mode guard, and deep mode's model call that types an alarm.

Why one module: the three differ in what they read (registry.py's ``reads``), not in how a narration is made
or how a model is asked, so those are written once here and the monitors keep only their rules.
"""

from __future__ import annotations

from ego_adr.helpmeout.generator.goal_control import CATEGORIES
from ego_adr.helpmeout.monitors.base import Monitor
from ego_adr.helpmeout.world.domain import Action, parse_action
from ego_adr.reasoning.prompts import HELPMEOUT_CLASSIFY_PROMPT

#: The nine categories as the deep mode's prompt defines them (HELPMEOUT_CLASSIFY_PROMPT's ``categories``).
CATEGORY_DEFINITIONS = {
    "omission": "a required subgoal block is never carried out (confirmed at the task end)",
    "sequence": "steps done in the wrong order, e.g. stirring before all ingredients are added",
    "anticipation": "a later step done too early, e.g. storing or packing an item before it is processed",
    "perseveration": "an addition or dose repeated after it was already done",
    "action_addition": "an extra action the task does not need",
    "object_substitution": "a look-alike object used instead of the right one (salt for sugar)",
    "tool_substitution": "a look-alike tool used instead of the right one (fork for spoon)",
    "location_substitution": "the right object put in a look-alike place (freezer for fridge)",
    "action_substitution": "a sibling action on the right object (peel instead of slice, rinse instead of wash)",
}
#: Moves, picks and openings: steps of many blocks, never evidence that a block started out of order.
MINOR_ACTIONS = ("human-move", "human-pick-up-at-location", "human-pick-up-from-receptacle-at-location",
          "human-put-ontop-location", "human-open-location", "human-close-location")


def words(action: str | Action) -> str:
    """An action in words (``human-put-inside-location apple fridge`` -> ``put inside location apple fridge``):
    the narration of a symbolic stream, which has no frames to narrate."""
    a = parse_action(action) if isinstance(action, str) else action
    return " ".join([a[0].removeprefix("human-").replace("-", " ")] + [x.replace("_", " ") for x in a[1:]])


def parse_category(text: str | None) -> str | None:
    """The category a model answer names: after a 'Category:' cue, else the only one mentioned."""
    if not text:
        return None
    low = text.lower().replace("-", "_")
    cue = low.rfind("category:")
    tail = low[cue + 9:] if cue >= 0 else low
    for part in (tail.splitlines()[0] if tail.strip() else "", tail, low):
        found = {c for c in CATEGORIES if c in part or c.replace("_", " ") in part.replace("_", " ")}
        if "substitution" in part and len(found) > 1:
            found = {c for c in found if c.endswith("substitution")} or found
        if len(found) == 1:
            return found.pop()
    return None


class EgoADRBase(Monitor):
    """The mode guard and deep mode's typing call of every HelpMeOut Ego-ADR monitor."""

    def __init__(self, mode: str = "shallow", model=None, templates_dir: str | None = None, tau: float = 0.25) -> None:
        if mode not in ("shallow", "deep"):
            raise ValueError("mode must be 'shallow' or 'deep'")
        if mode == "deep" and model is None:
            raise ValueError("deep mode needs a model (any ego_adr.models.base.VLM)")
        self.mode, self.model, self.templates_dir, self.tau = mode, model, templates_dir, tau
        self.history: list[Action] = []

    def classify_deep(self, act: Action, texts: list[str], k: int, evidence: str, rule_cat: str) -> tuple[str, dict]:
        """Deep mode: a model names the alarm's category from the procedure ``texts``, the recent actions, the
        action and its matched step ``k`` (HELPMEOUT_CLASSIFY_PROMPT, 32 new tokens); an unparseable answer keeps
        the rule's category, and the evidence says so."""
        from ego_adr.models.base import GenerationConfig, Message, Request

        text = HELPMEOUT_CLASSIFY_PROMPT.render(
            task=self.ctx.task.replace("_", " "),
            procedure="\n".join(f"{i + 1}. {t}" for i, t in enumerate(texts)),
            history="\n".join("(" + " ".join(a) + ")" for a in self.history[-12:]) or "(none)",
            action="(" + " ".join(act) + ")", block=texts[k], evidence=evidence,
            categories="\n".join(f"- {c}: {d}" for c, d in CATEGORY_DEFINITIONS.items()))
        req = Request([Message.user(text)], GenerationConfig(max_new_tokens=32),
                      meta=HELPMEOUT_CLASSIFY_PROMPT.meta("helpmeout_classify"))
        gen = self.model.generate([req])[0]
        cat = parse_category(gen.text) if gen.ok else None
        return (cat or rule_cat), {"model_answer": gen.text, "model_error": gen.error, "parsed": cat}
