"""EPIC-Tent (pitching a tent outdoors): the ``epic_tent`` source.

Epic-Tent ``action_annotation`` values ``instruction`` (the "read the instructions" action class) and
``unknown action`` say nothing about which step of the procedure it is: the action is ``None``
(``action_field = "uninformative"``) and the step must come from matching. Its ``error_annotation_main`` (``"motor error"``, ``"steps out of order"``, ...) names
``error_label_main``, so it is not used as reference text: error clips have no reference description.

Videos: ``{video_root}/epic-tent/0{video_id}.tent.gopro.MP4`` (the public evaluator's layout).
"""

from __future__ import annotations

from pathlib import Path

from ego_adr.data.sources.spec import (
    UNINFORMATIVE_ACTIONS,
    Extracted,
    SourceSpec,
    is_correct_flag,
    text,
    video_id_of,
)


def extract(record: dict, context=None) -> Extracted:
    raw = text(record.get("action_annotation"))
    if raw is None or raw.lower() in UNINFORMATIVE_ACTIONS:
        action, fieldname = None, "uninformative"
    else:
        action, fieldname = raw, "action_annotation"
    return Extracted(
        action=action,
        action_field=fieldname,
        reference=None,  # error_annotation_main names error_label_main, see the module docstring
        is_correct=is_correct_flag(record),
        id_parts=(f"act{text(record.get('action_label')) or '?'}",),
    )


def video_path(root: Path, record: dict) -> str:
    return str(root / "epic-tent" / f"0{video_id_of(record)}.tent.gopro.MP4")


SPEC = SourceSpec(
    name="epic_tent",
    files={"multiple-choice": "epic_tent_answer_sec.json", "open-end": "epic_tent_qa_pair.json"},
    video_path=video_path,
    extract=extract,
    label="Tent",
    aliases=("epic-tent", "epictent"),
    description="EPIC-Tent outdoor tent-pitching recordings",
    layout="epic-tent/0{video_id}.tent.gopro.MP4",
)
