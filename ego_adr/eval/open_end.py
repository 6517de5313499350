"""Open-ended VQA: question choice, the LLM-judge stage, score parsing, and Table 3 scoring.

Paper Section 3.4: each answer is compared with the reference by two judges (Qwen2.5-7B-Instruct and
DeepSeek-LLM-7B-Chat by default, see :mod:`ego_adr.eval.judges`) that rate only *semantic similarity* on a 0–5
scale (5 perfect match, 4 minor error, 3 partially correct, 2 mostly wrong, 1 wrong, 0 no response); the final
score is the mean of the judges. Appendix H: greedy decoding, 256 new tokens. Table 3 reports per-source means
(Cook, Tent, Toy, Hand) and Avg-Sim., "the sample-size-weighted average over all tasks".

This module only reads and scores rows; asking the judges is :mod:`ego_adr.run.judging` (through the stage
cache, so re-scoring with the same judges asks nobody again). Judgements are appended per answer to ``judgements.jsonl`` (:class:`ego_adr.store.JsonlStore`) and a
restarted stage only judges what is missing. A score that cannot be parsed is recorded as such (``score`` null,
``method`` says why), never silently scored 0; the row then has no final score, since the paper's is the mean of
*both* judges (:func:`row_score`, counted as ``one_judge_unparseable``). A judge call that failed leaves the row
unjudged under every protocol: in no average, asked again by the next run (``n_unjudged``).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Mapping, Sequence

# score parsing lives with the judges: only the form the judge prompt asks for (see parse_score)
from ego_adr.eval.judges import PARSE_FAILURES, SCORE_RANGE, parse_score  # noqa: F401 (re-exported)
from ego_adr.eval.public_judges import PUBLIC_CALL_FAILED
from ego_adr.eval.public_judges import UNPARSED as PUBLIC_UNPARSED

log = logging.getLogger(__name__)



def source_columns() -> dict[str, str]:
    """Table 3 columns: each public source's report label (Cook, Tent, Toy, Hand), from the source registry."""
    from ego_adr.data import sources  # noqa: PLC0415

    return {n: sources.SOURCES[n].label for n in sources.names(public_only=True)}


JUDGE_DECODING = {"max_new_tokens": 256, "do_sample": False}  # Appendix H: greedy, 256 new tokens
SELECTION_MODES = ("all", "one")


def judge_prompt():
    """The judges' prompt (reasoning/prompts.py ``JUDGE``, Section 3.4), imported only when judging."""
    from ego_adr.reasoning.prompts import JUDGE

    return JUDGE


# --- question selection -----------------------------------------------------------------------------------
def select_qa(samples: Sequence, mode: str = "all", seed: int = 0) -> list[tuple[object, int]]:
    """``(sample, qa_index)`` pairs to ask. ``all``: every QA pair (default). ``one``: one pair per sample, chosen
    by a hash of (seed, sample_id) - deterministic and independent of sample order or sharding."""
    if mode not in SELECTION_MODES:
        raise ValueError(f"question selection must be one of {SELECTION_MODES}, got {mode!r}")
    out = []
    for s in samples:
        n = len(s.qa_pairs)
        if n == 0:
            continue
        if mode == "all":
            out.extend((s, i) for i in range(n))
        else:
            h = int(hashlib.sha256(f"{seed}:{s.sample_id}".encode()).hexdigest(), 16)
            out.append((s, h % n))
    return out


def selection_label(mode: str, seed: int = 0) -> str:
    return "all QA pairs" if mode == "all" else f"one QA pair per sample (seed {seed})"


def qa_key(row: dict) -> tuple:
    """A row's question: (sample id, QA index), the key of answers and judgements alike."""
    return (row["sample_id"], row["qa_index"])


#: What a judgement row carries over from its answer row.
CARRIED_FIELDS = ("source", "task_id", "question", "reference", "answer", "model", "method", "frames", "qa_selection")


#: The method of a judge whose call failed (no reply at all): the row is retryable, never scored.
JUDGE_CALL_FAILED = "judge_error"
#: Why a row has no score, as counted in ``failures``: the answer failed; a judge call failed (an outage: the row
#: is *unjudged* and asked again, never averaged); no judge's reply could be parsed; one judge's reply could not
#: be parsed (the paper's score is the mean of both judges, so there is none).
ANSWER_FAILED, UNJUDGED, NO_SCORE, ONE_UNPARSEABLE = (
    "answer_failed", "judge_call_failed", "no_judge_score", "one_judge_unparseable")
ONE_UNPARSEABLE_PREFIX = "one judge's reply unparseable, no mean of both (Section 3.4): "
#: The default protocol's rule (item 2 of issue 29), named in metrics.json and the report.
PAPER_RULE = ("mean of both judges (Section 3.4); a row where one judge's reply cannot be parsed has no score "
              "and is counted, never the other judge's score alone")
PUBLIC_RULE = "public: mean of both judges, a reply the public code cannot parse scores 0 (green_agent/agent.py)"


def judgement_row(r: dict, named: dict, outputs: dict, judge_set: list[str]) -> dict:
    """One judgement row under the default protocol. The final score is the mean of *both* judges (Section 3.4:
    "we take their average as the final score"): a row where a judge's reply cannot be parsed has no score (it
    is counted, see :func:`row_score`), never the other judge's score alone presented as the mean of two."""
    row = {"task": "open-end", "sample_id": r["sample_id"], "qa_index": r["qa_index"],
           **{k: r[k] for k in CARRIED_FIELDS if k in r}}
    per: dict[str, dict] = {}
    for n, j in named.items():
        if r.get("error"):
            per[n] = {"model": j.fingerprint, "raw": None, "error": None, "score": None, "reason": None,
                      "method": "answer_failed"}
        else:  # an empty answer is judged too, as the public evaluator does (issue 19): the rubric's 0
            g = outputs[n][qa_key(r)]
            score, reason, method = parse_score(g.text) if g.ok else (None, None, "judge_error")
            per[n] = {"model": j.fingerprint, "raw": g.text, "error": g.error, "score": score, "reason": reason,
                      "method": method}
    scores = [p["score"] for p in per.values() if p["score"] is not None]
    failed = [n for n, p in per.items() if p["score"] is None]
    failure = None
    calls = [n for n, p in per.items() if p["method"] == JUDGE_CALL_FAILED]
    if r.get("error"):
        failure = f"answer failed: {r['error']}"
        row["failure_kind"] = r.get("failure_kind")  # the answer's own kind (written with the answer row)
    elif calls:  # a failed judge call is never a result, not even a one-judge mean: retryable (issue 19)
        failure = ("judge call failed (" + "; ".join(f"{n}: {per[n]['error']}" for n in calls)
                   + "); rerun with --retry-failed to ask again")
        row["failure_kind"] = "infrastructure"
        per = {n: {**p, "score_not_counted": p["score"]} for n, p in per.items()}  # kept for audit only
        for p in per.values():
            p["score"] = None
    elif failed:
        failure = ("no judge score: " if not scores else ONE_UNPARSEABLE_PREFIX) + ", ".join(
            f"{n} {per[n]['method']}" for n in failed)
        row["failure_kind"] = "sample"
    row.update(
        judge_set=judge_set,
        judges=per,
        judge_scores={n: p["score"] for n, p in per.items()},
        score=sum(scores) / len(scores) if scores and not failure else None,
        failed_judges=failed,
        failure=failure,
    )
    return row


# --- scoring ------------------------------------------------------------------------------------------------
def row_score(r: dict) -> tuple[float | None, str | None]:
    """``(score, why there is none)`` of one judgement row; ``why`` is one of :data:`ANSWER_FAILED`,
    :data:`UNJUDGED`, :data:`NO_SCORE`, :data:`ONE_UNPARSEABLE` (or None for a row that is no failure at all).

    Why recomputed here rather than read from ``score``: the rule is the scorer's, so a file written by older
    code is scored by today's rule. A judge call that failed (an outage: the row says ``judge call failed`` or is
    marked ``failure_kind`` infrastructure) never enters an average under any protocol -- the row is unjudged
    and the next run asks again. Default protocol: the mean of both judges, none when one reply could not be
    parsed (Section 3.4, :data:`PAPER_RULE`); ``protocol: public`` rows keep the public loop's mean, whose
    unparsed replies count 0 (:data:`PUBLIC_RULE`)."""
    failure = str(r.get("failure") or "")
    if failure.startswith("answer failed"):
        return None, ANSWER_FAILED
    if failure.startswith("judge call failed") or r.get("failure_kind") == "infrastructure":
        return None, UNJUDGED
    scores = r.get("judge_scores")
    if r.get("protocol") != "public" and isinstance(scores, Mapping) and scores:
        got = [float(v) for v in scores.values() if v is not None]
        if len(got) == len(scores):
            return sum(got) / len(got), None
        return None, (ONE_UNPARSEABLE if got else NO_SCORE)
    if r.get("score") is not None:
        return float(r["score"]), None
    return None, (NO_SCORE if failure or scores is not None else None)


def _rule(rows: list[dict]) -> dict:
    """Which rule combined the judges, and how many rows it left without a score because one reply was
    unparseable (issue 29 item 2: the rows the rule affects are counted)."""
    public = [r for r in rows if r.get("protocol") == "public"]
    affected = sum(row_score(r)[1] == ONE_UNPARSEABLE for r in rows)
    zeros = sum(1 for r in public for p in (r.get("judges") or {}).values() if p.get("method") == PUBLIC_UNPARSED)
    if public and len(public) == len(rows):
        return {"rule": PUBLIC_RULE, "unparsed_replies_scored_0": zeros}
    return {"rule": PAPER_RULE, "rows_one_judge_unparseable": affected,
            **({"public_rows": len(public), "unparsed_replies_scored_0": zeros} if public else {})}


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _unique(rows: list[dict], field: str):
    vals = {json.dumps(r.get(field), sort_keys=True) for r in rows if r.get(field) is not None}
    return json.loads(vals.pop()) if len(vals) == 1 else (None if not vals else "mixed")


def score_open_end_rows(rows: Sequence[dict], selection: str | None = None) -> dict:
    """Table 3 metrics of judgement rows: per-source means, Avg-Sim. (sample-size weighted: the mean over all
    scored QA pairs, i.e. each source weighted by its number of scored pairs), per-judge means, failure counts.
    Pure function of the rows; duplicated (sample_id, qa_index) rows (merged shards) keep the last one."""
    if not rows:
        raise ValueError("no judgement rows to score")
    if not any("score" in r and ("judge_scores" in r or "judges" in r) for r in rows):
        raise ValueError(
            "these rows carry no judge scores (an answers file?): run the judge stage first, "
            "ego_adr.run.judging.judge_rows(...) -> judgements.jsonl, and score that file"
        )
    last = {}
    for r in rows:
        if "sample_id" in r and "qa_index" in r:
            last[qa_key(r)] = r
    uniq = list(last.values())
    by_source: dict[str, list[float]] = {}
    judge_scores: dict[str, dict[str, list[float]]] = {}
    judge_methods: dict[str, Counter] = {}
    failures: Counter = Counter()
    for r in uniq:
        src = r.get("source") or "unknown"
        score, why = row_score(r)
        if score is not None:
            by_source.setdefault(src, []).append(score)
        elif why:
            failures[why] += 1
        for n, p in (r.get("judges") or {}).items():
            judge_methods.setdefault(n, Counter())[p.get("method") or "?"] += 1
        for n, s in (r.get("judge_scores") or {}).items():
            judge_scores.setdefault(n, {}).setdefault(src, [])
            if s is not None and why != UNJUDGED:  # an outage's row says nothing about any judge
                judge_scores[n][src].append(float(s))
    all_scores = [s for v in by_source.values() for s in v]
    from ego_adr.data.sources import order_key  # noqa: PLC0415

    labels = source_columns()
    per_source = {
        src: {"column": labels.get(src, src), "mean": _mean(v), "n": len(v)}
        for src, v in sorted(by_source.items(), key=lambda kv: order_key(kv[0]))
    }
    per_judge = {}
    for n, srcs in judge_scores.items():
        flat = [s for v in srcs.values() for s in v]
        methods = judge_methods.get(n, Counter())
        per_judge[n] = {
            "mean": _mean(flat),
            "n": len(flat),
            "per_source": {src: _mean(v) for src, v in srcs.items()},
            # the public judges' unparsed replies (scored 0 there) are parse failures too (issue 18)
            "parse_failures": sum(c for m, c in methods.items() if m in PARSE_FAILURES or m == PUBLIC_UNPARSED),
            "judge_errors": sum(c for m, c in methods.items() if m in (JUDGE_CALL_FAILED, *PUBLIC_CALL_FAILED)),
            "methods": dict(methods),
        }
    source_means = [v["mean"] for v in per_source.values() if v["mean"] is not None]
    return {
        "task": "open-end",
        "n_rows": len(uniq),
        "n_duplicate_rows": len(rows) - len(uniq),
        "n_scored": len(all_scores),
        "n_unscored": len(uniq) - len(all_scores),
        "failures": dict(failures),
        "n_unjudged": failures.get(UNJUDGED, 0),
        "judge_rule": _rule(uniq),
        "avg_sim": _mean(all_scores),
        "macro_avg": _mean(source_means),
        "per_source": per_source,
        "per_judge": per_judge,
        "judges": sorted(per_judge),
        "qa_selection": selection or _unique(uniq, "qa_selection") or "unrecorded",
        "method": _unique(uniq, "method") or _unique(uniq, "model"),
        "frames": _unique(uniq, "frames"),
    }


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.2f}"


def render_open_end_report(metrics: dict | Sequence[dict]) -> str:
    """Markdown in Table 3's layout (Method, frames, Cook, Tent, Toy, Hand, Avg-Sim.), then per-judge means,
    failure counts and the question selection of each run."""
    runs = [metrics] if isinstance(metrics, Mapping) else list(metrics)
    columns = source_columns()
    extra = sorted({s for m in runs for s in m["per_source"] if s not in columns})
    cols = [*columns, *extra]
    head = ["Method", "frames", *[columns.get(c, c) for c in cols], "Avg-Sim."]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for m in runs:
        frames = m.get("frames")
        cells = [str(m.get("method") or "model"), f"{frames}f" if isinstance(frames, int) else "-"]
        cells += [_fmt(m["per_source"].get(c, {}).get("mean")) for c in cols]
        lines.append("| " + " | ".join([*cells, _fmt(m["avg_sim"])]) + " |")
    lines += ["", "Scores: mean of the judges' 0-5 similarity ratings (Section 3.4); Avg-Sim. weights each source by "
              "its number of scored QA pairs (Table 3)."]
    for m in runs:
        rule = m.get("judge_rule") or {}
        lines += ["", f"**{m.get('method') or 'model'}** - questions: {m['qa_selection']}; "
                  f"{m['n_scored']}/{m['n_rows']} answers scored (unscored: {m['failures'] or 'none'}). "
                  f"Judges combined by: {rule.get('rule', PAPER_RULE)}"
                  + (f"; {rule['rows_one_judge_unparseable']} row(s) have no score because one judge's reply could "
                     "not be parsed" if "rows_one_judge_unparseable" in rule else "")
                  + (f"; {rule['unparsed_replies_scored_0']} unparsed replies scored 0"
                     if "unparsed_replies_scored_0" in rule else "") + "."]
        note = m.get("table_note") or empty_table_note(m, tiny_judges=False)
        if note:  # a row of "-" says why (issue 28 item 9)
            lines += ["", f"Note: {note}"]
        if m.get("n_unjudged"):
            lines += ["", f"**{m['n_unjudged']} answer(s) are unjudged: a judge call failed (an outage). They are in "
                      "no average; the next run asks those judges again.**"]
        lines += ["", "| Judge | mean | n | parse failures | judge errors |", "|---|---|---|---|---|"]
        for n, j in m["per_judge"].items():
            lines.append(f"| {n} | {_fmt(j['mean'])} | {j['n']} | {j['parse_failures']} | {j['judge_errors']} |")
    return "\n".join(lines) + "\n"


def empty_table_note(metrics: dict, tiny_judges: bool) -> str | None:
    """Why a Table 3 row is all ``-`` (issue 28 item 9), or None when something was scored."""
    if metrics.get("n_scored") or not metrics.get("n_rows"):
        return None
    why = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in (metrics.get("failures") or {}).items()) or "none"
    note = f"Every score is '-': none of the {metrics['n_rows']} answers has a judge score ({why})."
    if tiny_judges:
        note += (" The offline stand-in judges are tiny random LMs: they never write a score in the form the judge "
                 "prompt asks for ({\"score\": N}), and the tiny model's random answers are not judgeable anyway. "
                 "This table shows that answering, judging and scoring run end to end, not a number; real judges "
                 "(--judges, docs/protocol.md) score real answers.")
    return note
