"""The one-pass baselines' requests (``direct`` / ``cot``, and Table 6's no-match no-narration row).

Kept apart from the pipeline's stage logic because it is where the protocol acts most: under
``question=public`` the request is the public green agent's question (its guidance text read at run time,
reasoning/public_text.py) beside the frames, with the step as the public green agent prints it. Given the
settings and the samples with their frames, never the pipeline (which imports this module).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ego_adr.models.base import Message, Request
from ego_adr.reasoning import prompts as P
from ego_adr.reasoning.answers import Answer, final_line_answer, mapped_answer, raw_answer
from ego_adr.reasoning.config import PipelineConfig
from ego_adr.reasoning.modes import MODES

if TYPE_CHECKING:
    from ego_adr.data.sample import Sample
    from ego_adr.models.base import Frames, GenerationConfig


def public_step(sample: Sample, step: str) -> object:
    """The step as the public green agent prints it: the stored value under step=raw (a null prints as
    ``None``), else our clean step text."""
    if step == "raw" and sample.wire:
        return sample.wire.get("action_annotation", "")
    return sample.action


def one_pass_requests(cfg: PipelineConfig, clips: list[tuple[Sample, Frames]], stage: str,
                      gen: GenerationConfig) -> list[Request]:
    """The one call of ``stage`` (direct | cot) for each (sample, frames), with the stage's budget ``gen``."""
    if cfg.question == "public":
        from ego_adr.reasoning.public_text import public_cot_question, public_question

        # direct: the public white agent's question; CoT: the same blocks with its own instruction (Table 5)
        prompt, build = (P.PUBLIC_COT, public_cot_question) if stage == "cot" else (P.PUBLIC_MC, public_question)
        meta = {**prompt.meta(stage), "guidance_sha": cfg.guidance_sha}
        return [Request([Message.user(frames, build(cfg.guidance, sample.procedure, public_step(sample, cfg.step)))],
                        gen, meta) for sample, frames in clips]
    prompt = getattr(P, MODES[stage].prompt)  # the one-pass mode's own prompt (ego_adr.reasoning.modes)
    return [Request([Message.user(frames, prompt.render(procedure=sample.procedure, step=sample.action or "None",
                                                        definitions=P.DEFINITIONS, options=P.OPTION_LIST))],
                    gen, prompt.meta(stage)) for sample, frames in clips]


def one_pass_answer(stage: str, text: str, answers: str) -> Answer:
    """direct: the raw reply (or our lenient reading under answers=lenient); CoT: the method's reading of its
    final answer line, whatever the protocol (its reasoning is never the answer)."""
    if stage == "cot":
        ans = final_line_answer(text)
        return mapped_answer(text) if ans.extraction == "no-final-line" and answers == "lenient" else ans
    return raw_answer(text) if answers == "raw" else mapped_answer(text)
