"""Multiple-choice metrics of EgoErrorVQA, as pure functions of a predictions file.

Per-sample scoring is :mod:`ego_adr.eval.scoring` -- the public evaluator's rule exactly (read its docstring);
this module aggregates (paper Section 4.2 and Appendix E):

* TP/FP/TN/FN as defined there; ``n`` includes samples without an answer (they are in no cell);
* accuracy = hits / n (the public ``correct_count / total``); precision = TP / (TP + FP); recall = TP / (TP + FN);
  F1 = harmonic mean. A rate whose denominator is 0 is reported as 0, as the public evaluator does, so that a
  run that never predicts an error has precision 0 rather than "undefined";
* ``n_unparseable`` (alias ``n_not_option``) counts answers that are no option string -- scored, as error
  claims that are never credited; ``n_failed`` counts samples without an answer;
* rows that cannot be scored (no id, no source, an unknown label, a foreign source) are *excluded* and rows
  without ground truth *unscored*: both are counted and listed under ``excluded`` / ``unscored``, never raised.

Duplicates: shards and resumed runs may hold several rows per ``sample_id``. :func:`dedup_rows` keeps the last
row, except that a row with a model answer is never replaced by a later failed row -- a retry that crashed must
not erase an answer that was obtained. :mod:`ego_adr.eval.merge` uses the same rule.

All rates in the returned dict are fractions in [0, 1]; the markdown report prints percentages like the paper.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ego_adr.eval.scoring import (  # noqa: F401  (rates: re-exported)
    ANSWERED,
    EXCLUDED,
    NO_ANSWER,
    NOT_OPTION,
    SCORED,
    UNSCORED,
    describe,
    labels_of,
    lenient_block,
    rates,
    row_status,
    score_row,
    screen,
    screen_rows,
)
from ego_adr.taxonomy import OPTIONS

UNPARSEABLE = "unparseable"
FAILED = "failed"
CM_COLUMNS: tuple[str, ...] = (*OPTIONS, UNPARSEABLE, FAILED)
RATE_KEYS = ("accuracy", "precision", "recall", "f1")
COUNT_KEYS = ("tp", "fp", "tn", "fn", "n", "n_failed", "n_unparseable")

# Row statuses (see ego_adr.eval.scoring): an option string, other text (an uncredited error claim), no answer.
ANSWERED, UNPARSED, NO_ANSWER = ANSWERED, NOT_OPTION, NO_ANSWER


def load_predictions(path: str | Path) -> list[dict]:
    """Read a predictions JSONL file with the project's tolerant reader (:func:`ego_adr.store.read_jsonl`):
    a torn last line (a run killed mid-write) and corrupt lines are skipped with a warning, never fatal.
    """
    from ego_adr.store import read_jsonl  # noqa: PLC0415 -- keep `import ego_adr.eval.mc` minimal

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"predictions file not found: {path}")
    return list(read_jsonl(path))


def is_open_row(row: dict) -> bool:
    return row.get("task") == "open-end" or "judge_scores" in row or "qa_index" in row


def has_answer(row: dict) -> bool:
    """Whether a row holds a model answer: a multiple-choice row that is not a failure (an unparseable answer
    is an answer), or an open-ended answer/judgement row without a ``failure``."""
    if is_open_row(row):
        return not row.get("failure")
    return row_status(row) != NO_ANSWER


def dedup_rows(rows: list[dict]) -> list[dict]:
    """One row per sample -- per ``(sample_id, qa_index)`` for open-ended rows, which have one row per
    question: the last one, unless it has no answer and an earlier one has.

    Order is that of each key's first appearance, so concatenated shards keep dataset order. Rows without a
    ``sample_id`` cannot be matched and are kept as they are (scoring excludes them and says so).
    """
    best: dict[tuple, dict] = {}
    for n, row in enumerate(rows):
        sid = row.get("sample_id") if isinstance(row, dict) else None
        if sid is None or str(sid) == "":
            best[("", n)] = row
            continue
        key = (str(sid), row.get("qa_index"))
        prev = best.get(key)
        if prev is not None and not has_answer(row) and has_answer(prev):
            continue
        best[key] = row
    return list(best.values())


def outcome(row: dict) -> dict:
    """How one row scores: :func:`ego_adr.eval.scoring.score_row` (the public rule)."""
    return score_row(row)


def block(outcomes: list[dict]) -> dict:
    """The metric block for a set of scored samples."""
    cells = Counter(o["cell"] for o in outcomes)
    counts = {k: cells.get(k, 0) for k in ("tp", "fp", "tn", "fn")}
    n = len(outcomes)
    out: dict = rates(**counts, n=n)
    out["accuracy"] = sum(o["hit"] for o in outcomes) / n if n else 0.0  # the public correct_count / total
    out.update(counts)
    out["n"] = n
    out["n_failed"] = sum(o["status"] == NO_ANSWER for o in outcomes)
    out["n_unparseable"] = out["n_not_option"] = sum(o["status"] == UNPARSED for o in outcomes)
    return out


def per_type(outcomes: list[dict]) -> dict[str, dict]:
    """Per-option accuracy: among samples whose ground truth contains the option, the share predicted *as that
    option* (paper Section 4.2, Table 4 columns C..WOr).

    A multi-label sample counts once for each of its types, and is a hit only for the type that was predicted:
    GT [Wrong action, Wrong object] answered "Wrong object" is a hit for Wrong object and a miss for Wrong action,
    so a model is not credited with a type it never named. For single-label samples this equals plain accuracy.
    ``accuracy`` is ``None`` for an option with no samples (printed as "-").
    """
    out = {}
    for opt in OPTIONS:
        support = [o for o in outcomes if opt in o["gt"]]
        hits = sum(o["pred"] == opt for o in support)
        out[opt] = {"accuracy": hits / len(support) if support else None, "n": len(support), "hits": hits}
    return out


def confusion(outcomes: list[dict]) -> dict:
    counts = [[0] * len(CM_COLUMNS) for _ in OPTIONS]
    for o in outcomes:
        counts[OPTIONS.index(o["cm_row"])][CM_COLUMNS.index(o["cm_col"])] += 1
    return {"labels": list(OPTIONS), "columns": list(CM_COLUMNS), "counts": counts}


def simple_average(blocks: dict[str, dict]) -> dict:
    """Unweighted mean over sources of the four rates (the public evaluator's "simple average").

    Counts are summed over sources, so they equal the overall counts; only the rates differ from ``overall``.
    """
    out: dict = {}
    for k in RATE_KEYS:
        out[k] = sum(b[k] for b in blocks.values()) / len(blocks) if blocks else 0.0
    for k in COUNT_KEYS:
        out[k] = sum(b[k] for b in blocks.values())
    out["n_sources"] = len(blocks)
    return out


def source_order(source: str) -> tuple:
    """Sort key: the source registry's order (the paper's Table 3: Cook, Tent, Toy, Hand), then any other source
    by name."""
    from ego_adr.data.sources import order_key  # noqa: PLC0415 -- keep `import ego_adr.eval.mc` minimal

    return order_key(source)


def _frames_label(row: dict) -> str | None:
    v = row.get("frames", row.get("n_frames"))
    if v is None or isinstance(v, (dict, list)):
        return None
    return f"{v}f" if isinstance(v, int) else str(v)


def is_open_end_rows(rows: list[dict]) -> bool:
    """True when the rows come from an open-ended run (scored by :mod:`ego_adr.eval.open_end`)."""
    return any(is_open_row(r) for r in rows)


def cot_no_answer_line(rows: list[dict]) -> dict | None:
    """CoT replies without their ``Answer:`` line (issue 29 item 1), per source; None when no row is CoT's.

    Why counted: the CoT prompt asks for reasoning, then a final ``Answer: <option>`` line, which the method reads
    (:func:`ego_adr.reasoning.answers.final_line_answer`). A reply cut off by the token budget (256, App. C)
    before that line has none; under the public rule the whole reply is then the answer -- an error claim matching
    no option. The scoring stays the public rule; how many replies it concerns is printed. Read from each row's
    raw reply, so a lenient reading (``answers=lenient``) that found an option elsewhere still counts here."""
    from ego_adr.reasoning.answers import final_line_answer  # noqa: PLC0415

    cot = [r for r in rows if "cot" in (r.get("mode"), r.get("route")) and isinstance(r.get("raw"), str)]
    if not cot:
        return None
    missing = Counter(r.get("source") or "unknown" for r in cot
                      if final_line_answer(r["raw"]).extraction == "no-final-line")
    replies = Counter(r.get("source") or "unknown" for r in cot)
    return {"total": sum(missing.values()), "replies": len(cot),
            "per_source": {s: {"n": missing.get(s, 0), "replies": replies[s]}
                           for s in sorted(replies, key=source_order)}}


def compute_mc_metrics(rows: list[dict], *, n_boot: int = 1000, seed: int = 0, sources=None) -> dict:
    """All multiple-choice metrics of a predictions file's rows (duplicates resolved by :func:`dedup_rows`).

    Returns ``overall``, ``per_source``, ``simple_average`` (blocks with the four rates and the counts),
    ``per_type_accuracy`` (overall and per source), ``confusion_matrix``, ``ci95`` (stratified percentile
    bootstrap of the overall rates, ``n_boot`` resamples, seeded) with ``ci95_flags`` (small n), ``lenient``
    (the same rates under the lenient reading, labelled, never the headline), ``scoring`` (the rule used),
    ``excluded`` / ``unscored`` (rows that could not be scored, counted and listed), ``cot_no_answer_line``
    (CoT replies without their ``Answer:`` line, per source; None without CoT rows) and bookkeeping counts.
    ``sources``, when given, is the set of sources the caller expects: rows of any other are excluded.
    """
    from ego_adr.eval.stats import bootstrap_ci, interval_flags  # noqa: PLC0415 -- numpy off `import eval.mc`

    n_rows = len(rows)
    rows, screened = screen_rows(rows, sources)
    n_kept = len(rows)
    rows = dedup_rows(rows)
    outcomes = [outcome(r) for r in rows]
    sources = sorted({o["source"] for o in outcomes}, key=source_order)
    by_src = {s: [o for o in outcomes if o["source"] == s] for s in sources}
    per_source = {s: block(os_) for s, os_ in by_src.items()}
    frames = sorted({_frames_label(r) for r in rows} - {None})
    ci = bootstrap_ci(outcomes, n_boot=n_boot, seed=seed) if outcomes else {}
    return {
        "overall": block(outcomes),
        "per_source": per_source,
        "simple_average": simple_average(per_source),
        "per_type_accuracy": {
            "overall": per_type(outcomes),
            "per_source": {s: per_type(os_) for s, os_ in by_src.items()},
        },
        "confusion_matrix": confusion(outcomes),
        "ci95": ci,
        "ci95_flags": interval_flags(outcomes, ci),
        "lenient": lenient_block(outcomes),
        "scoring": describe(),
        "answer_sources": dict(Counter(o["answer_from"] for o in outcomes)),
        "excluded": screened[EXCLUDED],
        "unscored": screened[UNSCORED],
        "failure_reasons": dict(Counter(o["failure"] for o in outcomes if o["status"] == NO_ANSWER)),
        "cot_no_answer_line": cot_no_answer_line(rows),
        "n_rows_read": n_rows,
        "n_duplicates_dropped": n_kept - len(rows),
        "frames": "/".join(frames) if frames else None,
        "bootstrap": {"n_boot": n_boot, "seed": seed, "stratified_by": "ground truth correct vs error"},
    }
