"""The open-ended task's scoring inside lmms-eval: our judge stage and :mod:`ego_adr.eval.open_end`'s scores.

Why judging happens in the aggregation, not in ``process_results``: lmms-eval runs ``process_results`` on
several threads, one document at a time, while the evaluated model is still loaded. The judge stage
(:func:`ego_adr.run.open_end.judge_answers`) loads each judge alone, asks it every pending question in batches
through the stage cache, frees it and then scores -- the same code and the same judgements as
``python -m ego_adr.run --task open-end --protocol public`` (the public judges' prompts and score parsing, read
at run time from the public evaluator's source). The judgements are written to
``<cache>/lmms-eval/egoerrorvqa_oe_judgements-<answers digest>-<judges digest>.jsonl`` (ego_adr's cache, not
lmms-eval's) and copied beside lmms-eval's results (``<--output_path>/``); ``python -m ego_adr.eval score`` on the
task's ``samples_*.jsonl`` finds them by the answers and prints the same numbers.

Why they persist outside lmms-eval: lmms-eval has no retry path, so a judge outage must be repaired by the next
run. A judge call that failed leaves its row *unjudged*: in no average (never a mean of the other judge, never a
0), counted by the task's ``unjudged`` metric and a warning line; the next run with the same answers and judges
finds the file, asks again only for its unjudged rows (the judged ones, and every judge reply, come from the file
and the stage cache) and prints the full score.

Which judges: ``$EGOERRORVQA_JUDGES`` -- unset, the paper's two (Qwen2.5-7B-Instruct and DeepSeek-LLM-7B-Chat,
Section 3.4); ``tiny``, the two tiny random stand-ins of the offline demo; else ``NAME=MODEL,NAME=MODEL``
(``--judges`` of ``ego_adr.run``: hub ids, aliases, local folders, ``MODEL@http://HOST:PORT/v1`` for an
OpenAI-compatible server). ``$EGOERRORVQA_JUDGE_DEVICE`` picks their
device (default: cuda when available, else cpu).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from ego_adr.errors import UserError

ENV_JUDGES, ENV_JUDGE_DEVICE = "EGOERRORVQA_JUDGES", "EGOERRORVQA_JUDGE_DEVICE"
TINY = "tiny"
# Table 3's Avg-Sim. (sample-size weighted), the mean over sources, and how many answers a judge outage left
# without a judgement (in no average; the next run asks again)
OE_METRICS = ("avg_sim", "macro_avg", "unjudged")
LOWER_IS_BETTER = ("unjudged",)
_MEMO: dict = {}


def process_results(doc: dict, results: list) -> dict:
    """One open-ended reply -> the answer row the judge stage reads (the same for every metric)."""
    from ego_adr.integrations.lmms_eval.docs import CLIP_FAILURES
    from ego_adr.integrations.lmms_eval.results import EVIDENCE
    from ego_adr.run.failures import failure_kind

    reply = results[0] if results else None
    text = reply if isinstance(reply, str) else None
    evidence = EVIDENCE.pop((doc["lmms_task"], doc["sample_id"] + f"#{doc['qa_index']}"), None)
    error = None
    if evidence is not None:
        text, error = evidence.get("answer"), evidence.get("failure")
    elif doc["sample_id"] in CLIP_FAILURES:
        text, error = None, CLIP_FAILURES[doc["sample_id"]]
    elif not (text or "").strip():
        error = "empty answer"
    row = {
        "task": "open-end",
        "sample_id": doc["sample_id"],
        "qa_index": int(doc["qa_index"]),
        "source": doc["source"],
        "task_id": doc["task_id"],
        "question": doc["qa_question"],
        "reference": doc["reference"],
        "answer": text,
        "error": error if error != "empty answer" else None,
        "failure": error,
        "model": "lmms-eval",
        "method": "lmms-eval",
        "frames": doc["frames"],
        "qa_selection": "one QA pair per sample (seed 0)",
    }
    row["failure_kind"] = failure_kind({"failure": row["error"]})  # a missing clip: "sample", as MC rows
    out: dict = {k: row for k in OE_METRICS}
    out["egoerrorvqa_row"] = row
    if evidence is not None:
        out["ego_adr_evidence"] = evidence
    return out


def judge_config():
    """The :class:`~ego_adr.run.config.RunConfig` whose judge settings the judge stage reads."""
    from ego_adr.run.config import RunConfig

    raw = os.environ.get(ENV_JUDGES, "").strip()
    device = os.environ.get(ENV_JUDGE_DEVICE, "").strip() or "auto"
    cfg = RunConfig(task="open-end", protocol="public", device=device)
    if raw == TINY:
        cfg.model = None  # the offline demo's stand-in judges (run/open_end.judge_loaders)
    elif raw:
        cfg.model = "lmms-eval"
        cfg.judges = [j.strip() for j in raw.split(",") if j.strip()]
    else:
        cfg.model = "lmms-eval"  # any named model: the paper's judges
    return cfg


def _ask_again(path: Path) -> int:
    """Drop the unjudged rows (a judge call failed) of a kept judgements file, so the judge stage asks for them
    again; they go to ``*.retried.jsonl`` beside it. Returns how many."""
    from ego_adr.eval.open_end import UNJUDGED, row_score
    from ego_adr.run.failures import set_aside_rows
    from ego_adr.store import read_jsonl

    if not path.is_file():
        return 0
    rows = read_jsonl(path)
    keep = [r for r in rows if row_score(r)[1] != UNJUDGED]
    if len(keep) < len(rows):
        set_aside_rows(path, keep, [r for r in rows if row_score(r)[1] == UNJUDGED])
    return len(rows) - len(keep)


def _copy(path: Path, folder: Path) -> Path:
    """The judgements beside lmms-eval's results (written whole, then renamed: never half a file)."""
    from ego_adr.store import write_text

    return write_text(folder / path.name, path.read_bytes())


def judged(items, args=None) -> dict:
    """The judge stage over the answer rows, then :func:`ego_adr.eval.open_end.score_open_end_rows`."""
    import sys

    from ego_adr.eval.lmms_samples import answers_digest, judgements_name, judges_digest
    from ego_adr.eval.open_end import score_open_end_rows
    from ego_adr.models.cache import StageCache
    from ego_adr.run.config import ConfigError
    from ego_adr.run.open_end import judge_answers

    rows = list(items)
    name = judgements_name(answers_digest(rows), judges_digest(os.environ.get(ENV_JUDGES, "")))
    if name in _MEMO:
        return _MEMO[name]
    cfg = judge_config()
    kept = cfg.resolved_cache_dir() / "lmms-eval" / name  # outside lmms-eval: the next run finds it
    kept.parent.mkdir(parents=True, exist_ok=True)
    again = _ask_again(kept)
    cache = StageCache(cfg.resolved_cache_dir() / "stage_cache.sqlite")
    try:
        judgements, note, _ = judge_answers(cfg, rows, kept, cache, progress=False)
    except ConfigError as e:
        raise UserError(str(e)) from None
    keys = {(r["sample_id"], r["qa_index"]) for r in rows}
    metrics = score_open_end_rows([j for j in judgements if (j["sample_id"], j["qa_index"]) in keys])
    out = getattr(args, "output_path", None)
    shown = _copy(kept, Path(out)) if out else kept
    metrics.update(judges_note=note, judgements=str(shown), unjudged=metrics["n_unjudged"], asked_again=again)
    if metrics["n_unjudged"]:
        print(f"egoerrorvqa open-ended: {metrics['n_unjudged']} of {len(rows)} answers are UNJUDGED (a judge call "
              f"failed; they are in no average): {_causes(judgements, keys)}. Rerun the same lmms-eval command "
              f"once the judge is back: only these are asked again ({kept}).", file=sys.stderr)
    _MEMO[name] = metrics
    return metrics


def _causes(judgements, keys) -> str:
    from collections import Counter

    from ego_adr.eval.open_end import UNJUDGED, row_score

    causes = Counter(str(j.get("failure")).split(": unjudged")[0].removeprefix("judge call failed (").rstrip(")")
                     for j in judgements if (j["sample_id"], j["qa_index"]) in keys and row_score(j)[1] == UNJUDGED)
    return "; ".join(f"{c} ({n}x)" for c, n in causes.most_common(2))


def _metric(name: str):
    def aggregate(items, args=None):
        v = judged(items, args).get(name)
        return math.nan if v is None else float(v)

    aggregate.__name__ = aggregate.__qualname__ = f"aggregate_{name}"
    aggregate.__doc__ = f"``{name}`` of ego_adr.eval.open_end.score_open_end_rows over the judged answers."
    return aggregate


AGGREGATIONS = {f"aggregate_{k}": _metric(k) for k in OE_METRICS}
