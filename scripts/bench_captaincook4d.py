"""CaptainCook4D (issue 44): the task-graph table, both benchmarks' tables and goal lines through the one command,
the EgoErrorVQA no-video row, and a timeline of one test recording.

    python scripts/bench_captaincook4d.py                                  # everything, printed
    python scripts/bench_captaincook4d.py --write-docs --timeline --jobs 2 # ... into the docs, + docs/img PNG
    python scripts/bench_captaincook4d.py --seeds                          # dtgl-do over DTGL's five seeds too
    python scripts/bench_captaincook4d.py --out runs/cc4d                  # keep the command's folders there

The benchmarks run as a user runs them: ``python -m ego_adr.monitoring evaluate --benchmark captaincook4d-complete
--monitor all`` and then ``captaincook4d-o`` (every monitor that needs no model, fitted on train, thresholds, checks
and the headline chosen on validation, the test scored once), ``--jobs`` processes, from a cold ``--cache-dir``
(DTGL's graphs, embeddings and the learned graphs computed), timed together: wall and CPU seconds (the workers'
included) and the machine's load average (``os.getloadavg()``) before and after, since a shared machine's wall time
says little alone. Then, untimed, the ``end`` omission rule on ``captaincook4d-complete``: the monitors whose rows
depend on the labels' rule run again through the command (``--missing-target end``), the others' rows are
relabelled. ``--write-docs`` rewrites the blocks ``captaincook4d-graphs``, ``captaincook4d-table``,
``captaincook4d-time`` (docs/online_mistakes.md) and ``captaincook4d-novideo`` (docs/evaluator.md); ``--timeline``
draws :data:`IMG`. Bad input is one line and exit 2, nothing written.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import docs_tables  # scripts/docs_tables.py (this folder is on sys.path when the script runs)

REPO = Path(__file__).resolve().parents[1]
IMG = REPO / "docs" / "img" / "captaincook4d_timeline.png"
BLOCKS = ("captaincook4d-graphs", "captaincook4d-table", "captaincook4d-time", "captaincook4d-novideo")
TIMELINE_MONITORS = ("procedure-official", "procedure-learned", "unseen-transition", "egoadr-graph", "position")


def _cpu() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def graphs_block(root: str, seeds: bool) -> str:
    from ego_adr.captaincook4d import generation as GN
    from ego_adr.captaincook4d import learned as L
    from ego_adr.captaincook4d import report as R

    recipes = GN.load(root)
    text = GN.text_learner(recipes)
    learners = {"count-based": GN.count_based_edges, "dtgl-do (seed 42)": GN.do_edges, "tgml-text": text}
    if seeds:
        for s in L.SEEDS[1:]:
            learners[f"dtgl-do (seed {s})"] = lambda rec, s=s: GN.do_edges(rec, s)
    res = GN.run(recipes, learners)
    if seeds:
        runs = [res[k]["mean"] for k in res if k.startswith("dtgl-do")]
        res["dtgl-do (mean of DTGL's 5 seeds)"] = {"mean": {k: tuple(sum(m[k][i] for m in runs) / len(runs)
                                                                     for i in range(3)) for k in ("dtgl", "official")}}
    share = GN.start_shares(recipes, text.adjacency)
    notes = {"tgml-text": f"mean share of a step's precondition mass on START {share['tgml-text']:.2f} "
                          f"(dtgl-do seed 42: {share['dtgl-do']:.2f})"}
    diff = GN.graph_sets(recipes)
    sets = "; ".join(f"{r}: nodes {c['nodes'][1]} vs {c['nodes'][0]}, edges {c['edges'][1]} vs {c['edges'][0]}, "
                     f"step-id edges only in CaptainCook4D's {c['step_edges_only_first']}, only in DTGL's "
                     f"{c['step_edges_only_second']}" for r, c in diff.items())
    return "\n".join([*R.graph_table(res, notes), "", f"DTGL's graph files (scored against) beside CaptainCook4D's "
                      f"`task_graphs/`: {len(recipes) - len(diff)} of {len(recipes)} byte-identical; the others "
                      f"(DTGL's vs CaptainCook4D's): {sets}."])


def _command(root: str, benchmark: str, monitor: str, out: Path, jobs: int, cache: str, rule: str = "graph") -> None:
    from ego_adr.monitoring.cli import main

    rc = main(["evaluate", "--benchmark", benchmark, "--monitor", monitor, "--data-root", root, "--out", str(out),
               "--jobs", str(jobs), "--cache-dir", cache, "--missing-target", rule, "--quiet"])
    if rc:
        raise SystemExit(rc)


def _summary(out: Path) -> dict:
    """A run's summary.json, with the test and validation rows of each monitor (the timeline and the relabelling
    read them)."""
    import json

    from ego_adr.monitoring.per_step import read_steps

    s = json.loads((out / "summary.json").read_text())
    for r in s["results"]:
        r["rows"] = read_steps(out / r["monitor"] / "steps.jsonl")
        r["validation_rows"] = read_steps(out / r["monitor"] / "validation_steps.jsonl")
    return s


#: the monitors whose rows depend on the omission rule (a procedure monitor's checks, the supervised labels) or that
#: are cheap; every other monitor's rows are relabelled under the ``end`` rule
AGAIN = ("flag-all", "never-alarm", "unseen-step", "unseen-transition", "procedure-official", "procedure-learned",
         "supervised")


def evaluate(root: str, jobs: int, out: Path) -> tuple[dict, dict, dict]:
    """Both benchmarks through the one command from a cold cache into ``out/<benchmark>`` ({benchmark: summary},
    timed), then the end-rule variant of the complete one (module docstring)."""
    from ego_adr.captaincook4d import benchmark as B
    from ego_adr.captaincook4d import evaluate as E

    with tempfile.TemporaryDirectory() as cold:
        load0, t0, c0 = os.getloadavg()[0], time.perf_counter(), _cpu()
        for b in B.BENCHMARKS:
            _command(root, b, "all", out / b, jobs, cold)
        timing = {"wall": time.perf_counter() - t0, "cpu": _cpu() - c0, "load": (load0, os.getloadavg()[0]),
                  "jobs": jobs}
        _command(root, "captaincook4d-complete", ",".join(AGAIN), out / "captaincook4d-complete-end", jobs, cold, "end")
    summaries = {b: _summary(out / b) for b in B.BENCHMARKS}
    end = _summary(out / "captaincook4d-complete-end")
    data = B.load(root, "captaincook4d-complete", "end")
    kept = {r["monitor"]: r for r in end["results"]}
    end["results"] = [kept.get(r["monitor"]) or E.relabelled(r, data.val, data.test)
                      for r in summaries["captaincook4d-complete"]["results"]]
    end["headline"], end["choice"] = E.headline(end["results"]), {}
    return summaries, end, timing


def table_block(out: dict, end: dict) -> str:
    from ego_adr.captaincook4d import choice as C
    from ego_adr.captaincook4d import report as R

    lines = []
    for s in out.values():
        lines += [C.text(s["choice"]), "", *R.table(s), "", *R.goal_lines(s), ""]
        if s["agreement"]:
            lines += [f"Alarm agreement of each reference rule with the chosen monitor ({s['headline']}) on the test "
                      "(‡ at its macro-F1 point, † at its F1b point):", "",
                      *(f"- {R.agreement_text(n, a)}" for n, a in s["agreement"].items()), ""]
        lines += ["Alarms per source label and CaptainCook4D tag (observations in brackets; at each monitor's "
                  "macro-F1 point):", "", *R.kinds_table(s), ""]
    lines += ["Both omission rules on captaincook4d-complete (the `end` rule's labels read no graph; every threshold "
              "and check chosen again on validation):", "", *R.variant_lines(out["captaincook4d-complete"], end)]
    not_run = next(iter(out.values()))["not_run"]
    if not_run:
        lines += ["", "Not run: " + "; ".join(not_run) + "."]
    return "\n".join(lines)


def time_block(t: dict) -> str:
    return (f"Both benchmarks through `python -m ego_adr.monitoring evaluate --monitor all` (every monitor that needs "
            f"no model, fits and choices on validation included), from a cold cache: {t['wall']:.1f} s wall, "
            f"{t['cpu']:.1f} s of CPU (workers included), --jobs {t['jobs']} on {os.cpu_count()} CPUs; load average "
            f"{t['load'][0]:.1f} when it began and {t['load'][1]:.1f} when it ended (on a machine shared with other "
            "work, the CPU seconds are the figure that does not depend on the load)")


def novideo_block(eroot: str, root: str, out: Path | None) -> str:
    from ego_adr.captaincook4d import egoerrorvqa as Q
    from ego_adr.eval.mc import compute_mc_metrics
    from ego_adr.eval.report import table4_rows

    rows = Q.predictions(eroot, root)
    base = Q.majority(rows)
    m, mb = compute_mc_metrics(rows), compute_mc_metrics(base)
    if out is not None:
        Q.write(rows, out / "egoerrorvqa-no-video" / "predictions.jsonl")
        Q.write(base, out / "egoerrorvqa-majority" / "predictions.jsonl")
    pta = m["per_type_accuracy"]["overall"]
    support = ", ".join(f"{k} {v['n']}" for k, v in pta.items() if v["n"])
    return "\n".join([table4_rows([("procedure, no video (**privileged**: the oracle step stream)", "-", m),
                                   ("majority answer (correct)", "-", mb)]), "",
                      f"CaptainCook4D samples of the EgoErrorVQA annotations: {m['overall']['n']} (by ground-truth "
                      f"option: {support}); the public scoring rule (`eval/scoring.py`)."])


def _pick(summary: dict) -> tuple[str, dict[str, list[dict]]]:
    """The first test recording (split order) with an order error and a skipped step shown before the end."""
    rows = {r["monitor"]: r["rows"] for r in summary["results"] if r["monitor"] in TIMELINE_MONITORS}
    first = rows[TIMELINE_MONITORS[0]]
    for video in dict.fromkeys(r["episode"] for r in first):
        rs = [r for r in first if r["episode"] == video]
        if (any("Order Error" in r["kinds"] for r in rs) and any("Missing Step" in r["kinds"] and r["step_id"] != 0
                                                                for r in rs) and len(rs) <= 16):
            return video, {m: [r for r in v if r["episode"] == video] for m, v in rows.items()}
    raise SystemExit("no test recording with an order error and a skipped step shown before the end")


def timeline(summary: dict, img: Path = IMG) -> None:
    """Steps, labels and the alarms of a few monitors over one test recording."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    video, rows = _pick(summary)
    monitors = [m for m in TIMELINE_MONITORS if m in rows]
    steps = rows[monitors[0]]
    fig, ax = plt.subplots(figsize=(1.1 * len(steps) + 2.8, 0.5 * len(monitors) + 2.4))
    top = len(monitors)
    for i, r in enumerate(steps):
        colour = "#d62728" if r["label"] else ("#fdae6b" if r["source_label"] == "errorful" else "#9ecae1")
        ax.add_patch(plt.Rectangle((i, top), 0.95, 1.1, color=colour))
        words = r["step_name"].split("-", 1)[-1][:34]
        tags = "\n".join([*(k.replace(" Error", "") for k in r["kinds"] if not k.startswith(("END", "Missing"))),
                          *(f"skipped: {o.split('-', 1)[-1][:16]}" for o in r.get("omitted", []))])
        ax.text(i + 0.47, top + 0.55, f"{words[:17]}\n{words[17:]}\n{tags}", ha="center", va="center", fontsize=5)
    for j, m in enumerate(monitors):
        for i, r in enumerate(rows[m]):
            if r["flagged_for"]["macro_f1"]:
                ax.plot(i + 0.47, top - 1 - j + 0.4, marker="v", ms=9, color="#d62728" if r["label"] else "#ff7f0e")
    ax.set_yticks([top - 1 - j + 0.4 for j in range(len(monitors))] + [top + 0.55])
    ax.set_yticklabels([*monitors, "steps"], fontsize=8)
    ax.set_xticks([i + 0.47 for i in range(len(steps))])
    ax.set_xticklabels([f"t={i}" for i in range(len(steps))], fontsize=7)
    ax.set_xlim(-0.1, len(steps)), ax.set_ylim(-0.2, top + 1.2)
    ax.set_title(f"{video} (captaincook4d-complete, test): red box = positive (Order Error, or where a skipped step "
                 "shows), orange = other tags, blue = correct; markers = alarms at the macro-F1 point (red on a "
                 "positive, orange false)", fontsize=6)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    img.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(img, dpi=100)
    plt.close(fig)
    print(f"-> {img} ({video})")


def _dump(out: Path, end: dict) -> None:
    from ego_adr.store import write_json

    slim = end | {"results": [{k: v for k, v in r.items() if k not in ("rows", "validation_rows")}
                              for r in end["results"]]}
    write_json(out / "captaincook4d-complete-end-rule.json", slim)


def run(args) -> int:
    from ego_adr.captaincook4d import sources as S

    S.load(args.data_root)  # bad input: one line, before any work
    blocks = {"captaincook4d-graphs": graphs_block(args.data_root, args.seeds)}
    print(blocks["captaincook4d-graphs"] + "\n")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out) if args.out else Path(tmp)
        summaries, end, timing = evaluate(args.data_root, args.jobs, out)
        if args.out:
            _dump(out, end)
    blocks["captaincook4d-table"] = table_block(summaries, end)
    blocks["captaincook4d-time"] = time_block(timing)
    blocks["captaincook4d-novideo"] = novideo_block(args.egoerrorvqa, args.data_root,
                                                    Path(args.out) if args.out else None)
    for name in BLOCKS[1:]:
        print(blocks[name] + "\n")
    if args.timeline:
        timeline(summaries["captaincook4d-complete"])
    docs_tables.publish(args, blocks)
    return 0


def main() -> None:
    from ego_adr.errors import run_cli

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-root", default=str(REPO.parent / "shared" / "online-mistakes"),
                   help="a folder laid out as `python -m ego_adr.monitoring download` writes it")
    p.add_argument("--egoerrorvqa", default=str(REPO.parent / "shared" / "egoerrorvqa"),
                   help="the EgoErrorVQA annotation folder (its captaincook4d_answer.json)")
    p.add_argument("--jobs", type=int, default=int(os.environ.get("EGO_ADR_JOBS") or 2),
                   help="the command's --jobs (spawned processes; the same bytes for any number; default "
                   "$EGO_ADR_JOBS, else 2)")
    p.add_argument("--seeds", action="store_true", help="dtgl-do's graph over DTGL's five seeds too")
    p.add_argument("--out", default=None, help="keep the command's folders (OUT/<benchmark>/), the end-rule summary "
                   "and the EgoErrorVQA predictions files here (default: a temporary folder)")
    p.add_argument("--timeline", action="store_true", help=f"draw {IMG.relative_to(REPO)}")
    docs_tables.add_flag(p)
    args = p.parse_args()
    docs_tables.check(args, list(BLOCKS))
    sys.exit(run_cli(lambda: run(args)))


if __name__ == "__main__":
    main()
