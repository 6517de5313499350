"""The goal of the step-stream benchmarks (issues 27 and 34), stated for the monitor chosen without the test.

For each of DTGL's macro F1 and TI-PREGO's F1b, one ``goal`` row of ``summary.json``:

- ``chosen_on_validation`` / ``chosen_value``: the monitor chosen by :mod:`.selection` (nested cross-validation on
  the training recordings, no test number involved) and its value on this test, with its bootstrap interval;
- ``published*``: the best published row measured on comparable step input (:func:`.published.best`) and the chosen
  monitor's margin over it (``chosen_margin``);
- ``blind``: ``{"monitor", "value"}``, the best of the three blind baselines on this metric (``flag-all``,
  ``never-alarm``, ``position`` with its k chosen on training data), and the margin over it (``blind_margin``);
- ``reached``: above both;
- ``best_on_test``: the best non-blind, non-privileged monitor on this test (a choice made by looking at it: printed
  after the chosen one and never called a result; ``ours`` / ``ours_value`` / ``margin`` are the same, kept for
  older readers);
- ``position_ceiling``: ``position`` with k picked on this test (what position alone gives on the protocol).
"""

from __future__ import annotations

from ego_adr.online_mistakes import published as pub
from ego_adr.online_mistakes.registry import BLIND

GOAL_METRICS = ("macro_f1", "balanced_f1")
NAMES = {"macro_f1": "macro F1", "balanced_f1": "F1b"}


def coverage_text(m: dict) -> str:
    """``n of m test videos`` (every table and report says how much of the test set a row scores)."""
    c = m.get("coverage") or {"scored": m.get("videos"), "benchmark": m.get("videos")}
    return f"{c['scored']} of {c['benchmark']} test videos"


def partial(m: dict) -> bool:
    c = m.get("coverage") or {}
    return c.get("scored", 0) < c.get("benchmark", 0)


def _best(rows: list[dict], metric: str) -> dict | None:
    return max(rows, key=lambda m: (m[metric], m["monitor"]), default=None)


def goal(results: list[dict], benchmark: str, stream: str, chosen: str | None,
         ceiling: dict | None = None) -> list[dict]:
    """The goal rows of one stream (module docstring); none without a chosen monitor among ``results``."""
    ch = next((m for m in results if m["monitor"] == chosen), None)
    if ch is None:
        return []
    blind = [m for m in results if m["monitor"] in BLIND]
    open_ = [m for m in results if not m["privileged"] and m["monitor"] not in BLIND]
    part = next((m for m in results if partial(m)), None)  # a published row scores every test video
    out = []
    for metric in GOAL_METRICS:
        top, b, best = pub.best(benchmark, stream, metric), _best(blind, metric), _best(open_, metric)
        top = None if part else top
        v = ch[metric]
        g = {"metric": metric, "chosen_on_validation": chosen, "chosen_value": v,
             "chosen_interval": (ch.get("intervals") or {}).get(metric),
             "published": top.label if top else None, "published_input": top.step_input if top else None,
             "published_value": top.values[metric] if top else None,
             "chosen_margin": v - top.values[metric] if top else None,
             "blind": {"monitor": b["monitor"], "value": b[metric]} if b else None,
             "blind_margin": v - b[metric] if b else None}
        g["reached"] = all(x is None or x > 0 for x in (g["chosen_margin"], g["blind_margin"]))
        if part:
            g["note"] = f"partial stream ({coverage_text(part)}): no published row is comparable"
        if best is not None:
            g["best_on_test"] = {"monitor": best["monitor"], "value": best[metric]}
            g.update(ours=best["monitor"], ours_value=best[metric],
                     margin=best[metric] - top.values[metric] if top else None)
        if ceiling:
            g["position_ceiling"] = {"k": ceiling["k"][metric], "value": ceiling[metric]}
        out.append(g)
    return out


def _pct(v) -> str:
    return f"{100 * v:.1f}"


def _signed(v) -> str:
    return f"{100 * v:+.1f}"


def goal_line(g: dict) -> str:
    """One goal row in words: the chosen monitor first, its margins, the verdict, then the best on the test and
    position's ceiling, each named for what it is."""
    iv = g.get("chosen_interval")
    parts = [f"goal, {NAMES[g['metric']]}: chosen without the test **{g['chosen_on_validation']}** "
             f"{_pct(g['chosen_value'])}" + (f" [{_pct(iv[0])}, {_pct(iv[1])}]" if iv else "")]
    if g.get("published"):
        parts.append(f"best published {g['published']} {_pct(g['published_value'])} ({_signed(g['chosen_margin'])})")
    elif g.get("note"):
        parts.append(g["note"])
    if g.get("blind"):
        parts.append(f"best blind baseline {g['blind']['monitor']} {_pct(g['blind']['value'])} "
                     f"({_signed(g['blind_margin'])})")
    short = [f"{-100 * g[k]:.1f} below the {w}" for k, w in (("chosen_margin", "published row"),
                                                            ("blind_margin", "blind baseline"))
             if g.get(k) is not None and g[k] <= 0]
    parts.append("reached" if g["reached"] else "not reached: " + ", ".join(short))
    tail = []
    if g.get("best_on_test"):
        tail.append(f"best on the test (not a selection): {g['best_on_test']['monitor']} "
                    f"{_pct(g['best_on_test']['value'])}")
    if g.get("position_ceiling"):
        c = g["position_ceiling"]
        tail.append(f"position's ceiling (k = {c['k']} picked on the test): {_pct(c['value'])}")
    return "; ".join(parts) + (". " + "; ".join(tail) if tail else "")


def headline(results: list[dict], selection: dict) -> list[str]:
    """The first lines of ``summary.md``: the monitor chosen without the test and its numbers on this test, then
    the best on the test, named as such."""
    by = {m["monitor"]: m for m in results}
    chosen = by.get(selection.get("chosen"))
    if chosen is None:
        return ["No monitor could be chosen without the test (no candidate ran)."]

    def val(m: dict, k: str) -> str:
        iv = (m.get("intervals") or {}).get(k)
        return _pct(m[k]) + (f" [{_pct(iv[0])}, {_pct(iv[1])}]" if iv else "")

    score = selection["scores"][chosen["monitor"]]
    lines = [f"**Chosen without the test: {chosen['monitor']}** -- on this test macro F1 {val(chosen, 'macro_f1')}, "
             f"F1b {val(chosen, 'balanced_f1')}; nested cross-validated objective {score['objective']} on the "
             f"training recordings (rule: {selection['rule']})."]
    open_ = [m for m in results if not m["privileged"] and m["monitor"] not in BLIND]
    best = {k: _best(open_, k) for k in GOAL_METRICS}
    lines.append("Best on the test (not a selection): " + "; ".join(
        f"{NAMES[k]} {m['monitor']} {_pct(m[k])}" for k, m in best.items() if m) + ".")
    return lines
