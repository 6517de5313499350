"""Two reference monitors of the step streams: ``flag-all`` (always alarms) and ``one-step-memory`` (a transition
never seen in the correct training sequences is a mistake). Neither has a hyper-parameter, so their ``selection``
says there was nothing to choose.

``flag-all`` is the row that shows what a metric gives away for free: it scores recall 1, balanced precision 0.5 and
balanced F1 0.667 on any data set (TI-PREGO's F1b), and a macro F1 of half its mistake F1 (DTGL's).

``one-step-memory`` is our reading of TI-PREGO's (Plini et al., Table 2) "One-step memory" row: the anticipated next
steps after step ``a`` are the steps that followed ``a`` somewhere in training (the first step: those that began a
training sequence), and a step outside them is a mistake. TI-PREGO gives no definition; this reading does not
reproduce its row (ours is reported beside theirs, and the report says so).
"""

from __future__ import annotations

from ego_adr.monitoring.protocol import Monitor, StepOutput
from ego_adr.online_mistakes.types import StepContext, TrainingSet

START = -1  # the step before the first one (PREGO's prompts start every sequence with -1)
NOTHING_TO_CHOOSE = {"hyper_parameters": {}, "chosen_by": "nothing to choose: the monitor has no hyper-parameter"}


class FlagAll(Monitor):
    """Alarms at every step."""

    selection = NOTHING_TO_CHOOSE

    def reset(self, ctx: StepContext) -> None:
        pass

    def step(self, t: int, step_id: int) -> StepOutput:
        return StepOutput(1.0, flagged=True)


class OneStepMemory(Monitor):
    """A transition (previous step -> this step) never seen in the training sequences is a mistake."""

    selection = NOTHING_TO_CHOOSE
    note = ("our reading of TI-PREGO's One-step memory, whose definition is not published; it does not reproduce "
            "TI-PREGO's row (printed beside ours)")

    def fit(self, train: TrainingSet) -> None:
        self.seen: set[tuple[int, int]] = set()
        for seq in train.sequences:
            path = (START, *seq)
            self.seen.update(zip(path, path[1:]))

    def reset(self, ctx: StepContext) -> None:
        self.prev = START

    def step(self, t: int, step_id: int) -> StepOutput:
        known = (self.prev, step_id) in self.seen
        out = StepOutput(0.0 if known else 1.0, flagged=not known,
                         evidence={"transition": [self.prev, step_id], "seen_in_training": known})
        self.prev = step_id
        return out
