"""The step-stream benchmarks on the monitoring layer's benchmark registry (:mod:`ego_adr.monitoring.benchmarks`
finds this module): Assembly101-O and EPIC-Tent-O (each recording cut at its first mistake) and their complete
trials (every step of every test recording).

Each runs on the one harness (:mod:`ego_adr.monitoring.harness`, stage 2 of issue 43):
:class:`~ego_adr.online_mistakes.driver.StepStreams` holds what the four share (their flags, the checks that need no data, PREGO's alias flags, which monitors cannot run,
the groups of monitors that share fits, the nested selection's folds as worker tasks beside the monitors);
:class:`~ego_adr.online_mistakes.evaluate.CutStreams` and :class:`~ego_adr.online_mistakes.complete_eval.CompleteStreams`
add their splits, identities, how one monitor is scored and the summary. A new step-stream benchmark is one more
line below (and its data).
"""

from __future__ import annotations

from ego_adr.monitoring.benchmarks import BenchmarkSpec, Split

_CUT_DRIVER = "ego_adr.online_mistakes.evaluate:CutStreams"
_COMPLETE_DRIVER = "ego_adr.online_mistakes.complete_eval:CompleteStreams"
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
        "monitor chosen without the test", _COMPLETE_DRIVER if whole else _CUT_DRIVER, _PAGE, download=_DOWNLOAD)


BENCHMARKS = (
    _spec("assembly101-o", "Assembly101-O: toy assembly, PREGO's step stream", whole=False),
    _spec("epic-tent-o", "EPIC-Tent-O: tent pitching, PREGO's step stream", whole=False),
    _spec("assembly101-complete", "Assembly101, complete trials: every mistake of every test recording", whole=True),
    _spec("epic-tent-complete", "EPIC-Tent, complete trials: every mistake of every test recording", whole=True),
)


def download(out: str, base_url: str | None, timeout: float, quiet: bool) -> int:
    """``monitoring download``: the step streams' files (:func:`ego_adr.online_mistakes.data.download.download_cli`)."""
    from ego_adr.online_mistakes.data.download import download_cli

    return download_cli(out, base_url, timeout, quiet)
