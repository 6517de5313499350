"""Multiple-choice metrics of EgoErrorVQA, as pure functions of a predictions file.

Definitions (paper Section 4.2 and Appendix E; counting rules as in the public evaluator):

* A sample's ground truth is a list of options; it is an *error sample* when the list contains no ``correct``
  (the released annotations never mix ``correct`` with an error type).
* ``correct`` (a hit) = the prediction equals any ground-truth option, case-insensitively.
* TP = predicted an error of a matching type; FP = predicted an error on a correct sample, or an error of a
  non-matching type; TN = predicted ``correct`` on a correct sample; FN = predicted ``correct`` on an error sample.
* An *unparseable* answer (``failure == "unparseable"``: the model answered but the text maps to no option) is
  an error prediction that matches no type, so it is an FP -- the public evaluator treats any text other than
  ``correct`` as an error prediction. A prediction string that is not one of the nine options is treated the same.
* A sample with *no answer* (any other ``failure``, or no prediction at all) counts in ``n`` as wrong but in
  none of TP/FP/TN/FN.
* accuracy = (TP + TN) / n (``n`` includes no-answer samples); precision = TP / (TP + FP);
  recall = TP / (TP + FN); F1 = harmonic mean. A rate whose denominator is 0 is reported as 0, as the public
  evaluator does, so that a run that never predicts an error has precision 0 rather than "undefined".

Duplicates: shards and resumed runs may hold several rows per ``sample_id``. :func:`dedup_rows` keeps the last
row, except that a row with a model answer (valid or unparseable) is never replaced by a later failed row --
a retry that crashed must not erase an answer that was obtained. :mod:`ego_adr.eval.merge` uses the same rule.

All rates in the returned dict are fractions in [0, 1]; the markdown report prints percentages like the paper.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ego_adr.taxonomy import CORRECT, OPTIONS

UNPARSEABLE = "unparseable"
FAILED = "failed"
CM_COLUMNS: tuple[str, ...] = (*OPTIONS, UNPARSEABLE, FAILED)
RATE_KEYS = ("accuracy", "precision", "recall", "f1")
COUNT_KEYS = ("tp", "fp", "tn", "fn", "n", "n_failed", "n_unparseable")
_CANON = {o.lower(): o for o in OPTIONS}

# Row statuses: a usable option, an answer that maps to no option, no answer at all.
ANSWERED, UNPARSED, NO_ANSWER = "answered", "unparseable", "failed"


def load_predictions(path: str | Path) -> list[dict]:
    """Read a predictions JSONL file with the project's tolerant reader (:func:`ego_adr.store.read_jsonl`):
    a torn last line (a run killed mid-write) and corrupt lines are skipped with a warning, never fatal.
    """
    from ego_adr.store import read_jsonl  # noqa: PLC0415 -- keep `import ego_adr.eval.mc` minimal

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"predictions file not found: {path}")
    return list(read_jsonl(path))


def row_status(row: dict) -> str:
    """``answered``, ``unparseable`` or ``failed`` for one predictions row (the ``failure`` field decides)."""
    failure = row.get("failure")
    if failure == UNPARSEABLE:
        return UNPARSED
    if failure:
        return NO_ANSWER
    pred = row.get("prediction")
    if pred is None:
        return NO_ANSWER
    return ANSWERED if str(pred).strip().lower() in _CANON else UNPARSED


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

    Order is that of each key's first appearance, so concatenated shards keep dataset order.
    """
    best: dict[tuple, dict] = {}
    for row in rows:
        sid = row.get("sample_id")
        if sid is None:
            raise ValueError(f"predictions row without sample_id: {str(row)[:200]}")
        key = (str(sid), row.get("qa_index"))
        prev = best.get(key)
        if prev is not None and not has_answer(row) and has_answer(prev):
            continue
        best[key] = row
    return list(best.values())


def ground_truth_of(row: dict) -> list[str]:
    gt = row.get("ground_truth")
    if isinstance(gt, str):
        gt = [gt]
    if not gt:
        raise ValueError(f"sample {row.get('sample_id')!r} has no ground_truth; is this a multiple-choice file?")
    out = []
    for g in gt:
        c = _CANON.get(str(g).strip().lower())
        if c is None:
            raise ValueError(f"sample {row.get('sample_id')!r}: unknown ground-truth option {g!r}")
        out.append(c)
    return out


def outcome(row: dict) -> dict:
    """How one row scores: status, hit, confusion cell (tp/fp/tn/fn or None) and confusion-matrix position.

    The confusion-matrix row is the ground-truth option the prediction matched, else the first ground-truth
    option (so each sample lands in exactly one cell and the matrix sums to ``n``).
    """
    gt = ground_truth_of(row)
    gt_error = CORRECT not in gt
    status = row_status(row)
    pred = _CANON[str(row["prediction"]).strip().lower()] if status == ANSWERED else None
    hit = pred is not None and pred in gt
    if status == NO_ANSWER:
        cell, col = None, FAILED
    elif status == UNPARSED:
        cell, col = "fp", UNPARSEABLE
    elif pred == CORRECT:
        cell, col = ("fn" if gt_error else "tn"), pred
    else:
        cell, col = ("tp" if hit else "fp"), pred
    return {
        "sample_id": str(row.get("sample_id")),
        "source": str(row.get("source") or "unknown"),
        "gt": gt,
        "gt_error": gt_error,
        "status": status,
        "pred": pred,
        "hit": hit,
        "cell": cell,
        "cm_row": pred if hit else gt[0],
        "cm_col": col,
        "failure": row.get("failure") if status == NO_ANSWER else None,
    }


def rates(tp: int, fp: int, tn: int, fn: int, n: int) -> dict[str, float]:
    """Accuracy/precision/recall/F1 from counts; 0 where a denominator is 0 (see module docstring)."""
    acc = (tp + tn) / n if n else 0.0
    pre = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * pre * rec / (pre + rec) if pre + rec else 0.0
    return {"accuracy": acc, "precision": pre, "recall": rec, "f1": f1}


def block(outcomes: list[dict]) -> dict:
    """The metric block for a set of scored samples."""
    cells = Counter(o["cell"] for o in outcomes)
    counts = {k: cells.get(k, 0) for k in ("tp", "fp", "tn", "fn")}
    n = len(outcomes)
    out: dict = rates(**counts, n=n)
    out.update(counts)
    out["n"] = n
    out["n_failed"] = sum(o["status"] == NO_ANSWER for o in outcomes)
    out["n_unparseable"] = sum(o["status"] == UNPARSED for o in outcomes)
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


def compute_mc_metrics(rows: list[dict], *, n_boot: int = 1000, seed: int = 0) -> dict:
    """All multiple-choice metrics of a predictions file's rows (duplicates resolved by :func:`dedup_rows`).

    Returns ``overall``, ``per_source``, ``simple_average`` (blocks with the four rates and the counts),
    ``per_type_accuracy`` (overall and per source), ``confusion_matrix``, ``ci95`` (stratified percentile
    bootstrap of the overall rates, ``n_boot`` resamples, seeded) and bookkeeping counts.
    """
    from ego_adr.eval.stats import bootstrap_ci  # noqa: PLC0415 -- numpy stays off `import ego_adr.eval.mc`

    n_rows = len(rows)
    rows = dedup_rows(rows)
    outcomes = [outcome(r) for r in rows]
    sources = sorted({o["source"] for o in outcomes}, key=source_order)
    by_src = {s: [o for o in outcomes if o["source"] == s] for s in sources}
    per_source = {s: block(os_) for s, os_ in by_src.items()}
    frames = sorted({_frames_label(r) for r in rows} - {None})
    return {
        "overall": block(outcomes),
        "per_source": per_source,
        "simple_average": simple_average(per_source),
        "per_type_accuracy": {
            "overall": per_type(outcomes),
            "per_source": {s: per_type(os_) for s, os_ in by_src.items()},
        },
        "confusion_matrix": confusion(outcomes),
        "ci95": bootstrap_ci(outcomes, n_boot=n_boot, seed=seed) if outcomes else {},
        "failure_reasons": dict(Counter(o["failure"] for o in outcomes if o["status"] == NO_ANSWER)),
        "n_rows_read": n_rows,
        "n_duplicates_dropped": n_rows - len(rows),
        "frames": "/".join(frames) if frames else None,
        "bootstrap": {"n_boot": n_boot, "seed": seed, "stratified_by": "ground truth correct vs error"},
    }
