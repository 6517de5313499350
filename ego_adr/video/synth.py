"""Generated videos for tests, the embedded demo and benchmarks (no downloads).

:func:`make_test_video` writes frames that carry their own index as a 16-bit bar code (16 black/white cells
across the top half, thick enough to survive H.264/MPEG-4 compression and resizing), so a test can read back
*which* frames a decoder returned (:func:`read_frame_index`). :func:`make_public_layout_videos` writes one small
generated video at the public path of every distinct ``Sample.video_path``, long enough to cover that video's
annotated windows, so the real annotations run end to end without the source datasets.

PyAV (libx264) writes H.264; OpenCV can only write ``mp4v`` here (docs/stack-notes.md, video decoding).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from fractions import Fraction
from pathlib import Path

import numpy as np

BITS = 16  # frame indices up to 65535 (a 10-min 30-fps video has 18000 frames)


def write_video(
    path: str | os.PathLike,
    frames: Iterable[np.ndarray] | np.ndarray,
    fps: float,
    codec: str = "h264",
    gop: int | None = None,
    crf: int = 23,
    preset: str = "ultrafast",
    writer: str = "auto",
) -> Path:
    """Write RGB uint8 frames ``(H, W, 3)`` to ``path``.

    ``codec``: ``"h264"`` (PyAV, libx264) or ``"mp4v"`` (PyAV's MPEG-4 encoder, else OpenCV). ``gop``: keyframe
    interval in frames (``None`` = encoder default); long GOPs mimic the real datasets, where a random access
    costs a keyframe seek plus up to ``gop`` decoded frames. Width and height must be even (yuv420p).
    The file is written to a temporary name and renamed, so a crash never leaves a half-written video behind.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{os.getpid()}{path.suffix}")
    if codec not in ("h264", "mp4v"):
        raise ValueError(f"codec must be 'h264' or 'mp4v', got {codec!r}")
    use_cv = writer == "opencv" or (codec == "mp4v" and writer == "auto" and not _has_av())
    if codec == "h264" and writer == "opencv":
        raise ValueError("OpenCV cannot write H.264 here; use writer='pyav' or codec='mp4v'")
    try:
        if use_cv:
            _write_cv(tmp, frames, fps)
        else:
            _write_av(tmp, frames, fps, codec, gop, crf, preset)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return path


def _has_av() -> bool:
    try:
        import av  # noqa: F401

        return True
    except ImportError:
        return False


def _write_av(path, frames, fps, codec, gop, crf, preset):
    import av

    rate = Fraction(fps).limit_denominator(1001)
    with av.open(str(path), "w") as out:
        st = None
        for f in frames:
            if st is None:
                h, w = f.shape[:2]
                if h % 2 or w % 2:
                    raise ValueError(f"frame size must be even for yuv420p, got {w}x{h}")
                opts = {}
                if codec == "h264":
                    st = out.add_stream("libx264", rate=rate)
                    opts = {"crf": str(crf), "preset": preset}
                    if gop:  # fixed GOP: no scene-cut keyframes, so random access cost is predictable
                        opts["x264-params"] = f"keyint={gop}:min-keyint={gop}:scenecut=0"
                else:
                    st = out.add_stream("mpeg4", rate=rate)
                    st.codec_context.bit_rate = max(200_000, w * h * 4)
                if gop:
                    st.codec_context.gop_size = gop
                st.width, st.height, st.pix_fmt = w, h, "yuv420p"
                st.options = opts
            vf = av.VideoFrame.from_ndarray(np.ascontiguousarray(f, dtype=np.uint8), format="rgb24")
            for pkt in st.encode(vf):
                out.mux(pkt)
        if st is None:
            raise ValueError("no frames to write")
        for pkt in st.encode():
            out.mux(pkt)


def _write_cv(path, frames, fps):
    import cv2

    vw = None
    try:
        for f in frames:
            if vw is None:
                h, w = f.shape[:2]
                vw = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), float(fps), (w, h))
                if not vw.isOpened():
                    raise RuntimeError(f"OpenCV could not open a writer for {path}")
            vw.write(cv2.cvtColor(np.ascontiguousarray(f, dtype=np.uint8), cv2.COLOR_RGB2BGR))
        if vw is None:
            raise ValueError("no frames to write")
    finally:
        if vw is not None:
            vw.release()


# ------------------------------------------------------------------------------------------ indexed frames
def index_frame(index: int, size: tuple[int, int] = (160, 120), texture: np.ndarray | None = None) -> np.ndarray:
    """An RGB frame whose top half is the 16-bit bar code of ``index`` (MSB first; white = 1) and whose bottom
    half is a colour that changes with the index plus a moving square (some motion for the encoder).
    ``texture`` (same size, uint8, values < 128) is added to half the colour in the bottom half, to make the
    decoding cost realistic."""
    w, h = size
    if not 0 <= index < 2**BITS:
        raise ValueError(f"index {index} does not fit in {BITS} bits")
    f = np.empty((h, w, 3), np.uint8)
    top = h // 2
    col_bit = (np.arange(w) * BITS) // w  # which bit each column shows (cell b spans b*w//BITS ..)
    f[:top] = (((index >> (BITS - 1 - col_bit)) & 1) * 255).astype(np.uint8)[None, :, None]
    colour = np.array([(index * 37) % 200 + 30, (index * 11) % 200 + 30, (index * 5) % 200 + 30], np.uint8)
    if texture is None:
        f[top:] = colour
    else:
        np.add(texture[top:], colour // 2, out=f[top:])
    sq = max(4, h // 8)
    x = (index * 3) % max(1, w - sq)
    f[h - sq - 2 : h - 2, x : x + sq] = 255
    return f


def read_frame_index(frame: np.ndarray) -> int:
    """Read back the index drawn by :func:`index_frame` (works after compression and uniform resizing)."""
    h, w = frame.shape[:2]
    top = h // 2
    gray = frame[:top].astype(np.float32).mean(axis=2)
    value = 0
    for b in range(BITS):
        x0, x1 = b * w / BITS, (b + 1) * w / BITS
        cx0, cx1 = int(x0 + (x1 - x0) * 0.3), max(int(x0 + (x1 - x0) * 0.7), int(x0 + (x1 - x0) * 0.3) + 1)
        cell = gray[int(top * 0.2) : int(top * 0.8), cx0:cx1]
        value = (value << 1) | int(cell.mean() > 127)
    return value


def make_test_video(
    path: str | os.PathLike,
    seconds: float,
    fps: float = 8,
    size: tuple[int, int] = (160, 120),
    codec: str = "h264",
    gop: int | None = None,
    textured: bool = False,
    seed: int = 0,
    **write_kw,
) -> Path:
    """A video of ``round(seconds * fps)`` frames, frame ``i`` showing index ``i`` (see :func:`index_frame`).
    ``textured`` adds moving noise to the bottom half so that decoding costs about what real footage costs
    (benchmarks); tests leave it off (smaller, faster files)."""
    n = max(1, int(round(seconds * fps)))
    w, h = size
    textures = None
    if textured:  # smooth noise panning slowly, like a moving camera: realistic bitrate and decode cost
        import cv2

        rng = np.random.default_rng(seed)
        small = rng.integers(0, 256, (h // 12 + 2, w // 12 + 2, 3), dtype=np.uint8)
        base = cv2.resize(small, (w + 64, h + 64), interpolation=cv2.INTER_CUBIC)
        textures = [np.ascontiguousarray(base[k % 64 : k % 64 + h, (2 * k) % 64 : (2 * k) % 64 + w]) // 2
                    for k in range(64)]

    def gen():
        for i in range(n):
            yield index_frame(i, size, None if textures is None else textures[i % len(textures)])

    return write_video(path, gen(), fps, codec=codec, gop=gop, **write_kw)


def make_truncated_video(
    path: str | os.PathLike, seconds: float, fps: float = 10, keep: float = 0.5, gop: int = 20,
    size: tuple[int, int] = (160, 120),
) -> Path:
    """An indexed H.264 MP4 (see :func:`make_test_video`) with its index (``moov``) at the front and only the first
    ``keep`` fraction of its bytes: what an interrupted download or copy leaves. The header still declares every
    frame; the frames after the cut are gone (decoders report fewer frames, or fail to read them)."""
    import av

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    full = path.with_name(f".{path.stem}.full{os.getpid()}{path.suffix}")
    n = max(1, int(round(seconds * fps)))
    try:
        with av.open(str(full), "w", options={"movflags": "faststart"}) as out:
            st = out.add_stream("libx264", rate=Fraction(fps).limit_denominator(1001))
            st.width, st.height, st.pix_fmt = size[0], size[1], "yuv420p"
            st.options = {"preset": "ultrafast", "x264-params": f"keyint={gop}:min-keyint={gop}:scenecut=0"}
            for i in range(n):
                for pkt in st.encode(av.VideoFrame.from_ndarray(index_frame(i, size), format="rgb24")):
                    out.mux(pkt)
            for pkt in st.encode():
                out.mux(pkt)
        data = full.read_bytes()
    finally:
        if full.exists():
            full.unlink()
    path.write_bytes(data[: int(len(data) * keep)])
    return path


def make_public_layout_videos(
    samples,
    video_root: str | os.PathLike | None = None,
    seconds: float = 10.0,
    fps: float = 1.0,
    size: tuple[int, int] = (160, 120),
    codec: str = "h264",
    gop: int | None = 250,
    margin: float = 2.0,
    overwrite: bool = False,
) -> dict[str, float]:
    """Write one generated video at each distinct ``sample.video_path`` (relative paths are taken under
    ``video_root``), long enough to cover the latest ``end`` annotated for that video plus ``margin`` seconds
    (at least ``seconds``). Real windows reach past 1000 s, hence the defaults: 1 fps, 160x120, long GOP.
    Existing files are kept unless ``overwrite``. Returns ``{path: duration_seconds}`` of the videos needed."""
    want: dict[str, float] = {}
    for s in samples:
        vp = getattr(s, "video_path", None)
        if not vp:
            continue
        p = Path(vp)
        if not p.is_absolute():
            if video_root is None:
                raise ValueError(f"relative video path {vp!r} needs video_root")
            p = Path(video_root) / p
        end = getattr(s, "end", None)
        need = seconds if end is None or end < 0 else max(seconds, float(end) + margin)
        key = str(p)
        want[key] = max(want.get(key, 0.0), need)
    from tqdm import tqdm

    todo = [(p, d) for p, d in want.items() if overwrite or not Path(p).exists()]
    for p, d in tqdm(todo, desc="generating videos", disable=len(todo) < 5):
        make_test_video(p, d, fps=fps, size=size, codec=codec, gop=gop)
    return want
