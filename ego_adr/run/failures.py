"""Failures know their kind: an outage is not a property of the sample, so it must never look like one.

A row's failure is ``infrastructure`` when the model or the decoder never gave the sample a fair try (connection
refused, timeout, HTTP 5xx/429, out of memory, a decoder that crashed rather than refused the file): it is
*retryable* -- ``--retry-failed`` reruns exactly those rows, nothing about them is cached, and a run whose
failures are mostly of this kind exits non-zero (:data:`EXIT_INFRASTRUCTURE`) with a summary instead of
reporting an accuracy that only measures the outage. Every other failure (missing video, no procedure text,
unparseable answer, a 4xx refusal) is a ``sample`` failure: rerunning gives the same result, so it is final.

A stage with a fallback (the model's key-step choice falls back to TF-IDF) hides an outage behind a plausible
answer; such a row is turned into an infrastructure failure too, because its answer is not the one an
uninterrupted run would give.

A run whose rows *mostly* failed for one sample reason (every video missing: a wrong ``--video-root``, or
``--video-root`` without ``--data-root`` on the demo) is not a result either: its table of 0.0 only measures the
mistake. Only failures before any reply count (an unparsed reply says something about the model). Such a run
ends with :data:`EXIT_USER` (2) and that reason in one line, and its report leads with it
(issue 18). "Mostly" is at least half of the rows, the same threshold as for infrastructure failures.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path

from ego_adr.models.base import INFRASTRUCTURE, SAMPLE, error_kind
from ego_adr.reasoning.clips import decode_error_text  # noqa: F401  (re-exported)

EXIT_INFRASTRUCTURE = 3
EXIT_USER = 2
RETRIED_FILE = "predictions.retried.jsonl"

def _stage_errors(row: dict) -> list[tuple[str, str]]:
    stages = row.get("stages") or {}
    return [(k.removesuffix("_error"), v) for k, v in stages.items()
            if k.endswith("_error") and isinstance(v, str) and error_kind(v) == INFRASTRUCTURE]


def failure_kind(row: dict) -> str | None:
    """``"infrastructure"``, ``"sample"`` or ``None`` (no failure) for one predictions row."""
    if row.get("failure_kind") in (INFRASTRUCTURE, SAMPLE):
        return row["failure_kind"]
    failure = row.get("failure") or row.get("error")
    if failure:
        return error_kind(str(failure))
    return INFRASTRUCTURE if _stage_errors(row) else None


def mark(row: dict) -> dict:
    """Record the failure kind on a fresh row (``failure_kind``); a row whose stage fell back because of an outage
    becomes an infrastructure failure (its fallback answer is kept under ``stages.fallback_prediction``)."""
    if not row.get("failure"):
        hidden = _stage_errors(row)
        if hidden:
            stage, err = hidden[0]
            row.setdefault("stages", {})["fallback_prediction"] = row.get("prediction")
            row["prediction"] = None
            row["failure"] = f"model_error[{stage}]: {err}"
    row["failure_kind"] = failure_kind(row)
    return row


def is_retryable(row: dict) -> bool:
    return failure_kind(row) == INFRASTRUCTURE


def summarise(rows: list[dict]) -> dict:
    """Counts of failures by kind, the commonest infrastructure reasons, and the exit code the run deserves:
    :data:`EXIT_INFRASTRUCTURE` when at least half of the failed rows failed on infrastructure, else 0.

    Reasons are counted by their kind (:func:`reason_class` of the whole text), never by their text: the same
    missing-video error on a long Assembly101 path and on a short one is one reason (issue 28, item 5)."""
    kinds = Counter(failure_kind(r) for r in rows)
    n_failed = kinds[INFRASTRUCTURE] + kinds[SAMPLE]
    outages = [_reason(r) for r in rows if failure_kind(r) == INFRASTRUCTURE]
    reasons = Counter(reason_class(t) for t in outages)
    first = {}  # each kind of outage is shown by its first text (readable: "HTTP 503", not "HTTP <n>")
    for t in outages:
        first.setdefault(reason_class(t), t)
    infra = kinds[INFRASTRUCTURE]
    # only failures of the inputs (no reply at all): an unparsed reply is a result about the model
    inputs = [r for r in rows if failure_kind(r) == SAMPLE and not r.get("raw") and not r.get("answer")]
    sample_reasons = Counter(reason_class(_reason(r)) for r in inputs)
    top, top_n = sample_reasons.most_common(1)[0] if sample_reasons else (None, 0)
    dominant = None
    if top_n and 2 * top_n >= len(rows):
        example = next(_reason(r) for r in inputs if reason_class(_reason(r)) == top)
        dominant = {"reason": _shown(top), "n": top_n, "example": _shown(example)}
    code = EXIT_INFRASTRUCTURE if infra and 2 * infra >= n_failed else (EXIT_USER if dominant else 0)
    return {"n_rows": len(rows), "n_failed": n_failed, "n_infrastructure": infra, "n_sample": kinds[SAMPLE],
            "infrastructure_reasons": {_shown(first[k]): v for k, v in reasons.most_common(3)},
            "dominant_sample_failure": dominant, "exit_code": code}


_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.IGNORECASE)
_PATH = re.compile(r"(?<![\w.])/[^\s:]+")
_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")
_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w.])", re.IGNORECASE)
SHOWN_CHARS = 160  # a reason or example in a summary line


def reason_class(text: str) -> str:
    """The kind of a failure: its text with what varies from sample to sample -- the URLs and files it names,
    quoted values, numbers -- replaced by placeholders, so the same mistake on many files (or windows, or
    steps) counts as one reason. Applied to the whole text: cut first, a long path lost its tail and the
    same failure counted as two."""
    text = _URL.sub("<url>", text)
    text = _PATH.sub("<path>", text)
    text = _QUOTED.sub("<value>", text)
    return _NUMBER.sub("<n>", text)


def _shown(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 3] + "..."


def dominant_line(summary: dict, out: Path) -> str:
    """One line for stderr (and the report's first note) when most rows failed for one sample reason."""
    d = summary["dominant_sample_failure"]
    eg = f", e.g. {d['example']}" if d.get("example") and d["example"] != d["reason"] else ""
    return (f"{d['n']} of {summary['n_rows']} samples failed for one reason ({d['reason']}{eg}); the table in "
            f"{out} measures that, not the model: fix the inputs (e.g. --video-root / --data-root) and rerun")


def _reason(row: dict) -> str:
    """The failure text of a row, whole (without the stage tag and the infrastructure tag)."""
    text = str(row.get("failure") or row.get("error") or "")
    text = text.split("] ", 1)[-1] if text.startswith("model_error[") else text
    return text.replace("[infrastructure] ", "")


def summary_line(summary: dict, out: Path) -> str:
    """One line for stderr when a run ends with infrastructure failures."""
    why = "; ".join(f"{v}x {k}" for k, v in summary["infrastructure_reasons"].items())
    return (f"{summary['n_infrastructure']} of {summary['n_rows']} samples failed on infrastructure ({why}); "
            f"results in {out} are incomplete: once the model/server is back, rerun the same command with "
            "--retry-failed")


def drop_retryable(predictions: Path) -> int:
    """Remove the retryable rows from a predictions file (atomically, keeping every other row in order) and
    append them to ``predictions.retried.jsonl`` beside it for audit; returns how many were removed. The caller
    holds the folder lock."""
    from ego_adr.store import read_jsonl

    predictions = Path(predictions)
    if not predictions.is_file():
        return 0
    rows = read_jsonl(predictions)
    retry = [r for r in rows if is_retryable(r)]
    if not retry:
        return 0
    set_aside_rows(predictions, [r for r in rows if not is_retryable(r)], retry, predictions.parent / RETRIED_FILE)
    return len(retry)


def set_aside_rows(path: Path, keep: list[dict], dropped: list[dict], aside: Path | None = None) -> None:
    """Rewrite ``path`` with ``keep`` only, after appending ``dropped`` to ``aside`` (``*.retried.jsonl`` beside
    it): ``--retry-failed`` asks again for what it dropped and the dropped rows stay on record. Both are flushed
    to disk (a rerun resumes from them); the caller holds the folder lock."""
    from ego_adr.store import write_jsonl

    with open(aside or path.with_suffix(".retried.jsonl"), "a", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in dropped)
        f.flush()
        os.fsync(f.fileno())
    write_jsonl(path, keep, durable=True)
