"""The monitors of the CaptainCook4D benchmarks, with what each reads: every registered step-stream monitor
(:data:`STEP_MONITORS`, the blind baselines and the reference rules among them) and the three this data set adds
(:data:`OWN`), in one :class:`~ego_adr.monitoring.registry.Registry` (:data:`REGISTRY`), from which ``--monitor``'s
choices, ``--help``, ``list`` and ``all`` derive.

**One rule, one row.** The reference rules ``unseen-step`` and ``unseen-transition`` (alias ``one-step-memory``)
are the step streams' own (issue 42), taken from their registry by name: CaptainCook4D keeps no copy, ``all`` runs
each once, and a later rename of the step-stream package touches the one import below.

The task input here (:data:`TASK_INPUT`) is the step-stream benchmarks' (the step taxonomy, the correct training
sequences, the observed prefix, the recording's task: its recipe) plus the recipe's official task graph, because
Ego-ADR takes the procedure as its task input and CaptainCook4D gives one per recipe, and the labelled training
recordings, which this data set's training split has. Nothing here reads a test label or more of a test recording
than its prefix, so nothing here is privileged; the monitor that learns from the training labels is *supervised*
(:data:`SUPERVISED`) and every table says so.
"""

from __future__ import annotations

from ego_adr.monitoring.registry import MonitorSpec, Registry
from ego_adr.online_mistakes import registry as steps  # the step-stream monitors: the one import of them
from ego_adr.online_mistakes.types import PREFIX, STEP_INPUT, TASK, TAXONOMY, TRAINING

RECIPE_GRAPH = "the recipe's official task graph"
LABELS = "the training recordings' labelled mistakes"
TASK_INPUT = (*STEP_INPUT, RECIPE_GRAPH, LABELS)
#: the step streams' monitor registry and its rules: blind baselines, reference rules (printed beside every table)
STEP_MONITORS = steps.REGISTRY
BLIND, REFERENCE = steps.BLIND, steps.REFERENCE
SUPERVISED = ("supervised",)
#: a monitor that reads the official graph, one that reads a graph learned from the training sequences
OFFICIAL_GRAPH, LEARNED_GRAPH = "procedure-official", "procedure-learned"

_M = "ego_adr.captaincook4d.monitors"
OWN = (
    MonitorSpec(OFFICIAL_GRAPH, f"{_M}:Procedure", "the recipe's official task graph followed step by step: a step "
                "before one it needs or after one that needs it, a required step never done (checks chosen on "
                "validation)", (TAXONOMY, PREFIX, TASK, RECIPE_GRAPH), (("graph", "official"),)),
    MonitorSpec(LEARNED_GRAPH, f"{_M}:Procedure", "the same monitor on the graph DTGL's DO learns per recipe from the "
                "correct training recordings", (TAXONOMY, TRAINING, PREFIX, TASK), (("graph", "learned"),),
                trains=True),
    MonitorSpec("supervised", f"{_M}:Supervised", "supervised: logistic regression over the official graph's checks, "
                "trained on the labelled steps of every training recording",
                (TAXONOMY, PREFIX, TASK, RECIPE_GRAPH, LABELS), trains=True),
)
REGISTRY = Registry("captaincook4d-complete / captaincook4d-o", TASK_INPUT, (*STEP_MONITORS, *OWN))
#: the group of a monitor that needs a model (prego, prego-lm) and the groups that are never the headline
MODEL_GROUP = "language model"
NOT_CANDIDATES = ("blind", "reference", MODEL_GROUP)
#: the monitors of this room (the others are the step streams')
OWN_NAMES = tuple(s.name for s in OWN)


def unavailable(name: str) -> str | None:
    """Why a step-stream monitor cannot run on this machine (a package it needs is missing), or None."""
    return steps.unavailable(name) if name not in OWN_NAMES else None
