"""The input of ``python -m ego_adr.data build``: one row per annotated step segment of a recording (CSV or JSONL).

Why one flat schema: the paper (Appendix A) first "unified the JSON formats" of its four source datasets and gave
each task a ``task_id``; a lab with its own error-annotated recordings does the same by writing this table. The
columns (docs/build.md has the full description):

==============  ========  ====================================================================================
column          required  meaning
==============  ========  ====================================================================================
source          yes       the dataset's name in the built benchmark (``[a-z0-9_]+``, e.g. ``mykitchen``)
recording       yes       the recording (video) id
task            yes       the task (recipe, assembly, ...): one ``task_id``, one procedure text
step            yes       the step the person was supposed to do, as text
step_id         no        the step's number within the task (orders the procedure; part of the sample id)
start, end      no        the segment in seconds; both empty or both ``-1``: the whole recording (an omission)
labels          no        error type(s): our option strings, or the dataset's own labels with ``--labels``
                          (else the LLM types them); ``|``-separated in CSV, a list in JSONL; empty or
                          ``correct``: the step was correct
description     no        what went wrong and why, in words (the LLM writes its QA pairs from it)
video           no        the video's path under the video root (default ``{source}/{recording}.mp4``)
native          no        JSONL only: the source dataset's own fields, kept verbatim in the output record
==============  ========  ====================================================================================

A bad row (a missing column, a time that is not a number, one end of a window only; an unknown label when the
LLM does not label) is reported with its line number and left out; it never stops the build (:func:`read_rows`).
A label that is neither an option nor in the mapping (``error``, a dataset's own ``spilled``) makes the row an
error whose type the build's LLM names (paper Section 3.3, :mod:`ego_adr.benchmark_builder.labelling`). An inverted window is
reported too but kept, as the loader keeps one: the window rule fails that sample with its reason when it is run.
"""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from ego_adr.taxonomy import CORRECT, canonical

REQUIRED = ("source", "recording", "task", "step")
OPTIONAL = ("step_id", "start", "end", "labels", "description", "video", "native")
COLUMNS = REQUIRED + OPTIONAL
_NAME = re.compile(r"^[a-z0-9_]+$")


class InputError(ValueError):
    """The annotation file as a whole cannot be read (missing, wrong format, no header); one line."""


@dataclass
class Row:
    """One good row. ``labels`` are canonical option strings (``["correct"]`` for a correct step)."""

    line: int
    source: str
    recording: str
    task: str
    step: str
    labels: list[str]
    start: float | None = None
    end: float | None = None
    step_id: str | None = None
    description: str | None = None
    video: str | None = None
    native: dict = field(default_factory=dict)
    warning: str | None = None  # kept but worth a look (an inverted window)
    # the times as the file gave them (int or float, -3661.033 included): written back verbatim, so a converted
    # release rebuilt stores the very values the public protocol puts on the wire (``Sample.wire``)
    start_given: float | int | None = None
    end_given: float | int | None = None
    labels_text: bool = False  # the labels cell was one text, not a list (Epic-Tent stores "correct" so)
    # the row's labels that are neither an option nor mapped (e.g. ``error``, or the dataset's own ``spilled``):
    # the build's LLM names their error type (paper Section 3.3; ego_adr.benchmark_builder.labelling)
    own_labels: list[str] = field(default_factory=list)
    #: label -> where it came from: ``given`` (an option string), ``mapped`` (``--labels``), ``llm-labelled``,
    #: ``human-revised`` (a reviewer's correction of an LLM label)
    label_provenance: dict[str, str] = field(default_factory=dict)

    @property
    def correct(self) -> bool:
        return self.labels == [CORRECT]


@dataclass
class BadRow:
    line: int
    problem: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.problem}"


def read_label_map(path: str | Path | None) -> dict[str, list[str]]:
    """A dataset's own labels -> our option strings, from JSON (``{"label": "Option" | ["Option", ...]}``) or a
    two-column CSV (``label,option``; repeat a label for several options). Keys compare case-insensitively."""
    if path is None:
        return {}
    p = Path(path)
    if not p.is_file():
        raise InputError(f"label mapping {p} not found")
    raw: dict[str, list[str]] = {}
    try:
        if p.suffix.lower() == ".csv":
            with p.open(newline="", encoding="utf-8") as f:
                for rec in csv.reader(f):
                    if len(rec) >= 2 and rec[0].strip() and rec[0].strip().lower() != "label":
                        raw.setdefault(rec[0].strip(), []).append(rec[1].strip())
        else:
            data = json.loads(p.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                raise InputError(f"label mapping {p} must be a JSON object label -> option(s)")
            raw = {str(k): v if isinstance(v, list) else [v] for k, v in data.items()}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, csv.Error) as e:
        raise InputError(f"cannot read label mapping {p} ({e})") from None
    out: dict[str, list[str]] = {}
    for k, opts in raw.items():
        try:
            out[k.strip().lower()] = [canonical(str(o)) for o in opts]
        except ValueError as e:
            raise InputError(f"label mapping {p}: {k!r} maps to {opts!r}, not our options ({e})") from None
    return out


def _records(path: Path) -> list[tuple[int, dict | str]]:
    """(line number, record) pairs; a JSONL line that is not an object comes back as its problem text."""
    if not path.is_file():
        raise InputError(f"annotation file {path} not found")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read annotation file {path} ({e})") from None
    if path.suffix.lower() in (".jsonl", ".ndjson", ".json"):
        out: list[tuple[int, dict | str]] = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                out.append((n, f"not JSON ({e.msg})"))
                continue
            out.append((n, rec if isinstance(rec, dict) else f"not a JSON object: {line[:60]!r}"))
        return out
    if path.suffix.lower() != ".csv":
        raise InputError(f"annotation file {path}: expected .csv or .jsonl")
    reader = csv.DictReader(text.splitlines())
    header = [h.strip() for h in reader.fieldnames or []]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise InputError(
            f"annotation file {path}: header lacks column(s) {', '.join(missing)} (has {header})"
        )
    return [(reader.line_num, {k.strip(): v for k, v in rec.items() if k}) for rec in reader]


def _number(value) -> float | int:
    """The number a cell holds, as the file wrote it: JSON numbers stay ``int`` or ``float``; a CSV text that is
    an integer literal is an ``int`` (``-1``), any other a ``float`` (``-1.0``, ``757.8``)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    return int(text) if re.fullmatch(r"[+-]?\d+", text) else float(text)


def _seconds(value, name: str) -> tuple[float | None, float | int | None, str | None]:
    """(the time in seconds or None for "no time", the number as given, the problem)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, None, None
    try:
        given = _number(value)
    except (TypeError, ValueError):
        return None, None, f"{name} {value!r} is not a number of seconds"
    if not math.isfinite(given):
        return None, None, f"{name} {value!r} is not a number of seconds"
    return (None if given < 0 else float(given)), given, None


def _labels(value, mapping: dict[str, list[str]], pending: bool = False) -> tuple[list[str], dict, list, str | None]:
    """(options, label -> provenance, the labels left for the LLM, the problem). ``pending``: an unknown label is
    left for the LLM to type instead of making the row bad."""
    if value is None:
        items: list = []
    elif isinstance(value, list):
        items = value
    else:
        items = str(value).split("|")
    out: list[str] = []
    prov: dict[str, str] = {}
    own: list[str] = []
    for item in (str(i).strip() for i in items):
        if not item:
            continue
        mapped, how = mapping.get(item.lower()), "mapped"
        if mapped is None:
            try:
                mapped, how = [canonical(item)], "given"
            except ValueError:
                if not pending:
                    return [], {}, [], f"label {item!r} is neither one of our options nor in the label mapping"
                own += [item] if item not in own else []
                continue
        for m in mapped:
            if m not in out:
                out.append(m)
                prov[m] = how
    if not out and not own:
        out, prov = [CORRECT], {CORRECT: "given"}
    if CORRECT in out and (len(out) > 1 or own):
        return [], {}, [], f"labels {out + own} mix 'correct' with error types"
    return out, prov, own, None


def _text(rec: dict, key: str) -> str | None:
    v = rec.get(key)
    if v is None:
        return None
    s = str(v).strip()
    return s or None


def parse_row(n: int, rec: dict, mapping: dict[str, list[str]], pending: bool = False) -> Row | BadRow:
    """One record as a :class:`Row`, or the :class:`BadRow` saying what is wrong with it. ``pending``: labels that
    are neither options nor mapped are kept in ``own_labels`` for the LLM to type."""
    missing = [c for c in REQUIRED if not _text(rec, c)]
    if missing:
        return BadRow(n, f"missing {', '.join(missing)}")
    source = _text(rec, "source") or ""
    if not _NAME.match(source):
        return BadRow(n, f"source {source!r} must be lower-case letters, digits and _")
    start, start_given, p1 = _seconds(rec.get("start"), "start")
    end, end_given, p2 = _seconds(rec.get("end"), "end")
    if p1 or p2:
        return BadRow(n, p1 or p2 or "")
    if (start is None) != (end is None):
        return BadRow(n, "give both start and end, or neither (the whole recording)")
    # kept, as the loader keeps it: the window rule (ego_adr.video.window) fails the sample with its reason
    warning = (
        f"end {end} is not after start {start}"
        if start is not None and end is not None and end <= start
        else None
    )
    labels, provenance, own, problem = _labels(rec.get("labels"), mapping, pending)
    if problem:
        return BadRow(n, problem)
    native = rec.get("native") or {}
    if not isinstance(native, dict):
        return BadRow(n, "native must be a JSON object")
    return Row(
        line=n,
        source=source,
        recording=_text(rec, "recording") or "",
        task=_text(rec, "task") or "",
        step=_text(rec, "step") or "",
        labels=labels,
        start=start,
        end=end,
        step_id=_text(rec, "step_id"),
        description=_text(rec, "description"),
        video=_text(rec, "video"),
        native=native,
        warning=warning,
        start_given=start_given,
        end_given=end_given,
        labels_text=isinstance(rec.get("labels"), str),
        own_labels=own,
        label_provenance=provenance,
    )


def read_rows(
    path: str | Path, mapping: dict[str, list[str]] | None = None, pending: bool = False
) -> tuple[list[Row], list[BadRow]]:
    """The good rows of an annotation file, in file order, and every bad one with its line number. ``pending``:
    see :func:`parse_row` (``data build`` passes it unless ``--no-llm-labels``)."""
    good: list[Row] = []
    bad: list[BadRow] = []
    for n, rec in _records(Path(path)):
        parsed = BadRow(n, rec) if isinstance(rec, str) else parse_row(n, rec, mapping or {}, pending)
        (bad if isinstance(parsed, BadRow) else good).append(parsed)
    return good, bad


def write_jsonl(rows: list[dict], path: str | Path) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return p
