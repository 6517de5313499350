"""Benchmarks: generating a HelpMeOut release, and evaluating every non-LLM monitor on its 500-episode test split.

    python scripts/bench_helpmeout.py generate --episodes 20000 --workers 2      # release time + composition
    python scripts/bench_helpmeout.py monitors --release runs/helpmeout --out runs/helpmeout/eval
    python scripts/bench_helpmeout.py detectability --release runs/helpmeout --evals runs/helpmeout/eval
    python scripts/bench_helpmeout.py howhard --evals runs/helpmeout/eval        # paper vs ours, M1-M4 + Table 14
    python scripts/bench_helpmeout.py oneclass --evals runs/helpmeout/eval       # supervised vs one-class, per family

``generate`` prints episodes, workers, seconds, the largest category-share gap (Figure 7) and whether every
composition figure is within 10% of the paper's. ``monitors`` evaluates each registered monitor that needs no
model on DIR/test.jsonl (threshold chosen on DIR/val.jsonl, learned ones trained on DIR/train.jsonl), prints the
time spent per monitor streaming the test split (training and the validation pass shown apart; docs block
``helpmeout-monitors``), then the summary tables (``python -m ego_adr.helpmeout summarize``) of the same folders
(block ``helpmeout-summary``: the results of docs/helpmeout.md). ``detectability`` prints how
predictable each category's realisation is (:mod:`ego_adr.helpmeout.generator.difficulty`: an n-gram probe trained on
DIR/train.jsonl, step-level AUPRC per category on DIR/test.jsonl) beside the learned monitors' Table 12 from
``--evals`` and the paper's SGT row.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import docs_tables  # scripts/docs_tables.py (this folder is on sys.path when the script runs)


def bench_generate(a: argparse.Namespace) -> None:
    from ego_adr.helpmeout.generator.episodes import assign_splits, generate, write_release

    t0 = time.perf_counter()
    eps = generate(a.episodes, a.seed, workers=a.workers, progress=False)
    assign_splits(eps, a.seed)
    with tempfile.TemporaryDirectory() as d:
        out = Path(a.out) if a.out else Path(d)
        stats = write_release(eps, out)
    dt = time.perf_counter() - t0
    print("| episodes | workers | seconds | episodes/s | max share gap (pp) | composition within 10% | mean length |")
    print("|---:|---:|---:|---:|---:|---|---:|")
    print(f"| {a.episodes} | {a.workers} | {dt:.1f} | {a.episodes / dt:.0f} | {stats['max_share_gap_pp']:.2f} | "
          f"{stats.get('paper_composition_within_10pct')} | {stats['mean_observed_length']} |")
    if "paper_composition" in stats:
        from ego_adr.helpmeout.generator.composition import composition_table

        print("\n" + composition_table(stats["paper_composition"]))


def bench_monitors(a: argparse.Namespace) -> None:
    from ego_adr.helpmeout.monitors import MONITORS
    from ego_adr.monitoring.cli import main as cli

    rel, out = Path(a.release), Path(a.out)
    names = [n for n, s in MONITORS.items() if not s.needs_model] if not a.only else a.only.split(",")
    rows, dirs = [], []
    for n in names:
        d = out / n
        argv = ["evaluate", "--benchmark", "helpmeout", "--monitor", n, "--episodes", str(rel / "test.jsonl"), "--out", str(d), "--quiet",
                "--bootstrap", str(a.bootstrap)]
        if cli(argv) != 0:
            raise SystemExit(f"evaluate {n} failed")
        m = json.loads((d / "metrics.json").read_text())
        rows.append((n, m["timing"], m["seconds"]))
        dirs.append(str(d))
    with docs_tables.Printed() as table:  # the docs block is this table; the summary tables are results
        print("\n| monitor | train s | validation pass s | test split s (500 episodes) |\n|---|---:|---:|---:|")
        for n, t, _ in rows:
            print(f"| {n} | {t['fit_s']:.1f} | {t['val_s']:.1f} | {t['test_s']:.1f} |")
        total = sum(t["test_s"] for _, t, _ in rows)
        print(f"| **all {len(rows)}, training excluded** | | {sum(t['val_s'] for _, t, _ in rows):.1f} | "
              f"**{total:.1f}** |")
    with docs_tables.Printed() as summary:  # the paper's tables of the same folders: the results block
        cli(["summarize", *dirs, "--out", str(out / "summary")])
    a.blocks = {"helpmeout-monitors": table.text, "helpmeout-summary": _results_only(summary.text)}
    if a.write_docs:  # the plot beside the tables comes from the same run
        import shutil

        shutil.copyfile(out / "summary" / "figure3.png", Path(a.write_docs) / "docs" / "img" / "helpmeout_figure3.png")


def _results_only(text: str) -> str:
    """The summary's tables without the lines that name this run's folders (they differ per machine), its
    headings one level down (they sit under the page's Results heading)."""
    keep = [x for x in text.splitlines() if not x.startswith(("-> ", "(skipping ", "![Figure 3"))]  # plot: below
    return "\n".join("#" + x if x.startswith("## ") else x for x in keep).strip("\n")


def bench_detectability(a: argparse.Namespace) -> None:
    from ego_adr.helpmeout.generator.difficulty import detectability, detectability_table
    from ego_adr.helpmeout.generator.io import load_episodes

    rel = Path(a.release)
    t0 = time.perf_counter()
    rows = detectability(load_episodes(rel / "train.jsonl"), load_episodes(rel / "test.jsonl"), n=a.n)
    learned = {}
    for name in ("seq2seq", "seq2seq-sg", "sgt"):
        f = Path(a.evals) / name / "metrics.json" if a.evals else None
        if f and f.is_file():
            per = json.loads(f.read_text())["M2"]["per_class"]
            learned[name] = {c: v["AUPRC"] for c, v in per.items()}
            learned[name]["all"] = json.loads(f.read_text())["M2"]["all"]
    print(detectability_table(rows, learned))
    print(f"\n{a.n}-gram probe on {rel} in {time.perf_counter() - t0:.1f} s")


def bench_howhard(a: argparse.Namespace) -> None:
    from ego_adr.helpmeout.evaluation.paper_results import how_hard_table

    print(how_hard_table(a.evals))


def bench_oneclass(a: argparse.Namespace) -> None:
    from ego_adr.helpmeout.evaluation.paper_results import oneclass_table

    print(oneclass_table(a.evals))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="time a release")
    g.add_argument("--episodes", type=int, default=20000)
    g.add_argument("--workers", type=int, default=2)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--out", default=None, help="keep the release here (default: a temporary folder)")
    m = sub.add_parser("monitors", help="time every non-LLM monitor on a release's test split")
    m.add_argument("--release", required=True, help="a folder written by `python -m ego_adr.helpmeout generate`")
    m.add_argument("--out", required=True)
    m.add_argument("--bootstrap", type=int, default=1000)
    m.add_argument("--only", default=None, help="comma-separated monitor names (default: all without a model)")
    d = sub.add_parser("detectability", help="per-category n-gram detectability of a release")
    d.add_argument("--release", required=True)
    d.add_argument("--evals", default=None, help="the `monitors` output folder (adds the learned monitors' Table 12)")
    d.add_argument("--n", type=int, default=3, help="n-gram order of the probe")
    h = sub.add_parser("howhard", help="the paper's rows beside ours (M1-M4, Table 14) from `monitors` output")
    h.add_argument("--evals", required=True)
    o = sub.add_parser("oneclass", help="each learned family trained supervised and one-class, beside the paper")
    o.add_argument("--evals", required=True, help="the `monitors` output folder")
    for sp in (g, m, d, h, o):
        docs_tables.add_flag(sp)
    a = p.parse_args()
    cmds = {"generate": bench_generate, "monitors": bench_monitors, "detectability": bench_detectability,
            "howhard": bench_howhard, "oneclass": bench_oneclass}
    name = f"helpmeout-{a.cmd}"  # the docs block of this subcommand's table (--write-docs)
    docs_tables.check(a, [name] + (["helpmeout-summary"] if a.cmd == "monitors" else []))
    a.blocks = None
    with docs_tables.Printed() as printed:
        cmds[a.cmd](a)
    docs_tables.publish(a, a.blocks or {name: printed.text})


if __name__ == "__main__":
    main()
