"""The monitors of the step-stream benchmarks (Assembly101-O and EPIC-Tent-O share them): one spec per monitor,
from which ``--monitor``'s choices, its ``--help`` and the privileged block of every summary derive.

The task input of both benchmarks is :data:`~ego_adr.monitoring.steps.types.STEP_INPUT` (the step taxonomy, the
correct training sequences, the observed prefix, the recording's task); a monitor that reads more is privileged
and reported apart. Every monitor here is deterministic: the same output on every run and any ``PYTHONHASHSEED``.
"""

from __future__ import annotations

from ego_adr.monitoring.registry import MonitorSpec, Registry
from ego_adr.monitoring.steps.types import PREFIX, STEP_INPUT, TASK, TAXONOMY, TRAINING

_M = "ego_adr.monitoring.steps.monitors"

REGISTRY = Registry("assembly101-o / epic-tent-o", STEP_INPUT, (
    MonitorSpec("flag-all", f"{_M}.baselines:FlagAll", "alarms at every step (what F1b gives away: 0.667)", ()),
    MonitorSpec("one-step-memory", f"{_M}.baselines:OneStepMemory",
                "a transition never seen in the training sequences is a mistake (our reading of TI-PREGO's row)",
                (TRAINING, PREFIX), trains=True),
    MonitorSpec("count-based", f"{_M}.count_based:CountBased",
                "DTGL's Count-Based transition graph and precondition check, without its hash-seed dependence",
                (TRAINING, PREFIX), trains=True),
    MonitorSpec("prego", f"{_M}.prego:Prego",
                "PREGO: an LLM anticipates the next step in context; a step outside the anticipated set is a "
                "mistake (--model NAME)", (TAXONOMY, TRAINING, PREFIX, TASK), trains=True, needs_model=True),
))
