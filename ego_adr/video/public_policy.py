"""The public white agent's clip: which frames it takes, what size they reach the model at, the rate it claims.

Why this exists: the paper's Table 4 numbers come from the public EgoErrorVQA white agent
(``src/white_agent/agent.py`` of z1oong/EgoErrorVQA), so reproducing them needs its inputs, not ours. Restated
here from reading that code (never copied):

* **Window.** The green agent writes the annotation's ``start_time``/``end_time`` into the message as text; the
  white agent reads them back with ``float`` -- an empty tag gives 0 s / 30 s, text that is not a number (the
  ``None`` of a null field) gives 0 s and 30 s for both (:func:`white_agent_window`).
* **Indices** (:func:`public_indices`). Both times negative: the whole video, first to last frame. Otherwise
  ``int(start * fps)`` and ``int(end * fps)`` (truncation, with the decoder's average rate, 30 when it reports
  none), clamped to the video; when the end is not after the start the end becomes ``start + N`` (clamped).
  Then ``N`` indices by ``linspace`` over the closed range with *both* endpoints, truncated to integers and
  clipped. Our own rule (bin centres, :func:`ego_adr.video.sampler.plan_indices`) never takes the end frame,
  which in contiguously annotated videos is the first frame of the next step.
* **Clip rate.** The white agent writes ``"fps": 1.0`` beside its frames, but that value never reaches the
  model: ``process_vision_info(messages)`` (qwen-vl-utils 0.0.14, frame-list path) does not read ``fps`` and
  returns no video kwargs unless asked, and the processor is called without ``fps``, so transformers 4.57.3's
  Qwen2.5-VL processor (the version the public code pins) uses its default ``fps = 2.0``
  (``second_per_grid_ts = 2 / 2.0``). :data:`PUBLIC_CLIP_FPS` is therefore 2.0, the rate the model saw;
  :data:`PUBLIC_MESSAGE_FPS` (1.0) is recorded beside it. Either way the rate ignores the window's length.
* **Frame size** (:func:`qwen_vl_utils_list_size`): the frames are a *list* of images, which qwen-vl-utils
  resizes in two passes (version 0.0.14, the release current when the public code was written; it pins no
  version): each frame as an image to multiples of 56 (the function receives the merged factor 28 where it
  expects the patch size 14, and doubles it), then the whole clip to multiples of 28 between 128 and 768
  merged-token cells per frame. Our default lets the model's own processor resize once (multiples of 28, at
  most 768 cells), which for 640x360 gives 364x644 instead of 336x616.
* **Frame count** is padded to an even number by repeating the last frame (qwen-vl-utils' frame factor 2).

Everything here is a pure function of numbers or arrays; :class:`ProtocolSampler` applies them on top of
:class:`~ego_adr.video.sampler.FrameSampler` (which owns decoding and the reader cache).
"""

from __future__ import annotations

import math

import numpy as np

PUBLIC_LINSPACE = "public-linspace"  # the white agent's index rule
BIN_CENTRE = "bin-centre"  # ours (sampler.plan_indices)
SAMPLING_RULES = (BIN_CENTRE, PUBLIC_LINSPACE)
QVU_0_0_14 = "qwen-vl-utils-0.0.14"
PROCESSOR = "processor"  # ours: the model's processor resizes (hf backend caps at 768 cells)
RESIZE_RULES = (PROCESSOR, QVU_0_0_14)
PUBLIC_CLIP_FPS = 2.0  # the rate the public agent's processor used (its default: the message's 1.0 is dropped)
PUBLIC_MESSAGE_FPS = 1.0  # what the white agent writes beside its frames
DEFAULT_FPS = 30.0  # the white agent's rate when the decoder reports none (``get_avg_fps() or 30.0``)
WHITE_DEFAULT_START, WHITE_DEFAULT_END = 0.0, 30.0  # the white agent's fallback window


def white_agent_window(start_raw: object, end_raw: object) -> tuple[float, float]:
    """The window (seconds, possibly negative) the white agent uses for the annotation values ``start_raw`` /
    ``end_raw`` as the green agent formats them into its message (``str()`` of the JSON value, stripped)."""
    s_txt, e_txt = str(start_raw).strip(), str(end_raw).strip()
    try:
        start = float(s_txt) if s_txt else WHITE_DEFAULT_START
        end = float(e_txt) if e_txt else WHITE_DEFAULT_END
    except ValueError:
        return WHITE_DEFAULT_START, WHITE_DEFAULT_END
    return start, end


def public_indices(total_frames: int, fps: float | None, start_sec: float, end_sec: float,
                   num_frames: int) -> tuple[list[int], tuple[float, float], dict]:
    """The white agent's frame indices for ``num_frames`` frames of ``[start_sec, end_sec]``.

    Same return shape as :func:`ego_adr.video.sampler.plan_indices`: indices, the window used in seconds
    (first and last frame's times) and the flags ``whole_video``, ``clamped``, ``duplicated``, ``notes``.
    """
    if num_frames < 1:
        raise ValueError(f"num_frames must be >= 1, got {num_frames}")
    if total_frames < 1:
        raise ValueError(f"video has no frames (frames={total_frames})")
    rate = fps or DEFAULT_FPS
    notes: list[str] = []
    whole = start_sec < 0 and end_sec < 0
    clamped = False
    if whole:
        first, last = 0, total_frames - 1
    else:
        first, last = int(start_sec * rate), int(end_sec * rate)
        if first < 0 or last > total_frames - 1:
            clamped = True
        first, last = max(0, first), min(total_frames - 1, last)
        if last <= first:
            last = min(first + num_frames, total_frames - 1)
            notes.append(f"end frame not after start frame: end set to start + {num_frames} (public rule)")
    idx = np.clip(np.linspace(first, last, num_frames, dtype=int), 0, total_frames - 1)
    indices = [int(i) for i in idx]
    flags = {"whole_video": whole, "clamped": clamped, "duplicated": len(set(indices)) < num_frames,
             "notes": notes}
    return indices, (first / rate, last / rate), flags


def _round(x: float, f: int) -> int:
    return round(x / f) * f


def _smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """qwen-vl-utils' size rule: nearest multiples of ``factor``, scaled (aspect kept) into the pixel range."""
    h = max(factor, _round(height, factor))
    w = max(factor, _round(width, factor))
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h, w = math.floor(height / beta / factor) * factor, math.floor(width / beta / factor) * factor
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h, w = math.ceil(height * beta / factor) * factor, math.ceil(width * beta / factor) * factor
    return h, w


def qwen_vl_utils_list_size(height: int, width: int, num_frames: int) -> list[tuple[int, int]]:
    """(height, width) after each of qwen-vl-utils 0.0.14's two passes over a list of ``num_frames`` frames.

    Pass 1, per frame as an image: factor 56, 4..16384 cells of 56x56. Pass 2, the clip: factor 28, per frame
    between 128 and min(768, 0.9 * 128000 * 2 / frames) cells of 28x28 (its default sequence budget).
    """
    f1 = 56
    h1, w1 = _smart_resize(height, width, f1, 4 * f1 * f1, 16384 * f1 * f1)
    n = num_frames + (num_frames % 2)
    cell = 28 * 28
    min_px = 128 * cell
    max_px = max(min(768 * cell, 128000 * cell * 0.9 / n * 2), int(min_px * 1.05))
    h2, w2 = _smart_resize(h1, w1, 28, min_px, int(max_px))
    return [(h1, w1), (h2, w2)]


def pad_even(array: np.ndarray) -> np.ndarray:
    """Repeat the last frame to an even count, as qwen-vl-utils does for a frame list."""
    return array if len(array) % 2 == 0 else np.concatenate([array, array[-1:]], axis=0)


def resize_like_qwen_vl_utils(array: np.ndarray) -> np.ndarray:
    """uint8 ``(N, H, W, 3)`` frames -> what qwen-vl-utils 0.0.14 hands the processor for a frame list, as
    float32 ``(N', H', W', 3)`` (``N'`` = ``N`` padded to even).

    Its arithmetic and interpolation, restated: pass 1 resizes each frame as a Pillow image (``Image.resize``
    with its default filter, bicubic for RGB) to :func:`qwen_vl_utils_list_size`'s first size; the list is
    padded to an even length with the last frame and stacked into a uint8 ``(T, C, H, W)`` tensor; pass 2 is
    torchvision's ``resize`` on that stack (bicubic, ``antialias=True``; torchvision rounds and clamps uint8
    results), converted to float32. The float dtype matters: a processor that resizes again gives other pixels
    for float input than for uint8 (docs/stack-notes.md), so the frames reach it as floats, like the public agent's.
    """
    import torch
    from PIL import Image
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms import functional as tvf

    n, h, w = array.shape[:3]
    (h1, w1), (h2, w2) = qwen_vl_utils_list_size(h, w, n)
    first = []
    for frame in pad_even(array):
        img = Image.fromarray(frame).convert("RGB")
        first.append(np.asarray(img.resize((w1, h1)), dtype=np.uint8))
    stack = torch.from_numpy(np.stack(first)).permute(0, 3, 1, 2).contiguous()
    video = tvf.resize(stack, [h2, w2], interpolation=InterpolationMode.BICUBIC, antialias=True).float()
    return np.ascontiguousarray(video.permute(0, 2, 3, 1).numpy())


def _has_decord() -> bool:
    try:
        from ego_adr.video.readers import import_decord

        import_decord()
        return True
    except ImportError:
        return False
