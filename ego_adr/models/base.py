"""The one model protocol every backend implements and every stage uses.

A request is a list of chat messages; a message's content is a list of parts, each either text or a
:class:`Frames` clip. A backend turns a batch of requests into a batch of :class:`Generation`s, one per request,
in order. A failure of one request (bad input, out of memory on that sample) is returned as that request's
``error`` and never fails the rest of the batch. The pipeline only talks to this protocol: it never imports
transformers or vLLM, and backends know nothing about error types.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from ego_adr.video.frames import Frames  # noqa: F401  (re-exported: the frames part of a message)


class BadRequest(ValueError):
    """A request that can never succeed (malformed message, empty clip, a client request the server cannot turn
    into a model request — HTTP 400): it fails alone and is never retried."""


Part = str | Frames


@dataclass
class Message:
    role: str  # "system" | "user" | "assistant"
    content: list[Part]

    @staticmethod
    def user(*parts: Part) -> Message:
        return Message("user", list(parts))

    @staticmethod
    def system(text: str) -> Message:
        return Message("system", [text])


@dataclass
class GenerationConfig:
    """How one reply is decoded. Greedy with 256 new tokens is the paper's setting (Appendix C, H) and the default.

    Sampling (``do_sample=True``) is for methods that draw several replies to one prompt: PREGO's anticipated set
    is the union of several sampled replies (``ego_adr.online_mistakes.monitors.prego``). A sampled request
    carries everything its reply depends on: ``temperature`` (> 0), ``top_p`` (nucleus mass in (0, 1]; 1 is
    off) and its own ``seed``, so the same request gives the same reply on every backend that can seed per
    request (HF, our server, vLLM; a hosted API treats the seed as best effort), whatever batch it travels in.
    No top-k: Llama's reference sampler, the OpenAI API and vLLM's default sample from temperature and top-p only.

    The three sampling fields are meaningless to a greedy reply, so a greedy config refuses values for them
    (a temperature set on a greedy config is a mistake, not a setting) and leaves them out of its :meth:`key`:
    the stage-cache key of a greedy call is exactly what it was before sampling existed.
    """

    max_new_tokens: int = 256
    do_sample: bool = False
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.do_sample:
            if (self.temperature, self.top_p, self.seed) != (1.0, 1.0, 0):
                raise ValueError("temperature, top_p and seed apply to sampled decoding only: set do_sample=True "
                                 "(or use GenerationConfig.sampled), or leave them out for greedy")
            return
        t, p = float(self.temperature), float(self.top_p)
        if not (t > 0 and math.isfinite(t)):
            raise ValueError(f"temperature must be a finite number > 0 for sampling, got {self.temperature!r} "
                             "(temperature 0 is greedy: do_sample=False)")
        if not 0 < p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed < 2**63:
            raise ValueError(f"seed must be an integer in [0, 2**63), got {self.seed!r}")
        self.temperature, self.top_p = t, p

    @classmethod
    def sampled(cls, temperature: float, top_p: float = 1.0, seed: int = 0,
                max_new_tokens: int = 256) -> GenerationConfig:
        """A sampled config; ``temperature == 0`` gives the greedy one (as Llama's and vLLM's samplers read 0)."""
        if temperature == 0:
            return cls(max_new_tokens=max_new_tokens)
        return cls(max_new_tokens=max_new_tokens, do_sample=True, temperature=temperature, top_p=top_p, seed=seed)

    def key(self) -> dict:
        k: dict = {"max_new_tokens": self.max_new_tokens, "do_sample": self.do_sample}
        if self.do_sample:
            k.update(temperature=self.temperature, top_p=self.top_p, seed=self.seed)
        return k


@dataclass
class Request:
    """One chat request. ``meta`` names the stage and prompt (``stage``, ``prompt``, ``prompt_version``):
    it goes into the stage-cache key and timing records, never to the model."""

    messages: list[Message]
    config: GenerationConfig = field(default_factory=GenerationConfig)
    meta: dict = field(default_factory=dict)

    @property
    def has_frames(self) -> bool:
        return any(isinstance(p, Frames) for m in self.messages for p in m.content)


#: Failure kinds. ``INFRASTRUCTURE``: the request never got a fair answer (connection refused, timeout, HTTP 5xx /
#: 429, out of memory, a crashed decoder) -- asking again later may succeed, so it is *retryable* and nothing about
#: it may be cached. ``SAMPLE``: the input itself is the problem (a bad frame, a 4xx refusal) -- asking again gives
#: the same answer.
INFRASTRUCTURE, SAMPLE = "infrastructure", "sample"
#: Tag an infrastructure error message starts with. Error strings travel through the pipeline into the row's
#: ``failure`` text, so the tag is how a row written anywhere downstream still says that it is retryable.
INFRA_TAG = "[infrastructure]"
_INFRA_TEXT = re.compile(
    r"out of memory|OutOfMemoryError|CUDA error|connection (?:refused|reset|aborted)|ConnectError|"
    r"ConnectTimeout|ReadTimeout|timed out|HTTP 5\d\d|HTTP 429|HTTP 408",
    re.IGNORECASE,
)


def infra_error(message: str) -> str:
    """``message`` tagged as an infrastructure (retryable) failure."""
    return message if message.startswith(INFRA_TAG) else f"{INFRA_TAG} {message}"


def error_kind(message: str | None) -> str | None:
    """``INFRASTRUCTURE`` for a tagged message (or, for backends that do not tag, one that reads like an outage or
    out-of-memory), ``SAMPLE`` for any other error, ``None`` for no error."""
    if not message:
        return None
    if INFRA_TAG in message or _INFRA_TEXT.search(message):
        return INFRASTRUCTURE
    return SAMPLE


@dataclass
class Generation:
    """One request's outcome. ``kind`` is the failure kind of ``error`` (see :data:`INFRASTRUCTURE`); a backend
    that knows an error is retryable passes ``kind=INFRASTRUCTURE`` and the message is tagged accordingly."""

    text: str | None
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
        return self.error is None and self.text is not None

    @property
    def retryable(self) -> bool:
        return self.kind == INFRASTRUCTURE


@dataclass(frozen=True)
class Capabilities:
    video: bool = True  # accepts Frames parts
    text_only: bool = True  # accepts a request without frames (the probe decides whether it *reasons* well)
    max_batch_size: int = 1


@runtime_checkable
class VLM(Protocol):
    """What a backend must provide."""

    @property
    def model_id(self) -> str:  # hub id, folder or endpoint model name
        ...

    @property
    def fingerprint(self) -> str:  # model id + revision or weights hash: part of every cache key
        ...

    @property
    def capabilities(self) -> Capabilities: ...

    def generate(self, requests: list[Request]) -> list[Generation]: ...


def generate_one(model: VLM, request: Request) -> Generation:
    return model.generate([request])[0]


def black_frames() -> Frames:
    """A black 2-frame 224x224 stand-in clip for a text-only call to a model that cannot take text alone (Section 6.4)."""
    return Frames(np.zeros((2, 224, 224, 3), dtype=np.uint8), fps=1.0)
