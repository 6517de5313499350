"""HelpMeOut on the monitoring layer's benchmark registry (:mod:`ego_adr.monitoring.benchmarks` finds this module):
what it is, its splits, and the driver that runs it on the shared harness
(:class:`ego_adr.helpmeout.evaluation.benchmark.HelpMeOut`)."""

from __future__ import annotations

from ego_adr.monitoring.benchmarks import BenchmarkSpec, Split

BENCHMARKS = (
    BenchmarkSpec(
        "helpmeout", "HelpMeOut: symbolic household episodes, errors injected by goal control",
        episodes="a generated episode (a task variant grounded in a scene, its action sequence, the injected errors)",
        observation="one action in PDDL notation",
        splits=(Split("train", "fit", "train.jsonl beside --episodes, or --train"),
                Split("val", "choose", "val.jsonl beside --episodes, or --val: the M3 threshold (Youden's J) and "
                      "the learned monitors' checkpoint"),
                Split("test", "score", "--episodes (test.jsonl; llm and --subset: its 60-episode subset)")),
        monitors="ego_adr.helpmeout.monitors.registry:REGISTRY",
        metrics="M1-M4 with stratified bootstrap intervals, from steps.jsonl (monitoring/episode_metrics.py)",
        report="Table 2's row per monitor; --monitor all adds the paper's Tables 2, 11-15, 17-18 and Figure 3",
        driver="ego_adr.helpmeout.evaluation.benchmark:HelpMeOut", page="docs/helpmeout.md"),
)
