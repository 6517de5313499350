"""Thumbnails of exactly the frames a model received, re-read from the videos by their recorded indices.

Why re-read rather than re-sample: a row's ``frames_info`` records the video path, the decoder that produced
the frames and the frame indices actually used (after any recorded substitution). Sampling the window again --
with another policy, another frame count or another decoder's idea of the frame rate -- could show pictures the
model never saw. So this module asks the project's own readers (:mod:`ego_adr.video.readers`, through the
sampler's reader cache) for those indices and checks that the decoder returned each one; a frame it cannot
return is left out with the reason, never replaced.

Thumbnails are small JPEGs (``width`` pixels wide, aspect kept) in ``data:`` URIs, deduplicated by (video,
index): one 1,857-sample x 8-frame run stays a file a browser opens in seconds (docs/browser.md gives the
measurement).
"""

from __future__ import annotations

import base64
from collections import defaultdict
from pathlib import Path

import numpy as np

DEFAULT_WIDTH = 96
JPEG_QUALITY = 70


def frame_key(path: str, index: int) -> str:
    return f"{path}#{int(index)}"


def thumb_size(width: int, height: int, target_w: int) -> tuple[int, int]:
    """(w, h) of a thumbnail ``target_w`` wide with the frame's aspect (never upscaled, at least 1 pixel)."""
    w = min(int(target_w), int(width))
    return max(1, w), max(1, round(height * w / max(1, width)))


def resize(frame: np.ndarray, target_w: int) -> np.ndarray:
    """RGB uint8 frame -> thumbnail (area interpolation: what a small picture of the frame should look like)."""
    import cv2

    h, w = frame.shape[:2]
    tw, th = thumb_size(w, h, target_w)
    if (tw, th) == (w, h):
        return frame
    return cv2.resize(frame, (tw, th), interpolation=cv2.INTER_AREA)


def encode_jpeg(rgb: np.ndarray, quality: int = JPEG_QUALITY) -> str:
    import cv2

    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise ValueError("JPEG encoding failed")
    return "data:image/jpeg;base64," + base64.b64encode(buf.tobytes()).decode("ascii")


def wanted_frames(rows: list[dict]) -> dict[tuple[str, str], set[int]]:
    """``{(video path, backend): {frame indices}}`` over the rows that recorded their frames."""
    want: dict[tuple[str, str], set[int]] = defaultdict(set)
    for r in rows:
        fi = r.get("frames_info") if isinstance(r, dict) else None
        if not isinstance(fi, dict) or not fi.get("path") or not isinstance(fi.get("indices"), list):
            continue
        want[(str(fi["path"]), str(fi.get("backend") or "auto"))].update(int(i) for i in fi["indices"])
    return want


def read_thumbnails(rows: list[dict], width: int = DEFAULT_WIDTH) -> tuple[dict[str, str], dict[str, str]]:
    """``(thumbs, problems)``: ``thumbs[frame_key(path, i)]`` = a JPEG data URI of frame ``i``; ``problems``
    maps a video path (or a frame key) to why its frames could not be shown. ``width <= 0``: no thumbnails."""
    thumbs: dict[str, str] = {}
    problems: dict[str, str] = {}
    if width <= 0:
        return thumbs, problems
    from ego_adr.video.sampler import BACKENDS, FrameSampler, VideoError

    samplers: dict[str, FrameSampler] = {}
    try:
        for (path, backend), idx in sorted(wanted_frames(rows).items()):
            if not Path(path).is_file():
                problems[path] = "video not found"
                continue
            be = backend if backend in BACKENDS else "auto"
            sampler = samplers.setdefault(be, FrameSampler(backend=be, max_open=2))
            try:
                reader = sampler.reader(path)
                with reader.lock:
                    got = reader.read(sorted(idx), lambda f: resize(f, width))
            except (VideoError, RuntimeError, OSError, ValueError) as e:
                problems[path] = f"cannot read the video ({type(e).__name__}: {e})"[:300]
                continue
            for want_i, d in zip(sorted(idx), got, strict=True):
                if d.frame is None or d.index != want_i:
                    problems[frame_key(path, want_i)] = d.problem or f"decoder returned frame {d.index}"
                    continue
                thumbs[frame_key(path, want_i)] = encode_jpeg(d.frame)
    finally:
        for s in samplers.values():
            s.close()
    return thumbs, problems
