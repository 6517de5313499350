"""The monitors the CaptainCook4D benchmarks add to the registered step-stream monitors
(:data:`ego_adr.online_mistakes.registry.REGISTRY`, which all run here too), with what each reads.

The task input here (:data:`TASK_INPUT`) is the step-stream benchmarks' (the step taxonomy, the correct training
sequences, the observed prefix, the recording's task: its recipe) plus the recipe's official task graph, because
Ego-ADR takes the procedure as its task input and CaptainCook4D gives one per recipe, and the labelled training
recordings, which this data set's training split has. Nothing here reads a test label or more of a test recording
than its prefix, so nothing here is privileged; the monitor that learns from the training labels is *supervised*
(:data:`SUPERVISED`) and every table says so.
"""

from __future__ import annotations

from ego_adr.monitoring.registry import MonitorSpec, Registry
from ego_adr.online_mistakes.types import PREFIX, STEP_INPUT, TASK, TAXONOMY, TRAINING

RECIPE_GRAPH = "the recipe's official task graph"
LABELS = "the training recordings' labelled mistakes"
TASK_INPUT = (*STEP_INPUT, RECIPE_GRAPH, LABELS)
#: reference rules: what a step alone or a transition alone gives (issue 44), printed beside every table
REFERENCE = ("unseen-step", "unseen-transition")
SUPERVISED = ("supervised",)
#: a monitor that reads the official graph, one that reads a graph learned from the training sequences
OFFICIAL_GRAPH, LEARNED_GRAPH = "procedure-official", "procedure-learned"

_M = "ego_adr.captaincook4d.monitors"
REGISTRY = Registry("captaincook4d-complete / captaincook4d-o", TASK_INPUT, (
    MonitorSpec(OFFICIAL_GRAPH, f"{_M}:Procedure", "the recipe's official task graph followed step by step: a step "
                "before one it needs or after one that needs it, a required step never done (checks chosen on "
                "validation)", (TAXONOMY, PREFIX, TASK, RECIPE_GRAPH), (("graph", "official"),)),
    MonitorSpec(LEARNED_GRAPH, f"{_M}:Procedure", "the same monitor on the graph DTGL's DO learns per recipe from the "
                "correct training recordings", (TAXONOMY, TRAINING, PREFIX, TASK), (("graph", "learned"),),
                trains=True),
    MonitorSpec("supervised", f"{_M}:Supervised", "supervised: logistic regression over the official graph's checks, "
                "trained on the labelled steps of every training recording",
                (TAXONOMY, PREFIX, TASK, RECIPE_GRAPH, LABELS), trains=True),
    MonitorSpec("unseen-step", f"{_M}:UnseenStep", "reference rule: a step no correct training recording contains",
                (TRAINING, PREFIX), trains=True),
    MonitorSpec("unseen-transition", f"{_M}:UnseenTransition", "reference rule: a (previous step, step) pair no "
                "correct training recording contains", (TRAINING, PREFIX), trains=True),
))
