"""The one-pass baselines' requests (``direct`` / ``cot``, and Table 6's no-match no-narration row).

Kept apart from the pipeline's stage logic because it is where the protocol acts most: under
``question=public`` the request is the public green agent's question (its guidance text read at run time,
reasoning/public_text.py) beside the frames, with the step as the public green agent prints it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ego_adr.models.base import Message, Request
from ego_adr.reasoning import prompts as P
from ego_adr.reasoning.modes import MODES

if TYPE_CHECKING:
    from ego_adr.data.sample import Sample
    from ego_adr.reasoning.pipeline import EgoADR, Item


def public_step(sample: Sample, step: str) -> object:
    """The step as the public green agent prints it: the stored value under step=raw (a null prints as
    ``None``), else our clean step text."""
    if step == "raw" and sample.wire:
        return sample.wire.get("action_annotation", "")
    return sample.action


def one_pass_requests(pipe: EgoADR, items: list[Item], stage: str) -> list[Request]:
    cfg = pipe.config
    if cfg.question == "public":
        from ego_adr.reasoning.public_text import public_question

        meta = {**P.PUBLIC_MC.meta(stage), "guidance_sha": cfg.guidance_sha}
        return [Request([Message.user(it.frames, public_question(cfg.guidance, it.sample.procedure,
                                                                 public_step(it.sample, cfg.step)))],
                        pipe._gen(stage), meta) for it in items]
    prompt = getattr(P, MODES[stage].prompt)  # the one-pass mode's own prompt (ego_adr.reasoning.modes)
    return [pipe._video_request(it.frames, prompt, stage, procedure=it.sample.procedure,
                                step=it.sample.action or "None", definitions=P.DEFINITIONS,
                                options=P.OPTION_LIST) for it in items]
