"""``process_results`` and the aggregations of the lmms-eval tasks: every number is :mod:`ego_adr.eval`'s.

Why it is shaped like this: lmms-eval hands ``process_results`` one document and its reply, an aggregation the
list of what ``process_results`` returned for one metric, and a group's aggregation only its subtasks'
*values* (with their sizes). Pooled precision, recall and F1 cannot be rebuilt from per-source values, so every
aggregation here returns a :class:`Scored` -- a float that also carries the scored rows -- and the group
aggregation (:func:`pooled`) scores the union of its subtasks' rows. Every value, per source and pooled, is then
read from :func:`ego_adr.eval.mc.compute_mc_metrics` over those rows: exactly what ``python -m ego_adr.eval
score`` prints for the same replies (``metrics.json``: ``overall``, ``simple_average``, ``per_type_accuracy``).

A per-type accuracy with no sample of that type is ``None`` in ``metrics.json`` (printed ``-``); lmms-eval
tables need a number, so it is NaN here.
"""

from __future__ import annotations

import math
from collections import OrderedDict

from ego_adr.taxonomy import OPTIONS

RATES = ("accuracy", "precision", "recall", "f1")


def slug(option: str) -> str:
    return option.lower().replace(" ", "_")


# metric name -> path into compute_mc_metrics' result
MC_METRICS: dict[str, tuple[str, ...]] = {
    **{k: ("overall", k) for k in RATES},
    **{f"simple_average_{k}": ("simple_average", k) for k in RATES},
    **{f"per_type_accuracy_{slug(o)}": ("per_type_accuracy", "overall", o, "accuracy") for o in OPTIONS},
}
EVIDENCE: dict[tuple[str, str], dict] = {}  # (lmms task, sample_id) -> the ego_adr model's predictions row


class Scored(float):
    """A metric value that also carries its metric name and the rows it was computed from (so that a group can
    pool its subtasks' rows; see the module docstring). It prints, compares and serialises as the float."""

    key: str
    rows: tuple

    def __new__(cls, value, key: str, rows):
        obj = super().__new__(cls, value)
        obj.key, obj.rows = key, tuple(rows)
        return obj

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):  # pickled (between ranks) as the plain number
        return (float, (float(self),))


_MEMO: OrderedDict = OrderedDict()


def mc_metrics(rows) -> dict:
    """:func:`ego_adr.eval.mc.compute_mc_metrics` of ``rows``, computed once per set of rows (every metric of a
    task reads the same result)."""
    from ego_adr.eval.mc import compute_mc_metrics

    key = tuple(id(r) for r in rows)
    if key not in _MEMO:
        _MEMO[key] = (compute_mc_metrics(list(rows)), rows)  # the rows are kept so their ids stay theirs
        while len(_MEMO) > 8:
            _MEMO.popitem(last=False)
    return _MEMO[key][0]


def value(metrics: dict, key: str) -> float:
    v = metrics
    for part in MC_METRICS[key]:
        v = v.get(part) if isinstance(v, dict) else None
    return math.nan if v is None else float(v)


def scored(key: str, rows) -> Scored:
    rows = tuple(rows)
    return Scored(value(mc_metrics(rows), key), key, rows)


def _aggregation(key: str):
    def aggregate(items):
        return scored(key, items)

    aggregate.__name__ = aggregate.__qualname__ = f"aggregate_{key}"
    aggregate.__doc__ = f"``{'.'.join(MC_METRICS[key])}`` of ego_adr.eval's metrics over this task's rows."
    return aggregate


AGGREGATIONS = {f"aggregate_{k}": _aggregation(k) for k in MC_METRICS}


def pooled(metrics, sizes=None, weight_by_size=True):
    """A group's value: the same metric over the union of its subtasks' rows (``sizes`` and ``weight_by_size`` are
    lmms-eval's arguments; the rows already hold every sample once)."""
    parts = [m for m in metrics if isinstance(m, Scored)]
    if len(parts) != len(metrics) or len({m.key for m in parts}) != 1:
        raise ValueError(
            "egoerrorvqa group aggregation needs the values of egoerrorvqa subtasks (one metric)"
        )
    return scored(parts[0].key, [r for m in parts for r in m.rows])


def _row(doc: dict, reply) -> dict:
    """The predictions row of one reply, in ``ego_adr.run``'s shape (what ``ego_adr.eval score`` reads)."""
    from ego_adr.integrations.lmms_eval.docs import CLIP_FAILURES

    text = reply if isinstance(reply, str) else (None if reply is None else str(reply))
    row = {
        "sample_id": doc["sample_id"],
        "source": doc["source"],
        "task_id": doc["task_id"],
        "ground_truth": list(doc["ground_truth"]),
        "answer": text,
        "answer_from": "lmms-eval reply",
        "failure": None,
        "frames": doc["frames"],
        "protocol": doc["protocol"],
    }
    evidence = EVIDENCE.pop((doc["lmms_task"], doc["sample_id"]), None)
    if evidence is not None:  # the ego_adr model: its row says what went on the wire (None = no answer)
        row.update(
            answer=evidence.get("answer"), answer_from="ego_adr model", failure=evidence.get("failure")
        )
    elif doc["sample_id"] in CLIP_FAILURES:  # no clip: no answer, as ego_adr.run records it
        row.update(answer=None, failure=CLIP_FAILURES[doc["sample_id"]], reply_without_clip=text)
    return row, evidence


def process_results(doc: dict, results: list) -> dict:
    """One multiple-choice reply -> ``{metric: row}`` for every metric (the aggregations score the rows), plus
    ``egoerrorvqa_row`` and, from ``--model ego_adr``, ``ego_adr_evidence`` (its whole predictions row: stages,
    matched step, narration, frames, timings), which land in lmms-eval's per-sample log."""
    row, evidence = _row(doc, results[0] if results else None)
    out: dict = {k: row for k in MC_METRICS}
    out["egoerrorvqa_row"] = row
    if evidence is not None:
        out["ego_adr_evidence"] = evidence
    return out
