"""Per-source field extraction for the EgoErrorVQA annotation files.

Each of the four public sources (and the embedded demo set) keeps its own native fields in the EgoErrorVQA
release. This module turns one raw record into the source-independent pieces a :class:`~ego_adr.data.Sample`
needs -- the action text and where it came from, the free-text reference description, whether the clip is
annotated as correct, and the identity parts of a stable sample id. :mod:`ego_adr.data.egoerrorvqa` does the
file handling, labels, windows and ids on top of it.

Decisions taken from inspecting the data (the developer split in ``../shared/egoerrorvqa``):

* CaptainCook4D ``action_annotation`` equals ``original_description``; both read ``"<Verb>-<step text>"``
  (``"Add-Add 1 can drained tuna to the bowl"``). :func:`clean_cc4d_description` drops the verb prefix when the
  step text already contains that verb, else joins them with a space (``"Add-1/4 tbsp vinegar"`` ->
  ``"Add 1/4 tbsp vinegar"``). ``modified_description`` is never used: for error clips it holds the error
  description (``"Skipped this step"``) and would leak the label into the action.
* Assembly101 ``error_annotation`` is a short label-like remark that maps one-to-one onto the error type
  (``"shouldn't have happened"`` -> Unintended..., ``"wrong order"``, ``"wrong position"`` -> Wrong action,
  ``"previous one is a mistake"`` -> Correct wrong action), so it is *not* used as reference text. Likewise
  Epic-Tent ``error_annotation_main`` (``"motor error"``, ``"steps out of order"``, ...) is the name of
  ``error_label_main``. Error clips of these two sources therefore have no reference description (``None``).
* EgoOops ``instruction`` is a **0-based index into EgoOops' own fine-grained step list**, not into the
  sentences of the ``procedure.json`` paragraph: indices reach 13 for ``cardboard`` whose paragraph has 7-9
  sentences, and every (task, index) pair that carries an ``instruction_label`` carries the same label. ``-1``
  means "no step" (extra actions such as grasping a propeller). Correct clips carry the step text in
  ``instruction_label``/``action_annotation``; error clips carry ``null`` in both. The loader therefore builds
  the (task, index) -> step text table from the labels present in the EgoOops files and gives every EgoOops
  clip its step text through that table (``action_field = "instruction"``), so that correct and error clips
  get their action the same way and the presence of the text does not reveal the label. Against the
  rule-based split of the paragraph (``ego_adr.procedures.split_steps``) 0-based indexing fits better than
  1-based (mean difflib similarity 0.53 vs 0.45 on the 236 labelled records) but 75 of them fall out of
  range, so that split is not used.
* Epic-Tent ``action_annotation`` values ``instruction`` (the "read the instructions" action class) and
  ``unknown action`` say nothing about which step of the procedure it is: the action is ``None``
  (``action_field = "uninformative"``) and the step must come from matching.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

CAPTAINCOOK4D = "captaincook4d"
EPIC_TENT = "epic_tent"
ASSEMBLY101 = "assembly101"
EGOOOPS = "egooops"
DEMO = "demo"

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


def _is_error_flag(record: dict) -> bool | None:
    flag = record.get("is_error")
    if isinstance(flag, bool):
        return not flag
    if isinstance(flag, str) and flag.strip().lower() in ("true", "false"):
        return flag.strip().lower() == "false"
    return None


def _captaincook4d(record: dict) -> Extracted:
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
        is_correct=_is_error_flag(record),
        id_parts=(f"step{text(record.get('step_id')) or '?'}",),
    )


def assembly101_action(record: dict) -> str | None:
    """``attach``/``interior``/``chassis`` -> ``"attach the interior to the chassis"`` (the phrasing the
    multiple-choice file's ``action_annotation`` uses; the open-ended file has only the three fields)."""
    verb, first, second = (text(record.get(k)) for k in ("verb", "first_object", "second_object"))
    if not verb:
        return None
    if not first:
        return verb
    out = f"{verb} the {first}"
    if second:
        prep = {"attach": "to", "detach": "from", "remove": "from"}.get(verb.lower(), "with")
        out += f" {prep} the {second}"
    return out


def _assembly101(record: dict) -> Extracted:
    action, fieldname = text(record.get("action_annotation")), "action_annotation"
    if action is None:
        action = assembly101_action(record)
        fieldname = "verb_objects" if action else "none"
    label = text(record.get("error_label"))
    slug = ":".join((text(record.get(k)) or "").replace(" ", "_") for k in ("verb", "first_object", "second_object"))
    return Extracted(
        action=action,
        action_field=fieldname,
        reference=None,  # error_annotation is a label-like remark, see the module docstring
        is_correct=None if label is None else label.lower() == "correct",
        id_parts=(slug,),
    )


def egooops_step_table(records: list[dict]) -> dict[tuple[str, int], str]:
    """(task_id, instruction index) -> step text, from the ``instruction_label`` of the records that carry one.

    When one key carries several labels (never in the release) the most frequent wins, ties alphabetically,
    so the table does not depend on file order.
    """
    counts: dict[tuple[str, int], dict[str, int]] = {}
    for r in records:
        if not isinstance(r, dict):
            continue
        label = text(r.get("instruction_label")) or text(r.get("action_annotation"))
        idx, task = as_int(r.get("instruction")), text(r.get("task_id"))
        if label is None or idx is None or idx < 0 or task is None:
            continue
        slot = counts.setdefault((task, idx), {})
        slot[label] = slot.get(label, 0) + 1
    return {k: sorted(v.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] for k, v in counts.items()}


def _egooops(record: dict, steps: dict[tuple[str, int], str]) -> Extracted:
    idx = as_int(record.get("instruction"))
    task = text(record.get("task_id")) or ""
    step_index = idx if idx is not None and idx >= 0 else None
    action, fieldname = None, "none"
    if step_index is not None and (task, step_index) in steps:
        action, fieldname = steps[(task, step_index)], "instruction"
    else:
        own = text(record.get("action_annotation"))
        if own:
            action, fieldname = own, "action_annotation"
    return Extracted(
        action=action,
        action_field=fieldname,
        reference=text(record.get("error_caption")),
        is_correct=_is_error_flag(record),
        id_parts=(f"instr{idx if idx is not None else '?'}",),
        step_index=step_index,
    )


def _epic_tent(record: dict) -> Extracted:
    raw = text(record.get("action_annotation"))
    if raw is None or raw.lower() in UNINFORMATIVE_ACTIONS:
        action, fieldname = None, "uninformative"
    else:
        action, fieldname = raw, "action_annotation"
    return Extracted(
        action=action,
        action_field=fieldname,
        reference=None,  # error_annotation_main names error_label_main, see the module docstring
        is_correct=_is_error_flag(record),
        id_parts=(f"act{text(record.get('action_label')) or '?'}",),
    )


def _demo(record: dict) -> Extracted:
    # Several demo samples share one video and omissions share the "whole" window: the step text tells them apart.
    action = text(record.get("action_annotation"))
    step = hashlib.sha1((action or "").encode()).hexdigest()[:6]
    return Extracted(
        action=action,
        action_field="action_annotation" if action else "none",
        reference=text(record.get("error_description")),
        is_correct=_is_error_flag(record),
        id_parts=(f"step-{step}",),
    )


def extract(source: str, record: dict, egooops_steps: dict[tuple[str, int], str] | None = None) -> Extracted:
    if source == CAPTAINCOOK4D:
        return _captaincook4d(record)
    if source == ASSEMBLY101:
        return _assembly101(record)
    if source == EGOOOPS:
        return _egooops(record, egooops_steps or {})
    if source == EPIC_TENT:
        return _epic_tent(record)
    if source == DEMO:
        return _demo(record)
    raise ValueError(f"unknown source {source!r}")


def video_id_of(record: dict) -> str:
    return text(record.get("video_id")) or text(record.get("recording_id")) or text(record.get("subject_id")) or ""


def task_id_of(record: dict) -> str:
    return text(record.get("task_id")) or text(record.get("activity_name")) or ""
