"""``python -m ego_adr.helpmeout``: generate, validate, evaluate, summarize, templates."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ego_adr.errors import OneLineParser, UserError


def _generate(a: argparse.Namespace) -> int:
    from ego_adr.helpmeout.generator.episodes import assign_splits, generate, shares_table, write_release
    from ego_adr.helpmeout.generator.goal_control import GeneratorConfig

    if a.episodes < 1:
        raise _UserError("--episodes must be at least 1")
    if a.workers < 1:
        raise _UserError("--workers must be at least 1")
    from ego_adr.folders import OutputFolder

    ident = {"helpmeout": "generate", "episodes": a.episodes, "seed": a.seed, "test_size": a.test_size,
             "templates": str(a.templates)}
    with OutputFolder(a.out, ident, "--out", ("train.jsonl", "val.jsonl", "test.jsonl")):
        t0 = time.perf_counter()
        eps = generate(a.episodes, a.seed, GeneratorConfig(), a.templates, workers=a.workers, progress=not a.quiet)
        assign_splits(eps, a.seed, test_size=a.test_size)
        stats = write_release(eps, Path(a.out))
    print(shares_table(stats))
    if "paper_composition" in stats:
        from ego_adr.helpmeout.generator.composition import composition_table

        print("\n" + composition_table(stats["paper_composition"]))
    print(f"\n{stats['episodes']} episodes ({stats['splits']}) -> {a.out} in {time.perf_counter() - t0:.1f} s; "
          f"positive-step rate {stats['positive_step_rate']}; mean length {stats['mean_observed_length']}")
    return 0


def _validate(a: argparse.Namespace) -> int:
    from ego_adr.helpmeout.generator.io import invalid_episodes, load_episodes

    bad = total = 0
    for f in a.files:
        eps = load_episodes(f)
        total += len(eps)
        for eid, problems in invalid_episodes(eps):
            bad += 1
            if bad <= 20:
                print(f"INVALID {eid}: " + "; ".join(problems))
    print(f"{total - bad}/{total} episodes valid")
    return 1 if bad else 0


def _sibling(path: str, name: str) -> Path | None:
    cand = Path(path).with_name(name)
    return cand if cand.is_file() and cand.resolve() != Path(path).resolve() else None


def _checked(path: str | Path, what: str) -> list[dict]:
    """Episodes that ``validate`` accepts, else one line and exit 2."""
    from ego_adr.helpmeout.generator.io import invalid_episodes, load_episodes

    eps = load_episodes(path)
    bad = invalid_episodes(eps)
    if bad:
        eid, problems = bad[0]
        raise _UserError(f"{len(bad)} of {len(eps)} {what} episodes in {path} are invalid (first: {eid}: "
                         f"{problems[0]}); `python -m ego_adr.helpmeout validate {path}` lists them")
    return eps


def _evaluate(a: argparse.Namespace) -> int:
    from ego_adr.helpmeout.evaluation.evalrun import subset_ids
    from ego_adr.helpmeout.monitors import MONITORS

    spec = MONITORS[a.monitor]
    episodes = _checked(a.episodes, "test")
    if a.limit:
        episodes = episodes[: a.limit]
    train = val = None
    if spec.trains:
        tf = Path(a.train) if a.train else _sibling(a.episodes, "train.jsonl")
        if tf is None:
            raise _UserError(f"{a.monitor} trains on the train split: pass --train FILE or keep train.jsonl "
                             f"next to {a.episodes}")
        train = _checked(tf, "training")
    if a.threshold is None and a.monitor != "random":
        vf = Path(a.val) if a.val else _sibling(a.episodes, "val.jsonl")
        if vf is None:
            raise _UserError(f"the M3 threshold is chosen on the validation split: pass --val FILE, keep val.jsonl "
                             f"next to {a.episodes}, or fix it with --threshold X")
        val = _checked(vf, "validation")
    sub = subset_ids(episodes) if Path(a.episodes).name == "test.jsonl" or a.subset else None
    if a.subset or spec.name == "llm":
        sub = subset_ids(episodes)
        episodes = [ep for ep in episodes if ep["id"] in set(sub)]
        if val:
            val = [ep for ep in val if ep["id"] in set(subset_ids(val))]
    from ego_adr.folders import OutputFolder

    # --device came with the shared model arguments: left out it is not in the identity (earlier folders resume)
    ident = {"helpmeout": "evaluate", **{k: v for k, v in vars(a).items() if k not in ("fn", "quiet", "out")
                                         and not (k == "device" and v is None)}}
    with OutputFolder(a.out, ident, "--out", ("outputs.jsonl",)) as out:
        return _evaluate_into(a, spec, out, episodes, train, val, sub)


def _evaluate_into(a, spec, out: Path, episodes, train, val, sub) -> int:
    from ego_adr.helpmeout.evaluation.evalrun import evaluate
    from ego_adr.helpmeout.evaluation.report import TABLE2_HEADER, report_markdown, table2_rows
    from ego_adr.helpmeout.monitors import build_monitor
    from ego_adr.monitoring.per_step import write_steps

    kw: dict = {"cache_dir": str(out), "budget_s": a.budget_s, "templates_dir": a.templates}
    if spec.needs_model:
        if not a.model:
            raise _UserError(f"{a.monitor} needs --model NAME (an alias, hub id or folder for ego_adr.models)")
        from ego_adr.models import load_model

        extra = {"base_url": a.base_url} if a.base_url else {}
        kw["model"] = load_model(a.model, backend=a.backend, device=a.device or "auto", **extra)
        kw["cache_path"] = str(Path(a.cache_dir or out) / "stage_cache.sqlite")
        kw["backend"] = a.backend
        kw["max_new_tokens"] = a.max_new_tokens
    metrics, rows, steps = evaluate(spec, episodes, build=lambda seed: build_monitor(a.monitor, seed=seed, **kw), val=val,
                             train=train, threshold=a.threshold, tolerance=a.tolerance, bootstrap=a.bootstrap,
                             seeds=a.seeds, subset=None if (a.subset or spec.name == "llm") else sub,
                             progress=not a.quiet)
    metrics.update({"episodes_file": str(a.episodes), "on_subset": bool(a.subset or spec.name == "llm")})
    if spec.needs_model:
        metrics["model"] = a.model
        metrics["backend"] = a.backend
        if a.max_new_tokens != 512:
            metrics["deviations"] = [f"max_new_tokens {a.max_new_tokens} (paper: 512)"]
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2, sort_keys=True, default=float) + "\n")
    with open(out / "outputs.jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    write_steps(out / "steps.jsonl", steps)  # what the metrics were computed from (the first seed's)
    (out / "report.md").write_text(report_markdown(a.monitor, metrics))
    print(TABLE2_HEADER + "\n" + table2_rows(a.monitor, metrics))  # the row under its header (issue 28 item 9)
    print(f"-> {out}/metrics.json, report.md ({metrics['seconds']} s; M3 threshold: {metrics['threshold_rule']})")
    return 0


def _summarize(a: argparse.Namespace) -> int:
    from ego_adr.helpmeout.evaluation.summary import summarize

    results = []
    out = Path(a.out) if a.out else Path(a.dirs[0]).resolve().parent / "summary"
    dirs = [d for d in a.dirs if not _is_summary(Path(d), out)]
    for d in sorted(set(a.dirs) - set(dirs)):  # `summarize eval/*` after a summary was written there
        print(f"(skipping {d}: a summary folder, not an evaluate output)")
    if not dirs:
        raise _UserError("no evaluate output folder among the arguments (only summary folders)")
    for d in dirs:
        p = Path(d) / "metrics.json"
        if not p.is_file():
            raise _UserError(f"{p} not found; run `evaluate --out {d}` first")
        try:
            m = json.loads(p.read_text())
        except json.JSONDecodeError:
            raise _UserError(f"{p} is not JSON; rerun `evaluate --out {d}`") from None
        if "monitor" not in m or "M1" not in m:
            raise _UserError(f"{p} is not a HelpMeOut evaluate output; rerun `evaluate --out {d}`")
        results.append(m)
    from ego_adr.folders import FolderLock
    from ego_adr.helpmeout.evaluation.summary_html import write_summary_html
    from ego_adr.store import check_writable_dir

    check_writable_dir(out, "--out")
    with FolderLock(out):
        print(summarize(results, out))
        write_summary_html(out)  # the same tables and plot as one page (issue 21)
    print(f"\n-> {out}/summary.md, summary.html, figure3.png")
    return 0


def _is_summary(d: Path, out: Path) -> bool:
    """A folder ``summarize`` wrote (its output, or any with summary.md and no metrics.json)."""
    same = d.exists() and out.exists() and d.resolve() == out.resolve()
    return same or ((d / "summary.md").is_file() and not (d / "metrics.json").is_file())


def _templates(a: argparse.Namespace) -> int:
    from ego_adr.helpmeout.world.templates import load_templates

    print("| # | Template | Family | Anchor | Complexity | Blocks |\n|---:|---|---|---|---|---:|")
    for i, t in enumerate(load_templates(a.templates)):
        print(f"| {i} | {t.name} | {t.family} | {t.anchor} | {t.complexity} | {len(t.blocks)} |")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from ego_adr.folders import add_out_argument
    from ego_adr.models.arguments import add_model_arguments

    p = OneLineParser(prog="python -m ego_adr.helpmeout", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="write train/val/test.jsonl and stats.json")
    g.add_argument("--episodes", type=int, default=20000,
                   help="release size, all splits (default 20000: the paper's release, Table 10, whose 17,478/2,022 "
                        "train/validation split the learned monitors then train and select checkpoints on)")
    g.add_argument("--seed", type=int, default=0, help="generator seed (default: 0)")
    add_out_argument(g, "release folder (train/val/test.jsonl, stats.json)", required=True)
    g.add_argument("--workers", type=int, default=1, help="generator processes (default: 1)")
    g.add_argument("--test-size", type=int, default=500, help="episodes in the test split (default: 500)")
    g.add_argument("--templates", default=None, help="directory of template YAML (default procedures/helpmeout)")
    g.add_argument("--quiet", action="store_true")
    g.set_defaults(fn=_generate)
    v = sub.add_parser("validate", help="replay every trajectory; non-zero exit on any invalid one")
    v.add_argument("files", nargs="+")
    v.set_defaults(fn=_validate)
    from ego_adr.helpmeout.monitors.registry import MONITORS, monitor_help

    e = sub.add_parser("evaluate", help="stream a monitor over episodes and score M1-M4",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Stream one monitor over episodes and score M1-M4.\n\nmonitors:\n" + monitor_help())
    e.add_argument("--monitor", required=True, choices=list(MONITORS), metavar="NAME",
                   help="one of the monitors listed above")
    e.add_argument("--episodes", required=True, help="episodes .jsonl (usually DIR/test.jsonl)")
    add_out_argument(e, "output folder (metrics.json, outputs.jsonl, steps.jsonl, report.md)", required=True)
    e.add_argument("--train", default=None, help="training episodes (default: train.jsonl next to --episodes)")
    e.add_argument("--val", default=None, help="validation episodes for the M3 threshold rule "
                   "(default: val.jsonl next to --episodes)")
    e.add_argument("--threshold", type=float, default=None,
                   help="fix the M3 threshold (default: chosen on validation by Youden's J; Random 0.5)")
    e.add_argument("--tolerance", type=int, default=0, help="steps after the onset still counted on target")
    e.add_argument("--bootstrap", type=int, default=1000, help="stratified bootstrap resamples for the 95%% CIs")
    e.add_argument("--seeds", type=int, default=20, help="random monitor: seeds to average (Table 2: 20)")
    e.add_argument("--subset", action="store_true", help="score only the 60-episode subset (always for llm)")
    e.add_argument("--budget-s", type=float, default=5.0, help="re-planners: planning budget per episode")
    add_model_arguments(e, purpose="egoadr-deep / llm: ", device_default=None)
    e.add_argument("--max-new-tokens", type=int, default=512,
                   help="llm: new tokens per call (Table 16: 512; a smaller value is recorded in the outputs)")
    e.add_argument("--cache-dir", default=None, help="llm: folder of the stage cache (default: --out)")
    e.add_argument("--templates", default=None, help="template folder (default procedures/helpmeout)")
    e.add_argument("--limit", type=int, default=0, help="only the first N episodes (0: all)")
    e.add_argument("--quiet", action="store_true")
    e.set_defaults(fn=_evaluate)
    s = sub.add_parser("summarize", help="the paper's tables (2, 11-15, 17-18) and a Figure 3 plot from evaluate dirs")
    s.add_argument("dirs", nargs="+", help="evaluate output folders")
    add_out_argument(s, "where summary.md and figure3.png go (default: DIR/../summary)")
    s.set_defaults(fn=_summarize)
    t = sub.add_parser("templates", help="list the task templates (Table 7 layout)")
    t.add_argument("--templates", default=None)
    t.set_defaults(fn=_templates)
    return p


class _UserError(UserError):
    """A mistake the user can fix: one line, exit 2."""


def main(argv: list[str] | None = None) -> int:
    from ego_adr.errors import run_cli
    from ego_adr.helpmeout.generator.io import EpisodesFileError

    def go() -> int:
        a = build_parser().parse_args(argv)
        return int(a.fn(a))

    return run_cli(go, interrupted="interrupted; nothing partial is kept as a result (rerun the command)",
                   user_errors=(EpisodesFileError,))


if __name__ == "__main__":
    sys.exit(main())
