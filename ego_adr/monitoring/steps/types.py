"""What a step-stream monitor is given: the training set before the first recording, a context per recording,
then one step id at a time (:func:`ego_adr.monitoring.protocol.stream_episode`).

Step ids are the dataset's own (those of DTGL's ``train.json``/``test.json`` taxonomy; PREGO's prediction files
use the same ids). A monitor that reads only these is not privileged: the step taxonomy, the correct training
sequences and the observed prefix are the task input of both benchmarks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

#: What every step-stream monitor may read without being privileged.
TAXONOMY, TRAINING, PREFIX = "step taxonomy", "correct training sequences", "observed step prefix"
STEP_INPUT = (TAXONOMY, TRAINING, PREFIX)


@dataclass(frozen=True)
class TrainingSet:
    """The correct training sequences of one benchmark, each the step ids of one recording in order (consecutive
    repeats kept as the training file has them), and the taxonomy (step id -> name)."""

    benchmark: str
    sequences: tuple[tuple[int, ...], ...]
    taxonomy: Mapping[int, str]
    videos: tuple[str, ...] = ()


@dataclass(frozen=True)
class StepContext:
    """What a monitor learns of a test recording before its first step: nothing but its name and the taxonomy."""

    benchmark: str
    video: str
    taxonomy: Mapping[int, str] = field(default_factory=dict)
