"""One type for every evaluation sample, whatever its source or task."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

MULTIPLE_CHOICE = "multiple-choice"
OPEN_END = "open-end"
TASKS = (MULTIPLE_CHOICE, OPEN_END)


@dataclass
class QAPair:
    question: str
    answer: str  # the reference answer


@dataclass
class Sample:
    """A clip of a procedural task with what the benchmark asks about it.

    ``start``/``end`` are seconds; ``None`` means the whole video (the public data uses -1 for omissions).
    ``action`` is the step the person was supposed to do, as text (``None`` when the source has none and it
    must be found by matching). ``ground_truth`` is always a list of exact option strings (multiple choice;
    any match counts) and empty for open-ended samples, which carry ``qa_pairs`` instead. ``reference`` is
    the annotation's free-text description of what happened (never a label field): the reference-narration
    diagnostic uses it in place of a model's narration.
    """

    source: str
    task: str
    sample_id: str
    task_id: str
    procedure: str
    video_id: str
    video_path: str | None
    start: float | None
    end: float | None
    action: str | None
    action_field: str  # where ``action`` came from: action_annotation, original_description, instruction, ...
    ground_truth: list[str] = field(default_factory=list)
    qa_pairs: list[QAPair] = field(default_factory=list)
    reference: str | None = None
    step_index: int | None = None  # index into the procedure's steps when the source gives one (EgoOops)
    correct: bool | None = None  # the record's own correctness flag (else: ground truth is ``correct``); Table 2
    # the record's action_annotation / start_time / end_time as stored, for the public protocol (protocol.py)
    wire: dict = field(default_factory=dict)
    #: annotation fields the record lacks (task_id, close_end_answer, qa_pairs): the sample is a counted
    #: exclusion, never a failed answer in n (docs/runs.md, "Scoring never crashes on data")
    missing_fields: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)
