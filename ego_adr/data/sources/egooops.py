"""EgoOops (lab experiments and hand-held assembly): the ``egooops`` source.

EgoOops ``instruction`` is a **0-based index into EgoOops' own fine-grained step list**, not into the
sentences of the ``procedure.json`` paragraph: indices reach 13 for ``cardboard`` whose paragraph has 7-9
sentences, and every (task, index) pair that carries an ``instruction_label`` carries the same label. ``-1``
means "no step" (extra actions such as grasping a propeller). Correct clips carry the step text in
``instruction_label``/``action_annotation``; error clips carry ``null`` in both. The loader therefore builds
the (task, index) -> step text table from the labels present in the EgoOops files and gives every EgoOops
clip its step text through that table (``action_field = "instruction"``), so that correct and error clips
get their action the same way and the presence of the text does not reveal the label. Against the
rule-based split of the paragraph (``ego_adr.reasoning.procedures.split_steps``) 0-based indexing fits better than
1-based (mean difflib similarity 0.53 vs 0.45 on the 236 labelled records) but 75 of them fall out of
range, so that split is not used.

Videos: ``{video_root}/egooops/{task_id}/{video_id}.MP4``; video ids are camera file names, unique only
within a task, so the task goes into the sample id too.
"""

from __future__ import annotations

from pathlib import Path

from ego_adr.data.sources.spec import (
    Extracted,
    SourceSpec,
    as_int,
    is_correct_flag,
    task_id_of,
    text,
    video_id_of,
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


def extract(record: dict, steps: dict[tuple[str, int], str] | None = None) -> Extracted:
    steps = steps or {}
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
        is_correct=is_correct_flag(record),
        id_parts=(f"instr{idx if idx is not None else '?'}",),
        step_index=step_index,
    )


def video_path(root: Path, record: dict) -> str:
    return str(root / "egooops" / task_id_of(record) / f"{video_id_of(record)}.MP4")


def id_prefix(record: dict) -> tuple[str, ...]:
    return (task_id_of(record) or "?",)


SPEC = SourceSpec(
    name="egooops",
    files={"multiple-choice": "egooops_answer.json", "open-end": "egooops_qa_pair.json"},
    video_path=video_path,
    extract=extract,
    label="Hand",
    context=egooops_step_table,
    id_prefix=id_prefix,
    description="EgoOops lab and hand-held procedure recordings",
    layout="egooops/{task_id}/{video_id}.MP4",
)
