"""Video readers behind :class:`ego_adr.video.sampler.FrameSampler`: decord, PyAV and OpenCV, one object per open file.

Each reader knows its frame count, rate and size and decodes a sorted list of frame indices, applying a resize
as it goes so that full-resolution frames are never all held at once. Libraries are imported lazily.

Honest decoding: ``read`` returns, for every requested index, a :class:`Decoded` saying which frame the decoder
actually produced (``index``) or why none was (``problem``) -- a reader never hands back another frame in place
of the one asked for without saying so; the sampler decides what to do about it (see
:mod:`ego_adr.video.sampler`). ``num_frames`` counts the frames the reader can address; ``declared_frames`` is
what the container's header claims (``None`` when it does not say), so a truncated file shows as
``declared_frames > num_frames``.
"""

from __future__ import annotations

import os
import threading
from typing import NamedTuple

import numpy as np


class Decoded(NamedTuple):
    """One requested frame: the index the decoder produced (``None`` if none) and the RGB frame, or a problem."""

    index: int | None
    frame: np.ndarray | None = None
    problem: str | None = None


def import_decord():
    """Import decord, with OpenCV loaded first.

    decord's wheel carries its own zlib; when decord is loaded before OpenCV, OpenCV's PNG codec binds to that
    zlib and every PNG encode/decode fails ("libpng error: bad parameters to zlib"), which broke e.g. the
    OpenAI-compatible server's image decoding in the same process. Loading OpenCV first keeps its own zlib.
    """
    try:
        import cv2  # noqa: F401
    except ImportError:
        pass
    import decord

    return decord


_DECODE_BUDGET_BYTES = 256 * 2**20  # full-resolution frames held at once before resizing (4K: ~10 frames)


# --------------------------------------------------------------------------------------------------- readers
class _Reader:
    backend = ""

    def __init__(self, path: str):
        self.path = path
        self.lock = threading.Lock()
        self.closed = False
        self.num_frames = 0
        self.fps = 0.0
        self.width = 0
        self.height = 0
        self.declared_frames: int | None = None

    def read(self, indices: list[int], transform) -> list[Decoded]:
        """Decode the sorted distinct ``indices`` (one :class:`Decoded` each); ``transform`` is applied to each RGB
        frame right away. Raises only when the decoder itself breaks (the sampler then tries another backend)."""
        raise NotImplementedError

    def close(self) -> None:
        self.closed = True


class _DecordReader(_Reader):
    backend = "decord"

    def __init__(self, path: str):
        super().__init__(path)
        decord = import_decord()

        self._vr = decord.VideoReader(path, ctx=decord.cpu(0), num_threads=0)
        self.num_frames = len(self._vr)
        self.fps = float(self._vr.get_avg_fps())
        h, w = self._vr[0].shape[:2] if self.num_frames else (0, 0)
        self._vr.seek(0)
        self.width, self.height = int(w), int(h)

    def read(self, indices, transform):
        per = max(1, _DECODE_BUDGET_BYTES // max(1, self.width * self.height * 3))
        inside = [i for i in indices if i < self.num_frames]
        got: dict[int, Decoded] = {}
        for k in range(0, len(inside), per):
            chunk = list(inside[k : k + per])
            batch = self._vr.get_batch(chunk).asnumpy()  # frame-exact by index (docs/stack-notes.md); raises
            got.update((i, Decoded(i, transform(f))) for i, f in zip(chunk, batch, strict=True))
        return [got.get(i) or Decoded(None, problem=f"frame {i} is not in the file ({self.num_frames} frames)")
                for i in indices]

    def close(self):
        super().close()
        self._vr = None


def decode_threads() -> int:
    """The cores this process may run on (its CPU affinity, which containers and ``taskset`` narrow)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no sched_getaffinity (macOS, Windows)
        return max(1, os.cpu_count() or 1)


class _PyAVReader(_Reader):
    """Frame-exact random access with PyAV: the packets are indexed once (demux only, no decoding), then a
    target frame is reached by seeking to its keyframe and decoding forward -- only when it is not reachable by
    decoding forward from the current position within the same GOP."""

    backend = "pyav"

    def __init__(self, path: str):
        super().__init__(path)
        import av
        from av.video.reformatter import VideoReformatter

        self._c = av.open(path)
        st = self._c.streams.video[0]
        st.thread_type = "AUTO"
        # One decoding thread per core this process may use, as OpenCV's FFmpeg backend does. Left at 0, FFmpeg
        # picks cores + 1 frame threads: on 2 cores one is always waiting for a core, and every seek (one per GOP
        # a sample touches) refills one more frame in flight, so the time a sample takes varied from run to run
        # (issue 28 item 8; `scripts/bench_frames.py --runs`, docs/benchmarks.md). Same frames either way.
        st.codec_context.thread_count = decode_threads()
        self._st = st
        pts, keys = [], []
        for pkt in self._c.demux(st):
            if pkt.pts is None or pkt.size == 0:
                continue
            pts.append(int(pkt.pts))
            if pkt.is_keyframe:
                keys.append(int(pkt.pts))
        if not pts:
            raise RuntimeError("no video packets")
        self._pts = np.array(sorted(pts), dtype=np.int64)
        self._keys = np.array(sorted(keys) or [int(self._pts[0])], dtype=np.int64)
        self.num_frames = len(self._pts)
        rate = st.average_rate or st.guessed_rate
        if rate:
            self.fps = float(rate)
        else:
            span = float((self._pts[-1] - self._pts[0]) * st.time_base) or 1.0
            self.fps = (self.num_frames - 1) / span
        self.width, self.height = st.codec_context.width, st.codec_context.height
        self.declared_frames = int(st.frames) if st.frames else None
        self._gen = None
        self._last_pts: int | None = None
        # One converter for the file's frames: ``VideoFrame.to_ndarray(format=...)`` builds a new swscale context
        # for every frame (~0.3 ms at 640x360, a tenth of a 32-frame sample); a reused one gives the same pixels
        # (tests/video/test_readers.py) from a cached context (scripts/bench_frames.py, issue 17 item 6).
        self._rgb = VideoReformatter()

    def _seek(self, key_pts: int):
        self._c.seek(int(key_pts), backward=True, any_frame=False, stream=self._st)
        self._gen = self._c.decode(self._st)
        self._last_pts = None

    def read(self, indices, transform):
        out = []
        for i in indices:
            if i >= self.num_frames:
                out.append(Decoded(None, problem=f"frame {i} is not in the file (it holds {self.num_frames} frames)"))
                continue
            target = int(self._pts[i])
            key = int(self._keys[np.searchsorted(self._keys, target, side="right") - 1])
            if self._gen is None or self._last_pts is None or target <= self._last_pts or key > self._last_pts:
                self._seek(key)
            frame, problem = None, None
            try:
                for fr in self._gen:
                    if fr.pts is None:
                        continue
                    self._last_pts = int(fr.pts)
                    if fr.pts >= target:
                        frame = fr
                        break
            except Exception as e:  # noqa: BLE001 - a corrupt packet: this frame is missing, the reader lives on
                problem = f"frame {i} could not be decoded ({type(e).__name__}: {e})"
            if frame is None:
                self._gen = None
                out.append(Decoded(None, problem=problem or f"frame {i} (pts {target}) could not be decoded"))
                continue
            # the frame produced, by its timestamp: frame i if it lies before the next packet's pts
            nxt = int(self._pts[i + 1]) if i + 1 < self.num_frames else None
            got = i if nxt is None or int(frame.pts) < nxt else int(
                np.searchsorted(self._pts, int(frame.pts), side="right") - 1)
            out.append(Decoded(got, transform(self._rgb.reformat(frame, format="rgb24").to_ndarray())))
        return out

    def close(self):
        super().close()
        try:
            self._c.close()
        finally:
            self._gen = None


class _OpenCVReader(_Reader):
    """OpenCV: seek (``CAP_PROP_POS_FRAMES``) for a far target, ``grab()`` forward for a near one."""

    backend = "opencv"
    GRAB_AHEAD = 64  # frames; beyond this a seek (to the previous keyframe) is usually no slower

    def __init__(self, path: str):
        super().__init__(path)
        import cv2

        self._cv2 = cv2
        cap = cv2.VideoCapture(path)
        if not cap.isOpened():
            raise RuntimeError("OpenCV could not open the file")
        self._cap = cap
        self.num_frames = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
        self.fps = float(cap.get(cv2.CAP_PROP_FPS))
        self.width = int(cap.get(cv2.CAP_PROP_FRAME_WIDTH))
        self.height = int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT))
        self.declared_frames = self.num_frames  # OpenCV takes the count from the header: reads past a cut fail
        if self.num_frames <= 0 or self.fps <= 0:
            raise RuntimeError("OpenCV reports no frame count / fps")
        self._next = 0  # index of the frame the next read() returns

    def read(self, indices, transform):
        cv2 = self._cv2
        out = []
        for i in indices:
            if i < self._next or i - self._next > self.GRAB_AHEAD:
                self._cap.set(cv2.CAP_PROP_POS_FRAMES, i)
                self._next = i
            grabbed = True
            while self._next < i:
                if not self._cap.grab():
                    grabbed = False
                    break
                self._next += 1
            ok, bgr = self._cap.read() if grabbed else (False, None)
            if not ok:
                self._next = -(10**9)  # force a seek next time
                out.append(Decoded(None, problem=f"frame {i} could not be read"))
                continue
            got = int(self._cap.get(cv2.CAP_PROP_POS_FRAMES)) - 1  # the frame just read, by the decoder's count
            self._next = got + 1
            out.append(Decoded(got, transform(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))))
        return out

    def close(self):
        super().close()
        self._cap.release()


_READERS = {"decord": _DecordReader, "pyav": _PyAVReader, "opencv": _OpenCVReader}


def open_reader(backend: str, path: str, *, ffmpeg_threads: int | None = None):
    """One backend's reader of ``path`` on its own, without the sampler's window rule and honest-frame checks (what
    ``scripts/bench_frames.py`` times against the sampler). ``ffmpeg_threads`` sets PyAV's decoding threads (0:
    FFmpeg's own choice, what the reader did before issue 28); the codec is not open yet, so it takes effect."""
    reader = _READERS[backend](path)
    if ffmpeg_threads is not None and backend == "pyav":
        reader._st.codec_context.thread_count = ffmpeg_threads
    return reader


def available_backends() -> list[str]:
    """Backends whose library imports here."""
    out = []
    for name, mod in (("opencv", "cv2"), ("decord", "decord"), ("pyav", "av")):  # cv2 first: see import_decord
        try:
            __import__(mod)
            out.append(name)
        except Exception:  # noqa: BLE001 - any import failure means "not available"
            pass
    return [b for b in ("decord", "pyav", "opencv") if b in out]
