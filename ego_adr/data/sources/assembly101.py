"""Assembly101 (toy vehicle assembly): the ``assembly101`` source.

Assembly101 ``error_annotation`` is a short label-like remark that maps one-to-one onto the error type
(``"shouldn't have happened"`` -> Unintended..., ``"wrong order"``, ``"wrong position"`` -> Wrong action,
``"previous one is a mistake"`` -> Correct wrong action), so it is *not* used as reference text. Likewise
Epic-Tent ``error_annotation_main`` (``"motor error"``, ``"steps out of order"``, ...) is the name of
``error_label_main``. Error clips of these two sources therefore have no reference description (``None``).

Videos: ``{video_root}/assembly101/{video_id}/`` holds several camera views; the first existing one of
:data:`VIEWS` (the order the public evaluator tries them), else any ``HMC_*.mp4`` in the folder (sorted, so the
choice is stable), else the preferred path so that the "video not found" failure names the file to provide.
"""

from __future__ import annotations

from pathlib import Path

from ego_adr.data.sources.spec import Extracted, SourceSpec, text, video_id_of

VIEWS = ("HMC_84355350_mono10bit.mp4", "HMC_21110305_mono10bit.mp4")


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


def extract(record: dict, context=None) -> Extracted:
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


def video_path(root: Path, record: dict) -> str:
    folder = root / "assembly101" / video_id_of(record)
    for name in VIEWS:
        if (folder / name).is_file():
            return str(folder / name)
    if folder.is_dir():
        others = sorted(p for p in folder.glob("HMC_*.mp4") if p.is_file())
        if others:
            return str(others[0])
    return str(folder / VIEWS[0])


SPEC = SourceSpec(
    name="assembly101",
    files={"multiple-choice": "assembly101_answers.json", "open-end": "assembly101_qa_pairs_updated.json"},
    video_path=video_path,
    extract=extract,
    label="Toy",
    description="Assembly101 toy-vehicle assembly recordings",
    layout="assembly101/{video_id}/HMC_84355350_mono10bit.mp4 (else HMC_21110305_mono10bit.mp4, else HMC_*.mp4)",
)
