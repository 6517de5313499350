"""Ego-ADR with template knowledge beyond the words (``egoadr-knowledge``, a privileged reference).

It reads the procedure text of the task variant and the initial scene, and also three things the task input
of Figure 1c does not give a monitor: the template's block-order norms (``after`` / ``norm_after``), the
look-alike tables (``ACTION_CONFUSIONS`` and the ontology's confusable locations) and the simulator (every
action replayed against the operators' preconditions and effects). The registry declares them in its ``reads``,
so the summary lists it with the privileged references; the non-privileged ``egoadr`` is
:mod:`.egoadr`, which subclasses this one and keeps only the word rules. Per observed action, the
Ego-ADR stages are:

- **narration** = the action rendered in words (the symbolic stream has no frames to narrate);
- **key-step match** of the narration to a procedure step with the project's matcher
  (:class:`ego_adr.reasoning.matching.KeyStepMatcher`: TF-IDF 1-2-grams, difflib below tau = 0.25, paper
  Section 5 / Appendix D);
- **classification**, shallow rules over the matched step and the replayed scene: an object of a subclass the
  procedure never names -> substitution by class; a repeated addition -> perseveration; a sibling verb of the
  step's verb (peel for slice) -> action substitution; a put into a look-alike of the step's location ->
  location substitution; a step started before the steps it comes after -> sequence (a put: anticipation);
  opening/switching on what the procedure never mentions -> action addition; at the task end, a step no action
  ever matched -> omission. Deep mode lets a model type each alarm (``HELPMEOUT_CLASSIFY_PROMPT``); an
  unparseable answer keeps the rule's type and says so in the evidence.
"""

from __future__ import annotations

import re

from ego_adr.helpmeout.monitors.base import EpisodeContext, StepOutput
from ego_adr.helpmeout.monitors.egoadr_base import MINOR_ACTIONS, EgoADRBase, words
from ego_adr.helpmeout.monitors.knowledge import task_variant
from ego_adr.helpmeout.monitors.rules import PUTS, REPEATABLE
from ego_adr.helpmeout.world import ontology as onto
from ego_adr.helpmeout.world.domain import TASK_END, Action, parse_action, state_from_facts
from ego_adr.helpmeout.world.operators import ACTION_CONFUSIONS, apply_action, check_action

_WORD = re.compile(r"[a-z]+")


def _verb(op: str) -> str:
    return op.removeprefix("human-").split("-")[0]


def _mentions(text: str) -> set[str]:
    """Ontology types named in a text (multi-word names like 'cutting board' included)."""
    low = " " + " ".join(_WORD.findall(text.lower())) + " "
    return {t for t in onto.TYPE_CLASS if f" {t.replace('_', ' ')} " in low}



def end_of_task(n_steps: int, started, texts: list[str], t: int) -> StepOutput:
    """The end-of-task check both procedure-reading monitors make: a step never matched is an omission."""
    never = [i for i in range(n_steps) if i not in started]
    if never:
        return StepOutput(0.9, t, "omission", {"never_matched": [texts[i] for i in never]})
    return StepOutput(0.05)

class EgoADRKnowledgeMonitor(EgoADRBase):
    name = "egoadr-knowledge"

    def reset(self, ctx: EpisodeContext) -> None:
        from ego_adr.reasoning.matching import KeyStepMatcher

        self.ctx = ctx
        variant = task_variant(ctx, self.templates_dir)
        self.blocks = variant.blocks
        self.texts = [b.text for b in self.blocks]
        self.matcher = KeyStepMatcher(self.texts, tau=self.tau)
        self.step_mentions = [_mentions(t) for t in self.texts]
        self.named = set().union(*self.step_mentions) | _mentions(ctx.task.replace("_", " "))
        self.named_subclasses = {onto.subclass_of(t) for t in self.named if not onto.is_location(t)}
        self.step_verbs = [set(_WORD.findall(t.lower())) for t in self.texts]
        self.state = state_from_facts(ctx.initial_scene)
        self.history = []
        self.started: set[int] = set()
        self.alarmed: set[int] = set()

    def _substitution(self, act: Action) -> tuple[float, str, str] | None:
        """An object or tool of a subclass the procedure never names: a substitution by class (words only)."""
        for a in act[1:]:
            if onto.is_location(a) or onto.class_of(a) is None:
                continue
            if onto.subclass_of(a) not in self.named_subclasses:
                cat = "tool_substitution" if onto.class_of(a) == "tool" else "object_substitution"
                return 0.7, cat, f"the procedure names no {onto.subclass_of(a)} like {a}"
        return None

    def _deviation(self, act: Action, k: int, matched: bool) -> tuple[float, str, str] | None:
        found = self._substitution(act)
        if found:
            return found
        if act[0] in REPEATABLE and act in self.history:
            return 0.9, "perseveration", "this addition was already done"
        verbs = self.step_verbs[k]
        if matched and _verb(act[0]) not in verbs:
            for group in ACTION_CONFUSIONS:
                sib = {_verb(o) for o in group} - {_verb(act[0])}
                if act[0] in group and sib & verbs:
                    return 0.85, "action_substitution", f"the step says {sorted(sib & verbs)[0]}"
        if act[0] in PUTS and matched:
            target = act[2]
            said = {x for x in self.step_mentions[k] if onto.is_location(x)}
            if said and target not in said and any(target in onto.confusables(x) for x in said):
                return 0.8, "location_substitution", f"the step says {sorted(said)[0]}"
        if matched and act[0] not in MINOR_ACTIONS:
            missing = [p for p in self.blocks[k].after + self.blocks[k].norm_after
                       if self._index(p) is not None and self._index(p) not in self.started]
            if missing:
                cat = "anticipation" if act[0] in PUTS else "sequence"
                return 0.75, cat, f"'{self.texts[k]}' before '{self.texts[self._index(missing[0])]}'"
        if act[0] in ("human-open-location", "human-switch-on-location", "human-switch-on-object"):
            if act[1] not in self.named and not any(a in self.named for a in act[1:]):
                return 0.5, "action_addition", "the procedure never mentions this"
        return None

    def _index(self, bid: str) -> int | None:
        return next((i for i, b in enumerate(self.blocks) if b.id == bid), None)

    def step(self, t: int, action: str) -> StepOutput:
        if action == TASK_END:
            return end_of_task(len(self.blocks), self.started, self.texts, t)
        act = parse_action(action)
        narration = words(act)
        m = self.matcher.match(narration)
        # the matcher always returns a step (difflib below tau); only a TF-IDF match counts as evidence that the
        # action serves that step (difflib ratios of short PDDL renderings are rarely informative)
        matched = m.method == "tfidf"
        why = check_action(self.state, act)
        if why is not None:
            dev: tuple[float, str, str] | None = (0.9, "sequence", f"not executable: {why}")
        else:
            dev = self._deviation(act, m.index, matched)
            apply_action(self.state, act)
        self.history.append(act)
        if matched and act[0] != "human-move":
            self.started.add(m.index)
        if dev is None:
            return StepOutput(0.02 + 0.05 * (1.0 - min(1.0, m.score)))
        prob, cat, evidence = dev
        self.alarmed.add(m.index)
        ev = {"narration": narration, "step": self.texts[m.index], "match": round(m.score, 3), "method": m.method,
              "why": evidence}
        if self.mode == "deep":
            cat, extra = self.classify_deep(act, self.texts, m.index, evidence, cat)
            ev.update(extra)
        return StepOutput(prob, t, cat, ev)
