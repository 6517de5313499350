"""EgoErrorVQA loaders: the four public sources (and the embedded demo set), both tasks, as :class:`Sample`.

The annotation files keep each source's native schema (see :mod:`ego_adr.data.sources` for what is read from
which field and why). This module handles what every source shares:

* **Files**: each source's annotation file per task comes from its spec in the source registry
  (:mod:`ego_adr.data.sources`; for the public release e.g. ``captaincook4d_answer.json`` and
  ``captaincook4d_qa_pairs_updated.json``), plus ``procedure.json`` (task_id -> paragraph).
  ``scripts/download_annotations.py`` fetches them.
* **Errors.** A missing data root, ``procedure.json`` or file of a *requested* source raises :class:`DataError`
  (a run cannot start). A bad *record* never does: the sample is still loaded as far as possible, the problem
  is logged, appended to the optional ``issues`` list, and :func:`sample_problem` restates it from the sample
  alone (empty ``procedure``, no valid ground truth, no QA pairs) so a runner can record it as that sample's
  failure reason. Unknown labels are left out of ``ground_truth`` (an issue is recorded).
* **Time window.** ``start_time``/``end_time`` in seconds. Both negative (-1: CaptainCook4D omissions; one
  Epic-Tent record has -3661.033 for both) or both missing mean "no segment", the whole video: ``None, None``.
  Anything else is kept as it is (a missing or non-numeric end becomes ``None``) and a malformed window (one end
  missing or negative, ``end < start``) is logged as an issue: :mod:`ego_adr.data.window` holds the one rule
  that decides what is sampled, so the sample fails with that rule's reason instead of being reinterpreted.
* **Video id.** A record without ``video_id`` gets no video path; :func:`sample_problem` names the problem
  (instead of a "file not found" for a path like ``captaincook4d/_360p.mp4``).
* **Sample ids** are built only from the clip's identity, never from its labels (:mod:`ego_adr.data.sample_ids`
  says how, and how records of one clip and step are told apart). Never show them to a model under test.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ego_adr.data import sources as registry
from ego_adr.data.sample import MULTIPLE_CHOICE, OPEN_END, TASKS, QAPair, Sample
from ego_adr.data.sample_ids import base_sample_id, disambiguate
from ego_adr.data.sources import spec as src
from ego_adr.data.window import window_problem
from ego_adr.taxonomy import CORRECT, canonical

logger = logging.getLogger(__name__)

# Snapshots of the registry's built-in sources, for callers that want plain tuples; the loader itself always asks
# the registry, so sources registered later (plugins, tests) load too.
PUBLIC_SOURCES: tuple[str, ...] = registry.names(public_only=True)
SOURCES: tuple[str, ...] = registry.names()
FILES: dict[tuple[str, str], str] = {
    (name, task): f for name, spec in registry.SOURCES.items() for task, f in spec.files.items()
}
PROCEDURE_FILE = "procedure.json"
ANNOTATION_FILES: tuple[str, ...] = tuple(
    f for (s, _), f in FILES.items() if registry.SOURCES[s].public
) + (PROCEDURE_FILE,)
DEMO = "demo"

_DOWNLOAD_HINT = (
    "download the annotations with `python scripts/download_annotations.py --out DIR` and pass --data-root DIR"
)


class DataError(FileNotFoundError):
    """Annotation data needed by a run is missing or unreadable; the message says what to do."""


@dataclass
class LoadIssue:
    """A problem with one record; the sample is still loaded where possible."""

    source: str
    task: str
    sample_id: str
    problem: str


def _hint(source: str | None = None) -> str:
    if source == DEMO:
        return "the demo files are written by ego_adr.video.demo; point --data-root at that folder"
    return _DOWNLOAD_HINT


def _root(data_root: str | os.PathLike | None) -> Path:
    if data_root is None or str(data_root) == "":
        raise DataError(f"no EgoErrorVQA data root given: {_DOWNLOAD_HINT}")
    root = Path(data_root).expanduser()
    if not root.is_dir():
        raise DataError(f"EgoErrorVQA data root {str(root)!r} does not exist or is not a folder: {_DOWNLOAD_HINT}")
    return root


def _read_json(path: Path, source: str | None = None) -> Any:
    if not path.is_file():
        raise DataError(f"annotation file {str(path)!r} not found: {_hint(source)}")
    try:
        with path.open(encoding="utf-8") as f:
            return json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DataError(f"cannot read annotation file {str(path)!r} ({e}); re-download it: {_hint(source)}") from e


def _records(data: Any, path: Path) -> list:
    # The public evaluator also accepts a dict of records; do the same.
    if isinstance(data, list):
        return data
    if isinstance(data, dict):
        return list(data.values())
    raise DataError(f"{str(path)!r} holds a {type(data).__name__}, expected a list of records: {_DOWNLOAD_HINT}")


def load_procedures(data_root: str | os.PathLike) -> dict[str, str]:
    """``procedure.json``: task_id -> procedure paragraph."""
    path = _root(data_root) / PROCEDURE_FILE
    data = _read_json(path)
    if not isinstance(data, dict):
        raise DataError(f"{str(path)!r} must map task_id to procedure text: {_DOWNLOAD_HINT}")
    return {str(k): str(v) for k, v in data.items() if v is not None}


def _seconds(t: Any) -> float | None:
    try:
        v = float(t)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def time_window(start: Any, end: Any) -> tuple[float | None, float | None]:
    """Seconds; ``(None, None)`` for "no segment" (both ends missing or negative). Any other window is returned
    as given (a missing or non-numeric end as ``None``), malformed or not: see the module docstring."""
    s, e = _seconds(start), _seconds(end)
    if (s is None or s < 0) and (e is None or e < 0):
        return None, None
    return s, e


def video_path_for(source: str, record: dict, video_root: str | os.PathLike | None) -> str | None:
    """Path of the clip's video under ``video_root`` by the source's layout (its spec's ``video_path``); None
    without a root."""
    if video_root is None or str(video_root) == "":
        return None
    if not src.video_id_of(record):
        return None  # sample_problem says "record has no video_id"
    try:
        spec = registry.get(source)
    except KeyError as e:
        raise ValueError(e.args[0]) from None
    return spec.video_path(Path(video_root).expanduser(), record)


def _file(source: str, task: str) -> str:
    return registry.get(source).files[task]


def _requested(sources: Iterable[str] | str | None, root: Path | None = None) -> list[str]:
    try:
        declared = registry.discover(root)  # a built data root declares (and registers) its own sources
    except ValueError as e:
        raise DataError(str(e)) from None
    if sources is None:
        return list(declared or registry.names(public_only=True))
    if isinstance(sources, str):
        sources = [s for s in sources.split(",") if s.strip()]
    out: list[str] = []
    for s in sources:
        try:
            name = registry.get(s).name
        except KeyError:
            raise ValueError(f"unknown source {s!r}; expected some of {', '.join(registry.names())}") from None
        if name not in out:
            out.append(name)
    if not out:
        raise ValueError(f"no source given; expected some of {', '.join(registry.names())}")
    return out


def _ground_truth(raw: Any) -> tuple[list[str], list[str]]:
    """Canonical option strings (deduplicated, order kept) and the problems found."""
    values = raw if isinstance(raw, list) else ([] if raw is None else [raw])
    labels: list[str] = []
    problems: list[str] = []
    for v in values:
        try:
            opt = canonical(str(v))
        except ValueError:
            problems.append(f"unknown ground-truth label {v!r} left out")
            continue
        if opt not in labels:
            labels.append(opt)
    if not labels:
        problems.append(f"no valid ground-truth label (close_end_answer={raw!r})")
    return labels, problems


def _qa_pairs(raw: Any) -> tuple[list[QAPair], list[str]]:
    pairs: list[QAPair] = []
    problems: list[str] = []
    for item in raw if isinstance(raw, list) else []:
        q = src.text(item.get("question")) if isinstance(item, dict) else None
        a = src.text(item.get("answer")) if isinstance(item, dict) else None
        if q is None or a is None:
            problems.append(f"malformed QA pair {item!r} left out")
            continue
        pairs.append(QAPair(question=q, answer=a))
    if not pairs:
        problems.append("no question-answer pairs")
    return pairs, problems


def _context(root: Path, source: str):
    """The source's cross-record table (its spec's ``context``) from the records of all its task files."""
    spec = registry.get(source)
    if spec.context is None:
        return None
    records: list = []
    for task in TASKS:
        name = spec.files.get(task)
        if name and (root / name).is_file():
            records += [spec.normalise(r) if spec.normalise and isinstance(r, dict) else r
                        for r in _records(_read_json(root / name, source), root / name)]
    return spec.context(records)


def load_samples(
    data_root: str | os.PathLike,
    task: str = MULTIPLE_CHOICE,
    sources: Iterable[str] | str | None = None,
    video_root: str | os.PathLike | None = None,
    issues: list[LoadIssue] | None = None,
) -> list[Sample]:
    """All samples of ``task`` from the requested ``sources`` (default: the sources a built root declares in its
    ``sources.json``, else the four public ones), in file order.

    ``issues``, when given, receives one :class:`LoadIssue` per problem found in a record.
    """
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; expected one of {TASKS}")
    root = _root(data_root)
    wanted = _requested(sources, root)
    procedures = load_procedures(root)
    missing = [_file(s, task) for s in wanted if not (root / _file(s, task)).is_file()]
    if missing:
        hint = _hint(DEMO) if wanted == [DEMO] else _DOWNLOAD_HINT
        raise DataError(f"{', '.join(missing)} not found in {str(root)!r}: {hint} (or drop those --sources)")
    found: list[LoadIssue] = []
    samples: list[Sample] = []
    for source in wanted:
        path = root / _file(source, task)
        samples += _load_file(source, task, path, procedures, _context(root, source), video_root, found)
    if found:
        shown = "; ".join(f"{i.sample_id}: {i.problem}" for i in found[:5])
        logger.warning("%d problem(s) in %s annotations, e.g. %s", len(found), task, shown)
    if issues is not None:
        issues.extend(found)
    return samples


def _load_file(
    source: str,
    task: str,
    path: Path,
    procedures: dict[str, str],
    context,
    video_root: str | os.PathLike | None,
    issues: list[LoadIssue],
) -> list[Sample]:
    spec = registry.get(source)
    records: list[dict] = []
    for n, r in enumerate(_records(_read_json(path, source), path)):
        if isinstance(r, dict):
            records.append(spec.normalise(r) if spec.normalise else r)
        else:
            issues.append(LoadIssue(source, task, f"{source}/record{n}", f"not a record: {r!r:.80}"))
    built: list[tuple[Sample, list[str]]] = []
    for r in records:
        start, end = time_window(r.get("start_time"), r.get("end_time"))
        ex = spec.extract(r, context)
        problems: list[str] = []
        task_id, video_id = src.task_id_of(r), src.video_id_of(r)
        if not video_id:
            problems.append("record has no video_id")
        bad_window = window_problem(start, end)
        if bad_window:
            problems.append(f"{bad_window} (start_time {r.get('start_time')!r}, end_time {r.get('end_time')!r})")
        procedure = procedures.get(task_id, "")
        if not procedure:
            problems.append(f"task_id {task_id!r} not in {PROCEDURE_FILE}")
        ground_truth: list[str] = []
        qa: list[QAPair] = []
        if task == MULTIPLE_CHOICE:
            ground_truth, found = _ground_truth(r.get("close_end_answer"))
        else:
            qa, found = _qa_pairs(r.get("qa_pairs"))
        problems += found
        answer_field = "close_end_answer" if task == MULTIPLE_CHOICE else "qa_pairs"
        missing = [f for f, v in (("task_id", task_id), (answer_field, r.get(answer_field))) if v in (None, "", [])]
        correct = ex.is_correct
        if correct is None and ground_truth:
            correct = ground_truth == [CORRECT]
        sample = Sample(
            source=source,
            task=task,
            sample_id=base_sample_id(source, r, start, end, ex.id_parts),
            task_id=task_id,
            procedure=procedure,
            video_id=video_id,
            video_path=video_path_for(source, r, video_root),
            start=start,
            end=end,
            action=ex.action,
            action_field=ex.action_field,
            ground_truth=ground_truth,
            qa_pairs=qa,
            reference=ex.action if correct else ex.reference,
            step_index=ex.step_index,
            correct=correct,
            wire={k: r.get(k, "") for k in ("action_annotation", "start_time", "end_time")},
            missing_fields=missing,
        )
        built.append((sample, problems))
    ids = disambiguate([s.sample_id for s, _ in built], records)
    for (sample, problems), sid in zip(built, ids):
        sample.sample_id = sid
        issues.extend(LoadIssue(source, task, sid, p) for p in problems)
    return [s for s, _ in built]


#: The start of a sample failure that means "the annotation record lacks a field" (scoring excludes such rows).
MISSING_FIELD = "missing annotation field(s)"


def sample_problem(sample: Sample) -> str | None:
    """Why ``sample`` cannot be evaluated as loaded (a per-sample failure reason), or None.

    Restated from the sample itself so a runner needs no state from the load: no procedure text, no valid
    ground-truth label (multiple choice), no question-answer pairs (open-ended), no video id. The video and the
    window are not checked here: the sampler applies the window rule (:mod:`ego_adr.data.window`) or the run's
    sampling policy, so a malformed window fails there with that rule's reason.
    """
    if sample.missing_fields:  # an annotation defect: a counted exclusion (ego_adr.eval.scoring.screen)
        return f"{MISSING_FIELD} {', '.join(sample.missing_fields)}"
    if not sample.video_id:
        return "record has no video_id"
    if not sample.procedure:
        return f"no procedure text for task_id {sample.task_id!r}"
    if sample.task == MULTIPLE_CHOICE and not sample.ground_truth:
        return "no valid ground-truth label"
    if sample.task == OPEN_END and not sample.qa_pairs:
        return "no question-answer pairs"
    return None
