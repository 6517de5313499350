"""``python -m ego_adr.helpmeout``: generate, validate, summarize, templates; ``evaluate`` is now ``python -m
ego_adr.monitoring evaluate --benchmark helpmeout`` (the one command of every online benchmark), which this name
still runs after saying so."""

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
    with OutputFolder(a.out, ident, "--out", ("train.jsonl", "val.jsonl", "test.jsonl"), fresh=a.fresh,
                      written=RELEASE_FILES):
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

    p = OneLineParser(prog="python -m ego_adr.helpmeout", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="write train/val/test.jsonl and stats.json")
    g.add_argument("--episodes", type=int, default=20000,
                   help="release size, all splits (default 20000: the paper's release, Table 10, whose 17,478/2,022 "
                        "train/validation split the learned monitors then train and select checkpoints on)")
    g.add_argument("--seed", type=int, default=0, help="generator seed (default: 0)")
    add_out_argument(g, "release folder (train/val/test.jsonl, stats.json)", required=True,
                     fresh=", ".join(RELEASE_FILES))
    g.add_argument("--workers", type=int, default=1, help="generator processes (default: 1)")
    g.add_argument("--test-size", type=int, default=500, help="episodes in the test split (default: 500)")
    g.add_argument("--templates", default=None, help="directory of template YAML (default procedures/helpmeout)")
    g.add_argument("--quiet", action="store_true")
    g.set_defaults(fn=_generate)
    v = sub.add_parser("validate", help="replay every trajectory; non-zero exit on any invalid one")
    v.add_argument("files", nargs="+")
    v.set_defaults(fn=_validate)
    sub.add_parser("evaluate", add_help=False, help="now `python -m ego_adr.monitoring evaluate --benchmark "
                   "helpmeout` (this name still runs it, and says so)")
    s = sub.add_parser("summarize", help="the paper's tables (2, 11-15, 17-18) and a Figure 3 plot from evaluate dirs")
    s.add_argument("dirs", nargs="+", help="evaluate output folders")
    add_out_argument(s, "where summary.md and figure3.png go (default: DIR/../summary)")
    s.set_defaults(fn=_summarize)
    t = sub.add_parser("templates", help="list the task templates (Table 7 layout)")
    t.add_argument("--templates", default=None)
    t.set_defaults(fn=_templates)
    return p


#: What ``generate`` writes in its folder (``--fresh`` removes these, and nothing else).
RELEASE_FILES = ("train.jsonl", "val.jsonl", "test.jsonl", "stats.json", "identity.json")


class _UserError(UserError):
    """A mistake the user can fix: one line, exit 2."""


def main(argv: list[str] | None = None) -> int:
    from ego_adr.errors import run_cli
    from ego_adr.helpmeout.generator.io import EpisodesFileError

    def go() -> int:
        args = list(sys.argv[1:] if argv is None else argv)
        if args[:1] == ["evaluate"]:  # the one monitoring command runs it (issue 43): said once, then run
            from ego_adr.monitoring.cli import alias

            return alias("python -m ego_adr.helpmeout evaluate", ["evaluate", "--benchmark", "helpmeout", *args[1:]])
        a = build_parser().parse_args(args)
        return int(a.fn(a))

    return run_cli(go, interrupted="interrupted; nothing partial is kept as a result (rerun the command)",
                   user_errors=(EpisodesFileError,))


if __name__ == "__main__":
    sys.exit(main())
