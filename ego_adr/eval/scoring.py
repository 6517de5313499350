"""The one multiple-choice scoring rule: the public EgoErrorVQA evaluator's, exactly.

Why this module exists: a number ego_adr prints must mean what the same number means in the paper's Table 4,
which the public green agent (``src/green_agent/agent.py`` of z1oong/EgoErrorVQA) produced. Every caller --
``ego_adr.run``, ``python -m ego_adr.eval score|compare|merge``, the green agent, the experiment scripts --
scores through :func:`score_row`, so there is one definition and no silent variant.

The rule, per sample (written from the public evaluator's behaviour, not copied from it):

* the reply is stripped of surrounding whitespace, then of the characters ``.,!?;:"`` at both ends (one pass
  each, in that order: ``"correct ."`` keeps its inner space and is not ``correct``);
* it is *credited* (a hit) when it equals a ground-truth option case-insensitively;
* it is a *no-error prediction* when it equals ``correct`` case-insensitively; **any other text** -- another
  option, prose, ``Answer: Omission``, ``**Omission**``, a letter, an empty string -- is an error prediction;
* TP = error prediction that is a hit on an error sample; FP = any other error prediction; TN = ``correct`` on
  a correct sample; FN = ``correct`` on an error sample; accuracy = hits / n;
* a sample whose answer could not be obtained (no reply, a transport error, a missing video) counts in ``n``
  and in none of TP/FP/TN/FN.

What is scored is the row's ``answer``: the string a white agent would put on the wire. Files written before
rows carried ``answer`` are re-scored from what they stored (:func:`answer_of`): the one-pass baselines
(``direct``, ``cot``) and A2A rows from their raw model text -- what the public white agent sends -- and
Ego-ADR rows from the option their classification stage concluded (answer extraction is part of that method),
else the raw text.

Rows that cannot be scored are never an exception: a row without ``sample_id`` or ``source``, a ground-truth
label that is not one of the nine option strings, or (when the caller names the sources it expects) a row of
another source is *excluded*; a row without ground truth is *unscored*. Both are counted and listed by
:func:`screen_rows` and shown in reports.

A *lenient* reading (:func:`ego_adr.taxonomy.normalize_option`, which finds an option inside prose) may be
reported beside the strict score, labelled, with the number of answers only it understands; it never replaces
the strict score.
"""

from __future__ import annotations

from collections import Counter

from ego_adr.reasoning.modes import MODES
from ego_adr.taxonomy import (  # noqa: F401  (clean_reply, PUBLIC_STRIP: the rule, read here by its callers)
    CORRECT,
    OPTIONS,
    PUBLIC_STRIP,
    clean_reply,
    normalize_option,
    strict_option,
)

SCORING = "public-strict"  # the rule's name; the rule itself (clean_reply, strict_option) is in ego_adr/taxonomy.py
_CANON = {o.lower(): o for o in OPTIONS}
# the one-pass modes (their answer is the raw reply) and the green agent's A2A rows
BASELINE_MODES = (*(m for m, spec in MODES.items() if spec.one_pass), "a2a")

# Row statuses: the answer is one of the nine option strings; it is other text (an uncredited error claim);
# there is no answer at all.
ANSWERED, NOT_OPTION, NO_ANSWER = "answered", "unparseable", "failed"
# Screening verdicts.
SCORED, UNSCORED, EXCLUDED = "scored", "unscored", "excluded"
MAX_LISTED_IDS = 50


def is_baseline_row(row: dict) -> bool:
    """One-pass baselines and A2A rows: their answer is the model's raw reply (as the public white agent's)."""
    return row.get("mode") in BASELINE_MODES or row.get("route") in BASELINE_MODES


def answer_of(row: dict) -> tuple[str | None, str]:
    """``(answer text or None, where it came from)`` for one multiple-choice row.

    New rows carry ``answer`` (``None`` = no answer). Older rows are read back as explained in the module
    docstring; a row whose ``failure`` is anything but ``unparseable`` / ``empty answer`` had no answer.
    """
    if "answer" in row:
        a = row["answer"]
        return (a if isinstance(a, str) else None), str(row.get("answer_from") or "answer")
    failure = row.get("failure")
    raw = row.get("raw") if isinstance(row.get("raw"), str) else None
    if failure and failure not in ("unparseable", "empty answer"):
        return None, "no answer"
    if failure == "empty answer":  # old green-agent rows: an empty reply, which the public counts as an answer
        return raw, "raw text (old file)"
    pred = row.get("prediction")
    if is_baseline_row(row):
        return (raw if raw is not None else (str(pred) if pred is not None else None)), "raw text (old file)"
    if pred is not None:
        return str(pred), "prediction (old file)"
    return raw, "raw text (old file)"


def labels_of(row: dict) -> list[str] | None:
    """Canonical ground-truth options, ``[]`` for an unlabelled row, ``None`` for an unusable label."""
    gt = row.get("ground_truth")
    if gt is None or gt == "" or gt == []:
        return []
    if isinstance(gt, str):
        gt = [gt]
    if not isinstance(gt, list):
        return None
    out = []
    for g in gt:
        c = _CANON.get(g.lower()) if isinstance(g, str) else None
        if c is None:
            return None
        out.append(c)
    return out


def screen(row: dict, sources: set[str] | None = None) -> tuple[str, str | None]:
    """``(scored|unscored|excluded, reason)`` for one row, before any scoring."""
    sid = row.get("sample_id") if isinstance(row, dict) else None
    if not isinstance(row, dict):
        return EXCLUDED, "not a JSON object"
    if sid is None or str(sid) == "":
        return EXCLUDED, "no sample_id"
    src = row.get("source")
    if not isinstance(src, str) or not src:
        return EXCLUDED, "no source"
    if sources is not None and src not in sources:
        return EXCLUDED, f"foreign source {src!r}"
    failure = row.get("failure")
    if isinstance(failure, str) and "missing annotation field" in failure:  # the loader's reason, not an answer
        return EXCLUDED, failure.split("data: ", 1)[-1][:80]
    labels = labels_of(row)
    if labels is None:
        return EXCLUDED, f"unknown ground-truth label {row.get('ground_truth')!r:.80}"
    if not labels:
        failure = row.get("failure")
        if isinstance(failure, str) and "ground-truth label" in failure:
            # the loader dropped a label that is no option and the runner recorded why ("data: no valid ...")
            return EXCLUDED, "unknown ground-truth label (dropped by the loader)"
        return UNSCORED, "no ground truth"
    return SCORED, None


def screen_rows(rows: list, sources=None) -> tuple[list[dict], dict]:
    """The scorable rows, and the accounting of the others: ``{"excluded": {...}, "unscored": {...}}`` with
    ``n``, ``by_reason`` and up to :data:`MAX_LISTED_IDS` ``ids`` each (``ids_truncated`` when there are more)."""
    wanted = set(sources) if sources is not None else None
    keep: list[dict] = []
    other: dict[str, list[tuple[str, str]]] = {EXCLUDED: [], UNSCORED: []}
    for n, row in enumerate(rows):
        verdict, reason = screen(row, wanted)
        if verdict == SCORED:
            keep.append(row)
            continue
        sid = row.get("sample_id") if isinstance(row, dict) else None
        other[verdict].append((str(sid) if sid not in (None, "") else f"<row {n + 1}>", reason or ""))
    report = {}
    for k, items in other.items():
        ids = list(dict.fromkeys(i for i, _ in items))
        report[k] = {"n": len(items), "by_reason": dict(Counter(r for _, r in items)),
                     "ids": ids[:MAX_LISTED_IDS], "ids_truncated": len(ids) > MAX_LISTED_IDS}
    return keep, report


def _cell(pred_error: bool, gt_error: bool, hit: bool) -> str:
    if pred_error:
        return "tp" if gt_error and hit else "fp"
    return "fn" if gt_error else "tn"


def score_row(row: dict) -> dict:
    """How one screened row scores (strict), with the lenient reading beside it.

    Keys: ``sample_id, source, gt, gt_error, status, answer, answer_from, cleaned, pred, hit, cell, cm_row,
    cm_col, failure`` and ``lenient_pred, lenient_hit, lenient_cell``. ``pred`` is the option the answer is
    (``None`` for other text or no answer). The confusion-matrix row is the matched ground-truth option, else
    the first one, so each sample lands in one cell.
    """
    gt = labels_of(row) or []
    if not gt:
        raise ValueError(f"row {row.get('sample_id')!r} has no usable ground truth: screen rows first")
    gt_error = CORRECT not in gt
    gt_low = {g.lower() for g in gt}
    text, how = answer_of(row)
    out = {"sample_id": str(row.get("sample_id")), "source": str(row.get("source")), "gt": gt,
           "gt_error": gt_error, "answer": text, "answer_from": how}
    if text is None:
        failure = row.get("failure") or "no answer"
        out.update(status=NO_ANSWER, cleaned=None, pred=None, hit=False, cell=None, cm_row=gt[0], cm_col="failed",
                   failure=str(failure), lenient_pred=None, lenient_hit=False, lenient_cell=None)
        return out
    cleaned = clean_reply(text)
    pred = _CANON.get(cleaned.lower())
    hit = cleaned.lower() in gt_low
    lp = normalize_option(text)
    l_hit = lp is not None and lp.lower() in gt_low
    out.update(status=ANSWERED if pred else NOT_OPTION, cleaned=cleaned, pred=pred, hit=hit,
               cell=_cell(cleaned.lower() != CORRECT, gt_error, hit), cm_row=pred if hit else gt[0],
               cm_col=pred if pred else "unparseable", failure=None, lenient_pred=lp, lenient_hit=l_hit,
               lenient_cell=_cell(lp != CORRECT, gt_error, l_hit))
    return out


def row_status(row: dict) -> str:
    """``answered`` / ``unparseable`` (text that is no option) / ``failed`` (no answer) for one row."""
    text, _ = answer_of(row)
    if text is None:
        return NO_ANSWER
    return ANSWERED if strict_option(text) else NOT_OPTION


def rates(tp: int, fp: int, tn: int, fn: int, n: int) -> dict[str, float]:
    """Accuracy/precision/recall/F1 from counts; 0 where a denominator is 0 (as the public evaluator: a rate whose denominator is 0 is 0)."""
    acc = (tp + tn) / n if n else 0.0
    pre = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * pre * rec / (pre + rec) if pre + rec else 0.0
    return {"accuracy": acc, "precision": pre, "recall": rec, "f1": f1}


def lenient_block(outcomes: list[dict]) -> dict:
    """Rates under the lenient reading, and how many answers only it understands (strict: no option)."""
    cells = Counter(o["lenient_cell"] for o in outcomes)
    counts = {k: cells.get(k, 0) for k in ("tp", "fp", "tn", "fn")}
    out: dict = rates(**counts, n=len(outcomes))
    out["accuracy"] = sum(o["lenient_hit"] for o in outcomes) / len(outcomes) if outcomes else 0.0
    out.update(counts)
    out["n"] = len(outcomes)
    out["n_lenient_only"] = sum(o["status"] == NOT_OPTION and o["lenient_pred"] is not None for o in outcomes)
    out["reader"] = "ego_adr.taxonomy.normalize_option"
    return out


def describe() -> dict:
    """What goes into metrics.json under ``scoring``."""
    return {"name": SCORING, "strip": f"whitespace, then {PUBLIC_STRIP}", "compare": "case-insensitive",
            "no_error_option": CORRECT, "other_text": "error prediction, credited only when it is a ground-truth "
            "option", "no_answer": "counts in n, in none of TP/FP/TN/FN", "accuracy": "hits / n",
            "reference": "public EgoErrorVQA green agent (src/green_agent/agent.py)"}
