"""``python -m ego_adr.monitoring``: the step-stream benchmarks Assembly101-O and EPIC-Tent-O.

  evaluate --benchmark B --stream S --monitor M --data-root DIR --out OUT   score a monitor (or all) on a stream
  download --out DIR                                                          fetch the benchmark files (pinned)

See docs/online_mistakes.md.
"""

from __future__ import annotations

import argparse
import sys

from ego_adr.errors import OneLineParser, run_cli
from ego_adr.folders import add_out_argument
from ego_adr.models.arguments import add_model_arguments


def _evaluate(a) -> int:
    from ego_adr.online_mistakes.complete import COMPLETE

    if a.benchmark in COMPLETE:  # every step of whole recordings (issue 35)
        from ego_adr.online_mistakes.complete_eval import evaluate_complete

        return evaluate_complete(a)
    if a.corrections is not None:
        from ego_adr.errors import UserError

        raise UserError(f"--corrections applies to {', '.join(COMPLETE)} (every step of whole recordings); "
                        f"{a.benchmark} scores each recording up to its first mistake, where there is no correction")
    from ego_adr.online_mistakes.evaluate import evaluate

    return evaluate(a)


def _download(a) -> int:
    from ego_adr.online_mistakes.download import download_cli

    return download_cli(a)


def _options_help(registry) -> str:
    lines = []
    for name in registry.names():
        for o in registry.options(name).values():
            values = "|".join(map(str, o.choices)) if o.choices else o.parse.__name__
            lines.append(f"  {name}: {o.name}={values} (default {o.default}) {o.help}")
    return "\n".join(lines) or "  none"


def _evaluate_parser(sub) -> None:
    from ego_adr.online_mistakes.complete import COMPLETE, CORRECTIONS
    from ego_adr.online_mistakes.data import BENCHMARKS, STREAMS
    from ego_adr.online_mistakes.monitors.prego import DECODINGS
    from ego_adr.online_mistakes.registry import REGISTRY
    from ego_adr.online_mistakes.selection import OUTER_SEEDS

    e = sub.add_parser("evaluate", help="stream a monitor over a step-stream benchmark and score it",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Stream one monitor (or all) over a step stream of Assembly101-O or EPIC-Tent-O "
                       "and score it (PREGO's P/R/F1, TI-PREGO's Pb/F1b, DTGL's macro F1).\n\nmonitors:\n"
                       + REGISTRY.help() + "\n\nmonitor options (--monitor-option KEY=VALUE):\n" + _options_help(REGISTRY))
    e.add_argument("--benchmark", required=True, metavar="B", help=f"one of {', '.join(BENCHMARKS)} (cut at the first "
                   f"mistake), {', '.join(COMPLETE)} (every step of whole recordings)")
    e.add_argument("--stream", default="oracle", metavar="S",
                   help=f"{', '.join(STREAMS)} (default oracle), or a file in PREGO's predictions format "
                   '({"<video>": {"pred": [step ids]}}) holding a recogniser\'s output on the test videos')
    e.add_argument("--monitor", required=True, metavar="M", help="a monitor listed above, or all")
    e.add_argument("--monitor-option", action="append", default=[], metavar="KEY=VALUE",
                   help="an option of the monitor (repeatable; listed above): checked against what it takes, part of "
                   "the output folder's identity and metrics.json; with --monitor all it goes to every monitor that "
                   "takes it")
    e.add_argument("--partial", action="store_true",
                   help="--stream FILE covers only some test videos: score those (coverage in metrics.json, the "
                   "others listed, no comparison with published full-benchmark rows)")
    e.add_argument("--data-root", required=True,
                   help="folder that `python -m ego_adr.monitoring download --out DIR` wrote (dtgl/, prego/)")
    add_out_argument(e, "output folder (metrics.json, steps.jsonl, report.md; with --monitor all one folder per "
                     "monitor and summary.json)", required=True)
    e.add_argument("--corrections", default=None, choices=CORRECTIONS,
                   help="complete-trial benchmarks: a correction step is scored as correct (default) or left out of "
                   "the scores (exclude; the monitor still sees it)")
    add_model_arguments(e, purpose="prego: ", device_default=None)
    e.add_argument("--decoding", default=None, choices=tuple(DECODINGS), help="prego: alias of --monitor-option decoding=...; PREGO's decoding, "
                   "numeric (default: its numeric-symbol run, 1 greedy reply of <= 4 tokens) or sampled (its "
                   "emoji runs: 25 replies at temperature 0.6, top-p 0.9, <= 8 tokens); docs/online_mistakes.md")
    e.add_argument("--samples", type=int, default=None, help="prego: replies per step (default: the --decoding's)")
    e.add_argument("--temperature", type=float, default=None,
                   help="prego: sampling temperature, 0 greedy (default: the --decoding's)")
    e.add_argument("--max-new-tokens", type=int, default=None,
                   help="prego: tokens per reply (default: the --decoding's, PREGO's 4 numeric / 8 sampled)")
    e.add_argument("--cache-dir", default=None, help="prego: folder of the stage cache (default: the ego_adr cache)")
    e.add_argument("--selection-seeds", default=None, metavar="S1,S2,...",
                   help="--monitor all: the outer-fold seeds of the nested selection (default "
                        f"{','.join(map(str, OUTER_SEEDS))}, fixed in advance); distinct whole numbers, recorded in "
                        "summary.json and the folder's identity")
    e.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="--monitor all: processes for the fits (default: $EGO_ADR_JOBS, else the CPUs available); "
                        "every N writes the same bytes")
    e.add_argument("--quiet", action="store_true")
    e.set_defaults(fn=_evaluate)


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="python -m ego_adr.monitoring", description=__doc__,
                      formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    _evaluate_parser(sub)
    d = sub.add_parser("download", help="fetch the benchmark files from the public repositories at pinned commits")
    add_out_argument(d, "folder to lay the files out in (dtgl/, prego/: what --data-root then reads)", required=True)
    d.add_argument("--base-url", default=None, help="raw-file server (default https://raw.githubusercontent.com; "
                   "files are fetched as BASE/<owner>/<repo>/<commit>/<path>)")
    d.add_argument("--timeout", type=float, default=60.0, help="seconds per request (default 60)")
    d.add_argument("--quiet", action="store_true")
    d.set_defaults(fn=_download)
    return p


def main(argv: list[str] | None = None) -> int:
    def go() -> int:
        a = build_parser().parse_args(argv)
        return int(a.fn(a))

    return run_cli(go, interrupted="interrupted; nothing partial is kept as a result (rerun the command)")


if __name__ == "__main__":
    sys.exit(main())
