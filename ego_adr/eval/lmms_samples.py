"""lmms-eval's own per-sample log, read as ego_adr rows: ``python -m ego_adr.eval score <date>_samples_<task>.jsonl``.

Why: a number lmms-eval prints for an EgoErrorVQA task must be checkable from what lmms-eval itself logged
(issue 28 item 4). With ``--log_samples`` lmms-eval writes ``<output_path>/<model>/<date>_samples_<task>.jsonl``,
one line per document: its ``doc_id``, the reply as the task's ``process_results`` received it
(``filtered_resps``) and what ``process_results`` returned -- here ``egoerrorvqa_row``, the row it scored.

* **Multiple choice**: each line becomes the predictions row ``ego_adr.run`` would write, with the *logged reply*
  as its ``answer`` (a row whose answer could not be obtained -- no clip, or ``--model ego_adr`` concluding
  nothing -- stays without one); a reply that differs from the row's answer is refused, since then the logged
  numbers were not computed from the logged replies.
* **Open-ended**: judging happens in the task's aggregation, after the lines were made, so the judgements are in a
  file of their own, named by the answers it judged (:func:`judgements_name`). It is looked for beside the
  samples file, in lmms-eval's ``--output_path``, and where the task keeps it between runs (ego_adr's cache,
  ``<cache>/lmms-eval/``); ``--judgements FILE`` names it directly.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

JUDGEMENTS_PREFIX = "egoerrorvqa_oe_judgements-"
ROW_KEY = "egoerrorvqa_row"


class SamplesError(ValueError):
    """An lmms-eval samples file that cannot be scored as it is (the message says what to do)."""


def is_lmms_samples(rows: list[dict]) -> bool:
    """True for the lines of an lmms-eval ``samples_*.jsonl`` (``doc_id`` and ``filtered_resps`` on each)."""
    return bool(rows) and all(isinstance(r, dict) and "doc_id" in r and "filtered_resps" in r for r in rows)


def answers_digest(rows) -> str:
    """The open-ended answers a judge stage was given -> 12 hex digits (the first half of the judgements' name)."""
    blob = json.dumps([[r["sample_id"], r["qa_index"], r.get("answer"), r.get("error")] for r in rows])
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def judges_digest(judges: str) -> str:
    """The judges' setting (``$EGOERRORVQA_JUDGES`` as given, empty = the paper's) -> 8 hex digits."""
    return hashlib.sha256((judges.strip() or "paper").encode()).hexdigest()[:8]


def judgements_name(answers: str, judges: str) -> str:
    return f"{JUDGEMENTS_PREFIX}{answers}-{judges}.jsonl"


def _reply(sample: dict):
    reply = sample.get("filtered_resps")
    while isinstance(reply, list):  # one request per document: [reply] (or [[reply]] before lmms-eval flattens)
        reply = reply[0] if reply else None
    return reply


def _rows(samples: list[dict], path) -> list[dict]:
    missing = [s["doc_id"] for s in samples if not isinstance(s.get(ROW_KEY), dict)]
    if missing:
        raise SamplesError(f"{path}: lmms-eval samples without {ROW_KEY} (doc_id {missing[0]}): not an egoerrorvqa "
                           "task's log, or written by an older ego_adr; rerun lmms-eval with --log_samples")
    return [s[ROW_KEY] for s in samples]


def mc_rows(samples: list[dict], path="samples file") -> list[dict]:
    """Multiple-choice predictions rows whose answers are lmms-eval's logged replies."""
    out = []
    for s, row in zip(samples, _rows(samples, path), strict=True):
        reply, row = _reply(s), dict(row)
        # an obtained answer must be the logged reply: what gets scored is what lmms-eval logged
        if row.get("answer") is not None and reply != row["answer"]:
            raise SamplesError(f"{path}: doc_id {s['doc_id']} logged the reply {str(reply)[:60]!r} but scored "
                               f"{str(row['answer'])[:60]!r}; this log's numbers did not come from its replies")
        row.update(answer_from="lmms-eval logged reply (filtered_resps)", lmms_doc_id=s["doc_id"])
        out.append(row)
    return out


def find_judgements(samples_path: Path, answers: str, cache: Path | None = None) -> list[Path]:
    """The judgements files of these answers (any judges), beside the samples file, in its ``--output_path``
    and in the task's own store under ``cache``."""
    places = [samples_path.parent, samples_path.parent.parent]
    if cache is not None:
        places.append(cache / "lmms-eval")
    found: dict[str, Path] = {}
    for folder in places:
        for p in sorted(folder.glob(f"{JUDGEMENTS_PREFIX}{answers}-{'?' * 8}.jsonl")) if folder.is_dir() else []:
            found.setdefault(p.name, p)  # the copy nearest the samples file wins
    return list(found.values())


def open_end_rows(samples: list[dict], path: Path, judgements: Path | None = None,
                  cache: Path | None = None) -> tuple[list[dict], Path]:
    """The judgement rows of an open-ended samples file (only its own QA pairs) and the file they came from."""
    from ego_adr.store import read_jsonl

    answers = _rows(samples, path)
    if judgements is None:
        digest = answers_digest(answers)
        found = find_judgements(Path(path), digest, cache)
        if len(found) != 1:
            where = f"{Path(path).parent}, {Path(path).parent.parent}" + (f", {cache / 'lmms-eval'}" if cache else "")
            what = ("none was found" if not found else
                    f"{len(found)} were found (other judges): {', '.join(p.name for p in found)}")
            raise SamplesError(f"{path}: the judgements of these answers ({JUDGEMENTS_PREFIX}{digest}-*.jsonl in "
                               f"{where}): {what}; name one with --judgements FILE (lmms-eval writes it when the "
                               "task's aggregation judges)")
        judgements = found[0]
    if not Path(judgements).is_file():
        raise SamplesError(f"--judgements {judgements}: no such file")
    keys = {(a["sample_id"], a["qa_index"]) for a in answers}
    rows = [r for r in read_jsonl(judgements) if (r.get("sample_id"), r.get("qa_index")) in keys]
    if len({(r["sample_id"], r["qa_index"]) for r in rows}) != len(keys):
        raise SamplesError(f"{judgements} does not judge every answer of {path} ({len(rows)} of {len(keys)}); "
                           "rerun lmms-eval so its aggregation judges the rest")
    return rows, Path(judgements)
