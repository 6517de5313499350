"""The LLM-prompting monitor (Tables 16-18): any model of the project's one protocol, asked at every step.

Input is the paper's (Figure 1c): the task name, the initial scene and the action prefix in PDDL; output an error
probability, an onset step and an error type (``HELPMEOUT_MONITOR_PROMPT`` in :mod:`ego_adr.reasoning.prompts`).
One text-only call per observed step on the prefix up to it ("per prefix": a streaming monitor may not see later
steps), greedy, at most 512 new tokens (Table 16). Every call goes through the stage cache
(:class:`ego_adr.models.cache.CachedModel`), so a re-run or re-score asks nobody again.

A reply is parsed strictly: ``error_probability: X`` with 0 <= X <= 1 (a percentage ``X%`` is read as X/100),
``onset_step: N|none``, ``error_type: <category>|none``; the first line of each kind counts (real small models
repeat lines). An onset that is no whole number (SmolLM2 writes ``onset_step: 0.01``) is read as no onset. An
unparseable reply or a failed call is recorded in the step's evidence and counted; the step keeps the last
parsed probability (0 before the first), so a silent model is never read as confident either way. ``unparseable`` and ``failed`` counts land in the monitor's outputs.
"""

from __future__ import annotations

import re

from ego_adr.helpmeout.generator.goal_control import CATEGORIES
from ego_adr.helpmeout.monitors.base import EpisodeContext, Monitor, StepOutput

MAX_NEW_TOKENS = 512  # Table 16
_PROB = re.compile(r"error_probability\s*[:=]\s*(-?\d+(?:\.\d+)?)\s*(%?)", re.I)
# a step number is a whole number: SmolLM2 answers "onset_step: 0.01" (a probability in the wrong line), which is no
# step, not step 0
_ONSET = re.compile(r"onset_step\s*[:=]\s*(\d+(?![.\d])|none)", re.I)
_TYPE = re.compile(r"error_type\s*[:=]\s*([a-z_ ]+)", re.I)


def parse_reply(text: str | None) -> dict | None:
    """``{"prob", "onset", "category"}`` from a reply in the requested form, else None."""
    if not text:
        return None
    m = _PROB.search(text)
    if not m:
        return None
    p = float(m.group(1)) / (100.0 if m.group(2) else 1.0)
    if not 0.0 <= p <= 1.0:
        return None
    o = _ONSET.search(text)
    onset = int(o.group(1)) if o and o.group(1).isdigit() else None
    t = _TYPE.search(text)
    cat = None
    if t:
        word = t.group(1).strip().lower().replace(" ", "_")
        cat = next((c for c in CATEGORIES if word.startswith(c)), None)
    return {"prob": p, "onset": onset, "category": cat}


class LLMPromptMonitor(Monitor):
    name = "llm"

    def __init__(self, model=None, cache_path: str | None = None, backend: str = "hf",
                 max_new_tokens: int = MAX_NEW_TOKENS) -> None:
        if model is None:
            raise ValueError("the LLM monitor needs a model (--model NAME)")
        from ego_adr.models.cache import CachedModel, StageCache

        self.model = CachedModel(model, StageCache(cache_path) if cache_path else None,
                                 getattr(model, "backend", None) or backend)
        self.max_new_tokens = max_new_tokens
        self.unparseable = self.failed = self.calls = 0

    def reset(self, ctx: EpisodeContext) -> None:
        self.ctx = ctx
        self.prefix: list[str] = []
        self.last = 0.0

    def request(self):
        from ego_adr.models.base import GenerationConfig, Message, Request
        from ego_adr.reasoning.prompts import HELPMEOUT_MONITOR_PROMPT as P

        text = P.render(task=self.ctx.task.replace("_", " "), scene="\n".join(self.ctx.initial_scene),
                        prefix="\n".join(f"{i}: {a}" for i, a in enumerate(self.prefix)),
                        categories=", ".join(CATEGORIES))
        return Request([Message.user(text)], GenerationConfig(max_new_tokens=self.max_new_tokens),
                       meta=P.meta("helpmeout_llm_monitor"))

    def step(self, t: int, action: str) -> StepOutput:
        self.prefix.append(action)
        gen = self.model.generate([self.request()])[0]
        self.calls += 1
        if not gen.ok:
            self.failed += 1
            return StepOutput(self.last, None, None, {"failed": gen.error})
        parsed = parse_reply(gen.text)
        if parsed is None:
            self.unparseable += 1
            return StepOutput(self.last, None, None, {"unparseable": (gen.text or "")[:200]})
        self.last = parsed["prob"]
        return StepOutput(parsed["prob"], parsed["onset"], parsed["category"], {"reply": (gen.text or "")[:200]})

    def stats(self) -> dict:
        return {"calls": self.calls, "unparseable": self.unparseable, "failed": self.failed,
                "model_calls": self.model.model_calls, "cache_hits": self.model.cache_hits,
                "max_new_tokens": self.max_new_tokens}
