"""The complete-trial labels of Assembly101 and EPIC-Tent, read from the datasets' own annotation files (the
``sources/`` folder of a data root laid out as ``../shared/online-mistakes/``, which ``monitoring download`` keeps).

Every rule that turns a source row into a labelled step is here, and ``docs/online_mistakes.md`` says the same.

**Assembly101** (assembly-101/assembly101-mistake-detection @ 6f3a953, ``annots/<recording>.csv``; Sener et al.,
CVPR 2022): one row per coarse segment, no header, seven columns: start frame, end frame, verb, this, that, label,
remark (absent from the files without mistakes). The rows are in time order (checked: a row starting before the previous one is refused).

- The step is DTGL's: ``<verb>-<this>`` with the spaces of ``this`` made underscores, ``position-figurine`` read as
  ``attach-figurine`` (DTGL's ``create_annotation_file.py``); ``that`` (the part attached to) is not part of DTGL's
  step name and is kept in the row only. Its id is DTGL's (``Assembly101-O_action_dict.json``, ids 0-85).
- A step DTGL's 86 steps lack (79 rows of the test recordings, 28 names, mostly detaches such as ``detach-dump_bed``)
  keeps its segment: it gets an id after DTGL's, in sorted order of its name (86, 87, ...), over every recording of
  both splits, so the same name has the same id in every run. No training recording contains any of them.
- The label (the sixth column, stripped: 38 rows read ``correct ``) is ``correct``, ``mistake`` or ``correction``.
  ``mistake`` is the positive; ``correction`` (a step that undoes an earlier mistake) keeps its own label and is
  scored as correct unless the benchmark option ``corrections=exclude`` leaves it out of the scores (the monitor
  still sees it). A mistake's kind is its remark, read as one of :data:`A101_KINDS` (typos folded in).

**EPIC-Tent** (youngkyoonjang/EPIC_Tent2019 @ 1e784a9; Jang et al., ICCVW 2019):

- The steps of a recording are DTGL's segments of ``Synchronised_action_label.txt`` (its line corrections, consecutive
  rows of one action merged; :mod:`.convert`), all of them: DTGL's cut after a fixed number of steps is not applied.
- ``Synchronised_error_label.txt`` has the README's sixteen columns (the action file's time columns, then
  ``error_label_main``, ``error_label_sub`` with -1 for none, ``action_label``); a file with other columns is refused.
  Each row is one timed error of kind ``error_label_main`` (and a second kind ``error_label_sub`` when not -1), codes
  {0 motor, 1 misuse, 2 order, 3 failure, 4 omit, 5 search, 6 correction, 7 slow, 8 repeat} from its README.
- Where an interval lands (GoPro time codes read as DTGL reads them, :func:`.convert.timecode_ms`): an ``omit``
  lands on the step in progress when the omission began (the README: its begin time is when the error began, its
  end time is not to be used), i.e. the last segment starting at or before the begin time. Every other kind lands on
  the segments of the row's ``action_label`` that the interval overlaps (an ``order`` interval spans the ongoing
  action, which is the one done out of sequence); where no segment of that action overlaps it (``action_label`` -1
  or another action), on the step in progress at its begin time, as an omission does.
- An interval that begins before its recording's first segment, begins more than :data:`SLACK` after its last
  segment ends, or (omissions aside) ends more than :data:`SLACK` after it, lies outside the recording: refused.
  Rows of subjects outside DTGL's splits are not read.
- Kinds are procedural step errors or not. ``order``, ``omit`` and ``repeat`` change which step is done when, which
  a step stream shows: a step they mark is a ``mistake`` (positive). ``motor`` (a slip), ``misuse``, ``failure``,
  ``search`` and ``slow`` happen inside a correctly chosen step, which a step stream cannot show: the step keeps
  these kinds but is ``correct``. ``correction`` is a ``correction`` step, as in Assembly101. Every step keeps all
  its kinds, so each kind is reported on its own.
"""

from __future__ import annotations

import csv
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path

from ego_adr.errors import UserError
from ego_adr.online_mistakes.data.convert import tent_rows, timecode_ms

A101_DIR = "sources/assembly101-mistake-detection/annots"
TENT_DIR = "sources/EPIC_Tent2019"
TENT_ACTIONS, TENT_ERRORS = f"{TENT_DIR}/Synchronised_action_label.txt", f"{TENT_DIR}/Synchronised_error_label.txt"
A101_LABELS = ("correct", "mistake", "correction")
#: Assembly101's mistake remarks (the dataset's README), each the start of the remarks read as it.
A101_KINDS = {"wrong order": ("wrong order", "worng order"), "shouldn't have happened": ("shouldn", "shouln"),
              "wrong position": ("wrong position",), "previous one is a mistake": ("previous",)}
TENT_COLUMNS = ("subject_id", "str_GoPro_ts", "end_GoPro_ts", "str_GoPro_frame", "end_GoPro_frame", "str_SMI_w_ts",
                "end_SMI_w_ts", "str_SMI_w_frame", "end_SMI_w_frame", "str_SMI_wo_ts", "end_SMI_wo_ts",
                "str_SMI_wo_frame", "end_SMI_wo_frame", "error_label_main", "error_label_sub", "action_label")
TENT_KINDS = ("motor", "misuse", "order", "failure", "omit", "search", "correction", "slow", "repeat")
PROCEDURAL = ("order", "omit", "repeat")
EXECUTION = ("motor", "misuse", "failure", "search", "slow")
SLACK = 1000  # one second in DTGL's reading of a time code (a task-end omission is stamped just after the end)
HINT = "get them with `python -m ego_adr.monitoring download --out DIR` (it lays out dtgl/, prego/ and sources/) and pass --data-root DIR"


@dataclass(frozen=True)
class Segment:
    """One annotated segment of a complete recording: its step name, the dataset's label (``correct``,
    ``mistake``, ``correction``), the kinds of error it carries, its start and end, and anything kept as is."""

    name: str
    label: str
    kinds: tuple[str, ...]
    start: int
    end: int
    extra: tuple[tuple[str, str], ...] = ()


def _file(root: str | os.PathLike, rel: str) -> Path:
    p = Path(root).expanduser() / rel
    if not p.is_file():
        raise UserError(f"--data-root {root}: {rel} not found (the complete-trial benchmarks read the datasets' own "
                        f"annotation files); {HINT}")
    return p


def _a101_kind(remark: str) -> str:
    r = remark.strip().lower()
    for kind, starts in A101_KINDS.items():
        if r.startswith(starts):
            return kind
    return "other"


def a101_name(verb: str, this: str) -> str:
    """DTGL's step name of an Assembly101 segment (module docstring)."""
    name = f"{verb}-{this.replace(' ', '_')}"
    return "attach-figurine" if name == "position-figurine" else name


def assembly101(root: str | os.PathLike, video: str) -> list[Segment]:
    """The segments of one Assembly101 recording, every row of its CSV."""
    path = _file(root, f"{A101_DIR}/{video}.csv")
    out: list[Segment] = []
    for n, row in enumerate(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))), 1):
        if not row:
            continue
        if len(row) not in (6, 7):
            raise UserError(f"{path} row {n} has {len(row)} columns, not the dataset's 7 (start, end, verb, this, "
                            "that, label, remark; the remark column is absent from some files)")
        row = [*row, ""][:7]
        try:
            start, end = int(row[0]), int(row[1])
        except ValueError:
            raise UserError(f"{path} row {n}: start and end are not frame numbers ({row[0]!r}, {row[1]!r})") from None
        label = row[5].strip()
        if label not in A101_LABELS:
            raise UserError(f"{path} row {n}: label {row[5]!r} is not one of {', '.join(A101_LABELS)}")
        if out and start < out[-1].start:
            raise UserError(f"{path} row {n} starts at frame {start}, before the row above it: not in time order")
        kinds = (_a101_kind(row[6]),) if label == "mistake" else ("correction",) if label == "correction" else ()
        out.append(Segment(a101_name(row[2], row[3]), label, kinds, start, end,
                           (("that", row[4].replace(" ", "_")), ("remark", row[6].strip()))))
    if not out:
        raise UserError(f"{path} has no rows: not an Assembly101 annotation file")
    return out


# --- EPIC-Tent -------------------------------------------------------------------------------------------------
def tent_segments(root: str | os.PathLike, subjects: list[int]) -> dict[int, list[list[int]]]:
    """``subject -> [[action, start, end], ...]``: DTGL's segments of each recording, uncut."""
    rows = tent_rows(_file(root, TENT_ACTIONS).read_text(encoding="utf-8"))
    out: dict[int, list[list[int]]] = {s: [] for s in subjects}
    last: dict[int, int] = {}
    for r in rows:
        s = int(r["subject_id"])
        if s not in out:
            continue
        a = int(r["action_label"])
        if last.get(s) == a:
            out[s][-1][2] = timecode_ms(r["end_GoPro_ts"])
            continue
        last[s] = a
        out[s].append([a, timecode_ms(r["str_GoPro_ts"]), timecode_ms(r["end_GoPro_ts"])])
    for s, segs in out.items():
        if not segs:
            raise UserError(f"{root}/{TENT_ACTIONS} has no rows of subject {s}, a recording of DTGL's splits")
    return out


def _error_rows(path: Path) -> list[tuple[int, dict]]:
    text = path.read_text(encoding="utf-8")
    reader = csv.DictReader(io.StringIO(text))
    cols = tuple(c.strip() for c in (reader.fieldnames or ()))
    if cols != TENT_COLUMNS:
        diff = next((i for i, (a, b) in enumerate(zip(cols, TENT_COLUMNS)) if a != b), min(len(cols), 16))
        got = cols[diff] if diff < len(cols) else "nothing"
        raise UserError(f"{path}: its columns differ from the README's sixteen (column {diff + 1} is {got!r}, the "
                        f"README's is {TENT_COLUMNS[diff] if diff < 16 else 'none'!r}); not EPIC-Tent's error file")
    return [(n, {k.strip(): (v or "").strip() for k, v in r.items() if k}) for n, r in enumerate(reader, 2)]


def _in_progress(segs: list[list[int]], t: int) -> int:
    """The index of the last segment starting at or before ``t`` (the first segment when none does)."""
    i = 0
    for j, (_, start, _) in enumerate(segs):
        if start <= t:
            i = j
    return i


def _parse_error(path: Path, n: int, r: dict) -> tuple[int, int, int, list[str], int]:
    try:
        subject, main, sub, action = (int(r[k]) for k in ("subject_id", "error_label_main", "error_label_sub",
                                                           "action_label"))
        start, end = timecode_ms(r["str_GoPro_ts"]), timecode_ms(r["end_GoPro_ts"])
    except (ValueError, KeyError, TypeError):
        raise UserError(f"{path} row {n}: subject, time codes or labels are not numbers as the README gives them") \
            from None
    if not 0 <= main < len(TENT_KINDS) or not -1 <= sub < len(TENT_KINDS):
        raise UserError(f"{path} row {n}: error label {main}/{sub} is not one of the README's codes 0-8 (-1: none)")
    kinds = [TENT_KINDS[main]] + ([TENT_KINDS[sub]] if sub >= 0 else [])
    return subject, start, end, kinds, action


def tent_errors(root: str | os.PathLike, segments: dict[int, list[list[int]]]) -> dict[int, list[set[str]]]:
    """``subject -> the kinds each of its segments carries``, every error row mapped by the module's rule."""
    path = _file(root, TENT_ERRORS)
    kinds: dict[int, list[set[str]]] = {s: [set() for _ in segs] for s, segs in segments.items()}
    for n, r in _error_rows(path):
        subject, start, end, row_kinds, action = _parse_error(path, n, r)
        if subject not in segments:
            continue
        segs = segments[subject]
        first, last = segs[0][1], max(e for _, _, e in segs)
        omit = row_kinds[0] == "omit"
        if start < first or start > last + SLACK or (not omit and end > last + SLACK):
            raise UserError(f"{path} row {n}: the {row_kinds[0]} interval {r['str_GoPro_ts']}-{r['end_GoPro_ts']} "
                            f"lies outside subject {subject}'s recording (its segments span "
                            f"{_code(first)}-{_code(last)}); fix the row or use the file of the pinned commit")
        hit = [] if omit else [i for i, (a, s, e) in enumerate(segs) if a == action and s <= end and start <= e]
        for i in hit or [_in_progress(segs, start)]:
            kinds[subject][i].update(row_kinds)
    return kinds


def _code(ms: int) -> str:
    return f"{ms // 3600000:02d}:{ms // 60000 % 60:02d}:{ms // 1000 % 60:02d}:{ms % 1000:02d}"


def tent_label(kinds: set[str]) -> str:
    """A step's label from its kinds (module docstring)."""
    if kinds & set(PROCEDURAL):
        return "mistake"
    return "correction" if "correction" in kinds else "correct"


def epic_tent(root: str | os.PathLike, videos: list[str], names: dict[int, str]) -> dict[str, list[Segment]]:
    """The segments of the EPIC-Tent recordings ``videos`` (``annotations_<subject>``), labelled."""
    subjects = {v: int(v.rsplit("_", 1)[-1]) for v in videos}
    segs = tent_segments(root, sorted(set(subjects.values())))
    kinds = tent_errors(root, segs)
    out = {}
    for v, s in subjects.items():
        out[v] = [Segment(names[a], tent_label(k), tuple(sorted(k)), start, end, (("action_label", str(a)),))
                  for (a, start, end), k in zip(segs[s], kinds[s], strict=True)]
    return out


def dtgl_videos(root: str | os.PathLike, dtgl_dir: str, split: str) -> list[str]:
    """The recordings of DTGL's ``split`` (its ``<split>.json``), in the file's order."""
    p = _file(root, f"dtgl/{dtgl_dir}/{split}.json")
    try:
        return list(json.loads(p.read_text(encoding="utf-8"))["annotations"])
    except (ValueError, KeyError, TypeError):
        raise UserError(f"{p} is not DTGL's annotation file (a JSON object with 'annotations')") from None
