"""``summarize``: the paper's tables from several ``evaluate`` folders, privileged references in their own block.

Table 2 (main), Table 13 (95% CIs), Table 14 (complexity), Table 15 (first alarms), Tables 11-12 (per class) on
the test split, Tables 17-18 on the 60-episode subset, and a Figure 3-style plot (M1 and M2 per monitor on the
subset, dashed lines for Random and for the best privileged reference). Monitors are grouped as the paper does;
a monitor whose registry spec reads more than the task input + template goes to the "privileged / symbolic
reference" block, with what it reads.
"""

from __future__ import annotations

from pathlib import Path

from ego_adr.helpmeout.evaluation.report import TABLE2_HEADER, _f, table2_rows
from ego_adr.helpmeout.generator.goal_control import CATEGORIES
from ego_adr.monitoring.report import reads_tag

BLOCKS = ("Reference", "Learned and change-point monitors", "Symbolic and Ego-ADR monitors (task input + template)",
          "LLM prompting (60-episode subset)", "Privileged / symbolic references (read more than the task input)")


def label(m: dict) -> str:
    return m["monitor"] + (f" ({m['model']})" if m.get("model") else "")


def block_of(m: dict) -> str:
    from ego_adr.helpmeout.monitors.registry import MONITORS

    spec = MONITORS.get(m["monitor"])
    if m.get("privileged"):
        return BLOCKS[4]
    if m["monitor"] == "random":
        return BLOCKS[0]
    if m.get("on_subset"):
        return BLOCKS[3]
    if spec is not None and spec.trains:
        return BLOCKS[1]
    return BLOCKS[2]


def _ci(m: dict, key: str, val: float) -> str:
    lo, hi = m.get("ci95", {}).get(key, [None, None])
    return _f(val) + (f" [{_f(lo, 2)}, {_f(hi, 2)}]" if lo is not None else "")


def table2(results: list[dict]) -> str:
    lines = [TABLE2_HEADER]
    for b in BLOCKS:
        rows = [m for m in results if block_of(m) == b]
        if not rows:
            continue
        lines.append(f"| *{b}* | | | | | | | | | |")
        for m in rows:
            name = label(m) + (reads_tag(m["privileged_reads"]) if m.get("privileged") else "")
            lines.append(table2_rows(name, m))
    return "\n".join(lines)


def table13(results: list[dict]) -> str:
    lines = ["| Method | M1 | M2 | M2-end | M2-mid |", "|---|---|---|---|---|"]
    for m in results:
        if m.get("on_subset"):
            continue
        star = " *" if m.get("privileged") else ""
        lines.append(f"| {label(m)}{star} | {_ci(m, 'M1', m['M1'])} | {_ci(m, 'M2', m['M2']['all'])} | "
                     f"{_ci(m, 'M2_end', m['M2']['end'])} | {_ci(m, 'M2_mid', m['M2']['mid'])} |")
    return "\n".join(lines) + "\n\n\\* privileged: reads more than the task input (what each reads: the privileged block of Table 2)."


def table14(results: list[dict]) -> str:
    cx = ("simple", "medium", "complex")
    lines = ["| Method | " + " | ".join(f"{c} M1 | {c} M2-mid" for c in cx) + " |", "|---|" + "---:|---:|" * 3]
    counts = ""
    for m in results:
        if m.get("on_subset"):
            continue
        by = m.get("by_complexity", {})
        lines.append(f"| {label(m)} | " + " | ".join(f"{_f(by.get(c, {}).get('M1'))} | {_f(by.get(c, {}).get('M2_mid'))}"
                                                   for c in cx) + " |")
        counts = ", ".join(f"{by.get(c, {}).get('episodes', 0)} {c}" for c in cx)
    return "\n".join(lines) + (f"\n\n({counts} episodes)" if counts else "")


def table15(results: list[dict], subset: bool = False) -> str:
    lines = ["| Method | Missed | Early | On target | Late | False alarm | Omission: end / before | threshold |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    n = ""
    for m in results:
        mm = _subset_view(m) if subset else (None if m.get("on_subset") else m)
        if mm is None:
            continue
        m3 = mm["M3"]
        lines.append(f"| {label(m)} | {_f(m3['missed'], 2)} | {_f(m3['early'], 2)} | {_f(m3['on_target'], 2)} | "
                     f"{_f(m3['late'], 2)} | {_f(m3['false_alarm'], 2)} | {_f(m3['omission_end'], 2)} / "
                     f"{_f(m3['omission_before'], 2)} | {_f(m3['threshold'], 3)} |")
        n = (f"({m3['n_mid_error_episodes']} episodes with an error before the task end, "
             f"{m3['n_correct_episodes']} correct, {m3['n_omission_episodes']} omission episodes)")
    return "\n".join(lines) + (f"\n\n{n}" if n else "")


def tables11_12(results: list[dict]) -> str:
    ms = [m for m in results if not m.get("on_subset")]
    head = "| Error category | " + " | ".join(label(m) for m in ms) + " |"
    sep = "|---|" + "---:|" * len(ms)
    t11 = ["**Table 11: per-class M4 F1** (correct episodes included)", "", head, sep]
    for c in CATEGORIES:
        t11.append(f"| {c} | " + " | ".join(_f(m["M4"]["per_class"][c]) for m in ms) + " |")
    t11.append("| macro, errorful only | " + " | ".join(_f(m["M4"]["macro_errorful_only"]) for m in ms) + " |")
    t12 = ["**Table 12: per-class step AUPRC (M2)**, each class pooled with the correct episodes", "",
           "| Error category | episodes | " + " | ".join(label(m) for m in ms) + " |", "|---|---:|" + "---:|" * len(ms)]
    for c in CATEGORIES:
        pcs = [m["M2"].get("per_class", {}).get(c, {}) for m in ms]
        n = next((p.get("episodes") for p in pcs if p), 0)
        t12.append(f"| {c} | {n} | " + " | ".join(_f(p.get("AUPRC")) for p in pcs) + " |")
    return "\n".join(t11) + "\n\n" + "\n".join(t12)


def _subset_view(m: dict) -> dict | None:
    if m.get("on_subset"):
        return m
    return m.get("subset")


def table17(results: list[dict]) -> str:
    lines = ["| Model / monitor | M1 | M2 | M2-end | M2-mid | M4 |", "|---|---|---|---|---|---:|"]
    rows = [(m, s) for m in results if (s := _subset_view(m)) is not None]
    rows.sort(key=lambda ms: -(ms[1]["M1"] if ms[1]["M1"] == ms[1]["M1"] else -1))
    for m, s in rows:
        star = " *" if m.get("privileged") else ""
        lines.append(f"| {label(m)}{star} | {_ci(s, 'M1', s['M1'])} | {_ci(s, 'M2', s['M2']['all'])} | "
                     f"{_f(s['M2']['end'])} | {_f(s['M2']['mid'])} | {_f(s['M4']['macro'])} |")
    if rows:
        s = rows[0][1]
        lines.append(f"\n{s['episodes']} episodes ({s['errorful_episodes']} errorful); random M2 = positive-step "
                     f"rate {_f(s['M2']['positive_rate_all'])}. 95% intervals: trajectory-level bootstrap "
                     "stratified by errorful and correct episodes.")
    return "\n".join(lines)


def figure3(results: list[dict], path: Path) -> Path | None:
    """M1 and M2 per monitor on the 60-episode subset, dashed Random and privileged-reference lines."""
    rows = [(label(m), s, m) for m in results if (s := _subset_view(m)) is not None]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 0.4 * len(rows) + 2), sharey=True)
    names = [r[0] for r in rows]
    for ax, key, title in ((axes[0], "M1", "M1 (AUROC)"), (axes[1], "M2", "M2 (AUPRC)")):
        vals = [s["M1"] if key == "M1" else s["M2"]["all"] for _, s, _ in rows]
        colors = ["#b0b0b0" if m.get("privileged") else ("#d95f02" if m.get("on_subset") else "#1b9e77")
                  for _, _, m in rows]
        ax.barh(names, vals, color=colors)
        rnd = 0.5 if key == "M1" else rows[0][1]["M2"]["positive_rate_all"]
        ax.axvline(rnd, ls="--", color="k", lw=1, label="Random")
        priv = [s["M1"] if key == "M1" else s["M2"]["all"] for _, s, m in rows if m.get("privileged")]
        if priv:
            ax.axvline(max(priv), ls="--", color="#7570b3", lw=1, label="best privileged reference")
        ax.set_title(title)
        ax.set_xlim(0, 1)
        ax.legend(loc="lower right", fontsize=8)
    axes[0].invert_yaxis()
    fig.suptitle("HelpMeOut, 60-episode subset (grey: privileged references, orange: LLM prompting)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def summarize(results: list[dict], out: Path | None) -> str:
    """The tables the folders hold: those of the test split only when some monitor was scored on it, those of the
    60-episode subset only when some monitor has a subset view (a folder of one LLM run has no Tables 11-15: issue
    46 item 8 found their bare headers and a Table 12 with more header cells than delimiter cells)."""
    on_test = any(not m.get("on_subset") for m in results)
    on_sub = any(_subset_view(m) is not None for m in results)
    sections = [("Table 2: main results (test split)", table2, True),
                ("Table 13: with 95% intervals", table13, on_test),
                ("Table 14: by template complexity", table14, on_test),
                ("Table 15: first-alarm distribution (M3)", table15, on_test),
                ("Tables 11-12: per class", tables11_12, on_test),
                ("Table 17: on the 60-episode subset", table17, on_sub),
                ("Table 18: first alarms on the 60-episode subset", lambda r: table15(r, subset=True), on_sub)]
    parts = [line for title, table, shown in sections if shown for line in (f"## {title}", "", table(results), "")]
    text = "\n".join(parts)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        fig = figure3(results, out / "figure3.png")
        if fig:
            text += f"\n![Figure 3 style: M1 and M2 on the subset]({fig.name})\n"
        (out / "summary.md").write_text("# HelpMeOut summary\n\n" + text)
    return text
