"""The online monitor (:class:`ego_adr.reasoning.online.OnlineMonitor`) behind HelpMeOut's monitor protocol.

HelpMeOut streams symbolic actions instead of video (``reset`` with the task and the initial scene, ``step`` with
each action in PDDL notation, ``(task-end)`` last). The adapter gives the monitor the task's procedure as the
subgoal-block descriptions of the episode's task variant (``template_blocks``: the subtasks this person was
asked for, so a block outside the variant is not expected at the end), in order (the rule-based bank of that text has one step per block
for most templates) and each action in words as the window's
narration (:meth:`OnlineMonitor.observe_text`); ``(task-end)`` runs the end-of-recording check. The monitor's
EgoErrorVQA error types are mapped onto HelpMeOut's categories (:data:`CATEGORY_MAP`; types without a HelpMeOut
counterpart give no category). Unlike the rule-based ``egoadr`` HelpMeOut monitor it knows nothing of the
PDDL semantics: it is the video monitor, fed text.

Registered as ``egoadr-online`` in :mod:`ego_adr.helpmeout.monitors.registry` (it reads the task input and the
template's procedure in words: not privileged). It lives here, beside the other monitors, because all it wraps is
the reasoning layer's :class:`~ego_adr.reasoning.online.OnlineMonitor`, which the video command
(``python -m ego_adr.stream``) wraps too: ``helpmeout/`` needs nothing from ``stream/``.
"""

from __future__ import annotations

from ego_adr.helpmeout.monitors.base import EpisodeContext, Monitor, StepOutput
from ego_adr.helpmeout.world.domain import TASK_END

CATEGORY_MAP = {"Wrong object": "object_substitution", "Wrong action": "action_substitution",
                "Wrong order": "sequence", "Omission": "omission",
                "Unintended and unnecessary action": "action_addition"}


class EgoADROnlineMonitor(Monitor):
    name = "egoadr-online"

    def __init__(self, model=None, mode: str = "shallow", threshold: float = 0.5, templates_dir: str | None = None,
                 cache_dir=None) -> None:
        from ego_adr.reasoning.online import OnlineMonitor
        from ego_adr.reasoning.pipeline import EgoADR, PipelineConfig

        if mode == "deep" and model is None:
            raise ValueError("deep mode needs a model (any ego_adr.models.base.VLM)")
        self.monitor = OnlineMonitor(EgoADR(model, PipelineConfig(mode=mode), cache_dir=cache_dir), threshold)
        self.templates_dir = templates_dir

    def reset(self, ctx: EpisodeContext) -> None:
        from ego_adr.helpmeout.monitors.knowledge import task_variant

        t = task_variant(ctx, self.templates_dir)  # the episode's variant: only the blocks it asked for
        procedure = " ".join(b.text.rstrip(". ") + "." for b in t.blocks)
        self.monitor.reset(ctx.task, procedure, ctx.episode_id)

    def step(self, t: int, action: str) -> StepOutput:
        from ego_adr.helpmeout.monitors.egoadr_base import words

        if action == TASK_END:
            tick = self.monitor.finish(float(t))
        else:
            tick = self.monitor.update(float(t), (float(t), float(t)), self.monitor.observe_text(words(action)))
        cat = CATEGORY_MAP.get(tick.error_type or "")
        ev = {"alerts": [a.to_dict() for a in tick.alerts]} if tick.alerts else {}
        return StepOutput(float(tick.prob), t if tick.alerts else None, cat, ev)
