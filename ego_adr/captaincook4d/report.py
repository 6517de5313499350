"""The CaptainCook4D tables as markdown, from a run's ``summary.json`` (:mod:`.summary`) and :mod:`.generation`'s scores
(``scripts/bench_captaincook4d.py`` prints them and ``--write-docs`` puts them in the docs): the benchmark table
(every monitor grouped by what it reads, the goal lines, official graph vs learned graph vs no graph), the alarms
per kind, and the graph table beside DTGL's published rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ego_adr.captaincook4d import generation as GN
from ego_adr.online_mistakes.goal import agreement, agreement_text, verdict  # noqa: F401 (agreement: summary's)

GROUPS = ("blind", "reference", "official graph", "learned graph", "no graph given", "supervised", "language model")
TARGET = 10.0  # points of macro F1 above the best blind or reference rule (issue 44)


def pct(v) -> str:
    return "-" if v is None else f"{100 * v:.1f}"


def ci(m: Mapping, key: str) -> str:
    lo, hi = (m.get("intervals") or {}).get(key, (None, None))
    return f"{pct(m.get(key))} [{pct(lo)}-{pct(hi)}]" if lo is not None else pct(m.get(key))


def _ordered(results: Sequence[dict]) -> list[dict]:
    return sorted(results, key=lambda r: GROUPS.index(r["group"]))


def _detection(m: Mapping) -> str:
    d = m.get("detection") or {}
    return " / ".join(pct(d.get(k)) for k in ("on_target", "early", "late", "missed"))


def counts_line(s: Mapping) -> str:
    c, v = s["counts"]["test"], s["counts"]["validation"]
    cut = f"; {c['dropped_without_positive']} recordings without a positive left out" if c[
        "dropped_without_positive"] else ""
    return (f"test split: {c['recordings']} recordings, {c['observations']} observations ({c['steps']} steps, "
            f"{c['ends']} ends), {c['positives']} positive ({c['order_error_steps']} Order Error steps; "
            f"{c['rows_with_omission']} observations where {c['skipped_steps']} skipped steps show, "
            f"{c['skipped_on_end']} of them at the end){cut}; validation: {v['recordings']} recordings, "
            f"{v['positives']} positive of {v['observations']}; omissions placed by rule `{s['missing_target']}`")


def table(s: Mapping) -> list[str]:
    out = [f"**{s['benchmark']}**" + (f" ({counts_line(s)})" if "counts" in s else ""), "",
           "| monitor | reads | validation objective | macro F1 | F1b | P | R | AUROC | first mistake: on target / "
           "early / late / missed |", "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    c = s.get("choice") or {}
    tied = c.get("between", ()) if c.get("tie") else ()
    for r in _ordered(s["results"]):
        m = r["test"]
        opt = f" ({', '.join(f'{k}={v}' for k, v in r['options'].items())})" if r["options"] else ""
        opt += " (chosen on validation)" if r["monitor"] == s.get("headline") else " (tie)" if r["monitor"] in tied \
            else ""
        out.append(f"| **{r['monitor']}**{opt} | {r['group']} | {r['validation']['objective']:.3f} | "
                   f"{ci(m, 'macro_f1')} | {pct(m['balanced_f1'])} | {pct(m['mistake_precision'])} | "
                   f"{pct(m['mistake_recall'])} | {m['auroc']:.3f} | {_detection(m)} |")
    return out


def _best(results, groups, key=lambda r: r["test"]["macro_f1"]):
    cands = [r for r in results if r["group"] in groups]
    return max(cands, key=key) if cands else None


def _by_val(results, groups):
    return _best(results, groups, key=lambda r: r["validation"]["objective"])


def goal(s: Mapping) -> dict:
    """The goal row (issue 44): the monitor chosen on validation against the best blind or reference rule on the
    test (a rule has nothing to choose), and the official-graph monitor against the learned-graph one and the
    no-graph monitor chosen on validation among the registered step-stream monitors. When the choice is a tie
    (``s["choice"]``, :mod:`.choice`), the verdict is :func:`ego_adr.online_mistakes.goal.verdict` over every
    monitor of the tie: ``reached`` if all reach the target, ``not reached`` if none does, else ``tie``."""
    res = s["results"]
    chosen = next((r for r in res if r["monitor"] == s["headline"]), None)
    rule = _best(res, ("blind", "reference"))
    official, learned = _by_val(res, ("official graph",)), _by_val(res, ("learned graph",))
    nograph = _by_val(res, (GROUPS[4],))
    f1 = {k: (r["monitor"], r["test"]["macro_f1"]) if r else None for k, r in
          {"chosen": chosen, "rule": rule, "official": official, "learned": learned, "no_graph": nograph,
           "best_no_graph_on_test": _best(res, (GROUPS[4],)), "best_on_test": _best(res, GROUPS)}.items()}
    margin = 100 * (f1["chosen"][1] - f1["rule"][1]) if chosen and rule else None
    c = s.get("choice") or {}
    between = [r for r in res if r["monitor"] in (c.get("between") if c.get("tie") else [s["headline"]])]
    tie = [(r["monitor"], r["test"]["macro_f1"]) for r in between]
    said = verdict([v for _, v in tie], lambda v: 100 * (v - f1["rule"][1]) >= TARGET) if tie and rule else None
    return f1 | {"margin": margin, "verdict": said, "reached": said == "reached", "tie": tie if len(tie) > 1 else None,
                 "official_over_learned": 100 * (f1["official"][1] - f1["learned"][1]) if official and learned
                 else None, "official_over_no_graph": 100 * (f1["official"][1] - f1["no_graph"][1])
                 if official and nograph else None}


def _verdict(g: Mapping) -> str:
    if g["tie"]:
        each = ", ".join(f"{n} {pct(v)}" for n, v in g["tie"])
        how = {"reached": "reached by each of them", "not reached": "not reached by any of them",
               "tie": "**tie**: the target lies between them"}[g["verdict"]]
        return f"the choice on validation is a tie ({each} on the test): {how}"
    return "reached" if g["reached"] else f"not reached: {TARGET - g['margin']:.1f} points short"


def goal_lines(s: Mapping) -> list[str]:
    g = goal(s)
    if not g["chosen"]:
        return []
    (cn, cv), (rn, rv) = g["chosen"], g["rule"]
    out = [f"- goal, {s['benchmark']}: the monitor chosen on validation ({cn}) scores macro F1 {pct(cv)}, "
           f"{g['margin']:+.1f} points against the best blind or reference rule ({rn}, {pct(rv)}); target "
           f"+{TARGET:.0f}: {_verdict(g)}. Best on the test (a choice made by looking at it): "
           f"{g['best_on_test'][0]} {pct(g['best_on_test'][1])}."]
    if g["official"] and g["learned"] and g["no_graph"]:
        out.append(f"- the value of being given the procedure, {s['benchmark']}: official graph "
                   f"({g['official'][0]}) {pct(g['official'][1])}, learned graph ({g['learned'][0]}) "
                   f"{pct(g['learned'][1])}, no graph ({g['no_graph'][0]}, chosen on validation among the "
                   f"registered step-stream monitors) {pct(g['no_graph'][1])}: the official graph "
                   f"{g['official_over_learned']:+.1f} points over the learned one and "
                   f"{g['official_over_no_graph']:+.1f} over no graph (best no-graph monitor on the test, not a "
                   f"selection: {g['best_no_graph_on_test'][0]} {pct(g['best_no_graph_on_test'][1])}).")
    return out


def kinds_table(s: Mapping) -> list[str]:
    """% of the test observations alarmed (at the macro-F1 point), per source label and per CaptainCook4D tag."""
    res = _ordered(s["results"])
    first = res[0]["test"]
    labels = list(first["by_label"])
    kinds = list(first["by_kind"])
    head = [f"label {k} ({first['by_label'][k]['steps']})" for k in labels]
    head += [f"{k} ({first['by_kind'][k]['steps']}, {first['by_kind'][k]['mistake_steps']} positive)" for k in kinds]
    out = ["| monitor: % alarmed | " + " | ".join(head) + " |", "|---|" + "---:|" * len(head)]
    for r in res:
        m = r["test"]
        cells = [pct(m["by_label"][k]["alarmed"]) for k in labels] + [pct(m["by_kind"][k]["alarmed"]) for k in kinds]
        out.append(f"| {r['monitor']} | " + " | ".join(cells) + " |")
    return out


def variant_lines(graph_rule: Mapping, end_rule: Mapping) -> list[str]:
    """The official-graph margins under both omission rules (the ``end`` rule's labels read no graph)."""
    a, b = goal(graph_rule), goal(end_rule)
    rows = ["| omission rule | chosen on validation | best blind / reference | official graph | learned graph | "
            "no graph | official - learned | official - no graph |", "|---|---|---|---:|---:|---:|---:|---:|"]
    for name, g in (("graph (first step that needs it, else the end)", a), ("end (every omission at the end)", b)):
        rows.append(f"| {name} | {g['chosen'][0]} {pct(g['chosen'][1])} | {g['rule'][0]} {pct(g['rule'][1])} | "
                    f"{pct(g['official'][1])} | {pct(g['learned'][1])} | {g['no_graph'][0]} {pct(g['no_graph'][1])} "
                    f"| {g['official_over_learned']:+.1f} | {g['official_over_no_graph']:+.1f} |")
    return rows


def graph_table(res: Mapping[str, dict], extra: Mapping[str, str] | None = None) -> list[str]:
    """Our learners (mean over the 24 recipes, against DTGL's graphs and against CaptainCook4D's read as step-id
    pairs) beside DTGL's own code and the published rows."""
    out = ["| learner | P | R | F1 | against CaptainCook4D's graphs: P / R / F1 | note |",
           "|---|---:|---:|---:|---|---|"]
    for name, r in res.items():
        p, rc, f = r["mean"]["dtgl"]
        o = " / ".join(pct(x) for x in r["mean"]["official"])
        out.append(f"| **{name}** (ours) | {pct(p)} | {pct(rc)} | {pct(f)} | {o} | {(extra or {}).get(name, '')} |")
    p, rc, f = GN.DTGL_CODE_SEED42
    out.append(f"| DO, DTGL's own `train_with_gt.py`, seed 42, run here | {p:.1f} | {rc:.1f} | {f:.1f} |  | "
               "measured with DTGL's code (docs/online_mistakes.md) |")
    for name, vals, where in GN.PUBLISHED:
        cells = " | ".join("" if v is None else f"{v:.1f}" for v in vals)
        out.append(f"| {name} [{where}] | {cells} |  | published |")
    return out + ["", "Deviation of ours, named: `dtgl-do` and `tgml-text` train in float64 on one thread with "
                      "deterministic algorithms (DTGL: float32; `DoSettings(float32=True)` follows it)."]
