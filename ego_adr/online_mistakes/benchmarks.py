"""The step-stream benchmarks on the monitoring layer's benchmark registry (:mod:`ego_adr.monitoring.benchmarks`
finds this module): Assembly101-O and EPIC-Tent-O (each recording cut at its first mistake) and their complete
trials (every step of every test recording).

Stage 1 of issue 43: :class:`StepStreams` is a thin adapter. It declares the step streams' own flags, builds from
the typed settings the argparse Namespace that today's drivers (:func:`ego_adr.online_mistakes.evaluate.evaluate`,
:func:`ego_adr.online_mistakes.complete_eval.evaluate_complete`) read, and calls them unchanged, so their folders,
identities and bytes are what ``python -m ego_adr.monitoring evaluate`` wrote before. Stage 2 moves them onto the
harness (:mod:`ego_adr.monitoring.harness`): their ``_identity``/``_one``/``_run_all`` become the harness's, the
Namespace goes. A new step-stream benchmark is one more line below (and its data).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from ego_adr.errors import UserError
from ego_adr.monitoring.benchmarks import BenchmarkSpec, Split
from ego_adr.monitoring.driver import Benchmark

_DRIVER = "ego_adr.online_mistakes.benchmarks:StepStreams"
_MONITORS = "ego_adr.online_mistakes.registry:REGISTRY"
_DOWNLOAD = "ego_adr.online_mistakes.benchmarks:download"
_PAGE = "docs/online_mistakes.md"
_TRAIN = Split("train", "fit", "the correct training sequences (DTGL's train.json; --data-root)")
_CHOOSE = Split("train (folds)", "choose", "cross-validation over the training recordings: each monitor's "
                "settings; nested, the headline monitor")
_CUT = "a test recording cut at its first mistake (the mistake its last step)"
_WHOLE = "every step of a test recording, labelled from the dataset's own annotation files"
_STEP = "one step id (of --stream: oracle, oracle-merged, miniroad or a recogniser's file)"
_CUT_METRICS = "PREGO's P/R/F1, TI-PREGO's Pb/F1b, DTGL's macro F1, AUROC/AUPRC (monitoring/step_metrics.py)"
_WHOLE_METRICS = "the cut metrics over every step, per-recording M3 in steps, per-kind metrics (complete_metrics.py)"


def _spec(name: str, description: str, whole: bool) -> BenchmarkSpec:
    return BenchmarkSpec(
        name, description, _WHOLE if whole else _CUT, _STEP if not whole else "one step id (oracle steps)",
        (_TRAIN, _CHOOSE, Split("test", "score", "the benchmark's test recordings")), _MONITORS,
        _WHOLE_METRICS if whole else _CUT_METRICS,
        "each monitor beside the published rows and the blind baselines; --monitor all: summary.json/md led by the "
        "monitor chosen without the test", _DRIVER, _PAGE, download=_DOWNLOAD)


BENCHMARKS = (
    _spec("assembly101-o", "Assembly101-O: toy assembly, PREGO's step stream", whole=False),
    _spec("epic-tent-o", "EPIC-Tent-O: tent pitching, PREGO's step stream", whole=False),
    _spec("assembly101-complete", "Assembly101, complete trials: every mistake of every test recording", whole=True),
    _spec("epic-tent-complete", "EPIC-Tent, complete trials: every mistake of every test recording", whole=True),
)


@dataclass(frozen=True)
class Settings:
    data_root: str
    stream: str = "oracle"
    partial: bool = False
    corrections: str | None = None
    decoding: str | None = None
    samples: int | None = None
    temperature: float | None = None
    max_new_tokens: int | None = None
    selection_seeds: str | None = None


class StepStreams(Benchmark):
    """The adapter (module docstring): the step streams' flags, then today's drivers."""

    Settings = Settings

    def add_arguments(self, e) -> None:
        from ego_adr.online_mistakes.data.complete import COMPLETE, CORRECTIONS
        from ego_adr.online_mistakes.data.cut import STREAMS
        from ego_adr.online_mistakes.monitors.prego import DECODINGS
        from ego_adr.online_mistakes.selection import OUTER_SEEDS

        e.add_argument("--stream", default="oracle", metavar="S",
                       help=f"{', '.join(STREAMS)} (default oracle), or a file in PREGO's predictions format "
                       '({"<video>": {"pred": [step ids]}}) holding a recogniser\'s output on the test videos')
        e.add_argument("--partial", action="store_true",
                       help="--stream FILE covers only some test videos: score those (coverage in metrics.json, the "
                       "others listed, no comparison with published full-benchmark rows)")
        e.add_argument("--data-root", required=True,
                       help="folder that `python -m ego_adr.monitoring download --out DIR` wrote (dtgl/, prego/)")
        e.add_argument("--corrections", default=None, choices=CORRECTIONS,
                       help=f"{', '.join(COMPLETE)}: a correction step is scored as correct (default) or left out "
                       "of the scores (exclude; the monitor still sees it)")
        e.add_argument("--decoding", default=None, choices=tuple(DECODINGS),
                       help="prego: alias of --monitor-option decoding=...; PREGO's decoding, numeric (default: its "
                       "numeric-symbol run, 1 greedy reply of <= 4 tokens) or sampled (its emoji runs: 25 replies "
                       "at temperature 0.6, top-p 0.9, <= 8 tokens); docs/online_mistakes.md")
        e.add_argument("--samples", type=int, default=None, help="prego: replies per step (default: the --decoding's)")
        e.add_argument("--temperature", type=float, default=None,
                       help="prego: sampling temperature, 0 greedy (default: the --decoding's)")
        e.add_argument("--max-new-tokens", type=int, default=None,
                       help="prego: tokens per reply (default: the --decoding's, PREGO's 4 numeric / 8 sampled)")
        e.add_argument("--selection-seeds", default=None, metavar="S1,S2,...",
                       help="--monitor all: the outer-fold seeds of the nested selection (default "
                       f"{','.join(map(str, OUTER_SEEDS))}, fixed in advance); distinct whole numbers, recorded in "
                       "summary.json and the folder's identity")

    def evaluate(self, s) -> int:
        from ego_adr.online_mistakes.data.complete import COMPLETE

        if s.out is None:
            raise UserError(f"--benchmark {s.benchmark} needs --out DIR (its output folder)")
        a = namespace(s)
        if s.benchmark in COMPLETE:  # every step of whole recordings (issue 35)
            from ego_adr.online_mistakes.complete_eval import evaluate_complete

            return evaluate_complete(a)
        if a.corrections is not None:
            raise UserError(f"--corrections applies to {', '.join(COMPLETE)} (every step of whole recordings); "
                            f"{s.benchmark} scores each recording up to its first mistake, where there is no "
                            "correction")
        from ego_adr.online_mistakes.evaluate import evaluate

        return evaluate(a)


def namespace(s) -> argparse.Namespace:
    """The Namespace today's drivers read (the flags of the former ``monitoring evaluate`` parser, by name);
    stage 2 of issue 43 retires it."""
    own: Settings = s.own
    return argparse.Namespace(
        cmd="evaluate", benchmark=s.benchmark, stream=own.stream, monitor=s.monitor,
        monitor_option=list(s.monitor_options), partial=own.partial, data_root=own.data_root, out=str(s.out),
        corrections=own.corrections, model=s.model.model, backend=s.model.backend, base_url=s.model.base_url,
        device=s.model.device, decoding=own.decoding, samples=own.samples, temperature=own.temperature,
        max_new_tokens=own.max_new_tokens, selection_seeds=own.selection_seeds, cache_dir=s.cache_dir, jobs=s.jobs, quiet=s.quiet)


def download(out: str, base_url: str | None, timeout: float, quiet: bool) -> int:
    """``monitoring download``: the step streams' files (:func:`ego_adr.online_mistakes.data.download.download_cli`)."""
    from ego_adr.online_mistakes.data.download import download_cli

    return download_cli(argparse.Namespace(out=out, base_url=base_url, timeout=timeout, quiet=quiet))
