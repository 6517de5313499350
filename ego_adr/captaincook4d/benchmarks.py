"""The CaptainCook4D benchmarks on the monitoring layer's benchmark registry (:mod:`ego_adr.monitoring.benchmarks`
finds this module): ``captaincook4d-complete`` (every step of every test recording) and ``captaincook4d-o`` (each
test recording cut at its first mistake), oracle steps of the authors' recording split; the driver is
:class:`ego_adr.captaincook4d.driver.CaptainCook4D`, the monitors :data:`ego_adr.captaincook4d.registry.REGISTRY`.
``monitoring download`` fetches their files with the step streams' (one download function, listed once)."""

from __future__ import annotations

from ego_adr.monitoring.benchmarks import BenchmarkSpec, Split

_SPLIT = "recordings_data_split_combined.json"
_SPLITS = (Split("train", "fit", f"{_SPLIT}'s train recordings (213): the correct ones' step sequences, every one's "
                 "labels (the supervised monitor)"),
           Split("val", "choose", f"{_SPLIT}'s val recordings (62): thresholds, a procedure monitor's checks and the "
                 "headline monitor (a tie when bootstrap resamples of them disagree)"),
           Split("test", "score", f"{_SPLIT}'s test recordings (109)"))
_METRICS = ("macro F1 and F1b at points chosen on validation, P/R, AUROC, 95% bootstrap intervals over recordings, "
            "the first mistake's detection, alarms per CaptainCook4D tag (online_mistakes/complete_metrics.py)")
_REPORT = ("--monitor all: summary.json/md led by the monitor chosen on validation (or a tie), the goal rows, the "
           "blind and reference rules with their alarm agreement, official vs learned vs no graph")


def _spec(name: str, description: str, episodes: str) -> BenchmarkSpec:
    return BenchmarkSpec(name, description, episodes, "one step id (oracle steps in time order), then the "
                         "recording's end", _SPLITS, "ego_adr.captaincook4d.registry:REGISTRY", _METRICS, _REPORT,
                         "ego_adr.captaincook4d.driver:CaptainCook4D", "docs/online_mistakes.md",
                         download="ego_adr.online_mistakes.benchmarks:download")


BENCHMARKS = (
    _spec("captaincook4d-complete", "CaptainCook4D: every step of 109 cooking recordings, 24 recipes with their "
          "task graphs", "a whole test recording: its steps done, in time order, then its end (where an omission "
          "not shown before becomes certain)"),
    _spec("captaincook4d-o", "CaptainCook4D-O: each test recording cut at its first mistake",
          "a test recording up to its first positive (recordings without one are left out)"),
)
