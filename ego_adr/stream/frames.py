"""Frames of successive, overlapping windows of one recording, each frame decoded once.

Why: a stream asks for ``[t - window, t)`` every ``stride`` seconds, so consecutive windows overlap and move
forward. Asking the sampler for each window independently seeks back to a keyframe every tick and decodes the
overlap again (on long-GOP files, a whole GOP per tick). Here the sampler's own rule picks the indices
(:func:`ego_adr.video.sampler.plan_indices`), frames already decoded for the previous window are reused, and
only the new indices are read -- in increasing order, so the reader decodes forward without seeking. With
the defaults (8 s windows of 8 frames every 4 s) the sampled grid of one window continues the previous one's
(segments of 1 s, a stride of 4 segments), so half the frames are reused and no frame is decoded twice. The
result is the same :class:`~ego_adr.models.base.Frames` as :meth:`FrameSampler.sample_clip` (same indices,
pixels, rate and timestamps; tests/stream/test_stream_frames.py checks it), so the stage cache and the
no-look-ahead guarantee are unchanged. Frames are only ever read up to the window's end.
"""

from __future__ import annotations

import numpy as np


class WindowReader:
    """``clip(start, end, n)`` like ``sampler.sample_clip(path, start, end, n)``, reusing decoded frames.

    The fast path covers the sampler's default plan (uniform bin centres) on a file that holds the frames its
    header declares; for any other sampling policy, or when a frame cannot be decoded, the window goes through
    the sampler itself (its substitutions and backend fallbacks apply) and the cache starts afresh.
    """

    def __init__(self, sampler, path: str) -> None:
        self.sampler, self.path = sampler, str(path)
        self._cache: dict[int, np.ndarray] = {}
        self.decoded = 0  # frames read from the file so far on the fast path

    def _fast(self) -> bool:
        return getattr(self.sampler, "policy", "bin-centre") in ("bin-centre", "uniform")

    def clip(self, start: float, end: float, num_frames: int):
        from ego_adr.models.base import Frames
        from ego_adr.video.sampler import plan_indices, resizer, target_size

        r = self.sampler.reader(self.path)
        declared = getattr(r, "declared_frames", None)
        if not self._fast() or (declared is not None and declared > r.num_frames):
            self._cache = {}
            return self.sampler.sample_clip(self.path, start, end, num_frames)
        idx, window, _flags = plan_indices(r.num_frames, r.fps, start, end, num_frames)
        size = target_size(r.width, r.height, self.sampler.max_side, self.sampler.max_pixels)
        new = sorted(set(idx) - set(self._cache))
        if new:
            with r.lock:
                got = r.read(new, resizer(size, (r.width, r.height)))
            frames = [getattr(g, "frame", g) for g in got]  # readers return arrays, or Decoded(index, frame)
            if any(f is None for f in frames) or any(getattr(g, "index", i) != i for g, i in zip(got, new)):
                self._cache = {}
                return self.sampler.sample_clip(self.path, start, end, num_frames)
            self._cache.update(zip(new, frames, strict=True))
            self.decoded += len(new)
        self._cache = {i: self._cache[i] for i in set(idx)}  # the next window can only reuse these
        arr = np.stack([self._cache[i] for i in idx]).astype(np.uint8, copy=False)
        seconds = max(window[1] - window[0], 1.0 / r.fps)
        return Frames(arr, fps=len(arr) / seconds, timestamps=tuple(i / r.fps for i in idx))
