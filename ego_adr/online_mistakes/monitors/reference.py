"""The reference rules of the step streams (issue 42): what the training vocabulary alone says, threshold-free.

- ``unseen-step``: a step no training recording contains is a mistake;
- ``unseen-transition``: a step whose pair (previous step, this step) no training recording contains is a mistake
  (the first step of a recording follows a start symbol, so a first step no training recording begins with is one
  too). A step never seen is never part of a seen pair: ``unseen-transition`` raises every alarm ``unseen-step``
  raises.

They read the correct training sequences and the observed prefix only, choose nothing and have no threshold (one
operating point for every column). Like the blind baselines (:mod:`.baselines`) they are printed beside every
table and never chosen as the headline (:data:`ego_adr.online_mistakes.registry.REFERENCE`): a monitor that
learns the procedure is worth reading where it adds to them, which each table shows by the rules' alarm agreement
with the monitor (:func:`ego_adr.online_mistakes.goal.agreement`).

``unseen-transition`` is, word for word, the rule we registered before as ``one-step-memory`` (our reading of
TI-PREGO's "One-step memory" row, Plini et al., Table 2, whose definition is not published; it does not reproduce
that row). One rule has one row: ``one-step-memory`` stays an alias of ``unseen-transition`` (the same folder, the
same numbers), and TI-PREGO's published row keeps its own name in the published rows.
"""

from __future__ import annotations

from ego_adr.monitoring.monitor import Monitor, StepOutput
from ego_adr.online_mistakes.types import StepContext, TrainingSet

START = -1  # the step before the first one (PREGO's prompts start every sequence with -1)
NOTHING_TO_CHOOSE = {"hyper_parameters": {}, "chosen_by": "nothing to choose: a reference rule reads only the "
                     "training vocabulary and has no threshold"}


class UnseenStep(Monitor):
    """A step no training recording contains is a mistake."""

    selection = NOTHING_TO_CHOOSE

    def fit(self, train: TrainingSet) -> None:
        self.seen = {int(x) for seq in train.sequences for x in seq}

    def reset(self, ctx: StepContext) -> None:
        pass

    def step(self, t: int, step_id: int) -> StepOutput:
        known = step_id in self.seen
        return StepOutput(0.0 if known else 1.0, flagged=not known, evidence={"seen_in_training": known})


class UnseenTransition(Monitor):
    """A transition (previous step -> this step) never seen in the training sequences is a mistake."""

    selection = NOTHING_TO_CHOOSE
    note = ("the rule registered before as one-step-memory (now its alias): our reading of TI-PREGO's One-step "
            "memory, whose definition is not published; it does not reproduce TI-PREGO's row (printed beside ours)")

    def fit(self, train: TrainingSet) -> None:
        self.seen: set[tuple[int, int]] = set()
        for seq in train.sequences:
            path = (START, *(int(x) for x in seq))
            self.seen.update(zip(path, path[1:]))

    def reset(self, ctx: StepContext) -> None:
        self.prev = START

    def step(self, t: int, step_id: int) -> StepOutput:
        known = (self.prev, step_id) in self.seen
        out = StepOutput(0.0 if known else 1.0, flagged=not known,
                         evidence={"transition": [self.prev, step_id], "seen_in_training": known})
        self.prev = step_id
        return out
