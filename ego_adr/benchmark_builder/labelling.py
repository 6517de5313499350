"""The LLM labelling pass: the build's LLM names the error type of a step whose annotation gives none we know
(paper Section 3.3: "Qwen2.5-7B-Instruct first labels each procedural step by task type and existing annotations").

Which rows: those whose ``labels`` hold a label that is neither one of our options nor in the ``--labels``
mapping (``error``, or a dataset's own ``spilled``); a row labelled by the user's column or mapping is never
asked about. Such a row is an error (its annotation says so); the LLM is given the task, the step, the row's own
label(s) and description and the eight error types with their definitions (:data:`BUILD_LABEL`), text only and
greedy (:data:`ego_adr.benchmark_builder.llm.LABEL_GENERATION`), through the stage cache like every other call of the build.

The reply must name error types by their exact names, one per line (a line may carry a bullet or a number); a
reply naming none is not guessed into a label: the row is left out and reported, with the reply kept in
``build/labels.jsonl``. ``correct`` is never taken from the LLM (the annotation marks the step an error). An
outage is never a label and is never cached: the build stops before writing and a rerun asks again. Every label
the LLM gave carries provenance ``llm-labelled`` (the row's ``label_provenance``, the record's
``label_provenance``, the review sheet), and reviewers may correct it in the sheet (``R:labels``, :mod:`.merge`).
"""

from __future__ import annotations

import re

from ego_adr.data.build_input import Row
from ego_adr.models.base import Message, Request
from ego_adr.reasoning.prompts import BUILD_LABEL, DEFINITIONS
from ego_adr.taxonomy import ERROR_OPTIONS, normalize_option

LLM = "llm-labelled"
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s*")
_BY_NAME = {o.lower(): o for o in ERROR_OPTIONS}


def request(row: Row, config) -> Request:
    text = BUILD_LABEL.render(
        task=row.task,
        step=row.step,
        own=", ".join(row.own_labels),
        description=row.description or "(none given)",
        definitions=DEFINITIONS,
    )
    return Request([Message.user(text)], config=config, meta=BUILD_LABEL.meta("build_label"))


def parse_labels(text: str | None) -> list[str]:
    """The error options a reply names: its lines that are exactly an error type's name (case, a bullet, quotes
    and a final full stop aside), in order; else the one error option the whole reply names unambiguously."""
    if not text:
        return []
    found: list[str] = []
    for line in text.splitlines():
        name = _BULLET.sub("", line).strip().strip("\"'`*").rstrip(".").strip().lower()
        opt = _BY_NAME.get(name)
        if opt and opt not in found:
            found.append(opt)
    if found:
        return found
    one = normalize_option(text, letters=False)
    return [one] if one in ERROR_OPTIONS else []


def _labelled(row: Row, labels: list[str]) -> Row:
    row.labels = list(dict.fromkeys(row.labels + labels))
    row.label_provenance = {**row.label_provenance, **{x: LLM for x in labels if x not in row.label_provenance}}
    return row


def label_rows(rows: list[Row], model, config, fingerprint: str) -> tuple[list[Row], list[dict], list[str]]:
    """Type the rows that need it: (the rows kept, one record per asked row, the outage lines).

    A row whose reply names no error type is left out (its record says why); rows not needing a label pass as
    they are. With any outage the caller stops (nothing is written; the stage cache keeps what did answer)."""
    todo = [r for r in rows if r.own_labels]
    if not todo:
        return rows, [], []
    gens = model.generate([request(r, config) for r in todo])
    records, outage, dropped = [], [], set()
    for row, g in zip(todo, gens, strict=True):
        rec = {
            "line": row.line,
            "source": row.source,
            "recording": row.recording,
            "step": row.step,
            "own_labels": list(row.own_labels),
            "prompt": BUILD_LABEL.name,
            "prompt_version": BUILD_LABEL.version,
            "model": fingerprint,
            "raw": g.text,
            "labels": [],
            "failure": None,
            "failure_kind": None,
        }
        if g.retryable:
            outage.append(f"line {row.line}: {g.error}")
            rec.update(failure=g.error, failure_kind=g.kind)
        else:
            labels = parse_labels(g.text) if g.ok else []
            if labels:
                rec["labels"] = labels
                _labelled(row, labels)
            else:
                why = g.error or "the reply names no error type"
                rec.update(failure=why, failure_kind="sample")
                dropped.add(id(row))
        records.append(rec)
    return [r for r in rows if id(r) not in dropped], records, outage


def issue_lines(records: list[dict]) -> list[str]:
    """One line per labelled row for ``build/issues.txt``: what the LLM named, or why the row was left out."""
    out = []
    for r in records:
        own = ", ".join(repr(x) for x in r["own_labels"])
        if r["labels"]:
            out.append(f"line {r['line']}: label {own} typed by the LLM as {' | '.join(r['labels'])} ({LLM})")
        elif r["failure_kind"] == "sample":
            reply = (r["raw"] or "").strip().replace("\n", " ")[:60]
            out.append(
                f"line {r['line']}: left out: the LLM named no error type for label {own} ({r['failure']}; "
                f"reply {reply!r}); give the row one of our options or map the label with --labels"
            )
    return out
