"""What a step-stream monitor is given: the training set before the first recording, a context per recording,
then one step id at a time (:func:`ego_adr.monitoring.monitor.run_episode`).

Step ids are the dataset's own (those of DTGL's ``train.json``/``test.json`` taxonomy; PREGO's prediction files
use the same ids). A monitor that reads only these is not privileged: the step taxonomy, the correct training
sequences, the observed prefix and the task of the recording are the task input of both benchmarks. The task is
what the person sets out to do, known before the first step: on Assembly101-O the toy being assembled (the toy id in
the recording's name, e.g. ``a08`` in ``nusar-2021_action_both_9044-a08_...``; PREGO builds its in-context prompt
per toy from it), on EPIC-Tent-O always the tent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

#: What every step-stream monitor may read without being privileged.
TAXONOMY, TRAINING, PREFIX = "step taxonomy", "correct training sequences", "observed step prefix"
TASK = "task of the recording (Assembly101-O: the toy in its name)"
STEP_INPUT = (TAXONOMY, TRAINING, PREFIX, TASK)
#: What the test steps of a run are (``TrainingSet.steps``): the annotated segments, or a recogniser's output.
ORACLE_STEPS, RECOGNISED_STEPS = "oracle", "recognised"


@dataclass(frozen=True)
class TrainingSet:
    """The correct training sequences of one benchmark, each the step ids of one recording in order (consecutive
    repeats kept as the training file has them), and the taxonomy (step id -> name)."""

    benchmark: str
    sequences: tuple[tuple[int, ...], ...]
    taxonomy: Mapping[int, str]
    videos: tuple[str, ...] = ()
    # the recogniser-noise channel the monitors' validation episodes pass through ((kind, rate), ...): set by the
    # harness for a recogniser's stream (MiniRoad, a file), empty for the oracle steps (cv.NOISE)
    noise: tuple[tuple[str, float], ...] = ()
    # what the steps the monitor will be fed are (ORACLE_STEPS or RECOGNISED_STEPS), set with ``noise`` by
    # fitting.configured, the one place a run's stream configures its monitors (dtgl-do's config=auto reads it)
    steps: str = ORACLE_STEPS


@dataclass(frozen=True)
class StepContext:
    """What a monitor learns of a test recording before its first step: nothing but its name and the taxonomy."""

    benchmark: str
    video: str
    taxonomy: Mapping[int, str] = field(default_factory=dict)
