"""The frame sampler of a run's protocol (:mod:`ego_adr.reasoning.protocol`): the decoding of
:class:`~ego_adr.video.sampler.FrameSampler` with the protocol's index rule, clip rate and frame resizing from
:mod:`ego_adr.video.public_policy` (kept apart so that the pure rules never import the sampler)."""

from __future__ import annotations

from ego_adr.video.public_policy import (
    BIN_CENTRE,
    PROCESSOR,
    PUBLIC_LINSPACE,
    PUBLIC_MESSAGE_FPS,
    QVU_0_0_14,
    RESIZE_RULES,
    SAMPLING_RULES,
    _has_decord,
    resize_like_qwen_vl_utils,
)
from ego_adr.video.sampler import FrameSampler


class ProtocolSampler(FrameSampler):
    """A :class:`FrameSampler` with the protocol's index rule, clip rate and frame resizing.

    ``sampling``: :data:`BIN_CENTRE` or :data:`PUBLIC_LINSPACE`; ``clip_fps``: ``"true"`` (the sampled rate,
    ``N / window``) or the number given to the model's processor (public: 2.0, see the module docstring);
    ``resize``: :data:`PROCESSOR` (leave it to the model's processor) or :data:`QVU_0_0_14`. What was done is
    added to the clip's ``info.notes``; under the public sampling the clip also carries ``message_fps`` (1.0).
    """

    def __init__(self, sampling: str = BIN_CENTRE, clip_fps: str = "true", resize: str = PROCESSOR, **kw):
        if sampling not in SAMPLING_RULES:
            raise ValueError(f"sampling must be one of {SAMPLING_RULES}, got {sampling!r}")
        if resize not in RESIZE_RULES:
            raise ValueError(f"resize must be one of {RESIZE_RULES}, got {resize!r}")
        if clip_fps != "true":
            float(clip_fps)  # raises on a bad value
        if sampling == PUBLIC_LINSPACE:
            kw["policy"] = PUBLIC_LINSPACE
            # the white agent reads frame count and rate with decord; other readers may count a frame more or
            # round the rate differently, which moves int(t * fps) by a frame
            kw.setdefault("backend", "decord" if _has_decord() else "auto")
        super().__init__(**kw)
        self.sampling, self.clip_fps, self.resize = sampling, clip_fps, resize

    def sample_clip(self, path, start_sec, end_sec, num_frames, **kw):
        frames = super().sample_clip(path, start_sec, end_sec, num_frames, **kw)
        info = getattr(frames, "info", None)
        notes = [f"sampling={self.sampling}"]
        if self.resize == QVU_0_0_14:
            n_in = int(frames.array.shape[0])
            frames.array = resize_like_qwen_vl_utils(frames.array)  # float32, as qwen-vl-utils returns
            frames.resized_by = QVU_0_0_14
            notes.append(f"resize={QVU_0_0_14} -> {frames.array.shape[2]}x{frames.array.shape[1]}")
            n_out = int(frames.array.shape[0])
            if n_out != n_in:  # qwen-vl-utils pads an odd clip to its frame factor 2 by repeating the last frame
                notes.append(f"padded {n_in} -> {n_out} frames by repeating the last one (qwen-vl-utils frame factor)")
                if frames.timestamps:
                    frames.timestamps = tuple(frames.timestamps) + (frames.timestamps[-1],) * (n_out - n_in)
                if info is not None:
                    info.duplicated = True
        if self.clip_fps != "true":
            frames.fps = float(self.clip_fps)
            notes.append(f"clip_fps={frames.fps:g} (the true sampled rate is not sent)")
        if self.sampling == PUBLIC_LINSPACE:
            frames.message_fps = PUBLIC_MESSAGE_FPS  # type: ignore[attr-defined]
        if info is not None:
            info.notes = [*info.notes, *notes]
            info.frame_size = (int(frames.array.shape[2]), int(frames.array.shape[1]))
        return frames
