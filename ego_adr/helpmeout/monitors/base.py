"""What a streaming monitor is, and the harness that feeds it an episode one step at a time.

A monitor sees the task name and the initial scene at :meth:`Monitor.reset`, then each observed action in PDDL
notation (the last one is ``(task-end)``) through :meth:`Monitor.step` -- never a later step (Figure 1c). Per
step it returns an error probability and, when it alarms, the onset step it blames and an error type. The
harness records nothing but those outputs, so metrics are pure functions of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ego_adr.helpmeout.domain import TASK_END

# What a monitor may read. The task input of Figure 1c is the first three; every monitor also gets the task
# variant (which of the template's blocks were asked for, see ego_adr.helpmeout.lifting), since that is the
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


@dataclass
class StepOutput:
    prob: float
    onset: int | None = None
    category: str | None = None
    evidence: dict = field(default_factory=dict)


class Monitor:
    name = "monitor"
    timed_out = False
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
    """Stream every episode through ``monitor``; one output row per episode."""
    from tqdm import tqdm

    rows = []
    for ep in tqdm(episodes, disable=not progress, desc=f"monitor {monitor.name}"):
        monitor.timed_out = False
        monitor.reset(context_of(ep, monitor.reads))
        probs, cats, onsets, evidence = [], [], [], []
        for t, action in enumerate(ep["observed"]):
            out = monitor.step(t, action)
            p = float(out.prob)
            if not 0.0 <= p <= 1.0 or p != p:
                raise ValueError(f"monitor {monitor.name} returned probability {p} at {ep['id']} step {t}")
            probs.append(p)
            cats.append(out.category)
            onsets.append(out.onset)
            if out.evidence:
                evidence.append({"t": t, **out.evidence})
        if ep["observed"][-1] != TASK_END:
            raise ValueError(f"episode {ep['id']} does not end with {TASK_END}")
        rows.append({"id": ep["id"], "probs": probs, "categories": cats, "onsets": onsets,
                     "timed_out": bool(monitor.timed_out), "evidence": evidence})
    return rows
