"""What a HelpMeOut monitor is given, and the harness that feeds it an episode one step at a time.

How a monitor is fed is the monitoring layer's (:mod:`ego_adr.monitoring.monitor`: ``reset``, then one observation
at a time, probabilities checked); what is HelpMeOut's is the context and what counts as its task input. A
monitor sees the task name and the initial scene at :meth:`Monitor.reset`, then each observed action in PDDL
notation (the last one is ``(task-end)``) through :meth:`Monitor.step` -- never a later step (Figure 1c). Per
step it returns an error probability and, when it alarms, the onset step it blames and an error type. The
harness records nothing but those outputs, so metrics are pure functions of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ego_adr.helpmeout.world.domain import TASK_END
from ego_adr.monitoring.monitor import Monitor as LayerMonitor
from ego_adr.monitoring.monitor import StepOutput

__all__ = ["EpisodeContext", "Monitor", "StepOutput", "context_of", "run_monitor"]

# What a monitor may read. The task input of Figure 1c is the first three; every monitor also gets the task
# variant (which of the template's blocks were asked for, see ego_adr.helpmeout.world.lifting), since that is the
# procedure the person was given. Anything beyond TASK_INPUT + "template" makes a monitor *privileged*.
TASK_INPUT = ("task name", "initial scene", "action prefix")
PROCEDURE = "procedure text (variant)"  # the words of the variant's blocks, nothing else of the template
PUBLIC_READS = frozenset(TASK_INPUT + (PROCEDURE, "template", "training episodes"))
# Template knowledge beyond its words: the block-order norms, the look-alike tables and the simulator (operator
# preconditions and effects). A monitor that reads any of them is listed with the privileged references.
TEMPLATE_NORMS, CONFUSABLES, SIMULATOR = "template order norms", "confusables", "simulator"
GROUNDED_GOAL = "grounded goal"


@dataclass(frozen=True)
class EpisodeContext:
    """What the system is given (Figure 1c): task name and initial scene -- not the goal, not the labels.

    ``template_blocks`` is the task variant (public). ``grounding`` (default object -> episode object, and what
    started outside its cupboard) is the grounded goal: it is filled only for monitors that declare reading it.
    """

    episode_id: str
    task: str
    initial_scene: tuple[str, ...]
    template_blocks: tuple[str, ...] | None = None
    grounding: dict | None = None


class Monitor(LayerMonitor):
    """A HelpMeOut monitor: the layer's :class:`~ego_adr.monitoring.monitor.Monitor`, reset with an
    :class:`EpisodeContext` and stepped with the next action in PDDL notation."""

    reads: tuple[str, ...] = TASK_INPUT  # set from the registry spec by build_monitor

    def fit(self, train: list[dict]) -> None:  # noqa: B027 - optional hook
        """Learn from training episodes (only the learned and change-point monitors need it)."""

    def reset(self, ctx: EpisodeContext) -> None:
        raise NotImplementedError

    def step(self, t: int, action: str) -> StepOutput:
        raise NotImplementedError


def context_of(ep: dict, reads: tuple[str, ...] = TASK_INPUT) -> EpisodeContext:
    blocks = tuple(ep["template_blocks"]) if ep.get("template_blocks") else None
    grounding = ep.get("grounding") if GROUNDED_GOAL in reads else None
    return EpisodeContext(ep["id"], ep["task"], tuple(ep["initial_scene"]), blocks, grounding)


def run_monitor(monitor: Monitor, episodes: list[dict], progress: bool = True) -> list[dict]:
    """Stream every episode through ``monitor`` (the harness's episode loop: one action at a time, probabilities
    checked); one output row per episode."""
    from ego_adr.monitoring.harness import episode_outputs

    rows = []
    for ep, outs in episode_outputs(monitor, episodes, id_of=lambda e: e["id"],
                                    context_of=lambda e: context_of(e, monitor.reads),
                                    observations_of=lambda e: e["observed"], progress=progress):
        if ep["observed"][-1] != TASK_END:
            raise ValueError(f"episode {ep['id']} does not end with {TASK_END}")
        rows.append({"id": ep["id"], "probs": [o.prob for o in outs], "categories": [o.category for o in outs],
                     "onsets": [o.onset for o in outs], "timed_out": bool(monitor.timed_out),
                     "evidence": [{"t": t, **o.evidence} for t, o in enumerate(outs) if o.evidence]})
    return rows
