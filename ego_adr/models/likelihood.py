"""Candidate likelihoods: given a prefix and candidate continuations, the log-likelihood of each under the model.

Why: a small language model is a poor writer of answers in a format and a fair scorer of options. Asked through a
chat template to name PREGO's next step, SmolLM2-135M replies with the start symbol every time; the same weights
continuing PREGO's symbol sequence as raw text rank the right next step first about half the time
(``../shared/STACK-NOTES.md``, fourth pass). Multiple choice is scored the same way by lmms-eval and lm-eval
(``loglikelihood`` requests): the option the model finds most likely after the question.

A :class:`LikelihoodRequest` holds a prefix and its candidates. The prefix is raw text (the first-class form: the
model sees exactly these characters, no chat template, the tokenizer's own start-of-text rule applied) or chat
messages (``form`` ``chat``: rendered by the model's chat template with the assistant's turn opened, and the
candidates scored as the start of the reply). A candidate's log-likelihood is the sum of the log-probabilities of
its tokens, the prefix and the candidate tokenised together and split where their tokens stop agreeing with the
prefix's own (as lm-eval splits context and continuation), so a backend never scores a token sequence the model
would not produce for that text.

Every backend that can give token probabilities implements ``loglikelihood(requests) -> list[Likelihoods]``: the
llama.cpp backend (:mod:`ego_adr.models.llamacpp_backend`), the HF backend (:mod:`ego_adr.models.hf_likelihood`)
and the OpenAI-compatible one where the server returns prompt log-probabilities (:mod:`ego_adr.models.openai_api`).
Like a generation, a failure belongs to its request (``error``, ``kind``; an outage is retryable and never cached)
and every call goes through the stage cache (:meth:`ego_adr.models.cache.CachedModel.loglikelihood`).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field

from ego_adr.models.base import INFRASTRUCTURE, Message, error_kind, infra_error

FORMS = ("raw", "chat")


@dataclass
class LikelihoodRequest:
    """``prefix``: raw text (form ``raw``) or chat messages (form ``chat``); ``candidates``: the continuations to
    score, each non-empty. ``meta`` names the stage and prompt, as a :class:`~ego_adr.models.base.Request`'s."""

    prefix: str | list[Message]
    candidates: tuple[str, ...]
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.candidates = tuple(self.candidates)
        if not self.candidates or any(not isinstance(c, str) or not c for c in self.candidates):
            raise ValueError("a likelihood request needs at least one candidate, each a non-empty string")
        if not isinstance(self.prefix, str) and not all(isinstance(m, Message) for m in self.prefix):
            raise ValueError("a likelihood prefix is raw text or a list of chat messages")

    @property
    def form(self) -> str:
        return "raw" if isinstance(self.prefix, str) else "chat"

    def chat(self) -> list[dict]:
        """The chat form's messages as role/content dicts (text parts joined by newlines; no frames)."""
        out = []
        for m in self.prefix:  # type: ignore[union-attr]
            if not all(isinstance(p, str) for p in m.content):
                raise ValueError("a likelihood prefix takes text only, not frames")
            out.append({"role": m.role, "content": "\n".join(m.content)})
        return out


@dataclass
class Likelihoods:
    """One request's outcome: ``logprobs[i]`` the natural-log likelihood of candidate ``i``, ``tokens[i]`` how many
    tokens it was scored over; ``error`` (and its ``kind``) when the request failed."""

    logprobs: list[float] | None
    tokens: list[int] | None = None
    error: str | None = None
    seconds: float = 0.0
    kind: str | None = None

    def __post_init__(self) -> None:
        if self.error is not None:
            if self.kind == INFRASTRUCTURE:
                self.error = infra_error(self.error)
            self.kind = error_kind(self.error)

    @property
    def ok(self) -> bool:
        return self.error is None and self.logprobs is not None

    @property
    def retryable(self) -> bool:
        return self.kind == INFRASTRUCTURE

    def to_text(self) -> str:
        """What the stage cache stores for a successful call."""
        return json.dumps({"logprobs": self.logprobs, "tokens": self.tokens}, separators=(",", ":"))

    @staticmethod
    def from_text(text: str) -> Likelihoods:
        d = json.loads(text)
        return Likelihoods([float(x) for x in d["logprobs"]], [int(x) for x in d["tokens"]])


def request_digest(request: LikelihoodRequest) -> str:
    """sha256 of what the model is asked: the form, the prefix (text or messages) and the candidates in order."""
    prefix = request.prefix if request.form == "raw" else request.chat()
    blob = json.dumps({"form": request.form, "prefix": prefix, "candidates": list(request.candidates)},
                      ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def split(context: list[int], whole: list[int]) -> tuple[list[int], list[int]]:
    """(context tokens, continuation tokens) of ``whole``, the prefix and a candidate tokenised together: the
    continuation starts where ``whole`` stops agreeing with the prefix's own tokens ``context`` (a token that
    spans the boundary then belongs to the continuation, as it does in the text the model would write)."""
    n = 0
    for a, b in zip(context, whole):
        if a != b:
            break
        n += 1
    return whole[:n], whole[n:]


def normalised(logprobs: list[float]) -> list[float]:
    """The candidates' log-likelihoods renormalised over the candidates (log-softmax): the model's choice among
    exactly these options, whatever mass it puts on text that is none of them."""
    top = max(logprobs)
    z = top + math.log(sum(math.exp(x - top) for x in logprobs))
    return [x - z for x in logprobs]


def prefix_free(texts: list[str], separator: str) -> list[str]:
    """The candidates as continuations no one of which starts another: a text that is the start of another
    candidate's text (symbol ``1`` before ``10``-``19``, ``insert support`` before ``insert support tab``) gets the
    ``separator`` that would follow it in the sequence, so its likelihood is of that option alone."""
    return [t + separator if any(o != t and o.startswith(t) for o in texts) else t for t in texts]
