"""Ego-ADR as a streaming HelpMeOut monitor -- the *privileged* variant (a symbolic reference, not a peer).

It reads more than the task input: the episode's grounded goal (so every object outside it is a stranger) and
the generator's own planner over the clean scene (its expected actions). The Ego-ADR monitor that reads only the
task input is :mod:`.egoadr` (``egoadr``, ``egoadr-deep``); :mod:`.egoadr_knowledge` (``egoadr-knowledge``) adds
template knowledge and is privileged too, by less.

The procedure bank is built from the template's subgoal blocks: each block becomes one procedure step whose text
is the block description plus the actions the planner would take for it from the episode's initial scene. Every
observed action is rendered in words and matched to a block with the project's key-step matcher
(:class:`ego_adr.reasoning.matching.KeyStepMatcher`, TF-IDF 1-2-grams, difflib below tau -- the same matcher as the
EgoErrorVQA pipeline). The monitor replays the stream symbolically and classifies deviations into the nine
HelpMeOut categories:

- **shallow** mode: rules (unknown object/tool/location -> substitution; a repeated addition -> perseveration; a
  sibling operator -> action substitution; a put before the object's processing -> anticipation; a stir before
  the block's additions, or a block started before its predecessors -> sequence; an action no block needs ->
  action addition; unmet goals at the task end -> omission);
- **deep** mode: the same detector, but each alarm's type is decided by a model through the project's one model
  protocol (a text-only :class:`~ego_adr.models.base.Request`), with :data:`ego_adr.reasoning.prompts.HELPMEOUT_CLASSIFY_PROMPT`; an
  unparseable answer falls back to the rule's type and is recorded in the evidence.
"""

from __future__ import annotations

from ego_adr.helpmeout.generator.generator_sites import PROCESSING
from ego_adr.helpmeout.monitors.base import EpisodeContext, StepOutput
from ego_adr.helpmeout.monitors.egoadr_base import MINOR_ACTIONS, EgoADRBase, words
from ego_adr.helpmeout.monitors.knowledge import grounded_template
from ego_adr.helpmeout.monitors.rules import PUTS, REPEATABLE, stranger
from ego_adr.helpmeout.world import ontology as onto
from ego_adr.helpmeout.world.domain import TASK_END, Action, goal_unmet, parse_action, state_from_facts
from ego_adr.helpmeout.world.operators import ACTION_CONFUSIONS, apply_action, check_action
from ego_adr.helpmeout.world.templates import Scene
from ego_adr.helpmeout.world.trajectory_planner import PlanError, plan


class EgoADRPrivilegedMonitor(EgoADRBase):
    name = "egoadr-privileged"

    def __init__(self, mode: str = "shallow", model=None, templates_dir: str | None = None, tau: float = 0.25) -> None:
        super().__init__(mode, model, templates_dir, tau)
        self.name = "egoadr-privileged" if mode == "shallow" else "egoadr-privileged-deep"

    def reset(self, ctx: EpisodeContext) -> None:
        from ego_adr.reasoning.matching import KeyStepMatcher

        self.ctx = ctx
        self.t = grounded_template(ctx, self.templates_dir)
        self.state = state_from_facts(ctx.initial_scene)
        self.known = self.t.objects() | self.t.scene_locations()
        self.workplaces = {v for b in self.t.blocks for _, v in b.using}  # boards, fold surfaces, appliances
        scene = Scene([tuple(f) for f in self.t.scene], set(self.state.locations), self.t.start)
        try:
            bank_steps = plan(self.t, scene)
        except PlanError:
            bank_steps = []
        self.expected = {s.action for s in bank_steps}
        self.expected_ops: dict[str, set[str]] = {}
        for s in bank_steps:
            if len(s.action) > 1:
                self.expected_ops.setdefault(s.action[1], set()).add(s.action[0])
        self.block_texts = []
        for b in self.t.blocks:
            acts = [words(s.action) for s in bank_steps if s.block == b.id and s.action[0] not in MINOR_ACTIONS[:1]]
            self.block_texts.append(f"{b.text}: " + "; ".join(acts))
        self.matcher = KeyStepMatcher(self.block_texts, tau=self.tau)
        self.placements: dict[str, set[str]] = {}  # final places (store/serve/pack)
        self.waypoints: dict[str, set[str]] = {}  # transient places on the way
        for b in self.t.blocks:
            for s in b.subgoals:
                if s.fact[0] in ("ontop", "inside", "in", "on"):
                    d = self.waypoints if s.transient else self.placements
                    d.setdefault(s.fact[1], set()).add(s.fact[2])
        self.history = []
        self.alarmed_blocks: set[str] = set()

    # --- rules -------------------------------------------------------------------------------------------
    def _pending(self, fact_pred: tuple[str, ...], arg: str) -> bool:
        return any(s.fact[0] in fact_pred and s.fact[1] == arg and not s.transient and not self.state.satisfies(s.fact)
                   for b in self.t.blocks for s in b.subgoals)

    def _block_done(self, bid: str) -> bool:
        return all(self.state.satisfies(g) for g in self.t.block(bid).goal)

    def _deviation(self, act: Action, block_idx: int) -> tuple[float, str, str] | None:
        odd = stranger(act, self.known)
        if odd is not None:
            cls = onto.class_of(odd)
            cat = {"tool": "tool_substitution", "location": "location_substitution"}.get(cls or "", "object_substitution")
            return 0.9, cat, f"{odd} is not part of this task"
        if act[0] in REPEATABLE and act in self.history:
            return 0.9, "perseveration", "this addition was already done"
        if act not in self.expected and len(act) > 1:
            exp = self.expected_ops.get(act[1], set())
            for group in ACTION_CONFUSIONS:
                if act[0] in group and exp & group and act[0] not in exp:
                    return 0.85, "action_substitution", f"expected {sorted(exp & group)[0]} on {act[1]}"
        if act[0] in PUTS:
            obj, target = act[1], act[2]
            want = self.placements.get(obj)
            ok = (want or set()) | self.waypoints.get(obj, set()) | self.workplaces
            if want and target not in ok and onto.is_location(target) and act not in self.expected:
                return 0.8, "location_substitution", f"{obj} belongs in {sorted(want)[0]}"
            if want and target in want and target not in self.workplaces and self._pending(PROCESSING, obj):
                return 0.85, "anticipation", f"{obj} is stored before it is processed"
        if act[0] == "human-close-receptacle":
            pending_in = [s for b in self.t.blocks for s in b.subgoals
                          if s.fact[0] == "in" and s.fact[2] == act[1] and not self.state.satisfies(s.fact)]
            if pending_in:
                return 0.85, "anticipation", f"{act[1]} closed before {pending_in[0].fact[1]} is in"
        if act[0] == "human-stir":
            if any(s.fact[0] == "contains" and s.fact[1] == act[1] and not self.state.satisfies(s.fact)
                   for b in self.t.blocks for s in b.subgoals):
                return 0.85, "sequence", f"{act[1]} stirred before all additions"
        if act[0] not in MINOR_ACTIONS:
            block = self.t.blocks[block_idx]
            missing = [p for p in block.after + block.norm_after if not self._block_done(p)]
            if missing and act not in self.expected:
                return 0.75, "sequence", f"block {block.id} started before {missing[0]}"
            if missing and block.norm_after and any(p in missing for p in block.norm_after):
                return 0.7, "sequence", f"block {block.id} done before {missing[0]} (order norm)"
        if act[0] in ("human-open-location", "human-switch-on-location", "human-switch-on-object") and \
                act not in self.expected:
            return 0.6, "action_addition", "no procedure block needs this"
        if act[0] in PUTS and act not in self.expected and act[1] not in self.placements and \
                not any(act[1] in s.fact for b in self.t.blocks for s in b.subgoals):
            return 0.6, "action_addition", f"{act[1]} is moved for no subgoal"
        return None

    def _end(self, t: int) -> StepOutput:
        """Unmet goals at the end: an omission when some unmet goal's block was never worked on; when every
        unmet goal belongs to a block that already raised an alarm, it is that error's consequence."""
        unmet = goal_unmet(self.state, self.t.goal)
        if not unmet:
            return StepOutput(0.02)
        ev = {"unmet": [" ".join(u) for u in unmet[:3]]}
        for fact in unmet:
            block = next(b for b in self.t.blocks if tuple(fact) in b.goal)
            if block.id not in self.alarmed_blocks:
                return StepOutput(0.95, t, "omission", ev)
        return StepOutput(0.35, t, "omission", ev)

    # --- streaming ---------------------------------------------------------------------------------------
    def step(self, t: int, action: str) -> StepOutput:
        if action == TASK_END:
            return self._end(t)
        act = parse_action(action)
        m = self.matcher.match(words(act))
        why = check_action(self.state, act)
        if why is not None:
            dev: tuple[float, str, str] | None = (0.9, "sequence", f"not executable: {why}")
        else:
            dev = self._deviation(act, m.index)
            apply_action(self.state, act)
        self.history.append(act)
        if dev is None:
            return StepOutput(0.02 + 0.05 * (1.0 - min(1.0, m.score)), None, None)
        prob, cat, evidence = dev
        self.alarmed_blocks.add(self.t.blocks[m.index].id)
        ev = {"block": self.t.blocks[m.index].id, "match": round(m.score, 3), "method": m.method, "why": evidence}
        if self.mode == "deep":
            cat, extra = self.classify_deep(act, self.block_texts, m.index, evidence, cat)
            ev.update(extra)
        return StepOutput(prob, t, cat, ev)
