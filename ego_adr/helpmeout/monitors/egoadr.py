"""Ego-ADR as a HelpMeOut monitor that reads only the task input: the procedure in words and the initial scene.

What a monitor is given (paper Figure 1c) is the task name, the initial scene and the action prefix; the
procedure text of the episode's task variant (one step per subgoal block, the YAML ``text``) is the task in
words a person is handed. This monitor reads nothing else -- not the template's ``after`` / ``norm_after``
ordering, not the look-alike tables (``ACTION_CONFUSIONS``, ontology confusables), not the simulator
(preconditions and effects of the 38 operators); those are what ``egoadr-knowledge`` adds, and that row is
reported in the privileged block. It does use what a word means: an object's class and subclass from the object
hierarchy (Table 5), the general knowledge a narrator or a language model brings ("a plantain is a fruit").

Per observed action: the action rendered in words is the narration, the key-step matcher
(:class:`ego_adr.reasoning.matching.KeyStepMatcher`, TF-IDF 1-2-grams, difflib below tau = 0.25) picks a step,
and rules over the matched step's words and the observed history type a deviation:

- an object of a subclass the procedure never names -> object / tool substitution;
- the same addition (add, pour, dose, fill) seen again -> perseveration;
- a processing verb the matched step does not say while it says another one -> action substitution;
- a put into a location of the kind the step names (inside / on top) that the procedure never names ->
  location substitution;
- an addition to a container already stirred -> sequence (the stir came too early);
- processing an object after it was put away inside a location -> anticipation, blamed on the put;
- opening / switching on what the procedure never mentions -> action addition;
- at the task end, a step no action ever matched -> omission.
"""

from __future__ import annotations

from ego_adr.helpmeout.monitors.base import EpisodeContext, StepOutput
from ego_adr.helpmeout.monitors.egoadr_base import words
from ego_adr.helpmeout.monitors.egoadr_knowledge import EgoADRKnowledgeMonitor, _verb, end_of_task
from ego_adr.helpmeout.monitors.rules import PUTS, REPEATABLE
from ego_adr.helpmeout.world import ontology as onto
from ego_adr.helpmeout.world.domain import TASK_END, Action, parse_action

# Verbs of the PDDL notation that process an object (the action vocabulary is part of the task input).
PROCESS_VERBS = frozenset(
    {
        "cut",
        "slice",
        "peel",
        "wash",
        "rinse",
        "wipe",
        "scrub",
        "dry",
        "fold",
        "cook",
        "heat",
        "toast",
        "boil",
        "spread",
        "wrap",
        "write",
        "water",
        "stir",
    }
)
_SWITCH = ("human-open-location", "human-switch-on-location", "human-switch-on-object")
_INSIDE_PUTS = ("human-put-inside-location",)


class EgoADRMonitor(EgoADRKnowledgeMonitor):
    """Same stages and model-typed deep mode as :class:`EgoADRKnowledgeMonitor`; the rules read only words."""

    name = "egoadr"

    def reset(self, ctx: EpisodeContext) -> None:
        super().reset(ctx)
        self.named_locations = {x for x in self.named if onto.is_location(x)}
        self.stirred: set[str] = set()
        self.stored: dict[str, int] = {}  # object -> step it was put inside a location
        self.t = 0

    def _word_rules(self, act: Action, k: int, matched: bool) -> tuple[float, str, str] | None:
        verb, verbs = _verb(act[0]), self.step_verbs[k]
        if matched and verb in PROCESS_VERBS and verb not in verbs and verbs & PROCESS_VERBS:
            return 0.6, "action_substitution", f"the step says {sorted(verbs & PROCESS_VERBS)[0]}, not {verb}"
        if act[0] in PUTS and matched and len(act) > 2:
            target = act[2]
            kind = onto.TYPE_SUBCLASS.get(target)
            said = {x for x in self.step_mentions[k] if onto.is_location(x)}
            if (
                said
                and target not in self.named_locations
                and any(onto.TYPE_SUBCLASS.get(x) == kind for x in said)
            ):
                return 0.6, "location_substitution", f"the step says {sorted(said)[0]}"
        if act[0] == "human-add" and len(act) > 2 and act[2] in self.stirred:
            return 0.6, "sequence", f"{act[2]} was stirred before this addition"
        if verb in PROCESS_VERBS and len(act) > 1 and act[1] in self.stored:
            return 0.55, "anticipation", f"{act[1]} was put away before it was {verb}ed"
        if act[0] in _SWITCH and not any(a in self.named for a in act[1:]):
            return 0.5, "action_addition", "the procedure never mentions this"
        return None

    def _observe(self, act: Action) -> None:
        if act[0] == "human-stir":
            self.stirred.add(act[1])
        elif act[0] in ("human-add", "human-pour") and len(act) > 2:
            self.stirred.discard(act[2])
        if act[0] in _INSIDE_PUTS:
            self.stored.setdefault(act[1], self.t)
        self.history.append(act)

    def step(self, t: int, action: str) -> StepOutput:
        self.t = t
        if action == TASK_END:
            return end_of_task(len(self.blocks), self.started, self.texts, t)
        act = parse_action(action)
        narration = words(act)
        m = self.matcher.match(narration)
        matched = (
            m.method == "tfidf"
        )  # difflib ratios of short renderings are rarely evidence (see egoadr_knowledge)
        dev = self._substitution(act)
        onset = t
        if dev is None and act[0] in REPEATABLE and act in self.history:
            dev = (0.9, "perseveration", "this addition was already done")
        if dev is None:
            dev = self._word_rules(act, m.index, matched)
            if dev is not None and dev[1] == "anticipation":
                onset = self.stored[act[1]]
        self._observe(act)
        if matched and act[0] != "human-move":
            self.started.add(m.index)
        if dev is None:
            return StepOutput(0.02 + 0.05 * (1.0 - min(1.0, m.score)))
        prob, cat, evidence = dev
        ev = {
            "narration": narration,
            "step": self.texts[m.index],
            "match": round(m.score, 3),
            "method": m.method,
            "why": evidence,
        }
        if self.mode == "deep":
            cat, extra = self.classify_deep(act, self.texts, m.index, evidence, cat)
            ev.update(extra)
        return StepOutput(prob, onset, cat, ev)
