"""Uniform frame sampling from (long) videos, with one open reader per video reused across samples.

Why a reader cache: the EgoErrorVQA samples of one source share long recordings (10-30 min, up to ~40 min for
CaptainCook4D), and opening a file costs 0.05-0.5 s because the reader indexes every packet (docs/stack-notes.md, video
decoding; scripts/bench_frames.py). Many samples of one video therefore reuse one reader; a bounded LRU
(``max_open``) keeps memory and file handles in check; each reader has its own lock, so threads (see
:mod:`ego_adr.video.prefetch`) can decode different videos at the same time.

Which frames: a named sampling policy (:mod:`ego_adr.video.policies`; ``bin-centre`` by default, ``public`` for
the public white agent's rule) turns the window into frame indices, after the one window rule of
:mod:`ego_adr.data.window` (whole video only for "no segment", failures for half, inverted or out-of-video
windows, a note for every normalisation). The policy's name is recorded in :class:`SampleInfo`.

Honest frames: the sampler checks what the decoder produced against what was asked (each reader reports the index
of the frame it actually decoded, from its timestamp). A frame that cannot be decoded where requested -- a
truncated file whose second half is missing, a corrupt packet -- is never replaced silently: with
``substitute="none"`` (default) the sample fails with a :class:`VideoError` naming the missing frames; with
``substitute="nearest"`` the nearest decodable frame within half a sampling segment is used and recorded in
``SampleInfo.substitutions``. With ``backend="auto"`` another backend is tried first; every such switch is recorded
in ``SampleInfo.decoder_switches`` (on the sample where it happened and on every later sample of that video read
by the new backend). A file whose header declares more frames than it holds is planned on its declared length, so
a window in the missing part is a failure, not the last frame repeated.

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

from ego_adr.video.frames import Frames
from ego_adr.video.honest import assemble, find_substitutes, read_plan
from ego_adr.video.policies import DEFAULT_POLICY, bin_centre, from_rule, get_policy
from ego_adr.video.readers import _READERS, Decoded, _Reader, available_backends  # noqa: F401 (re-exported)

SUBSTITUTE = ("none", "nearest")

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
    """A video could not be opened or decoded. The pipeline records it for the sample and goes on.

    ``kind``: ``open`` (missing or unreadable file), ``window`` (the window rule refuses the window),
    ``missing-frames`` (requested frames are not decodable), ``decode`` (the decoder broke)."""

    def __init__(self, path: str | os.PathLike, reason: str, kind: str = "open"):
        self.path = str(path)
        self.reason = reason
        self.kind = kind
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
    policy: str = DEFAULT_POLICY  # the sampling policy (ego_adr.video.policies)
    declared_frames: int | None = None  # what the container's header declares (None: it does not say)
    substitutions: list[dict] = field(default_factory=list)  # {requested, used, seconds_off, reason}
    decoder_switches: list[dict] = field(default_factory=list)  # {path, from, to, reason}

    @property
    def window_seconds(self) -> float:
        return self.window[1] - self.window[0]

    def to_dict(self) -> dict:
        return asdict(self)


def plan_indices(
    total_frames: int, fps: float, start: float | None, end: float | None, num_frames: int
) -> tuple[list[int], tuple[float, float], dict]:
    """The ``bin-centre`` plan as ``(indices, window, flags)`` (flags ``whole_video``, ``clamped``,
    ``duplicated``, ``notes``); raises :class:`~ego_adr.data.window.WindowError` for a refused window."""
    p = bin_centre(total_frames, fps, start, end, num_frames)
    return p.indices, p.window, {"whole_video": p.whole_video, "clamped": p.clamped, "duplicated": p.duplicated,
                                 "notes": p.notes}


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
    """Uniformly sample frames from video windows; see the module docstring for the rules.

    ``backend``: ``"auto"`` (:data:`AUTO_ORDER`, per file: the first that opens and decodes it) or one of
    :data:`BACKENDS`.
    ``max_open``: open readers kept (LRU). ``max_side`` / ``max_pixels``: bound each returned frame
    (aspect kept, never upscaled), so that e.g. 4K GoPro footage does not fill memory; ``None`` keeps the size.
    ``policy``: the sampling policy's name (:func:`ego_adr.video.policies.policy_names`).
    ``index_rule``: instead of a name, a function with :func:`plan_indices`' signature (recorded under ``policy``
    when that is given, else under the function's name).
    ``substitute``: ``"none"`` (a frame not decodable where requested fails the sample) or ``"nearest"`` (the
    nearest decodable frame within half a sampling segment is used and recorded).
    """

    def __init__(
        self,
        backend: str = "auto",
        max_open: int = 8,
        max_side: int | None = None,
        max_pixels: int | None = None,
        policy: str = DEFAULT_POLICY,
        substitute: str = "none",
        index_rule=None,
    ):
        if backend != "auto" and backend not in BACKENDS:
            raise ValueError(f"unknown video backend {backend!r}; use 'auto' or one of {BACKENDS}")
        if max_open < 1:
            raise ValueError("max_open must be >= 1")
        if substitute not in SUBSTITUTE:
            raise ValueError(f"substitute must be one of {SUBSTITUTE}, got {substitute!r}")
        if index_rule is not None:  # a rule with plan_indices' signature, e.g. public_policy.public_indices
            self._plan = from_rule(index_rule)
            policy = policy if policy != DEFAULT_POLICY else self._plan.__name__
        else:
            self._plan = get_policy(policy)  # raises ValueError for an unknown name
        self.policy = policy
        self.substitute = substitute
        self.backend = backend
        self.max_open = max_open
        self.max_side = max_side
        self.max_pixels = max_pixels
        self._readers: OrderedDict[str, _Reader] = OrderedDict()
        self._lock = threading.Lock()
        self._broken_backends: dict[str, str] = {}  # backend -> import error
        self._switches: dict[str, list[dict]] = {}  # path -> decoder switches that replaced its reader
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
        if num_frames < 1:
            raise ValueError(f"num_frames must be >= 1, got {num_frames}")
        max_side = self.max_side if max_side is None else max_side
        max_pixels = self.max_pixels if max_pixels is None else max_pixels
        args = (start_sec, end_sec, num_frames, max_side, max_pixels)
        for _attempt in range(3):  # a reader evicted between lookup and lock is reopened
            r = self.reader(path)
            failure: str | None = None
            with r.lock:
                if r.closed:
                    continue
                try:
                    plan, out = self._decode(r, *args)
                except VideoError:
                    raise
                except Exception as e:  # noqa: BLE001 - decoder libraries raise assorted types
                    failure = f"{type(e).__name__}: {e}"
            switches, errors = list(self._switches.get(r.path, [])), []
            if failure is not None or not out.complete:
                reason = failure or next(iter(out.problems.values()))
                best, errors = self._fallback(r, reason, switches, *args)
                if best is not None:
                    plan, out, r = best
                elif failure is not None:
                    raise VideoError(path, "decoding failed (" + "; ".join([f"{r.backend}: {failure}"] + errors)
                                     + ")", kind="decode")
            if not out.complete and self.substitute == "nearest":
                with r.lock:
                    try:
                        find_substitutes(r, out, plan, resizer(target_size(r.width, r.height, max_side,
                                                                            max_pixels), (r.width, r.height)))
                    except Exception:  # noqa: BLE001 - no substitute found is handled below
                        pass
            try:
                used, arr, subs = assemble(out, plan, r.fps, self.substitute)
            except LookupError as e:
                nominal = max(r.num_frames, r.declared_frames or 0)
                cut = (f"; the file holds {r.num_frames} of the {nominal} frames its header declares"
                       if nominal > r.num_frames + 1 else "") + (f"; also tried {'; '.join(errors)}" if errors else "")
                raise VideoError(path, f"{e}{cut}", kind="missing-frames") from None
            finally:
                if getattr(r, "transient", False):
                    r.close()
            arr = arr.astype(np.uint8, copy=False)
            notes = list(plan.notes) + [f"frame {x['requested']} replaced by frame {x['used']} ({x['reason']})"
                                        for x in subs]
            if switches:
                notes.append("decoded by " + r.backend + " after " + ", ".join(
                    f"{x['from']} failed ({x['reason']})" for x in switches))
            info = SampleInfo(
                path=str(path), backend=r.backend, indices=used, timestamps=[i / r.fps for i in used],
                requested=(start_sec, end_sec), window=plan.window, whole_video=plan.whole_video,
                clamped=plan.clamped, duplicated=plan.duplicated, video_frames=r.num_frames, video_fps=r.fps,
                frame_size=(int(arr.shape[2]), int(arr.shape[1])), notes=notes, policy=self.policy,
                declared_frames=r.declared_frames, substitutions=subs, decoder_switches=switches,
            )
            return arr, info
        raise VideoError(path, "reader kept being evicted; raise max_open", kind="decode")

    def _decode(self, r: _Reader, start_sec, end_sec, num_frames, max_side, max_pixels):
        """Plan on the video's nominal length and decode with reader ``r`` (caller holds ``r.lock``)."""
        nominal = max(r.num_frames, r.declared_frames or 0)
        try:
            plan = self._plan(nominal, r.fps, start_sec, end_sec, num_frames)
        except ValueError as e:  # WindowError, or a rule's own refusal
            raise VideoError(r.path, str(e), kind="window") from None
        except TypeError as e:  # e.g. a rule that takes no None for "no segment": not the decoder's fault
            raise VideoError(r.path, f"sampling policy {self.policy!r} cannot plan window "
                                     f"({start_sec}, {end_sec}): {e}", kind="window") from None
        size = target_size(r.width, r.height, max_side, max_pixels)
        return plan, read_plan(r, plan, resizer(size, (r.width, r.height)))

    def _fallback(self, failed: _Reader, reason: str, switches: list[dict], *args):
        """``auto``: when a backend cannot decode what was asked, try the others; the first that delivers every
        frame exactly replaces it for this video (recorded in ``switches`` and for the video's later samples).
        Returns ``((plan, outcome, reader) or None, errors of the backends tried)``."""
        errors: list[str] = []
        if self.backend != "auto":
            return None, errors
        for name in AUTO_ORDER:
            if name == failed.backend or name in self._broken_backends:
                continue
            try:
                new = _READERS[name](failed.path)
                with new.lock:
                    plan, out = self._decode(new, *args)
            except Exception as e:  # noqa: BLE001 - decoder libraries raise assorted types
                errors.append(f"{name}: {type(e).__name__}: {e}")
                continue
            if not out.complete:
                errors.append(f"{name}: {next(iter(out.problems.values()))}")
                new.close()
                continue
            switch = {"path": failed.path, "from": failed.backend, "to": name, "reason": reason[:300]}
            switches.append(switch)
            with self._lock:
                replaced = self._readers.get(failed.path) is failed
                if replaced:
                    self._readers[failed.path] = new
                    self.stats["fallbacks"] = self.stats.get("fallbacks", 0) + 1
                    self._switches.setdefault(failed.path, []).append(switch)
            if replaced:
                with failed.lock:
                    failed.close()
            else:  # another thread replaced it meanwhile: this reader serves this sample only
                new.transient = True
            return (plan, out, new), errors
        return None, errors

    def sample(self, path, start_sec, end_sec, num_frames, **kw) -> np.ndarray:
        """uint8 ``(N, H, W, 3)`` RGB frames of the window (see :meth:`sample_with_info`)."""
        return self.sample_with_info(path, start_sec, end_sec, num_frames, **kw)[0]

    def sample_clip(self, path, start_sec, end_sec, num_frames, **kw):
        """A :class:`ego_adr.video.frames.Frames` whose ``fps`` is the *sampled* rate (``N / window_seconds``,
        which Qwen-VL needs for its temporal positions) and whose ``timestamps`` are the frames' times. The
        :class:`SampleInfo` is attached as ``frames.info`` (read it with :func:`clip_info`)."""
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


def resizer(size: tuple[int, int], orig: tuple[int, int]):
    """The readers' one resize, ``orig`` -> ``size`` (INTER_AREA; none when equal), also stream/frames.py's."""
    if size == orig:
        return lambda f: f

    def resize(frame: np.ndarray) -> np.ndarray:
        import cv2

        return cv2.resize(frame, size, interpolation=cv2.INTER_AREA)

    return resize
