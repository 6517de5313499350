"""What ``--monitor all`` (or ``a,b``) writes beside the monitors' folders on a CaptainCook4D benchmark:
``summary.json`` and ``summary.md``, built from each monitor's ``metrics.json``, ``validation_steps.jsonl`` and
``steps.jsonl`` and nothing else (so a resumed run writes the same bytes as one run at once).

``summary.md`` holds, in this order: the choice on validation and how stable it is (:mod:`.choice`: a ``tie``
named as such), the table of every monitor grouped by what it reads (blind baselines and reference rules first),
the goal lines (the chosen monitor against the best blind or reference rule; official vs learned vs no graph),
each reference rule's alarm agreement with the chosen monitor (:func:`ego_adr.online_mistakes.goal.agreement`),
the alarms per source label and CaptainCook4D tag, and the monitors not run with why. ``summary.json`` holds the
same as data: ``results`` (every ``metrics.json``), ``headline``, ``choice``, ``goal``, ``agreement``, ``counts``,
``not_run``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from ego_adr.captaincook4d import benchmark as B
from ego_adr.captaincook4d import choice as C
from ego_adr.captaincook4d import registry as CR
from ego_adr.captaincook4d import report as R
from ego_adr.monitoring.per_step import read_steps
from ego_adr.store import write_json, write_text

VALIDATION = "validation_steps.jsonl"


def steps_text(rows: Sequence[Mapping]) -> str:
    """Rows as a per-step file holds them (:func:`ego_adr.monitoring.per_step.write_steps`' format)."""
    return "".join(json.dumps(r, default=float) + "\n" for r in rows)


def monitor_report(m: Mapping) -> str:
    """``report.md`` of one monitor folder: its row, what it chose on validation, its alarms per tag."""
    s = {"benchmark": m["benchmark"], "results": [m], "headline": None}
    sel = m.get("selection") or {}
    return "\n".join([f"# {m['monitor']} on {m['benchmark']} ({m['group']}; omissions placed by rule "
                      f"`{m['missing_target']}`)", "", *R.table(s)[2:], "",
                      f"Chosen on validation: {json.dumps(m['validation']['choices'])} (objective by option); "
                      f"chosen by: {sel.get('chosen_by', '-')}.", "",
                      *([f"Deviations: {'; '.join(m['deviations'])}.", ""] if m.get("deviations") else []),
                      *R.kinds_table(s), ""])


def _plain(m: Mapping) -> dict:
    return json.loads(json.dumps(m, default=str))


def build(out: Path, data: B.Data, metrics: Sequence[Mapping], not_run: Sequence[str], rule: str) -> dict:
    """The summary of the monitors of ``out`` (module docstring)."""
    results = [_plain(m) for m in metrics]
    cands = [r for r in results if r["group"] not in CR.NOT_CANDIDATES]
    rows = {r["monitor"]: read_steps(out / r["monitor"] / VALIDATION) for r in cands}
    choice = C.stability(rows, fixed=[r["monitor"] for r in cands if not r["validation"]["points"]])
    s = {"benchmark": data.benchmark, "missing_target": rule, "headline": choice.get("chosen"), "choice": choice,
         "counts": {"validation": B.counts(data.val), "test": B.counts(data.test)}, "not_run": list(not_run),
         "results": results}
    s["goal"] = R.goal(s)
    s["agreement"] = agreement(out, s["headline"], [r["monitor"] for r in results if r["monitor"] in CR.REFERENCE])
    return s


def agreement(out: Path, chosen: str | None, rules: Sequence[str]) -> dict[str, dict]:
    """Each reference rule's alarm agreement with the chosen monitor on the test rows (at its two points)."""
    if chosen is None or not rules:
        return {}
    mine = read_steps(out / chosen / "steps.jsonl")
    return {n: R.agreement(mine, read_steps(out / n / "steps.jsonl")) for n in rules}


def markdown(s: Mapping) -> str:
    lines = [f"# {s['benchmark']}: every monitor, chosen on validation, scored on test", "", C.text(s["choice"]), "",
             *R.table(s), "", *R.goal_lines(s)]
    if s["agreement"]:
        lines += ["", f"Alarm agreement of each reference rule with the chosen monitor ({s['headline']}) on the test "
                  "(‡ at its macro-F1 point, † at its F1b point):", ""]
        lines += [f"- {R.agreement_text(n, a)}" for n, a in s["agreement"].items()]
    lines += ["", "Alarms per source label and CaptainCook4D tag (observations in brackets; at each monitor's "
              "macro-F1 point):", "", *R.kinds_table(s)]
    if s["not_run"]:
        lines += ["", "Not run: " + "; ".join(s["not_run"]) + "."]
    return "\n".join(lines) + "\n"


def write_summary(out: Path, data: B.Data, metrics: Sequence[Mapping], not_run: Sequence[str], rule: str) -> str:
    """``summary.json`` and ``summary.md`` in ``out``; returns the markdown."""
    s = build(out, data, metrics, not_run, rule)
    text = markdown(s)
    write_json(out / "summary.json", s)
    write_text(out / "summary.md", text)
    return text
