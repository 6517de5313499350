"""The frames of one video window as the decoder hands them to a model: the one container both layers share.

Why in video/: the sampler makes them and the models read them; with the class in ``models/`` the video layer
imported the layer above it. :mod:`ego_adr.models.base` re-exports it as the frames part of a message.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np


@dataclass
class Frames:
    """Uniformly sampled frames of one video window.

    ``array`` is uint8 ``(N, H, W, 3)`` RGB, or float32 holding the same 0-255 levels when ``resized_by`` names
    a resizer whose output reaches the processor as floats: the public white agent hands qwen-vl-utils' float
    frames to its processor, and a processor that resizes again gives other pixels for floats than for uint8
    (docs/stack-notes.md), so the dtype is part of the input. ``fps`` is the rate of the *sampled* frames
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
