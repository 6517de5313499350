"""The one model protocol every backend implements and every stage uses.

A request is a list of chat messages; a message's content is a list of parts, each either text or a
:class:`Frames` clip. A backend turns a batch of requests into a batch of :class:`Generation`s, one per request,
in order. A failure of one request (bad input, out of memory on that sample) is returned as that request's
``error`` and never fails the rest of the batch. The pipeline only talks to this protocol: it never imports
transformers or vLLM, and backends know nothing about error types.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np


class BadRequest(ValueError):
    """A request that can never succeed (malformed message, empty clip, a client request the server cannot turn
    into a model request — HTTP 400): it fails alone and is never retried."""


@dataclass
class Frames:
    """Uniformly sampled frames of one video window.

    ``array`` is uint8 ``(N, H, W, 3)`` RGB. ``fps`` is the rate of the *sampled* frames
    (``N / window_seconds``), which Qwen-VL processors need for correct temporal position ids.
    """

    array: np.ndarray
    fps: float
    timestamps: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        a = self.array
        if a.dtype != np.uint8 or a.ndim != 4 or a.shape[-1] != 3:
            raise ValueError(f"Frames.array must be uint8 (N, H, W, 3), got {a.dtype} {a.shape}")

    @property
    def num_frames(self) -> int:
        return int(self.array.shape[0])

    def digest(self) -> str:
        """Content hash, part of the stage-cache key."""
        h = hashlib.sha256()
        h.update(str(self.array.shape).encode())
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


@dataclass
class Generation:
    text: str | None
    error: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and self.text is not None


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
