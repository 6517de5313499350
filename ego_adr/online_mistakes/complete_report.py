"""``report.md``, ``summary.json`` and ``summary.md`` of the complete-trial benchmarks: each monitor's cut-protocol
row beside its complete-trial row, the blind baselines and reference rules among them, and the goal of issue 35 as
issue 42 states it.

The goal: the monitor chosen without the test (:func:`.complete_eval.chosen_without_test`: the cut benchmarks'
own rule on the same training set) at least :data:`TARGET` of macro F1 above the best *rule* -- the blind
baselines (:data:`BLIND`: monitors that never look at which step was done) and the reference rules
(:data:`REFERENCE`: the training vocabulary alone) together -- with its AUROC beside; where it is not, the summary
says by how much. The verdict reads ``tie`` when it hangs on the outer-fold seed of the selection (the seeds' own
choices fall on both sides of the target; :func:`ego_adr.online_mistakes.goal.verdict`). No published table scores
these benchmarks, so there is no published row to print.
"""

from __future__ import annotations

from ego_adr.online_mistakes.data.complete import COMPLETE, CompleteStream
from ego_adr.online_mistakes.goal import agreement_text, seed_choices, seeds_text, verdict
from ego_adr.online_mistakes.registry import BLIND, REFERENCE

RULES = (*BLIND, *REFERENCE)
TARGET = 0.10
COLS = (("macro F1", "macro_f1"), ("AUROC", "auroc"), ("F1b", "balanced_f1"), ("P", "mistake_precision"),
        ("R", "mistake_recall"), ("AUPRC", "auprc"))


def _pct(v) -> str:
    return "" if v is None or v != v else f"{100 * v:.1f}"


def _auc(v) -> str:
    return "" if v is None or v != v else f"{v:.3f}"


def _num(v) -> str:
    return "none" if v is None else f"{v:.2f}"


def _cell(m: dict, key: str) -> str:
    return _auc(m.get(key)) if key in ("auroc", "auprc") else _pct(m.get(key))


def _ci(m: dict, key: str) -> str:
    lo, hi = (m.get("intervals") or {}).get(key, (None, None))
    if lo is None:
        return ""
    return f" [{_auc(lo)}-{_auc(hi)}]" if key in ("auroc", "auprc") else f" [{_pct(lo)}-{_pct(hi)}]"


def header() -> list[str]:
    return ["| monitor | cut: macro F1 | cut: AUROC | " + " | ".join(c for c, _ in COLS)
            + " | first mistake: on target / early / late / missed | false alarms before it |",
            "|---|---:|---:|" + "---:|" * len(COLS) + "---|---:|"]


def row(m: dict) -> str:
    d = m["detection"]
    tag = " (blind)" if m["monitor"] in BLIND else " (reference)" if m["monitor"] in REFERENCE else \
        " (privileged)" if m.get("privileged") else ""
    m3 = " / ".join(_pct(d.get(k)) for k in ("on_target", "early", "late", "missed"))
    cells = " | ".join(_cell(m, k) + (_ci(m, k) if k in ("macro_f1", "auroc") else "") for _, k in COLS)
    fa = "" if d.get("false_alarms_before_first") is None else f"{d['false_alarms_before_first']:.2f}"
    return (f"| **{m['monitor']}**{tag} | {_pct(m['cut'].get('macro_f1'))} | {_auc(m['cut'].get('auroc'))} | "
            f"{cells} | {m3} | {fa} |")


def _counts(m: dict) -> str:
    return (f"{m['videos']} recordings, {m['steps']} scored steps, {m['mistakes']} mistakes"
            + (f", {m['unscored_steps']} corrections not scored" if m.get("unscored_steps") else ""))


def _kinds(m: dict) -> list[str]:
    lines = ["| steps | count | alarmed |", "|---|---:|---:|"]
    lines += [f"| label {k} | {v['steps']} | {_pct(v['alarmed'])} |" for k, v in m["by_label"].items()]
    lines += [f"| kind {k}{' (mistake)' if v.get('mistake_kind') else ''} | {v['steps']} | {_pct(v['alarmed'])} |"
              for k, v in m["by_kind"].items()]
    return lines


def kinds_table(results: list[dict]) -> list[str]:
    """The share of steps each monitor alarms on, per source label and per error kind. A kind marked ``mistake``
    makes every step it marks a positive (the share is its recall); a step of another kind is a positive only when
    it also carries a mistake kind (e.g. a motor slip during an order error)."""
    if not results:
        return []
    first = results[0]
    labels = list(first["by_label"])
    kinds = list(first["by_kind"])
    head = [f"label {k} ({first['by_label'][k]['steps']})" for k in labels]
    head += [f"{k}{' (mistake)' if first['by_kind'][k].get('mistake_kind') else ''} ({first['by_kind'][k]['steps']})"
             for k in kinds]
    lines = ["| monitor: % of steps alarmed | " + " | ".join(head) + " |", "|---|" + "---:|" * len(head)]
    for m in results:
        cells = [_pct(m["by_label"][k]["alarmed"]) for k in labels]
        cells += [_pct(m["by_kind"][k]["alarmed"]) for k in kinds]
        lines.append(f"| {m['monitor']} | " + " | ".join(cells) + " |")
    return lines


def monitor_report(m: dict) -> str:
    """The ``report.md`` of one monitor folder (``m``: its ``metrics.json``)."""
    title = COMPLETE[m["benchmark"]].title
    sel = m.get("selection") or {}
    hp = sel.get("hyper_parameters") or sel.get("chosen") or {}
    d = m["detection"]
    lines = [f"# {m['monitor']} on {title}, stream {m['stream']}", "",
             f"- {_counts(m)} (corrections: {m['corrections']}); source {m['stream_source']}",
             f"- fitted as for {m['training_benchmark']} on its {m['training_sequences']} training sequences, every "
             "step taken as correct; the same recordings read whole by this benchmark's rules hold "
             + ", ".join(f"{v} {k}" for k, v in m["training_steps_by_source_label"].items()) + " steps",
             f"- settings: {', '.join(f'{k}={v}' for k, v in hp.items()) or 'none'} "
             f"({sel.get('chosen_by') or sel.get('recipe') or 'how chosen: not stated'})",
             f"- counts: TP {m['tp']}, FP {m['fp']}, FN {m['fn']}, TN {m['tn']}; {m['threshold_rule']}",
             f"- first mistake per recording ({d['recordings']}): "
             + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in d["counts"].items())
             + f"; mean delay of on-target and late alarms {_num(d['mean_delay_steps'])} steps; false alarms before "
             f"it {_num(d['false_alarms_before_first'])} per recording",
             *[f"- deviation from the published method: {x}" for x in m.get("deviations", [])],
             *[f"- note: {x}" for x in (m.get("notes") or [])], "", *header(), row(m), "",
             "Alarms per source label and error kind:", "", *_kinds(m), ""]
    return "\n".join(lines)


def goal(results: list[dict], chosen_name: str | None, seeds: list[dict] | None = None) -> list[dict]:
    """The goal row: the monitor chosen without the test against the best blind baseline, the best reference rule
    and the best of both in macro F1 (and AUROC), its verdict over the outer-fold seeds' own choices (``seeds``:
    ``selection.seeds``); none when nothing was chosen or no rule ran."""
    chosen = next((m for m in results if m["monitor"] == chosen_name), None)
    blind = [m for m in results if m["monitor"] in BLIND]
    rules = [m for m in results if m["monitor"] in RULES]
    open_ = [m for m in results if not m["privileged"] and m["monitor"] not in RULES]
    if chosen is None or not rules:
        return []
    g = {"metric": "macro_f1", "chosen_on_validation": chosen["monitor"], "chosen_value": chosen["macro_f1"],
         "chosen_auroc": chosen["auroc"], "blind_auroc": {m["monitor"]: m["auroc"] for m in blind}, "target": TARGET}
    for key, names in (("blind", BLIND), ("reference", REFERENCE), ("rules", RULES)):
        top = max((m for m in results if m["monitor"] in names), key=lambda m: m["macro_f1"], default=None)
        g[key] = {"monitor": top["monitor"], "value": top["macro_f1"]} if top else None
        g[f"{key}_margin"] = chosen["macro_f1"] - top["macro_f1"] if top else None
    bar = g["rules"]["value"] + TARGET

    def above(v: float) -> bool:
        return v >= bar - 1e-12

    g["seed_choices"] = seed_choices(results, seeds, "macro_f1", above)
    g["verdict"] = verdict([chosen["macro_f1"], *(c["value"] for c in g["seed_choices"])], above)
    g["reached"] = g["verdict"] == "reached"
    best = max(open_, key=lambda m: m["macro_f1"], default=None)
    if best:
        g["best_on_test"] = {"monitor": best["monitor"], "value": best["macro_f1"]}
    g["rules_not_run"] = [b for b in RULES if b not in {m["monitor"] for m in results}]
    return [g]


def summary(results: list[dict], benchmark: str, stream: CompleteStream, not_run: list[str], chosen: str | None,
            selection: dict, agree: dict | None = None) -> dict:
    keys = ("mistake_precision", "mistake_recall", "mistake_f1", "balanced_precision", "balanced_f1", "macro_f1",
            "auroc", "auprc", "tp", "fp", "fn", "tn", "intervals", "detection", "steps", "mistakes")
    rows = [{"monitor": m["monitor"], "privileged": m["privileged"], "blind": m["monitor"] in BLIND,
             "reference": m["monitor"] in REFERENCE, **{k: m[k] for k in keys}, "cut": m["cut"]} for m in results]
    return {"benchmark": benchmark, "stream": stream.name, "stream_sha256": stream.sha256,
            "corrections": stream.corrections, "chosen_on_validation": chosen, "selection": selection, "rows": rows,
            "not_run": not_run, "goal": goal(results, chosen, selection.get("seeds")),
            "reference_agreement": agree or {}}


def goal_lines(s: dict) -> list[str]:
    out = []
    for g in s["goal"]:
        short = 100 * (g["target"] - g["rules_margin"])
        choices = g.get("seed_choices") or []
        differ = len({c["monitor"] for c in choices} | {g["chosen_on_validation"]}) > 1
        verdict_ = {"reached": "reached", "not reached": f"not reached: {short:.1f} points short",
                    "tie": "**tie**: the outer-fold seeds' own choices fall on both sides of it"}[g["verdict"]]
        ref = g.get("reference")
        out.append(f"- goal, {s['benchmark']} ({s['stream']}): the monitor chosen on validation alone "
                   f"({g['chosen_on_validation']}) scores macro F1 {_pct(g['chosen_value'])} (AUROC "
                   f"{_auc(g['chosen_auroc'])}), {100 * g['rules_margin']:+.1f} points against the best rule "
                   f"({g['rules']['monitor']}, {_pct(g['rules']['value'])}; best blind baseline "
                   f"{g['blind']['monitor'] if g.get('blind') else 'none'}"
                   + (f" {_pct(g['blind']['value'])}" if g.get("blind") else "")
                   + (f", best reference rule {ref['monitor']} {_pct(ref['value'])}" if ref else "")
                   + f"); target +{100 * g['target']:.0f}: {verdict_}"
                   + (f" (each outer-fold seed's own choice: {seeds_text(choices)})" if differ else "")
                   + (f". Best on the test (a choice made by looking at it): {g['best_on_test']['monitor']} "
                      f"{_pct(g['best_on_test']['value'])}" if g.get("best_on_test") else "") + "."
                   + (f" Rules not in this run (not registered): {', '.join(g['rules_not_run'])}."
                      if g.get("rules_not_run") else ""))
    for r, a in (s.get("reference_agreement") or {}).items():
        out.append(f"- reference rule beside {s['chosen_on_validation']}: {agreement_text(r, a)}")
    return out


def summary_markdown(results: list[dict], s: dict) -> str:
    title = COMPLETE[s["benchmark"]].title
    first = results[0] if results else None
    lines = [f"# {title}, stream {s['stream']}: every monitor, its cut-protocol row beside", ""]
    lines += goal_lines(s) + [""]
    if first:
        lines += [f"{_counts(first)}; corrections {s['corrections']}. The cut columns are the same fitted monitor "
                  f"on {first['cut']['benchmark']}'s oracle steps ({first['cut']['steps']} steps, "
                  f"{first['cut']['mistakes']} mistakes, each the last step of its sequence). Values in % (AUROC, "
                  "AUPRC as fractions); [95% bootstrap over recordings].", ""]
    lines += [*header(), *(row(m) for m in results if not m["privileged"])]
    priv = [m for m in results if m["privileged"]]
    if priv:
        lines += ["", "Privileged (read more than the task input):", "", *header(), *map(row, priv)]
    if s["not_run"]:
        lines += ["", f"Not run: {', '.join(s['not_run'])}."]
    lines += ["", "Alarms per source label and error kind (steps in brackets):", "", *kinds_table(results)]
    return "\n".join(lines + [""])
