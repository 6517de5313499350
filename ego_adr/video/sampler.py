"""Uniform frame sampling from (long) videos, with one open reader per video reused across samples.

Why a reader cache: the EgoErrorVQA samples of one source share long recordings (10-30 min, up to ~40 min for
CaptainCook4D), and opening a file costs 0.05-0.5 s because the reader indexes every packet (STACK-NOTES, video
decoding; scripts/bench_frames.py). Many samples of one video therefore reuse one reader; a bounded LRU
(``max_open``) keeps memory and file handles in check; each reader has its own lock, so threads (see
:mod:`ego_adr.video.prefetch`) can decode different videos at the same time.

Sampling rule (the same for every backend): the window ``[start, end)`` holds the frames whose timestamps
``i / fps`` fall inside it; that run of ``M`` frames is cut into ``N`` equal segments and the *centre* frame of each
segment is taken (``first + floor((k + 0.5) * M / N)``). Centres rather than ``linspace`` end points because they
never hit the boundary frames, which in the annotated data often belong to the neighbouring step. When ``M >= N``
the indices are distinct; when the window holds fewer frames than ``N`` some repeat, which is recorded in
:class:`SampleInfo` (``duplicated``). A missing (``None``) or negative window means the whole video (the public
data uses ``-1`` for omissions, where there is no segment); a window is clamped to the video's duration.

Frame indices and timestamps assume a constant frame rate (``t_i = i / fps``, with the stream's average rate),
as camera recordings have; a variable-rate file is sampled by index, evenly in frames rather than seconds.

decord, PyAV and OpenCV are imported lazily: ``import ego_adr`` must stay fast.
"""

from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from ego_adr.video.readers import _READERS, _Reader, available_backends  # noqa: F401 (re-exported)

BACKENDS = ("decord", "pyav", "opencv")
# Order tried by backend="auto", per file; the next one is used when a library is missing or cannot open or
# decode a file. PyAV first on evidence from scripts/bench_frames.py (10-min 640x360 H.264, GOP 225, 6 random
# 30-s windows, readers reused, methods interleaved; a shared, loaded 2-core machine, so +-20% noise):
# wall ms/sample for 8/16/32 frames -- PyAV (the GOP-aware reader below) 648/686/667, decord reused
# 655/820/1181, OpenCV seek+grab 993/863/709, decord reopened per sample (public agent) 991/1107/1684; earlier
# runs agreed (PyAV <= decord). decord used ~15% less CPU at 16/32 frames and indexes a file faster (~0.16 vs
# ~0.29 s per 10-min video, amortised over that video's samples); it is unmaintained (0.6.0, no wheels for newer
# Pythons/ARM), so it is the first fallback.
AUTO_ORDER = ("pyav", "decord", "opencv")


class VideoError(Exception):
    """A video could not be opened or decoded. The pipeline records it for the sample and goes on."""

    def __init__(self, path: str | os.PathLike, reason: str):
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{self.path}: {reason}")


@dataclass
class SampleInfo:
    """What the sampler did for one call (kept beside the prediction for auditing)."""

    path: str
    backend: str
    indices: list[int]
    timestamps: list[float]
    requested: tuple[float | None, float | None]  # the window as asked
    window: tuple[float, float]  # the window actually used (seconds, clamped)
    whole_video: bool  # the window was missing/negative, so the whole video was sampled
    clamped: bool  # the requested window reached outside the video and was cut
    duplicated: bool  # the window holds fewer frames than requested, so some frames repeat
    video_frames: int
    video_fps: float
    frame_size: tuple[int, int]  # (width, height) of the returned frames
    notes: list[str] = field(default_factory=list)

    @property
    def window_seconds(self) -> float:
        return self.window[1] - self.window[0]

    def to_dict(self) -> dict:
        return asdict(self)


def _missing(t: float | None) -> bool:
    return t is None or (isinstance(t, float) and math.isnan(t)) or t < 0


def plan_indices(
    total_frames: int, fps: float, start: float | None, end: float | None, num_frames: int
) -> tuple[list[int], tuple[float, float], dict]:
    """Frame indices for ``num_frames`` uniform samples of ``[start, end)`` (pure; see the module docstring).

    Returns the indices, the window used (seconds) and flags ``whole_video``, ``clamped``, ``duplicated`` plus
    ``notes``.
    """
    if num_frames < 1:
        raise ValueError(f"num_frames must be >= 1, got {num_frames}")
    if total_frames < 1 or not fps or fps <= 0:
        raise ValueError(f"video has no frames or no frame rate (frames={total_frames}, fps={fps})")
    duration = total_frames / fps
    notes: list[str] = []
    whole = _missing(start) and _missing(end)
    s = 0.0 if _missing(start) else float(start)
    e = duration if _missing(end) else float(end)
    if not whole and (_missing(start) or _missing(end)):
        notes.append("one end of the window missing/negative: replaced by the video's start/end")
    if e < s:
        notes.append(f"end {e} before start {s}: swapped")
        s, e = e, s
    clamped = False
    if e > duration + 1e-6:
        clamped = True
        e = duration
    if s >= duration:
        clamped = True
        notes.append(f"window starts at {s:.2f}s, after the video's end ({duration:.2f}s): using the last frame")
        s = max(0.0, duration - 1.0 / fps)
        e = duration
    first = math.ceil(s * fps - 1e-6)
    stop = math.ceil(e * fps - 1e-6)  # frames with t_i < e
    first = min(max(first, 0), total_frames - 1)
    stop = min(max(stop, first + 1), total_frames)  # at least the frame at/after start
    m = stop - first
    idx = [first + int(math.floor((k + 0.5) * m / num_frames)) for k in range(num_frames)]
    flags = {"whole_video": whole, "clamped": clamped, "duplicated": m < num_frames, "notes": notes}
    return idx, (s, e), flags


def target_size(width: int, height: int, max_side: int | None, max_pixels: int | None) -> tuple[int, int]:
    """Size after bounding the longer side and/or the pixel count, keeping the aspect ratio (never upscales)."""
    scale = 1.0
    if max_side:
        scale = min(scale, max_side / max(width, height))
    if max_pixels:
        scale = min(scale, math.sqrt(max_pixels / (width * height)))
    if scale >= 1.0:
        return width, height
    return max(1, int(round(width * scale))), max(1, int(round(height * scale)))


# --------------------------------------------------------------------------------------------------- sampler
class FrameSampler:
    """Uniformly sample frames from video windows; see the module docstring for the rule.

    ``backend``: ``"auto"`` (:data:`AUTO_ORDER`, per file: the first that opens and decodes it) or one of
    :data:`BACKENDS`.
    ``max_open``: open readers kept (LRU). ``max_side`` / ``max_pixels``: bound each returned frame
    (aspect kept, never upscaled), so that e.g. 4K GoPro footage does not fill memory; ``None`` keeps the size.
    """

    def __init__(
        self,
        backend: str = "auto",
        max_open: int = 8,
        max_side: int | None = None,
        max_pixels: int | None = None,
        index_rule=None,
    ):
        if backend != "auto" and backend not in BACKENDS:
            raise ValueError(f"unknown video backend {backend!r}; use 'auto' or one of {BACKENDS}")
        if max_open < 1:
            raise ValueError("max_open must be >= 1")
        self.backend = backend
        self.max_open = max_open
        self.max_side = max_side
        self.max_pixels = max_pixels
        # which frames a window means: plan_indices, or another rule of the same signature (video/public_policy.py)
        self.index_rule = index_rule or plan_indices
        self._readers: OrderedDict[str, _Reader] = OrderedDict()
        self._lock = threading.Lock()
        self._broken_backends: dict[str, str] = {}  # backend -> import error
        self.stats = {"opens": 0, "hits": 0, "evictions": 0}

    # -- readers -----------------------------------------------------------------------------------------
    def _open(self, path: str) -> _Reader:
        if not os.path.exists(path):
            raise VideoError(path, "file not found")
        if not os.path.isfile(path):
            raise VideoError(path, "not a file")
        order = AUTO_ORDER if self.backend == "auto" else (self.backend,)
        errors = []
        for name in order:
            if name in self._broken_backends:
                errors.append(f"{name}: {self._broken_backends[name]}")
                continue
            try:
                reader = _READERS[name](path)
            except ImportError as e:
                self._broken_backends[name] = f"not importable ({e})"
                errors.append(f"{name}: {self._broken_backends[name]}")
                continue
            except Exception as e:  # noqa: BLE001 - decoder libraries raise assorted types
                errors.append(f"{name}: {type(e).__name__}: {e}")
                continue
            if reader.num_frames < 1:
                reader.close()
                errors.append(f"{name}: no frames")
                continue
            return reader
        raise VideoError(path, "cannot open video (" + "; ".join(errors) + ")")

    def reader(self, path: str | os.PathLike):
        """The open reader for ``path`` (opened if needed; most recently used afterwards)."""
        key = str(Path(path).resolve())
        with self._lock:
            r = self._readers.get(key)
            if r is not None and not r.closed:
                self._readers.move_to_end(key)
                self.stats["hits"] += 1
                return r
        new = self._open(key)  # outside the cache lock: opening indexes the file
        evicted = []
        with self._lock:
            r = self._readers.get(key)
            if r is not None and not r.closed:  # another thread opened it meanwhile
                evicted.append(new)
                self._readers.move_to_end(key)
                result = r
            else:
                self._readers[key] = new
                self.stats["opens"] += 1
                result = new
                while len(self._readers) > self.max_open:
                    _, old = self._readers.popitem(last=False)
                    self.stats["evictions"] += 1
                    evicted.append(old)
        for old in evicted:
            with old.lock:  # waits for a decode in progress on it
                old.close()
        return result

    def open_paths(self) -> list[str]:
        """Paths with an open reader, least recently used first."""
        with self._lock:
            return list(self._readers)

    # -- sampling ----------------------------------------------------------------------------------------
    def sample_with_info(
        self,
        path: str | os.PathLike,
        start_sec: float | None,
        end_sec: float | None,
        num_frames: int,
        max_side: int | None = None,
        max_pixels: int | None = None,
    ) -> tuple[np.ndarray, SampleInfo]:
        """Frames (uint8 ``(N, H, W, 3)`` RGB) and the record of what was done. Raises :class:`VideoError`."""
        max_side = self.max_side if max_side is None else max_side
        max_pixels = self.max_pixels if max_pixels is None else max_pixels
        args = (start_sec, end_sec, num_frames, max_side, max_pixels)
        for _attempt in range(3):  # a reader evicted between lookup and lock is reopened
            r = self.reader(path)
            failure: Exception | None = None
            with r.lock:
                if r.closed:
                    continue
                try:
                    res = self._decode(r, *args)
                except VideoError:
                    raise
                except Exception as e:  # noqa: BLE001 - decoder libraries raise assorted types
                    failure = e
            if failure is not None:
                res = self._fallback(r, failure, *args)
            idx, window, flags, decoded, backend, fps_v, total = res
            arr = np.stack([decoded[i] for i in idx]).astype(np.uint8, copy=False)
            info = SampleInfo(
                path=str(path),
                backend=backend,
                indices=idx,
                timestamps=[i / fps_v for i in idx],
                requested=(start_sec, end_sec),
                window=window,
                whole_video=flags["whole_video"],
                clamped=flags["clamped"],
                duplicated=flags["duplicated"],
                video_frames=total,
                video_fps=fps_v,
                frame_size=(int(arr.shape[2]), int(arr.shape[1])),
                notes=flags["notes"],
            )
            return arr, info
        raise VideoError(path, "reader kept being evicted; raise max_open")

    def _decode(self, r: _Reader, start_sec, end_sec, num_frames, max_side, max_pixels):
        """Decode with reader ``r`` (caller holds ``r.lock``)."""
        try:
            idx, window, flags = self.index_rule(r.num_frames, r.fps, start_sec, end_sec, num_frames)
        except ValueError as e:
            raise VideoError(r.path, str(e)) from e
        size = target_size(r.width, r.height, max_side, max_pixels)
        uniq = sorted(set(idx))
        decoded = dict(zip(uniq, r.read(uniq, _resizer(size, (r.width, r.height))), strict=True))
        return idx, window, flags, decoded, r.backend, r.fps, r.num_frames

    def _fallback(self, failed: _Reader, error: Exception, *args):
        """``auto``: a backend that opened a file but cannot decode it is replaced by the next one that can
        (which then serves the later samples of that video); otherwise the sample fails with VideoError."""
        errors = [f"{failed.backend}: {type(error).__name__}: {error}"]
        if self.backend == "auto":
            for name in AUTO_ORDER:
                if name == failed.backend or name in self._broken_backends:
                    continue
                try:
                    new = _READERS[name](failed.path)
                    with new.lock:
                        res = self._decode(new, *args)
                except Exception as e:  # noqa: BLE001
                    errors.append(f"{name}: {type(e).__name__}: {e}")
                    continue
                with self._lock:
                    if self._readers.get(failed.path) is failed:
                        self._readers[failed.path] = new
                        self.stats["fallbacks"] = self.stats.get("fallbacks", 0) + 1
                        replaced = True
                    else:
                        replaced = False
                if replaced:
                    with failed.lock:
                        failed.close()
                else:
                    new.close()
                return res
        raise VideoError(failed.path, "decoding failed (" + "; ".join(errors) + ")")

    def sample(self, path, start_sec, end_sec, num_frames, **kw) -> np.ndarray:
        """uint8 ``(N, H, W, 3)`` RGB frames of the window (see :meth:`sample_with_info`)."""
        return self.sample_with_info(path, start_sec, end_sec, num_frames, **kw)[0]

    def sample_clip(self, path, start_sec, end_sec, num_frames, **kw):
        """A :class:`ego_adr.models.base.Frames` whose ``fps`` is the *sampled* rate (``N / window_seconds``,
        which Qwen-VL needs for its temporal positions) and whose ``timestamps`` are the frames' times. The
        :class:`SampleInfo` is attached as ``frames.info`` (read it with :func:`clip_info`)."""
        from ego_adr.models.base import Frames

        arr, info = self.sample_with_info(path, start_sec, end_sec, num_frames, **kw)
        seconds = max(info.window_seconds, 1.0 / info.video_fps)
        frames = Frames(arr, fps=len(arr) / seconds, timestamps=tuple(info.timestamps))
        frames.info = info  # type: ignore[attr-defined]
        return frames

    def close(self) -> None:
        with self._lock:
            readers = list(self._readers.values())
            self._readers.clear()
        for r in readers:
            with r.lock:
                r.close()

    def __enter__(self) -> FrameSampler:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def clip_info(frames) -> SampleInfo | None:
    """The :class:`SampleInfo` attached by :meth:`FrameSampler.sample_clip`, if any."""
    return getattr(frames, "info", None)


def _resizer(size: tuple[int, int], orig: tuple[int, int]):
    if size == orig:
        return lambda f: f

    def resize(frame: np.ndarray) -> np.ndarray:
        import cv2

        return cv2.resize(frame, size, interpolation=cv2.INTER_AREA)

    return resize
