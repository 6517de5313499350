"""Open-ended QA pairs written by the build's LLM, two or three per step segment (paper Section 3.3, App. A).

The message holds the task, its procedure, the step, and for an error segment the error type(s) and the free-text
description of what went wrong and why (App. A: "the step description, the erroneous action, and an explanation of
the error and its cause"). A correct segment's prompt asks for plain pairs about the step: the deliberately
misleading questions about correct steps are the final annotator's in the paper (Section 3.3; the sheet's adder
role), and only ``misleading=True`` (``data build --llm-misleading``, named in the card) asks the LLM for them. The reply must be the JSON list the prompt asks for (or ``Q:``/``A:`` lines); anything else is
recorded as unparseable for that segment, never guessed into a pair. An outage (a retryable failure) is recorded
as such and never becomes a pair: a rerun asks again (the stage cache keeps only successful calls).

Every pair carries its ``id`` (a hash of the segment and its text, so a decision made on one text never silently
applies to another), ``provenance`` (``llm``), the prompt name and version and the model fingerprint.
"""

from __future__ import annotations

import hashlib
import json
import re

from ego_adr.data.build_input import Row
from ego_adr.models.base import Message, Request
from ego_adr.reasoning.prompts import BUILD_QA_CORRECT, BUILD_QA_CORRECT_MISLEADING, BUILD_QA_ERROR

MIN_PAIRS, MAX_PAIRS = 2, 3  # Appendix A: "two or three QA-pairs for the same step segment"
_QA_LINES = re.compile(
    r"^\s*(?:\d+[.)]\s*)?Q(?:uestion)?\s*\d*\s*[:.]\s*(.+?)\s*\n\s*A(?:nswer)?\s*\d*\s*[:.]\s*(.+?)\s*$",
    re.IGNORECASE | re.MULTILINE,
)


def pair_id(sample_id: str, question: str, answer: str, prefix: str = "g") -> str:
    h = hashlib.sha1("\x1f".join((sample_id, question, answer)).encode()).hexdigest()[:10]
    return f"{prefix}-{h}"


def prompt_for(row: Row, misleading: bool = False):
    if not row.correct:
        return BUILD_QA_ERROR
    return BUILD_QA_CORRECT_MISLEADING if misleading else BUILD_QA_CORRECT


def request(row: Row, procedure: str, config, misleading: bool = False) -> Request:
    prompt = prompt_for(row, misleading)
    text = prompt.render(
        task=row.task,
        procedure=procedure or "(none)",
        step=row.step,
        labels=", ".join(row.labels),
        description=row.description or "(none given)",
    )
    return Request([Message.user(text)], config=config, meta=prompt.meta("build_qa"))


def _from_json(text: str) -> list[tuple[str, str]]:
    dec = json.JSONDecoder()
    found: list = []
    for i, ch in enumerate(text):
        if ch not in "[{":
            continue
        try:
            obj, _ = dec.raw_decode(text, i)
        except json.JSONDecodeError:
            continue
        items = obj if isinstance(obj, list) else [obj]
        good = [
            (str(o.get("question", "")).strip(), str(o.get("answer", "")).strip())
            for o in items
            if isinstance(o, dict)
        ]
        good = [g for g in good if g[0] and g[1]]
        if good:
            found = good
            break
    return found


def parse_pairs(text: str | None) -> list[tuple[str, str]]:
    """The (question, answer) pairs of a reply, at most :data:`MAX_PAIRS`, duplicates dropped."""
    if not text:
        return []
    pairs = _from_json(text) or [(q.strip(), a.strip()) for q, a in _QA_LINES.findall(text)]
    out: list[tuple[str, str]] = []
    for q, a in pairs:
        if (q, a) not in out:
            out.append((q, a))
    return out[:MAX_PAIRS]


def outcome(sample_id: str, row: Row, gen, model_fingerprint: str, misleading: bool = False) -> dict:
    """One segment's generation record: its pairs, or why it has none (``failure`` + ``failure_kind``)."""
    prompt = prompt_for(row, misleading)
    rec = {
        "sample_id": sample_id,
        "source": row.source,
        "line": row.line,
        "prompt": prompt.name,
        "prompt_version": prompt.version,
        "model": model_fingerprint,
        "raw": gen.text,
        "pairs": [],
        "failure": None,
        "failure_kind": None,
    }
    if not gen.ok:
        rec.update(failure=gen.error, failure_kind=gen.kind)
        return rec
    pairs = parse_pairs(gen.text)
    if not pairs:
        rec.update(failure="unparseable: the reply holds no question-answer pair", failure_kind="sample")
        return rec
    if len(pairs) < MIN_PAIRS:
        rec["note"] = f"{len(pairs)} pair (the prompt asks for {MIN_PAIRS}-{MAX_PAIRS})"
    rec["pairs"] = [
        {
            "id": pair_id(sample_id, q, a),
            "question": q,
            "answer": a,
            "provenance": "llm",
            "prompt": prompt.name,
            "prompt_version": prompt.version,
            "model": model_fingerprint,
        }
        for q, a in pairs
    ]
    return rec
