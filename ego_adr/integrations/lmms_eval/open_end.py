"""The open-ended task's scoring inside lmms-eval: our judge stage and :mod:`ego_adr.eval.open_end`'s scores.

Why judging happens in the aggregation, not in ``process_results``: lmms-eval runs ``process_results`` on
several threads, one document at a time, while the evaluated model is still loaded. The judge stage
(:func:`ego_adr.run.open_end.judge_answers`) loads each judge alone, asks it every pending question in batches
through the stage cache, frees it and then scores -- the same code and the same judgements as
``python -m ego_adr.run --task open-end --protocol public`` (the public judges' prompts and score parsing, read
at run time from the public evaluator's source). The judgements are written to
``<--output_path>/egoerrorvqa_oe_judgements-<answers digest>.jsonl``, which ``python -m ego_adr.eval score``
scores to the same numbers.

Which judges: ``$EGOERRORVQA_JUDGES`` -- unset, the paper's two (Qwen2.5-7B-Instruct and DeepSeek-LLM-7B-Chat,
Section 3.4); ``tiny``, the two tiny random stand-ins of the offline demo; else ``NAME=MODEL,NAME=MODEL``
(``--judges`` of ``ego_adr.run``: hub ids, aliases or local folders). ``$EGOERRORVQA_JUDGE_DEVICE`` picks their
device (default: cuda when available, else cpu).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

from ego_adr.errors import UserError

ENV_JUDGES, ENV_JUDGE_DEVICE = "EGOERRORVQA_JUDGES", "EGOERRORVQA_JUDGE_DEVICE"
TINY = "tiny"
OE_METRICS = ("avg_sim", "macro_avg")  # Table 3's Avg-Sim. (sample-size weighted) and the mean over sources
_MEMO: dict = {}


def process_results(doc: dict, results: list) -> dict:
    """One open-ended reply -> the answer row the judge stage reads (the same for every metric)."""
    from ego_adr.integrations.lmms_eval.docs import CLIP_FAILURES
    from ego_adr.integrations.lmms_eval.results import EVIDENCE

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


def _digest(rows) -> str:
    blob = json.dumps([[r["sample_id"], r["qa_index"], r.get("answer"), r.get("error")] for r in rows])
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def judged(items, args=None) -> dict:
    """The judge stage over the answer rows, then :func:`ego_adr.eval.open_end.score_open_end_rows`."""
    from ego_adr.eval.open_end import score_open_end_rows
    from ego_adr.models.cache import StageCache
    from ego_adr.run.config import ConfigError
    from ego_adr.run.open_end import judge_answers

    rows = list(items)
    digest = _digest(rows)
    if digest in _MEMO:
        return _MEMO[digest]
    cfg = judge_config()
    folder = Path(getattr(args, "output_path", None) or cfg.resolved_cache_dir() / "lmms-eval")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"egoerrorvqa_oe_judgements-{digest}.jsonl"
    cache = StageCache(cfg.resolved_cache_dir() / "stage_cache.sqlite")
    try:
        judgements, note, _ = judge_answers(cfg, rows, path, cache, progress=False)
    except ConfigError as e:
        raise UserError(str(e)) from None
    metrics = score_open_end_rows(judgements)
    metrics.update(judges_note=note, judgements=str(path))
    _MEMO[digest] = metrics
    return metrics


def _metric(name: str):
    def aggregate(items, args=None):
        v = judged(items, args).get(name)
        return math.nan if v is None else float(v)

    aggregate.__name__ = aggregate.__qualname__ = f"aggregate_{name}"
    aggregate.__doc__ = f"``{name}`` of ego_adr.eval.open_end.score_open_end_rows over the judged answers."
    return aggregate


AGGREGATIONS = {f"aggregate_{k}": _metric(k) for k in OE_METRICS}
