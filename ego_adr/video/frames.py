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
