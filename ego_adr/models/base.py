"""The one model protocol every backend implements and every stage uses.

A request is a list of chat messages; a message's content is a list of parts, each either text or a
:class:`Frames` clip. A backend turns a batch of requests into a batch of :class:`Generation`s, one per request,
in order. A failure of one request (bad input, out of memory on that sample) is returned as that request's
``error`` and never fails the rest of the batch. The pipeline only talks to this protocol: it never imports
transformers or vLLM, and backends know nothing about error types.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np


class BadRequest(ValueError):
    """A request that can never succeed (malformed message, empty clip, a client request the server cannot turn
    into a model request — HTTP 400): it fails alone and is never retried."""


@dataclass
class Frames:
    """Uniformly sampled frames of one video window.

    ``array`` is uint8 ``(N, H, W, 3)`` RGB, or float32 holding the same 0-255 levels when ``resized_by`` names
    a resizer whose output reaches the processor as floats: the public white agent hands qwen-vl-utils' float
    frames to its processor, and a processor that resizes again gives other pixels for floats than for uint8
    (STACK-NOTES), so the dtype is part of the input. ``fps`` is the rate of the *sampled* frames
    (``N / window_seconds``), which Qwen-VL processors need for correct temporal position ids.
    ``resized_by``: ``None`` (the model's processor sizes the frames) or the rule that already did
    (``"qwen-vl-utils-0.0.14"``: the processor is then called as the public white agent calls it).
    """

    array: np.ndarray
    fps: float
    timestamps: tuple[float, ...] = ()
    resized_by: str | None = None

    def __post_init__(self) -> None:
        a = self.array
        if a.dtype not in (np.uint8, np.float32) or a.ndim != 4 or a.shape[-1] != 3:
            raise ValueError(f"Frames.array must be uint8 or float32 (N, H, W, 3), got {a.dtype} {a.shape}")

    def as_uint8(self) -> np.ndarray:
        """The frames as uint8 (float frames hold whole 0-255 levels, so this loses nothing): for backends that
        encode pictures (JPEG for an API, vLLM's video input)."""
        a = self.array
        return a if a.dtype == np.uint8 else np.clip(np.rint(a), 0, 255).astype(np.uint8)

    @property
    def num_frames(self) -> int:
        return int(self.array.shape[0])

    def digest(self) -> str:
        """Content hash, part of the stage-cache key."""
        h = hashlib.sha256()
        h.update(str(self.array.shape).encode())
        if self.array.dtype != np.uint8:  # uint8 keys stay as they were
            h.update(f"{self.array.dtype}:{self.resized_by}".encode())
        h.update(np.ascontiguousarray(self.array).tobytes())
        h.update(f"{self.fps:.6f}".encode())
        return h.hexdigest()[:24]


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
    """Greedy decoding with 256 new tokens is the paper's setting (Appendix C, H)."""

    max_new_tokens: int = 256
    do_sample: bool = False

    def key(self) -> dict:
        return {"max_new_tokens": self.max_new_tokens, "do_sample": self.do_sample}


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
