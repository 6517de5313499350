"""The public green agent's multiple-choice question, rebuilt so that our green agent sends the same bytes.

Why: a white agent must get the same numbers from our green agent as from the public one
(z1oong/EgoErrorVQA ``src/green_agent/agent.py``, which produced the paper's Table 4). So, for multiple choice,
the default question wording (``question_wording: "public"``) is the public message, field for field:

* the public error-type guidance text, **read at run time from the public evaluator's own source file** (it is
  their prose; we do not ship it). :func:`find_public_root` looks in ``eval_config["public_evaluator_root"]``,
  ``$EGO_ADR_PUBLIC_EVALUATOR``, ``<json_root>/public-evaluator`` (where ``scripts/download_annotations.py``
  puts it) and ``<json_root>/../public-evaluator``; missing, it is a one-line error naming those places;
* ``Task Procedure:`` the task's paragraph from ``procedure_json_path`` (``No procedure available.`` when the
  task is not there, as the public agent writes);
* ``Current Step: "<action_annotation>"`` exactly as stored -- ``None`` for EgoOops, whose files hold ``null``;
* ``<start_ts>`` / ``<end_ts>``: the raw ``start_time`` / ``end_time`` values as Python prints them (``-1``,
  ``12.5``), not our normalised window;
* the video path by the public layout, as a plain string join (see :func:`public_video_path`);
* the tags joined by a newline and 44 spaces, the indentation of the public f-string.

Open-ended questions under the same wording are the public open-ended message (:func:`public_open_messages`);
only the choice of QA pair differs (seeded here, unseeded ``random.choice`` there).

``question_wording: "ego_adr"`` keeps our own wording (:func:`ego_adr.agents.messages.mc_question`: our
definitions from Appendix D, normalised window); it is a named alternative, recorded in every row and in the
default output folder's name.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ego_adr.agents.messages import ProtocolError
from ego_adr.data.public_source import (
    GREEN_AGENT,
    PublicSourceMissing,
    assigned_string,
    find_green_agent,
)
from ego_adr.reasoning.prompts import PUBLIC_MC

PUBLIC, OURS = "public", "ego_adr"
GREEN_SOURCE = GREEN_AGENT
GUIDANCE_NAME = "PROCEDURAL_ERROR_GUIDANCE"
MC_SEPARATOR = "\n" + " " * 44
OPEN_SEPARATOR = "\n" + " " * 40
NO_PROCEDURE = "No procedure available."
# The public agent's dataset -> (annotation file, video sub-folder); facts of its layout.
PUBLIC_FILES = {"captaincook4d": "captaincook4d_answer.json", "epic_tent": "epic_tent_answer_sec.json",
                "assembly101": "assembly101_answers.json", "egooops": "egooops_answer.json"}
PUBLIC_SUBDIRS = {"captaincook4d": "captaincook4d", "epic_tent": "epic-tent", "assembly101": "assembly101",
                  "egooops": "egooops"}
_PATTERNS = {
    "captaincook4d": ("{root}/{sub}/{vid}_360p.mp4",),
    "epic_tent": ("{root}/{sub}/0{vid}.tent.gopro.MP4",),
    "assembly101": ("{root}/{sub}/{vid}/HMC_84355350_mono10bit.mp4", "{root}/{sub}/{vid}/HMC_21110305_mono10bit.mp4"),
    "egooops": ("{root}/{sub}/{task}/{vid}.MP4",),
}


def find_public_root(explicit: str | None = None, json_root: str | None = None) -> Path:
    """The folder holding the public evaluator's ``src/green_agent/agent.py``; ProtocolError (one line) if none."""
    try:
        path = find_green_agent(json_root, explicit, why="the green agent's public question wording",
                                how="set eval_config public_evaluator_root / $EGO_ADR_PUBLIC_EVALUATOR, or use "
                                    "question_wording 'ego_adr'")
    except PublicSourceMissing as e:
        raise ProtocolError(str(e)) from None
    return path.parents[len(GREEN_SOURCE.parts) - 1] if path.name == GREEN_SOURCE.name else path


def read_guidance(root: str | Path) -> str:
    """The guidance string assigned at the top level of the public green agent, read without executing it."""
    path = Path(root) / GREEN_SOURCE
    try:
        value = assigned_string(path, GUIDANCE_NAME)
    except (OSError, SyntaxError, UnicodeDecodeError) as e:
        raise ProtocolError(f"cannot read the public evaluator's source {path}: {e}") from None
    if value is None:
        raise ProtocolError(f"{path} has no string {GUIDANCE_NAME}: is it the EgoErrorVQA green agent?")
    return value


def public_video_path(video_root: str, dataset: str, record: dict) -> str:
    """The path the public agent asks about: its patterns joined as strings (a trailing ``/`` in the root is kept,
    as there), the first that exists, Assembly101's any-``HMC_*.mp4`` fallback in directory order, else the first
    pattern."""
    sub = PUBLIC_SUBDIRS.get(dataset, dataset)
    task = record.get("task_id") or os.path.basename(record.get("task", "") or "")
    vid = record.get("video_id", "")
    patterns = _PATTERNS.get(dataset)
    if not patterns:
        return os.path.join(video_root, sub, f"{vid}.mp4")
    cands = [p.format(root=video_root, sub=sub, vid=vid, task=task) for p in patterns]
    for c in cands:
        if os.path.exists(c):
            return c
    if dataset == "assembly101":
        folder = os.path.join(video_root, sub, str(vid))
        if os.path.isdir(folder):
            for name in os.listdir(folder):
                if name.startswith("HMC_") and name.endswith(".mp4"):
                    return os.path.join(folder, name)
    return cands[0]


def public_question(guidance: str, procedures: dict, record: dict) -> str:
    """The green agent's question for one record: :data:`ego_adr.reasoning.prompts.PUBLIC_MC` (the one copy of the
    wording; :func:`ego_adr.reasoning.public_text.public_question` is the white agent's reading of it)."""
    task_id = record.get("task_id", "unknown")
    procedure = procedures.get(task_id, NO_PROCEDURE) if isinstance(task_id, (str, int)) else NO_PROCEDURE
    return PUBLIC_MC.render(guidance=guidance, procedure=procedure, step=record.get("action_annotation", ""))


def public_message(video_path: str, question: str, record: dict) -> str:
    start, end = record.get("start_time", ""), record.get("end_time", "")
    return MC_SEPARATOR.join([f"<video_path>{video_path}</video_path>", f"<question>{question}</question>",
                              f"<start_ts>{start}</start_ts>", f"<end_ts>{end}</end_ts>"])


def read_procedures(procedure_json_path: str | None, json_root: str) -> dict:
    path = Path(procedure_json_path) if procedure_json_path else Path(json_root) / "procedure.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise ProtocolError(f"cannot read the procedures {path}: {e}") from None
    if not isinstance(data, dict):
        raise ProtocolError(f"{path} must map task_id to procedure text")
    return data


def paired_records(samples: list, json_root: str, task: str) -> dict[str, dict]:
    """``{sample_id: raw annotation record}`` for every loaded sample (all of each source, before any limit).

    The raw records are re-read from the annotation files; the loader keeps one sample per JSON object in file
    order (:func:`ego_adr.data.egoerrorvqa.load_samples`), so the k-th sample of a source is its k-th record.
    """
    from ego_adr.data.egoerrorvqa import FILES

    by_source: dict[str, list] = {}
    for s in samples:
        by_source.setdefault(s.source, []).append(s)
    out: dict[str, dict] = {}
    for source, group in by_source.items():
        path = Path(json_root) / FILES[(source, task)]
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise ProtocolError(f"cannot read {path}: {e}") from None
        records = [r for r in (data if isinstance(data, list) else list(data.values())) if isinstance(r, dict)]
        if len(records) != len(group):
            raise ProtocolError(f"{path}: {len(records)} records but {len(group)} samples loaded; cannot pair them")
        out.update((s.sample_id, r) for s, r in zip(group, records))
    return out


def _path(video_root: str, s, record: dict) -> str:
    return public_video_path(video_root, s.source, record) if s.source in PUBLIC_FILES else (s.video_path or "")


def public_messages(samples: list, json_root: str, video_root: str, procedure_json_path: str | None,
                    guidance: str) -> dict[str, tuple[str, str]]:
    """``{sample_id: (message, video_path)}``: the public multiple-choice message of every loaded sample."""
    from ego_adr.data.sample import MULTIPLE_CHOICE

    procedures = read_procedures(procedure_json_path, json_root)
    records = paired_records(samples, json_root, MULTIPLE_CHOICE)
    out: dict[str, tuple[str, str]] = {}
    for s in samples:
        r = records[s.sample_id]
        vp = _path(video_root, s, r)
        out[s.sample_id] = (public_message(vp, public_question(guidance, procedures, r), r), vp)
    return out


def public_open_messages(samples: list, json_root: str, video_root: str,
                         procedure_json_path: str | None) -> dict[tuple[str, int], tuple[str, str]]:
    """``{(sample_id, qa_index): (message, video_path)}``: the public open-ended message of every QA pair.

    As the public agent writes it: ``Task Procedure: <procedure>`` + blank line + ``Question: <question as
    stored>``, the raw times, its tags joined by a newline and 40 spaces (its open-ended f-string's indentation).
    ``qa_index`` counts the pairs the loader kept (a malformed pair is left out there), so the raw pairs are
    filtered the same way. No guidance text is involved, so the public source is not needed here.
    """
    from ego_adr.data.sample import OPEN_END
    from ego_adr.data.sources import text

    procedures = read_procedures(procedure_json_path, json_root)
    records = paired_records(samples, json_root, OPEN_END)
    out: dict[tuple[str, int], tuple[str, str]] = {}
    for s in samples:
        r = records[s.sample_id]
        vp = _path(video_root, s, r)
        task_id = r.get("task_id", "unknown")
        procedure = procedures.get(task_id, NO_PROCEDURE) if isinstance(task_id, (str, int)) else NO_PROCEDURE
        kept = [q for q in (r.get("qa_pairs") if isinstance(r.get("qa_pairs"), list) else [])
                if isinstance(q, dict) and text(q.get("question")) and text(q.get("answer"))]
        for qi, qa in enumerate(kept):
            question = f"Task Procedure: {procedure}\n\nQuestion: {qa['question']}"
            parts = [f"<video_path>{vp}</video_path>", f"<question>{question}</question>",
                     f"<start_ts>{r.get('start_time', '')}</start_ts>", f"<end_ts>{r.get('end_time', '')}</end_ts>"]
            out[(s.sample_id, qi)] = (OPEN_SEPARATOR.join(parts), vp)
    return out
