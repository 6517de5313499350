"""The goal of the step-stream benchmarks (issues 27, 34 and 42), stated for the monitor chosen without the test.

For each of DTGL's macro F1 and TI-PREGO's F1b, one ``goal`` row of ``summary.json``:

- ``chosen_on_validation`` / ``chosen_value``: the monitor chosen by :mod:`.selection` (nested cross-validation on
  the training recordings, repeated over its outer-fold seeds, no test number involved) and its value on this test,
  with its bootstrap interval;
- ``published*``: the best published row measured on comparable step input (:func:`.published.best`) and the chosen
  monitor's margin over it (``chosen_margin``);
- ``blind``: ``{"monitor", "value"}``, the best of the three blind baselines on this metric (``flag-all``,
  ``never-alarm``, ``position`` with its k chosen on training data), and the margin over it (``blind_margin``);
- ``reference``: the best of the reference rules (``unseen-step``, ``unseen-transition``: the training vocabulary
  alone) and ``reference_margin``; ``rules``: the best of the blind baselines and reference rules together, and
  ``rules_margin``;
- ``verdict``: ``reached`` when the chosen monitor is above the published row and above every rule (its value above
  the *bar*, the highest of those values), ``not reached`` when it is not -- unless the verdict hangs on the seed of
  the outer folds: ``seed_choices`` holds, for every outer-fold seed, the monitor that seed's selection chose alone
  and its value on this test, and the **spread of the seeds** is the interval from the lowest to the highest of
  those values and the chosen monitor's. A margin lies inside the spread when the bar is at or above the spread's
  low end and below its high end: some seed's choice is above the bar and another's is not. The verdict then reads
  ``tie`` (:func:`verdict`). ``reached`` is true only for ``reached``;
- ``best_on_test``: ``{"monitor", "value"}``, the best non-blind, non-reference, non-privileged monitor on this test
  (a choice made by looking at it: printed after the chosen one, never called a result);
- ``position_ceiling``: ``position`` with k picked on this test (what position alone gives on the protocol). These
  two blocks are the only ones that hold a number chosen on the test, each named for what it is.

:func:`agreement` counts how many of a monitor's alarms a reference rule also raises, on the same steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ego_adr.monitoring.step_metrics import OPERATING_POINTS, flag_at
from ego_adr.online_mistakes import published as pub
from ego_adr.online_mistakes.registry import BLIND, REFERENCE

GOAL_METRICS = ("macro_f1", "balanced_f1")
NAMES = {"macro_f1": "macro F1", "balanced_f1": "F1b"}
RULES = (*BLIND, *REFERENCE)


def coverage_text(m: dict) -> str:
    """``n of m test videos`` (every table and report says how much of the test set a row scores)."""
    c = m.get("coverage") or {"scored": m.get("videos"), "benchmark": m.get("videos")}
    return f"{c['scored']} of {c['benchmark']} test videos"


def partial(m: dict) -> bool:
    c = m.get("coverage") or {}
    return c.get("scored", 0) < c.get("benchmark", 0)


def _best(rows: list[dict], metric: str) -> dict | None:
    return max(rows, key=lambda m: (m[metric], m["monitor"]), default=None)


def verdict(values: Sequence[float], above: Callable[[float], bool]) -> str:
    """``reached`` when every value (the chosen monitor's and each seed's own choice's) is ``above`` the bar, ``not
    reached`` when none is, ``tie`` when the bar lies inside their spread (module docstring)."""
    hits = {bool(above(v)) for v in values}
    return "tie" if len(hits) > 1 else "reached" if hits == {True} else "not reached"


def seed_choices(results: list[dict], seeds: Sequence[dict] | None, metric: str,
                 above: Callable[[float], bool]) -> list[dict]:
    """Each outer-fold seed's own choice (``selection.seeds``), its value on this test and whether it is above."""
    by = {m["monitor"]: m for m in results}
    return [{"seed": s["seed"], "monitor": s["chosen"], "value": by[s["chosen"]][metric],
             "above": bool(above(by[s["chosen"]][metric]))} for s in seeds or () if s.get("chosen") in by]


def agreement(rows: list[dict], rule_rows: list[dict]) -> dict[str, dict]:
    """How far a reference rule's alarms are a monitor's, per operating point of the monitor (the rule has one):
    ``alarms`` (the monitor's), ``rule_alarms``, ``both`` (the monitor's alarms the rule also raises), ``same`` (steps
    where the two agree, alarm or silence) of ``steps``; scored steps only, the two files' steps in one order."""
    pairs = [(r, q) for r, q in zip(rows, rule_rows) if r.get("scored", True)]
    if len(rows) != len(rule_rows) or any((r["episode"], r["index"]) != (q["episode"], q["index"]) for r, q in pairs):
        raise ValueError("agreement needs the rows of one stream, in one order")
    out = {}
    for point in OPERATING_POINTS:
        a = [flag_at(r, point) for r, _ in pairs]
        b = [bool(q["flagged"]) for _, q in pairs]
        out[point] = {"alarms": sum(a), "rule_alarms": sum(b), "both": sum(x and y for x, y in zip(a, b)),
                      "same": sum(x == y for x, y in zip(a, b)), "steps": len(pairs)}
    return out


def agreement_text(name: str, agree: dict[str, dict]) -> str:
    """One rule's agreement in words, at each point (‡ macro F1, † F1b)."""
    def one(mark: str, a: dict) -> str:
        return f"{a['both']} of its {a['alarms']} alarms{mark} (the rule raises {a['rule_alarms']}; the same verdict " \
               f"on {a['same']} of {a['steps']} steps)"

    return f"{name}: " + ", ".join(one(m, agree[p]) for p, m in (("macro_f1", "‡"), ("balanced_f1", "†"))
                                   if p in agree)


def goal(results: list[dict], benchmark: str, stream: str, chosen: str | None,
         ceiling: dict | None = None, seeds: Sequence[dict] | None = None) -> list[dict]:
    """The goal rows of one stream (module docstring); none without a chosen monitor among ``results``. ``seeds``:
    the selection's per-seed choices (``selection.seeds``)."""
    ch = next((m for m in results if m["monitor"] == chosen), None)
    if ch is None:
        return []
    open_ = [m for m in results if not m["privileged"] and m["monitor"] not in RULES]
    part = next((m for m in results if partial(m)), None)  # a published row scores every test video
    out = []
    for metric in GOAL_METRICS:
        top, best = None if part else pub.best(benchmark, stream, metric), _best(open_, metric)
        v = ch[metric]
        g = {"metric": metric, "chosen_on_validation": chosen, "chosen_value": v,
             "chosen_interval": (ch.get("intervals") or {}).get(metric),
             "published": top.label if top else None, "published_input": top.step_input if top else None,
             "published_value": top.values[metric] if top else None,
             "chosen_margin": v - top.values[metric] if top else None}
        for key, names in (("blind", BLIND), ("reference", REFERENCE), ("rules", RULES)):
            b = _best([m for m in results if m["monitor"] in names], metric)
            g[key] = {"monitor": b["monitor"], "value": b[metric]} if b else None
            g[f"{key}_margin"] = v - b[metric] if b else None
        bars = [x for x in (g["published_value"], (g["rules"] or {}).get("value")) if x is not None]

        def above(x: float, bars=bars) -> bool:
            return all(x > b for b in bars)

        g["seed_choices"] = seed_choices(results, seeds, metric, above)
        g["verdict"] = verdict([v, *(c["value"] for c in g["seed_choices"])], above)
        g["reached"] = g["verdict"] == "reached"
        if part:
            g["note"] = f"partial stream ({coverage_text(part)}): no published row is comparable"
        if best is not None:
            g["best_on_test"] = {"monitor": best["monitor"], "value": best[metric]}
        if ceiling:
            g["position_ceiling"] = {"k": ceiling["k"][metric], "value": ceiling[metric]}
        out.append(g)
    return out


def _pct(v) -> str:
    return f"{100 * v:.1f}"


def _signed(v) -> str:
    return f"{100 * v:+.1f}"


def seeds_text(choices: Sequence[dict]) -> str:
    """The seeds' own choices and their values on this test, e.g. ``egoadr-graph 76.0 (seeds 1, 2), stacked 75.8
    (seed 3)``."""
    by: dict[tuple[str, float], list] = {}
    for c in choices:
        by.setdefault((c["monitor"], c["value"]), []).append(c["seed"])
    return ", ".join(f"{m} {_pct(v)} (seed{'s' if len(ss) > 1 else ''} {', '.join(map(str, ss))})"
                     for (m, v), ss in by.items())


def goal_line(g: dict) -> str:
    """One goal row in words: the chosen monitor first, its margins, the verdict (with the seeds' choices when they
    differ), then the best on the test and position's ceiling, each named for what it is."""
    iv = g.get("chosen_interval")
    parts = [f"goal, {NAMES[g['metric']]}: chosen without the test **{g['chosen_on_validation']}** "
             f"{_pct(g['chosen_value'])}" + (f" [{_pct(iv[0])}, {_pct(iv[1])}]" if iv else "")]
    if g.get("published"):
        parts.append(f"best published {g['published']} {_pct(g['published_value'])} ({_signed(g['chosen_margin'])})")
    elif g.get("note"):
        parts.append(g["note"])
    for key, words in (("blind", "best blind baseline"), ("reference", "best reference rule")):
        if g.get(key):
            parts.append(f"{words} {g[key]['monitor']} {_pct(g[key]['value'])} ({_signed(g[f'{key}_margin'])})")
    short = [(f"{-100 * g[k]:.1f} below the {w}" if g[k] < 0 else f"equal to the {w}")
             for k, w in (("chosen_margin", "published row"),
                          ("rules_margin", f"best rule ({(g.get('rules') or {}).get('monitor')})"))
             if g.get(k) is not None and g[k] <= 0]
    choices = g.get("seed_choices") or []
    differ = len({c["monitor"] for c in choices} | {g["chosen_on_validation"]}) > 1
    if g["verdict"] == "tie":
        parts.append("**tie**: the outer-fold seeds' own choices fall on both sides (" + seeds_text(choices) + ")")
    else:
        parts.append(("reached" if g["reached"] else "not reached: " + ", ".join(short))
                     + (f" ({'as by every' if g['reached'] else 'nor by any'} outer-fold seed's own choice: "
                        f"{seeds_text(choices)})" if differ else ""))
    tail = []
    if g.get("best_on_test"):
        tail.append(f"best on the test (not a selection): {g['best_on_test']['monitor']} "
                    f"{_pct(g['best_on_test']['value'])}")
    if g.get("position_ceiling"):
        c = g["position_ceiling"]
        tail.append(f"position's ceiling (k = {c['k']} picked on the test): {_pct(c['value'])}")
    return "; ".join(parts) + (". " + "; ".join(tail) if tail else "")


def seeds_line(selection: dict) -> str:
    """How many outer-fold seeds chose the chosen monitor on their own, and what the others chose."""
    per = selection.get("seeds") or []
    chosen = selection.get("chosen")
    others: dict[str, list] = {}
    for p in per:
        if p["chosen"] != chosen:
            others.setdefault(p["chosen"], []).append(p["seed"])
    agree = sum(p["chosen"] == chosen for p in per)
    return (f"chosen on its own by {agree} of {len(per)} outer-fold seeds"
            + ("".join(f"; {m} by seed{'s' if len(ss) > 1 else ''} {', '.join(map(str, ss))}"
                       for m, ss in others.items())))


def headline(results: list[dict], selection: dict) -> list[str]:
    """The first lines of ``summary.md``: the monitor chosen without the test and its numbers on this test, the
    seeds' agreement, then the best on the test, named as such."""
    by = {m["monitor"]: m for m in results}
    chosen = by.get(selection.get("chosen"))
    if chosen is None:
        return ["No monitor could be chosen without the test (no candidate ran)."]

    def val(m: dict, k: str) -> str:
        iv = (m.get("intervals") or {}).get(k)
        return _pct(m[k]) + (f" [{_pct(iv[0])}, {_pct(iv[1])}]" if iv else "")

    score = selection["scores"][chosen["monitor"]]
    lines = [f"**Chosen without the test: {chosen['monitor']}** -- on this test macro F1 {val(chosen, 'macro_f1')}, "
             f"F1b {val(chosen, 'balanced_f1')}; mean nested cross-validated objective {score['objective']} on the "
             f"training recordings, {seeds_line(selection)} (rule: {selection['rule']})."]
    open_ = [m for m in results if not m["privileged"] and m["monitor"] not in RULES]
    best = {k: _best(open_, k) for k in GOAL_METRICS}
    lines.append("Best on the test (not a selection): " + "; ".join(
        f"{NAMES[k]} {m['monitor']} {_pct(m[k])}" for k, m in best.items() if m) + ".")
    return lines
