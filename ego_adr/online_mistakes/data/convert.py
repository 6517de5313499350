"""Building DTGL's ``train.json`` / ``test.json`` from the public source annotations, byte for byte.

DTGL (fpv-iplab/Differentiable-Task-Graph-Learning @ 536aaa7) does not ship these files: its
``data/<dataset>/create_annotation_file.py`` scripts build them from the datasets' own annotations and it ships their
sha256 (``train_hash``, ``test_hash``) to check the result. These are our own converters of the same rules; the
downloader checks their output against DTGL's hashes, which only an exact reproduction passes.

Assembly101-O, from assembly-101/assembly101-mistake-detection @ 6f3a953 (``annots/<recording>.csv``, one row per
coarse segment, no header: start frame, end frame, verb, this, that, label, remark):

- recordings in sorted file-name order (DTGL takes a ``glob``; the shipped hash is that of the sorted order), those
  named in DTGL's ``train_split.txt`` / ``test_split.txt``;
- a segment's step is ``<verb>-<this>`` with spaces of ``this`` made underscores (``position-figurine`` is the
  taxonomy's ``attach-figurine``), its id from DTGL's ``Assembly101-O_action_dict.json``;
- a row labelled ``mistake`` is the last segment kept (``has_errors`` true); every other row (``correct``,
  ``correction``) is kept with ``has_errors`` false.

EPIC-Tent-O, from youngkyoonjang/EPIC_Tent2019 @ 1e784a9 (``Synchronised_action_label.txt``, a CSV with a header):

- DTGL first corrects the file by line number: the ``action_label`` of lines 43, 197, 260, 273, 280, 331, 398,
  690 and 995 (counting the header as line 0) is set to 0, 5, 4, 4, 4, 4, 4, 4, 4, then lines 1-6 and 195 are
  dropped (:data:`TENT_RELABEL`, :data:`TENT_DROP`);
- recordings in the order of DTGL's ``train_split.json`` / ``test_split.json``, which maps each recording
  (``annotations_<subject>``) to the number of segments it keeps; a subject's rows keep the file's order;
- consecutive rows of the same action are one segment (the later row's end time extends it); times are GoPro
  time codes ``h:m:s:x`` read as ``((h*60 + m)*60 + s)*1000 + x``;
- once that many segments are taken, the next new action marks the last segment taken as the mistake
  (``has_errors``) and ends the recording -- in the training split too, where 3 of the 13 recordings are cut so
  (DTGL's methods, and ours, use every training segment); step ids are the file's labels, names from
  ``EPIC-Tent-O_action_dict.json`` (which numbers them from 1).

The json is written as Python's ``json.dump(indent=4)`` writes it (ASCII, no trailing newline).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence

from ego_adr.errors import UserError

TENT_RELABEL = {43: 0, 197: 5, 260: 4, 273: 4, 280: 4, 331: 4, 398: 4, 690: 4, 995: 4}
TENT_DROP = (1, 2, 3, 4, 5, 6, 195)
_LEAF = {"is_leafnode": True, "parent_id": None, "parent_name": None}


def dump(doc: dict) -> bytes:
    """The bytes DTGL's scripts write."""
    return json.dumps(doc, indent=4).encode("ascii")


def _segment(step_id: int, start: int, end: int, name: str, error: bool) -> dict:
    return {"step_id": step_id, "start_time": start, "end_time": end, "description": name, "has_errors": error,
            "step_name": name}


def assembly101(csvs: Mapping[str, str], split: Sequence[str], action_dict: Mapping[str, str]) -> dict:
    """DTGL's Assembly101-O annotation file from ``csvs`` (recording name -> CSV text), for the recordings in
    ``split``."""
    ids = {v: k for k, v in action_dict.items()}
    wanted = set(split)
    annotations = {}
    for name in sorted(csvs):
        if name not in wanted:
            continue
        segments = []
        for n, row in enumerate(csv.reader(io.StringIO(csvs[name]))):
            if not row:
                continue
            try:
                start, end, verb, this, label = int(row[0]), int(row[1]), row[2], row[3], row[5]
            except (IndexError, ValueError):
                raise UserError(f"{name}.csv row {n + 1} is not 'start,end,verb,this,that,label,...'") from None
            action = f"{verb}-{this.replace(' ', '_')}"
            action = "attach-figurine" if action == "position-figurine" else action
            if action not in ids:
                raise UserError(f"{name}.csv row {n + 1}: step {action!r} is not in Assembly101-O's action dict")
            segments.append(_segment(int(ids[action]), start, end, action, label == "mistake"))
            if label == "mistake":
                break
        annotations[name] = {"scenario": "assembly101", "recording_id": name, "segments": segments}
    taxonomy = {k: {"name": v, "id": int(k), **_LEAF} for k, v in action_dict.items()}
    return {"annotations": annotations, "taxonomy": {"assembly101": taxonomy}}


def timecode_ms(code: str) -> int:
    h, m, s, x = (int(p) for p in code.split(":"))
    return ((h * 3600) + (m * 60) + s) * 1000 + x


def tent_rows(text: str) -> list[dict]:
    """The rows of EPIC-Tent's label file after DTGL's corrections by line number."""
    lines = text.splitlines(keepends=True)
    for i, label in TENT_RELABEL.items():
        lines[i] = ",".join(lines[i].split(",")[:-1]) + f",{label}\n"
    for i in sorted(TENT_DROP, reverse=True):
        del lines[i]
    return list(csv.DictReader(line for line in lines if line.strip()))


def epic_tent(text: str, split: Mapping[str, int], action_dict: Mapping[str, str]) -> dict:
    """DTGL's EPIC-Tent-O annotation file from the label file's ``text``, for the recordings in ``split``."""
    rows = tent_rows(text)
    annotations = {}
    for video, n_steps in split.items():
        subject = video.split("_")[-1]
        mine = [r for r in rows if int(r["subject_id"]) == int(subject)]
        if not mine:
            raise UserError(f"EPIC-Tent's label file has no rows of subject {subject} ({video})")
        segments: list[dict] = []
        last = None
        for r in mine:
            label = int(r["action_label"])
            if label == last:
                segments[-1]["end_time"] = timecode_ms(r["end_GoPro_ts"])
                continue
            last = label
            if len(segments) >= n_steps:
                segments[-1]["has_errors"] = True
                break
            name = action_dict[str(label + 1)]
            segments.append(_segment(label, timecode_ms(r["str_GoPro_ts"]), timecode_ms(r["end_GoPro_ts"]), name,
                                     False))
        annotations[f"annotations_{subject}"] = {"scenario": "epic-tent", "recording_id": f"annotations_{subject}",
                                                 "segments": segments}
    taxonomy = {str(int(k) - 1): {"name": v, "id": int(k) - 1, **_LEAF} for k, v in action_dict.items() if int(k)}
    return {"annotations": annotations, "taxonomy": {"epic-tent": taxonomy}}
