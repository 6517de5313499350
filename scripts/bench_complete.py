"""The complete-trial part of ``scripts/bench_monitoring.py`` (``--complete``; issue 35), kept in its own file.

    python scripts/bench_monitoring.py --data-root DIR --complete                  # both tables + wall time
    python scripts/bench_monitoring.py --data-root DIR --complete --write-docs     # ... into docs/online_mistakes.md
    python scripts/bench_monitoring.py --data-root DIR --complete --timeline       # + docs/img timeline PNG

For ``assembly101-complete`` and ``epic-tent-complete`` it runs ``python -m ego_adr.monitoring evaluate --stream
oracle --monitor all`` in this process (every registered monitor that needs no model, each fitted as for the cut
benchmark and also fed the cut benchmark's oracle steps, whose row it prints beside), measures the wall time of
each (issue 35 asks for under a minute on 2 cores) and prints the table and the goal line of each. With
``--write-docs`` the blocks ``<!-- bench:complete-table -->`` and ``complete-time`` are rewritten
(``scripts/docs_tables.py``); ``--timeline`` draws :data:`IMG`, one Assembly101 recording with several mistakes,
step by step, with each monitor's alarms.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
IMG = REPO / "docs" / "img" / "complete_trial_timeline.png"
BENCHMARKS = ("assembly101-complete", "epic-tent-complete")
BLOCKS = ("complete-table", "complete-time")
#: 11 steps, 3 mistakes, each followed by corrections: ". M . M c M c c . . ."
TIMELINE_VIDEO = ("assembly101-complete", "nusar-2021_action_both_9023-b05d_9023_user_id_2021-02-03_134815")


def add_flags(p) -> None:
    p.add_argument("--complete", action="store_true",
                   help="the complete-trial benchmarks (every step of whole recordings), their tables and timing")


def cpu() -> float:
    """CPU seconds of this process and of the worker processes it has waited for (``--jobs``)."""
    import resource

    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def run(root: str, out: Path) -> tuple[dict, dict]:
    """``evaluate --monitor all`` on each complete benchmark, cold (a fresh cache root each: the nested selection,
    DTGL's graph and the step-name embeddings computed), on as many processes as the command takes by default:
    {benchmark: summary.json}, {benchmark: (wall, CPU seconds)}; the CPU time is this process's and its workers',
    which a busy machine does not inflate."""
    from ego_adr.monitoring.__main__ import main
    from ego_adr.store import cache_scope

    summaries, seconds = {}, {}
    for b in BENCHMARKS:
        t0, c0 = time.perf_counter(), cpu()
        with cache_scope(out / "cold-cache" / b):
            if main(["evaluate", "--benchmark", b, "--stream", "oracle", "--monitor", "all", "--data-root", root,
                     "--out", str(out / b), "--quiet"]) != 0:
                raise SystemExit(f"evaluate {b} failed")
        seconds[b] = (time.perf_counter() - t0, cpu() - c0)
        summaries[b] = json.loads((out / b / "summary.json").read_text())
        summaries[b]["selection"] |= json.loads((out / b / "timing.json").read_text())  # the fold cache's counts
    return summaries, seconds


def table(out: Path, summaries: dict) -> str:
    from ego_adr.online_mistakes import complete_report as CR
    from ego_adr.online_mistakes.data.complete import COMPLETE

    lines = []
    for b, s in summaries.items():
        results = [json.loads((out / b / r["monitor"] / "metrics.json").read_text()) for r in s["rows"]]
        first = results[0]
        lines += [f"**{COMPLETE[b].title}** ({first['videos']} recordings, {first['steps']} steps, "
                  f"{first['mistakes']} mistakes; the cut columns: {first['cut']['benchmark']}, "
                  f"{first['cut']['steps']} steps, {first['cut']['mistakes']} mistakes)", "", *CR.header()]
        lines += [CR.row(m) for m in results if not m["privileged"]]
        lines += ["", *CR.goal_lines(s), "", "Alarms per source label and error kind (steps in brackets):", "",
                  *CR.kinds_table(results), ""]
    return "\n".join(lines)


def timing(seconds: dict, summaries: dict) -> str:
    def how(b: str) -> str:
        sel = summaries[b].get("selection") or {}
        cache = sel.get("fold_cache") or {}
        return "" if "scores" not in sel else "; nested selection read from the cache" if not cache.get("computed") \
            else "; nested selection computed"

    from ego_adr.monitoring.workers import default_jobs

    parts = ", ".join(f"{b} {w:.1f} s wall ({c:.1f} s of CPU{how(b)})" for b, (w, c) in seconds.items())
    load = os.getloadavg()[0]
    return (f"`evaluate --stream oracle --monitor all`, every monitor that needs no model, fits and the cut rows "
            f"included, from a cold cache: {parts}, `--jobs {default_jobs()}` on {os.cpu_count()} CPUs (load "
            f"average {load:.1f} when it ended)")


def timeline(out: Path, root: str, img: Path = IMG) -> None:
    """Steps, labels and each monitor's alarms over one recording with several mistakes."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    b, video = TIMELINE_VIDEO
    monitors = [r["monitor"] for r in json.loads((out / b / "summary.json").read_text())["rows"]]
    rows = {m: [json.loads(x) for x in (out / b / m / "steps.jsonl").read_text().splitlines()] for m in monitors}
    rows = {m: [r for r in rs if r["episode"] == video] for m, rs in rows.items()}
    steps = rows[monitors[0]]
    colours = {"mistake": "#d62728", "correction": "#fdae6b", "correct": "#9ecae1"}
    fig, ax = plt.subplots(figsize=(1.25 * len(steps) + 2.5, 0.5 * len(monitors) + 2.0))
    top = len(monitors)
    for i, r in enumerate(steps):
        ax.add_patch(plt.Rectangle((i, top), 0.95, 0.9, color=colours[r["source_label"]]))
        ax.text(i + 0.47, top + 0.45, r["step_name"].replace("-", "\n", 1), ha="center", va="center", fontsize=6)
    for j, m in enumerate(monitors):
        y = top - 1 - j
        for i, r in enumerate(rows[m]):
            if r["flagged"]:
                ax.plot(i + 0.47, y + 0.4, marker="v", ms=9, color="#d62728" if r["label"] else "#ff7f0e")
    ax.set_yticks([top - 1 - j + 0.4 for j in range(len(monitors))] + [top + 0.45])
    ax.set_yticklabels([*monitors, "steps"], fontsize=8)
    ax.set_xticks([i + 0.47 for i in range(len(steps))])
    ax.set_xticklabels([f"t={i}" for i in range(len(steps))], fontsize=7)
    ax.set_xlim(-0.1, len(steps)), ax.set_ylim(-0.2, top + 1.1)
    ax.set_title(f"{video} ({b}, oracle): red box = mistake, orange = correction, blue = correct; markers = "
                 "alarms (red on a mistake, orange false)", fontsize=7)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    img.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(img, dpi=100)
    plt.close(fig)
    print(f"-> {img}")


def blocks(args, out: Path) -> dict[str, str]:
    """Run, print and return the blocks of the complete-trial part."""
    summaries, seconds = run(args.data_root, out)
    found = {"complete-table": table(out, summaries), "complete-time": timing(seconds, summaries)}
    for text in found.values():
        print("\n" + text)
    if args.timeline:
        timeline(out, args.data_root)
    return found
