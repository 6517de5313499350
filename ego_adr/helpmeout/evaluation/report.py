"""Markdown tables in the paper's layouts: Table 2 (main), 13 (with 95% CIs), 14 (complexity), 15 (M3), 11/12."""

from __future__ import annotations

from ego_adr.helpmeout.generator.goal_control import CATEGORIES
from ego_adr.monitoring.report import fmt, privileged_note


def _f(x: float | None, nd: int = 3) -> str:
    return fmt(x, nd)  # the layer's: the paper's en dash for a missing number


TABLE2_HEADER = ("| Method | M1 | M2 all | M2 end | M2 mid | Missed | Early | On target | FA | M4 |\n"
                 "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")


def table2_row(name: str, m: dict) -> str:
    m3 = m["M3"]
    return (f"| {name} | {_f(m['M1'])} | {_f(m['M2']['all'])} | {_f(m['M2']['end'])} | {_f(m['M2']['mid'])} | "
            f"{_f(m3['missed'], 2)} | {_f(m3['early'], 2)} | {_f(m3['on_target'], 2)} | {_f(m3['false_alarm'], 2)} | "
            f"{_f(m['M4']['macro'])} |")


def spread_row(name: str, m: dict) -> str | None:
    """A random monitor's single-seed spread under its row (mean ± sd over its seeds), ``None`` for others."""
    sp = m.get("single_seed")
    if not sp:
        return None

    def c(k: str, nd: int = 3) -> str:
        return f"{_f(sp[k]['mean'], nd)} ± {_f(sp[k]['sd'], nd)}"

    return (f"| {name}: one seed (mean ± sd of {sp['M1']['seeds']}) | {c('M1')} | {c('M2')} | {c('M2_end')} | "
            f"{c('M2_mid')} | {c('missed', 2)} | {c('early', 2)} | {c('on_target', 2)} | {c('false_alarm', 2)} | "
            f"{c('M4')} |")


def table2_rows(name: str, m: dict) -> str:
    """The Table 2 row of ``m`` and, for a random monitor, its single-seed spread beside it."""
    spread = spread_row(name, m)
    return table2_row(name, m) + (f"\n{spread}" if spread else "")


def summary_table(results: dict[str, dict]) -> str:
    return "\n".join([TABLE2_HEADER] + [table2_rows(n, m) for n, m in results.items()])


def report_markdown(name: str, m: dict) -> str:
    ci = m.get("ci95", {})

    def with_ci(key: str, val: float) -> str:
        lo, hi = ci.get(key, [None, None])
        return _f(val) + (f" [{_f(lo, 2)}, {_f(hi, 2)}]" if lo is not None else "")

    m3 = m["M3"]
    reads = ", ".join(m.get("reads", [])) or "task name, initial scene, action prefix"
    priv = " " + privileged_note(m.get("privileged_reads", [])) if m.get("privileged") else ""
    dev = "".join(f" Deviation: {d}." for d in m.get("deviations", []))
    if m.get("random_row"):
        dev += f" Random row: {m['random_row']}."
    out = [f"# HelpMeOut results: {name}", "",
           f"Reads: {reads}.{priv} M3 threshold rule: {m.get('threshold_rule', 'fixed')}.{dev}", "",
           f"{m['episodes']} episodes ({m['errorful_episodes']} errorful). M3 at threshold {m3['threshold']:.4g} "
           f"(on target = alarm at the onset, up to {m3['tolerance']} step(s) after it); "
           f"{m3['timed_out_episodes']} timed-out episodes excluded from M3.", "",
           "## Main results (Table 2 layout)", "", TABLE2_HEADER, table2_rows(name, m), "",
           "## With 95% bootstrap intervals (Table 13 layout)", "",
           "| Method | M1 | M2 | M2-end | M2-mid | M4 |", "|---|---|---|---|---|---|",
           f"| {name} | {with_ci('M1', m['M1'])} | {with_ci('M2', m['M2']['all'])} | {with_ci('M2_end', m['M2']['end'])} | "
           f"{with_ci('M2_mid', m['M2']['mid'])} | {with_ci('M4', m['M4']['macro'])} |", "",
           f"Positive-step rate (a random monitor's M2): all {_f(m['M2']['positive_rate_all'])}, "
           f"end {_f(m['M2']['positive_rate_end'])}, mid {_f(m['M2']['positive_rate_mid'])}.", "",
           "## By template complexity (Table 14 layout)", ""]
    cx = m.get("by_complexity", {})
    out += ["| Method | " + " | ".join(f"{k} M1 | {k} M2-mid" for k in cx) + " |",
            "|---|" + "---:|---:|" * len(cx),
            f"| {name} | " + " | ".join(f"{_f(v['M1'])} | {_f(v['M2_mid'])}" for v in cx.values()) + " |",
            "", "(" + ", ".join(f"{v['episodes']} {k}" for k, v in cx.items()) + " episodes)", "",
            "## First-alarm distribution (Table 15 layout)", "",
            "| Method | Missed | Early | On target | Late | False alarm | Omission: end / before |",
            "|---|---:|---:|---:|---:|---:|---:|",
            f"| {name} | {_f(m3['missed'], 2)} | {_f(m3['early'], 2)} | {_f(m3['on_target'], 2)} | {_f(m3['late'], 2)} | "
            f"{_f(m3['false_alarm'], 2)} | {_f(m3['omission_end'], 2)} / {_f(m3['omission_before'], 2)} |", "",
            f"({m3['n_mid_error_episodes']} episodes with an error before the task end, {m3['n_correct_episodes']} "
            f"correct, {m3['n_omission_episodes']} omission episodes)", "",
            "## Per-class M4 F1 (Table 11) and per-class step AUPRC (Table 12)", "",
            "| Error category | episodes | M4 F1 | M2 AUPRC |", "|---|---:|---:|---:|"]
    pc = m["M2"].get("per_class", {})
    for c in CATEGORIES:
        out.append(f"| {c} | {pc.get(c, {}).get('episodes', 0)} | {_f(m['M4']['per_class'][c])} | "
                   f"{_f(pc.get(c, {}).get('AUPRC'))} |")
    out += [f"| macro (correct episodes included) | | {_f(m['M4']['macro'])} | |",
            f"| macro (errorful episodes only) | | {_f(m['M4']['macro_errorful_only'])} | |", ""]
    return "\n".join(out)
