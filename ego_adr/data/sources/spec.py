"""What a data source is: one :class:`SourceSpec` per dataset, and the small field helpers every source uses.

A source is everything that differs between the datasets EgoErrorVQA was built from: the names of its
annotation files, where its videos lie, which fields carry the action text, the free-text description and the
correctness flag, and what tells two clips apart. The loader (:mod:`ego_adr.data.egoerrorvqa`) does the rest
(labels, windows, ids, issues) once for all sources, so a new dataset is one new module that defines a
``SPEC`` and one entry in the registry (:mod:`ego_adr.data.sources`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Epic-Tent action classes that do not name a step (compared lower-cased, stripped).
UNINFORMATIVE_ACTIONS = frozenset({"", "instruction", "unknown action", "unknown", "none", "null"})


@dataclass
class Extracted:
    """What one raw record contributes beyond the common fields."""

    action: str | None
    action_field: str  # action_annotation | original_description | verb_objects | instruction | uninformative | none
    reference: str | None  # free-text description of an error clip (the caller fills in correct clips)
    is_correct: bool | None  # from the record's own flag; None when the record has none
    id_parts: tuple[str, ...]  # identity of the clip beyond source, video id and window
    step_index: int | None = None


def _no_prefix(record: dict) -> tuple[str, ...]:
    return ()


@dataclass(frozen=True)
class SourceSpec:
    """One dataset. ``files`` maps a task (``multiple-choice`` / ``open-end``) to its annotation file in the data
    root; ``video_path(video_root, record)`` is the clip's video by the dataset's layout; ``extract(record,
    context)`` reads its native fields; ``context(records)`` is built once per load from all of the
    source's records (every task's file) for sources that need cross-record tables (EgoOops' step list); ``id_prefix(record)`` adds identity before the video id (EgoOops
    video ids are unique only within a task). ``label`` heads the source's column in the Table 3/4 reports.
    ``public`` sources are the released benchmark's and run by default; ``aliases`` are accepted spellings.
    ``normalise(record)`` maps a dataset with its own schema onto the fields the loader reads for every source
    (``video_id``, ``task_id``, ``start_time``, ``end_time``, ``close_end_answer`` or ``qa_pairs``); the
    EgoErrorVQA sources already use them."""

    name: str
    files: Mapping[str, str]
    video_path: Callable[[Path, dict], str]
    extract: Callable[[dict, Any], Extracted]
    label: str
    public: bool = True
    aliases: tuple[str, ...] = ()
    context: Callable[[list[dict]], Any] | None = None
    id_prefix: Callable[[dict], tuple[str, ...]] = _no_prefix
    normalise: Callable[[dict], dict] | None = None
    description: str = ""
    layout: str = ""  # the video layout in words, for help texts and "video not found" hints
    extras: Mapping[str, Any] = field(default_factory=dict)


def text(value: Any) -> str | None:
    """A stripped non-empty string, or None."""
    if value is None:
        return None
    s = str(value).strip()
    return s or None


def as_int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def is_correct_flag(record: dict) -> bool | None:
    """``is_error`` (a bool or "true"/"false") as "is this clip correct"; None when absent."""
    flag = record.get("is_error")
    if isinstance(flag, bool):
        return not flag
    if isinstance(flag, str) and flag.strip().lower() in ("true", "false"):
        return flag.strip().lower() == "false"
    return None


def video_id_of(record: dict) -> str:
    return text(record.get("video_id")) or text(record.get("recording_id")) or text(record.get("subject_id")) or ""


def task_id_of(record: dict) -> str:
    return text(record.get("task_id")) or text(record.get("activity_name")) or ""
