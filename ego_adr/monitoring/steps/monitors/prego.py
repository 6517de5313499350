"""PREGO (Flaborea et al., CVPR 2024, Sec. 3.2): symbolic next-step anticipation by an LLM in context, through
any model of the project's one protocol (HF, vLLM, OpenAI-compatible; ``--model tiny`` runs offline).

At every observed step the model is shown the correct training sequences as solved examples and the prefix
observed so far, and asked for the "Next Symbol" (``PREGO_NEXT_STEP`` in :mod:`ego_adr.reasoning.prompts`). The
anticipated set is what ``samples`` replies name; the step actually observed is a mistake when it is outside the
set. As in PREGO's ``llama_meta.py``:

- an example per training sequence: ``Input Sequence: -1, s1, ..., s(n-1)`` / ``Next Symbol: sn`` (-1 the start);
- Assembly101-O's examples are the training sequences of the same toy as the test recording (the toy id in the
  video name, PREGO's ``get_toy``; ``Sequence type: <toy>``), all of them when training has none of that toy;
  EPIC-Tent-O has one task, so every training sequence is an example and no ``Sequence type`` line is written;
- a reply is read as PREGO reads it: underscores stripped, then everything before the first and after the last
  digit; what is left must be a whole number, else the reply names no step (so the step is outside the set);
- replies of at most ``max_new_tokens`` = 8 tokens (PREGO's ``anticipation.sh``: ``--max_gen_len=8``).

Deviations, each recorded in ``metrics.json`` and the report:

- our backends are chat models: the prompt goes as one user message (a base model without a chat template gets
  ``User: ... Assistant:``), where PREGO completes the raw text;
- decoding is greedy (the model protocol has no temperature): the anticipated set is one reply, PREGO's setting
  at ``--temperature=0`` (its ``anticipation.sh``'s numeric line); PREGO's other lines sample 5 replies at
  temperature 0.6, which a protocol with a temperature would add as ``samples``;
- the examples are DTGL's training sequences (PREGO's own Assembly101-O prompt file holds the same 135; its
  EPIC-Tent-O file holds 14 sequences that are not DTGL's 13).

Every prompt and reply goes through the stage cache: the prompts' texts are recorded (the examples once per
task in ``prompts.json``, the query and replies per step in ``steps.jsonl``). A failed call that asking again may
fix (an outage: connection, timeout, 5xx, out of memory) stops the run with exit 3 before anything is written,
never a verdict; the answers so far are cached, so rerunning the same command resumes where it stopped. A call
that fails for its input is recorded in the step's evidence and counted, and the step is outside the (empty)
anticipated set, as PREGO counts a reply that names no step.
"""

from __future__ import annotations

import re

from ego_adr.errors import InfrastructureError
from ego_adr.monitoring.protocol import Monitor, StepOutput
from ego_adr.monitoring.steps.monitors.baselines import START
from ego_adr.monitoring.steps.types import StepContext, TrainingSet

MAX_NEW_TOKENS = 8  # PREGO step_anticipation/scripts/anticipation.sh --max_gen_len=8
SETTINGS = {"samples": 1, "decoding": "greedy", "max_new_tokens": MAX_NEW_TOKENS, "examples": "same task"}
DEVIATIONS = (
    "prompt sent as one user message of a chat model (PREGO completes the raw text)",
    "greedy decoding, one reply per step (PREGO samples 5 at temperature 0.6 in its emoji runs; its numeric run "
    "uses temperature 0)",
    "in-context examples are DTGL's training sequences (on EPIC-Tent-O PREGO's prompt holds 14 other sequences)",
)
_EDGES = re.compile(r"^[^0-9]*|[^0-9]*$")


def task_of(video: str) -> str | None:
    """The toy of an Assembly101 recording name (PREGO's ``get_toy``); None for a name without one."""
    parts = video.split("-")
    return parts[2].split("_")[0] if len(parts) > 2 and parts[2] else None


def parse_symbol(reply: str | None) -> int | None:
    """The step a reply names, read as PREGO's ``anticipation`` reads it; None when it names none."""
    v = _EDGES.sub("", (reply or "").strip("_"))
    return int(v) if v.isdigit() else None


def _line(prefix) -> str:
    return ", ".join(str(s) for s in (START, *prefix))


class Prego(Monitor):
    """PREGO's anticipation monitor; ``model`` is a VLM of :mod:`ego_adr.models` behind the stage cache."""

    def __init__(self, model=None, max_new_tokens: int = MAX_NEW_TOKENS) -> None:
        if model is None:
            raise ValueError("prego needs a model (--model NAME; --model tiny runs offline)")
        self.model = model
        self.max_new_tokens = max_new_tokens
        self.calls = self.failed = self.unparseable = 0
        self.selection = {"hyper_parameters": {**SETTINGS, "max_new_tokens": max_new_tokens},
                          "chosen_by": "not tuned: PREGO's published settings (step_anticipation/scripts/"
                          "anticipation.sh), so nothing was chosen on any data"}
        self.deviations = list(DEVIATIONS)

    def fit(self, train: TrainingSet) -> None:
        by_task: dict[str | None, list[tuple[int, ...]]] = {}
        for video, seq in zip(train.videos, train.sequences):
            by_task.setdefault(task_of(video), []).append(seq)
        self.all_examples = self._examples(None, list(train.sequences))
        self.examples = {t: self._examples(t, seqs) for t, seqs in by_task.items() if t is not None}
        self.files = {"prompts.json": {"prompt": "prego_next_step", "examples": {"all": self.all_examples,
                                                                                **self.examples}}}

    @staticmethod
    def _examples(task: str | None, seqs: list) -> str:
        head = f"Sequence type: {task}\n" if task else ""
        return "".join(f"{head}Input Sequence:\n {_line(s[:-1])}\nNext Symbol:\n {s[-1]}\n---\n" for s in seqs if s)

    def reset(self, ctx: StepContext) -> None:
        self.video = ctx.video
        self.task = task_of(ctx.video)
        self.context = self.task if self.task in self.examples else "all"
        self.prefix: list[int] = []

    def request(self):
        from ego_adr.models.base import GenerationConfig, Message, Request
        from ego_adr.reasoning.prompts import PREGO_NEXT_STEP as P

        examples = self.examples.get(self.context, self.all_examples)
        header = f"Sequence type: {self.task}\n" if self.context != "all" else ""
        query = P.render(examples="", header=header, prefix=_line(self.prefix))
        text = P.render(examples=examples, header=header, prefix=_line(self.prefix))
        return Request([Message.user(text)], GenerationConfig(max_new_tokens=self.max_new_tokens),
                       meta=P.meta("prego_next_step")), query

    def step(self, t: int, step_id: int) -> StepOutput:
        req, query = self.request()
        gen = self.model.generate([req])[0]
        self.calls += 1
        evidence: dict = {"examples": self.context, "query": query}
        anticipated: set[int] = set()
        if gen.retryable:
            raise InfrastructureError(f"{self.model.model_id} failed at {self.video} step {t} ({gen.error}); "
                                      "nothing was recorded: rerun the same command (the replies so far are cached)")
        if not gen.ok:
            self.failed += 1
            evidence["failed"] = gen.error
        else:
            evidence["replies"] = [gen.text]
            sym = parse_symbol(gen.text)
            if sym is None:
                self.unparseable += 1
            else:
                anticipated.add(sym)
        evidence["anticipated"] = sorted(anticipated)
        self.prefix.append(step_id)
        outside = step_id not in anticipated
        return StepOutput(1.0 if outside else 0.0, flagged=outside, evidence=evidence)

    def stats(self) -> dict:
        return {"calls": self.calls, "failed": self.failed, "unparseable": self.unparseable,
                "model_calls": getattr(self.model, "model_calls", None),
                "cache_hits": getattr(self.model, "cache_hits", None), "model": self.model.model_id}
