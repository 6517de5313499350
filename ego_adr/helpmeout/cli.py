"""``python -m ego_adr.helpmeout``: generate, validate, evaluate, summarize, templates."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def _generate(a: argparse.Namespace) -> int:
    from ego_adr.helpmeout.episodes import assign_splits, generate, shares_table, write_release
    from ego_adr.helpmeout.generator import GeneratorConfig

    if a.episodes < 1:
        raise SystemExit("--episodes must be at least 1")
    t0 = time.perf_counter()
    eps = generate(a.episodes, a.seed, GeneratorConfig(), a.templates, workers=a.workers, progress=not a.quiet)
    assign_splits(eps, a.seed, test_size=a.test_size)
    stats = write_release(eps, Path(a.out))
    print(shares_table(stats))
    if "paper_composition" in stats:
        from ego_adr.helpmeout.composition import composition_table

        print("\n" + composition_table(stats["paper_composition"]))
    print(f"\n{stats['episodes']} episodes ({stats['splits']}) -> {a.out} in {time.perf_counter() - t0:.1f} s; "
          f"positive-step rate {stats['positive_step_rate']}; mean length {stats['mean_observed_length']}")
    return 0


def _validate(a: argparse.Namespace) -> int:
    from ego_adr.helpmeout.episodes import validate_file

    bad = total = 0
    for f in a.files:
        for eid, problems in validate_file(f):
            total += 1
            if problems:
                bad += 1
                if bad <= 20:
                    print(f"INVALID {eid}: " + "; ".join(problems))
    print(f"{total - bad}/{total} episodes valid")
    return 1 if bad else 0


def _train_file(a: argparse.Namespace) -> Path | None:
    if a.train:
        return Path(a.train)
    cand = Path(a.episodes).with_name("train.jsonl")
    return cand if cand.is_file() and cand.resolve() != Path(a.episodes).resolve() else None


def _evaluate(a: argparse.Namespace) -> int:
    from ego_adr.helpmeout.episodes import read_jsonl
    from ego_adr.helpmeout.metrics import compute_metrics, mean_metrics
    from ego_adr.helpmeout.monitors import MONITORS, build_monitor, run_monitor
    from ego_adr.helpmeout.report import report_markdown, table2_row

    if a.monitor not in MONITORS:
        raise SystemExit(f"unknown monitor {a.monitor!r}; choose one of {', '.join(MONITORS)}")
    episodes = read_jsonl(a.episodes)
    if a.limit:
        episodes = episodes[: a.limit]
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    kw: dict = {"cache_dir": str(out), "budget_s": a.budget_s, "templates_dir": a.templates}
    if a.monitor == "egoadr-deep":
        if not a.model:
            raise SystemExit("egoadr-deep needs --model NAME (an alias, hub id or folder for ego_adr.models.load_model)")
        from ego_adr.models import load_model

        kw["model"] = load_model(a.model, backend=a.backend)
    seeds = list(range(a.seeds)) if a.monitor == "random" else [0]
    t0 = time.perf_counter()
    runs, rows = [], []
    for seed in seeds:
        mon = build_monitor(a.monitor, seed=seed, **kw)
        if a.monitor in ("cusum", "learned"):
            tf = _train_file(a)
            if tf is None:
                raise SystemExit(f"{a.monitor} trains on the train split: pass --train FILE or keep train.jsonl "
                                 f"next to {a.episodes}")
            mon.fit(read_jsonl(tf))
        rows = run_monitor(mon, episodes, progress=not a.quiet)
        runs.append(compute_metrics(episodes, rows, a.threshold, a.tolerance, a.bootstrap if seed == 0 else 0, seed))
    metrics = runs[0] if len(runs) == 1 else mean_metrics(runs)
    metrics.update({"monitor": a.monitor, "episodes_file": str(a.episodes), "seeds": len(seeds),
                    "seconds": round(time.perf_counter() - t0, 2)})
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2, sort_keys=True, default=float) + "\n")
    with open(out / "outputs.jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    (out / "report.md").write_text(report_markdown(a.monitor, metrics))
    print(table2_row(a.monitor, metrics))
    print(f"-> {out}/metrics.json, report.md ({metrics['seconds']} s)")
    return 0


def _summarize(a: argparse.Namespace) -> int:
    from ego_adr.helpmeout.report import summary_table

    results = {}
    for d in a.dirs:
        p = Path(d) / "metrics.json"
        if not p.is_file():
            raise SystemExit(f"{p} not found; run `evaluate --out {d}` first")
        m = json.loads(p.read_text())
        results[m.get("monitor", Path(d).name)] = m
    print(summary_table(results))
    return 0


def _templates(a: argparse.Namespace) -> int:
    from ego_adr.helpmeout.templates import load_templates

    print("| # | Template | Family | Anchor | Complexity | Blocks |\n|---:|---|---|---|---|---:|")
    for i, t in enumerate(load_templates(a.templates)):
        print(f"| {i} | {t.name} | {t.family} | {t.anchor} | {t.complexity} | {len(t.blocks)} |")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m ego_adr.helpmeout", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="write train/val/test.jsonl and stats.json")
    g.add_argument("--episodes", type=int, required=True)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--out", required=True)
    g.add_argument("--workers", type=int, default=1)
    g.add_argument("--test-size", type=int, default=500)
    g.add_argument("--templates", default=None, help="directory of template YAML (default procedures/helpmeout)")
    g.add_argument("--quiet", action="store_true")
    g.set_defaults(fn=_generate)
    v = sub.add_parser("validate", help="replay every trajectory; non-zero exit on any invalid one")
    v.add_argument("files", nargs="+")
    v.set_defaults(fn=_validate)
    e = sub.add_parser("evaluate", help="stream a monitor over episodes and score M1-M4")
    e.add_argument("--monitor", required=True)
    e.add_argument("--episodes", required=True)
    e.add_argument("--out", required=True)
    e.add_argument("--train", default=None, help="training episodes (default: train.jsonl next to --episodes)")
    e.add_argument("--threshold", type=float, default=0.5)
    e.add_argument("--tolerance", type=int, default=0, help="steps after the onset still counted on target")
    e.add_argument("--bootstrap", type=int, default=1000)
    e.add_argument("--seeds", type=int, default=20, help="random monitor: seeds to average (Table 2: 20)")
    e.add_argument("--budget-s", type=float, default=5.0, help="re-planner: planning budget per episode")
    e.add_argument("--model", default=None, help="egoadr-deep: model alias / hub id / folder")
    e.add_argument("--backend", default="hf")
    e.add_argument("--templates", default=None)
    e.add_argument("--limit", type=int, default=0)
    e.add_argument("--quiet", action="store_true")
    e.set_defaults(fn=_evaluate)
    s = sub.add_parser("summarize", help="one Table-2 style table from several evaluate output dirs")
    s.add_argument("dirs", nargs="+")
    s.set_defaults(fn=_summarize)
    t = sub.add_parser("templates", help="list the task templates (Table 7 layout)")
    t.add_argument("--templates", default=None)
    t.set_defaults(fn=_templates)
    return p


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    return int(a.fn(a))


if __name__ == "__main__":
    sys.exit(main())
