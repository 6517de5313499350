"""``run.json`` across resumes: a rerun rewrites it with everything it had, never with less.

Why: a resumed run that has nothing left to do loads no model, so on its own it knows neither the probe's
evidence nor the model fingerprint nor what the earlier invocations cost; it used to write a run.json without
them (issue 11). Here each invocation appends one entry to ``invocations`` (when, how many rows it processed and
retried, its model calls and cache hits), the totals are summed over all of them, and what only a model-loading
invocation learns (``model``, ``pipeline`` with the probe evidence) is carried over from the previous run.json
unless this invocation learnt it afresh.
"""

from __future__ import annotations

import json
from pathlib import Path

#: Keys that only an invocation that loaded the model can fill; carried over otherwise.
CARRIED = ("model", "pipeline")
#: Per-invocation counters summed into ``totals``.
COUNTERS = ("processed", "retried", "model_calls", "cache_hits", "failed_calls", "retryable_failures")


def previous(out: Path) -> dict:
    """The folder's current run.json ({} when there is none or it is unreadable)."""
    p = Path(out) / "run.json"
    if not p.is_file():
        return {}
    try:
        data = json.loads(p.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def carry_over(run_info: dict, prev: dict) -> dict:
    """Fill what this invocation did not learn from the previous run.json."""
    for k in CARRIED:
        if run_info.get(k) is None and prev.get(k) is not None:
            run_info[k] = prev[k]
    return run_info


def close_invocation(run_info: dict, prev: dict, this: dict) -> dict:
    """Append this invocation's entry to the history and recompute the totals."""
    history = [h for h in prev.get("invocations", []) if isinstance(h, dict)]
    if not history and prev.get("started"):  # a run.json from before histories existed: keep it as one entry
        history = [{"started": prev.get("started"), "finished": prev.get("finished"),
                    "processed": None, "model_calls": prev.get("model_calls", 0),
                    "cache_hits": prev.get("cache_hits", 0)}]
    history.append(this)
    run_info["invocations"] = history
    run_info["totals"] = {c: sum(int(h.get(c) or 0) for h in history) for c in COUNTERS}
    run_info["first_started"] = history[0].get("started")
    return run_info
