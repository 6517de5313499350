"""The monitors of the step-stream benchmarks (Assembly101-O and EPIC-Tent-O share them): one spec per monitor,
from which ``--monitor``'s choices, its ``--help`` and the privileged block of every summary derive.

The task input of both benchmarks is :data:`~ego_adr.online_mistakes.types.STEP_INPUT` (the step taxonomy, the
correct training sequences, the observed prefix, the recording's task); a monitor that reads more is privileged
and reported apart. Every monitor here is deterministic: the same output on every run and any ``PYTHONHASHSEED``.

:data:`BLIND` are the monitors that never look at which step was done, :data:`REFERENCE` the rules that read only
the training vocabulary (issue 42): every table prints both, each goal row compares the chosen monitor with the best
of them, and neither is ever the monitor chosen as the headline (:mod:`.selection`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ego_adr.monitoring.registry import MonitorSpec, Registry
from ego_adr.online_mistakes.types import PREFIX, STEP_INPUT, TASK, TAXONOMY, TRAINING

_M = "ego_adr.online_mistakes.monitors"
#: The blind baselines (:mod:`ego_adr.online_mistakes.monitors.baselines`).
BLIND = ("flag-all", "never-alarm", "position")
#: The reference rules (:mod:`ego_adr.online_mistakes.monitors.reference`): the training vocabulary alone, no
#: threshold; printed beside the blind rows, compared with in every goal row, never chosen.
REFERENCE = ("unseen-step", "unseen-transition")


@dataclass(frozen=True)
class StepMonitorSpec(MonitorSpec):
    """A step-stream monitor's spec, with the other names it answers to (``aliases``: one rule, one row)."""

    aliases: tuple[str, ...] = ()


REGISTRY = Registry("assembly101-o / epic-tent-o", STEP_INPUT, (
    MonitorSpec("flag-all", f"{_M}.baselines:FlagAll", "blind baseline: alarms at every step (what F1b gives "
                "away: 0.667)", ()),
    MonitorSpec("never-alarm", f"{_M}.baselines:NeverAlarm", "blind baseline: never alarms (what macro F1 gives "
                "away where mistakes are rare)", ()),
    MonitorSpec("position", f"{_M}.baselines:Position", "blind baseline: alarms from the k-th step of the recording "
                "on, whatever the step (k by cross-validation on the training sequences)", (TRAINING,), trains=True),
    MonitorSpec("unseen-step", f"{_M}.reference:UnseenStep",
                "reference rule: a step no training recording contains is a mistake (no threshold)",
                (TRAINING,), trains=True),
    StepMonitorSpec("unseen-transition", f"{_M}.reference:UnseenTransition",
                    "reference rule: a transition (previous step, this step) no training recording contains is a "
                    "mistake (no threshold; alias one-step-memory, our reading of TI-PREGO's row)",
                    (TRAINING, PREFIX), trains=True, aliases=("one-step-memory",)),
    MonitorSpec("count-based", f"{_M}.count_based:CountBased",
                "DTGL's Count-Based transition graph and precondition check, without its hash-seed dependence",
                (TRAINING, PREFIX), trains=True),
    MonitorSpec("dtgl-do", f"{_M}.dtgl_do:DtglDo",
                "DTGL's Direct Optimisation task graph (TGML loss, its published configs) and precondition check",
                (TAXONOMY, TRAINING, PREFIX), trains=True),
    MonitorSpec("prego", f"{_M}.prego:Prego",
                "PREGO: an LLM anticipates the next step in context; a step outside the anticipated set is a "
                "mistake (--model NAME)", (TAXONOMY, TRAINING, PREFIX, TASK), trains=True, needs_model=True),
    MonitorSpec("prego-lm", f"{_M}.prego_lm:PregoLM", "next-step likelihood of every step as a raw-text continuation of PREGO's prompt by a causal LM; 1 - P(observed), threshold by cross-validation (--model NAME, --backend llamacpp or hf)", (TAXONOMY, TRAINING, PREFIX, TASK), trains=True, needs_model=True),
    MonitorSpec("egoadr-graph", f"{_M}.graph:GraphMonitor",
                "Ego-ADR's progress logic (unknown, repeated, out-of-order, skipped step) over a task graph learned "
                "from the correct sequences", (TAXONOMY, TRAINING, PREFIX), trains=True, fits_with="stacked"),
    MonitorSpec("seq2seq-oneclass", f"{_M}.neural_oneclass:OneClassMonitor",
                "HelpMeOut's Seq2Seq (GRU) trained one-class: a step unlikely after its prefix is a mistake",
                (TAXONOMY, TRAINING, PREFIX), (("arch", "gru"),), trains=True, fits_with="stacked"),
    MonitorSpec("sgt-oneclass", f"{_M}.neural_oneclass:OneClassMonitor",
                "HelpMeOut's SGT (causal transformer) trained one-class: next-step likelihood",
                (TAXONOMY, TRAINING, PREFIX), (("arch", "transformer"),), trains=True),
    MonitorSpec("ngram-oneclass", f"{_M}.ngram:NGramMonitor",
                "Witten-Bell n-gram next-step likelihood (order by held-out likelihood)",
                (TAXONOMY, TRAINING, PREFIX), trains=True, fits_with="stacked"),
    MonitorSpec("ngram-task", f"{_M}.ngram:NGramMonitor",
                "the n-gram monitor with one model per recording's task (the toy)",
                (TAXONOMY, TRAINING, PREFIX, TASK), (("task", True),), trains=True, fits_with="stacked"),
    MonitorSpec("ngram-text", f"{_M}.ngram_text:NGramTextMonitor",
                "the n-gram monitor plus the step names' MiniLM similarity to the expected next steps (DTGL's "
                "TGT-text idea, MiniLM in place of EgoVLPv2; used only where cross-validation prefers it)",
                (TAXONOMY, TRAINING, PREFIX), trains=True, fits_with="stacked"),
    MonitorSpec("stacked", f"{_M}.stacked:StackedMonitor",
                "logistic regression over the graph checks and the one-class scores, features chosen by "
                "cross-fitting on the training sequences", (TAXONOMY, TRAINING, PREFIX), trains=True, fits_with="stacked"),
))


def unavailable(name: str) -> str | None:
    """Why monitor ``name`` cannot run on this machine (a package its factory's ``check_available`` needs is not
    installed), or None. ``--monitor all`` lists such a monitor as not run, with the reason; naming it alone
    stops with that reason (exit 2)."""
    from ego_adr.errors import UserError

    check = getattr(REGISTRY.factory(name), "check_available", None)
    if check is None:
        return None
    try:
        check()
    except UserError as e:
        return str(e)
    return None


def not_runnable(monitor: str, names: list[str], has_model: bool) -> dict[str, str]:
    """The monitors of ``names`` that will not run, each with why: one that needs a model when no ``--model`` is
    given, one whose package is missing (:func:`unavailable`). ``--monitor all`` lists them as not run; a
    monitor named alone (``monitor`` is not ``all``) whose package is missing stops with the reason (exit 2)."""
    from ego_adr.errors import UserError

    why = {n: "needs --model" for n in names if REGISTRY.get(n).needs_model and not has_model}
    missing = {n: r for n in names if n not in why and (r := unavailable(n))}
    if missing and monitor != "all":
        raise UserError(f"--monitor {monitor} {next(iter(missing.values()))}")
    return why | missing
