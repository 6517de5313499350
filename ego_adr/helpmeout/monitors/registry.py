"""HelpMeOut's monitor registry: one spec per monitor, from which ``evaluate --monitor`` choices, ``--help`` and
the summary's privileged block derive (add a monitor = one module + one entry here). It is a
:class:`ego_adr.monitoring.registry.Registry` whose public reads are HelpMeOut's (``PUBLIC_READS``).

``reads`` says what a monitor is given. The task input of Figure 1c is the task name, the initial scene and the
action prefix; every monitor may also read the lifted template of the task variant and train on training
episodes. A monitor that reads more (the episode's grounded goal, the generator's planner) is ``privileged``: a
symbolic reference, shown in its own block of the summary table with what it reads, never beside the peers.
"""

from __future__ import annotations

from ego_adr.helpmeout.monitors.base import (
    CONFUSABLES,
    GROUNDED_GOAL,
    PROCEDURE,
    PUBLIC_READS,
    SIMULATOR,
    TASK_INPUT,
    TEMPLATE_NORMS,
    Monitor,
)
from ego_adr.monitoring.registry import MonitorSpec, Registry

TEMPLATE = TASK_INPUT + ("template",)
WORDS = TASK_INPUT + (PROCEDURE,)
KNOWLEDGE = (TEMPLATE_NORMS, CONFUSABLES, SIMULATOR)


_M = "ego_adr.helpmeout.monitors."
_SPECS = (
    MonitorSpec("random", _M + "baselines:RandomMonitor", "uniform probability and type per step (mean of seeds)",
                TASK_INPUT, seeds=True),
    MonitorSpec("cusum", _M + "baselines:CusumMonitor", "CUSUM change point on action-bigram surprisal",
                TASK_INPUT + ("training episodes",), trains=True),
    MonitorSpec("precondition", _M + "baselines:PreconditionMonitor",
                "alarms when an action's preconditions fail on replay", TASK_INPUT),
    MonitorSpec("seq2seq", _M + "learned:LearnedMonitor", "GRU over the action prefix with the task name",
                TASK_INPUT + ("training episodes",), (("arch", "seq2seq"),), trains=True),
    MonitorSpec("seq2seq-sg", _M + "learned:LearnedMonitor",
                "Seq2Seq plus subgoal context (the task variant's subgoals)",
                TEMPLATE + ("training episodes",), (("arch", "seq2seq-sg"),), trains=True),
    MonitorSpec("sgt", _M + "learned:LearnedMonitor",
                "causal transformer over the prefix with subgoal tokens (closest reading of SGT)",
                TEMPLATE + ("training episodes",), (("arch", "sgt"),), trains=True),
    MonitorSpec("seq2seq-oneclass", _M + "learned_oneclass:OneClassMonitor",
                "Seq2Seq's input trained one-class: next-action likelihood on correct episodes (no type)",
                TASK_INPUT + ("training episodes",), (("arch", "seq2seq"),), trains=True),
    MonitorSpec("seq2seq-sg-oneclass", _M + "learned_oneclass:OneClassMonitor",
                "Seq2Seq+SG's input (task + subgoal tokens) trained one-class (no type)",
                TEMPLATE + ("training episodes",), (("arch", "seq2seq-sg"),), trains=True),
    MonitorSpec("sgt-oneclass", _M + "learned_oneclass:OneClassMonitor",
                "SGT's causal transformer trained one-class (no type)",
                TEMPLATE + ("training episodes",), (("arch", "sgt"),), trains=True),
    MonitorSpec("replanner", _M + "baselines:ReplannerMonitor",
                "re-plans the lifted template's goal after each step (roles bound by first touch)",
                TEMPLATE, (("goal", "template"),)),
    MonitorSpec("egoadr", _M + "egoadr:EgoADRMonitor",
                "Ego-ADR streaming: key-step match over the variant's procedure text, rules over its words",
                WORDS, (("mode", "shallow"),)),
    MonitorSpec("egoadr-deep", _M + "egoadr:EgoADRMonitor",
                "Ego-ADR streaming, alarms typed by a model call (--model)",
                WORDS, (("mode", "deep"),), needs_model=True),
    MonitorSpec("egoadr-online", _M + "egoadr_online:EgoADROnlineMonitor",
                "the video streaming monitor (python -m ego_adr.stream) fed each action in words as its narration",
                WORDS, (("mode", "shallow"),)),
    MonitorSpec("llm", _M + "llm:LLMPromptMonitor",
                "LLM prompting: task name, initial scene, PDDL prefix -> probability, onset, type (--model)",
                TASK_INPUT, needs_model=True),
    MonitorSpec("replanner-privileged", _M + "baselines:ReplannerMonitor",
                "re-planner given the episode's grounded goal", TEMPLATE + (GROUNDED_GOAL,), (("goal", "grounded"),)),
    MonitorSpec("egoadr-knowledge", _M + "egoadr_knowledge:EgoADRKnowledgeMonitor",
                "Ego-ADR streaming with the template's order norms, the look-alike tables and the simulator",
                WORDS + KNOWLEDGE, (("mode", "shallow"),)),
    MonitorSpec("egoadr-privileged", _M + "egoadr_privileged:EgoADRPrivilegedMonitor",
                "Ego-ADR with the grounded goal and the generator's planner (the earlier variant)",
                TEMPLATE + (GROUNDED_GOAL, "generator planner"), (("mode", "shallow"),)),
)
REGISTRY = Registry("helpmeout", PUBLIC_READS, _SPECS)
MONITORS: dict[str, MonitorSpec] = REGISTRY.specs  # name -> spec, in Table 2's block order


def monitor_help() -> str:
    """One line per monitor for ``evaluate --help``."""
    return REGISTRY.help()


def build_monitor(name: str, **kw) -> Monitor:
    """``kw`` goes to the constructor where it takes it (seed, budget_s, cache_dir, model, templates_dir, ...)."""
    return REGISTRY.build(name, **kw)  # type: ignore[return-value]


def privileged(spec: MonitorSpec) -> bool:
    """Whether ``spec`` reads more than HelpMeOut's task input + template (reported apart)."""
    return REGISTRY.privileged(spec)


def extra_reads(spec: MonitorSpec) -> tuple[str, ...]:
    return REGISTRY.extra_reads(spec)
