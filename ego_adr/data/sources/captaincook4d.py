"""CaptainCook4D (cooking recipes): the ``captaincook4d`` source.

Decisions taken from inspecting the developer split (``../shared/egoerrorvqa``):

CaptainCook4D ``action_annotation`` equals ``original_description``; both read ``"<Verb>-<step text>"``
(``"Add-Add 1 can drained tuna to the bowl"``). :func:`clean_cc4d_description` drops the verb prefix when the
step text already contains that verb, else joins them with a space (``"Add-1/4 tbsp vinegar"`` ->
``"Add 1/4 tbsp vinegar"``). ``modified_description`` is never used: for error clips it holds the error
description (``"Skipped this step"``) and would leak the label into the action.

Videos: ``{video_root}/captaincook4d/{video_id}_360p.mp4`` (the public evaluator's layout).
"""

from __future__ import annotations

import re
from pathlib import Path

from ego_adr.data.sources.spec import Extracted, SourceSpec, is_correct_flag, text, video_id_of


def clean_cc4d_description(raw: str) -> str:
    """``"Add-Add 1 can tuna"`` -> ``"Add 1 can tuna"``; ``"Add-1/4 tbsp vinegar"`` -> ``"Add 1/4 tbsp vinegar"``.

    The prefix before the first hyphen is the step's verb (sometimes a phrase, "Measure and add"). It is
    dropped when the step text already uses that verb (compared on its first four letters so that
    "slicing-Continue slicing ..." and "Microwave -Continue to Microwave ..." lose it too) and kept otherwise.
    """
    prefix, sep, rest = raw.partition("-")
    prefix, rest = prefix.strip(), rest.strip()
    if not sep or not prefix or not rest or len(prefix.split()) > 4:
        return raw.strip()
    stem = prefix.split()[0].lower()[:4]
    if re.search(r"(?<![a-z])" + re.escape(stem), rest.lower()):
        return rest
    return f"{prefix} {rest}"


def extract(record: dict, context=None) -> Extracted:
    action, fieldname = None, "none"
    for key in ("action_annotation", "original_description"):
        raw = text(record.get(key))
        if raw:
            action, fieldname = clean_cc4d_description(raw), key
            break
    descriptions: list[str] = []
    for err in record.get("errors") or []:
        desc = text(err.get("description")) if isinstance(err, dict) else None
        if desc and desc not in descriptions:
            descriptions.append(desc)
    return Extracted(
        action=action,
        action_field=fieldname,
        reference="; ".join(descriptions) or None,
        is_correct=is_correct_flag(record),
        id_parts=(f"step{text(record.get('step_id')) or '?'}",),
    )


def video_path(root: Path, record: dict) -> str:
    return str(root / "captaincook4d" / f"{video_id_of(record)}_360p.mp4")


SPEC = SourceSpec(
    name="captaincook4d",
    files={"multiple-choice": "captaincook4d_answer.json", "open-end": "captaincook4d_qa_pairs_updated.json"},
    video_path=video_path,
    extract=extract,
    label="Cook",
    description="CaptainCook4D cooking recordings",
    layout="captaincook4d/{video_id}_360p.mp4",
)
