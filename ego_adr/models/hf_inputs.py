"""Turning protocol requests into what a Hugging Face processor takes.

Kept apart from :mod:`ego_adr.models.hf` so the conversion (pure Python + numpy) can be read and tested without
loading a model. Frames become ``{"type": "video"}`` parts whose arrays go to the processor's ``videos`` argument,
in order, each with a ``video_metadata`` dict whose ``fps`` is the rate of the *sampled* frames: Qwen2.5-VL
derives its temporal position ids from it (``second_per_grid_ts = temporal_patch_size / fps``) and Qwen3-VL its
timestamps; without it the processors assume 24 fps (docs/stack-notes.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ego_adr.models.base import BadRequest, Frames, Request  # noqa: F401  (BadRequest: re-exported)

ROLES = ("system", "user", "assistant")


@dataclass
class ProcessorInput:
    conversation: list[dict]
    videos: list = field(default_factory=list)
    metadata: list[dict] = field(default_factory=list)
    resized_by: list = field(default_factory=list)  # per video: Frames.resized_by


def processor_video(frames: Frames):
    """What the processor's ``videos`` gets for one clip: the uint8 ``(N, H, W, 3)`` array as it is, or float
    frames as a float32 ``(T, C, H, W)`` tensor -- the layout and dtype qwen-vl-utils returns and the public
    white agent passes on."""
    if frames.array.dtype == np.uint8:
        return frames.array
    import torch

    return torch.from_numpy(np.ascontiguousarray(frames.array)).permute(0, 3, 1, 2).contiguous()


def video_metadata(frames: Frames) -> dict:
    """Metadata of a clip of already-sampled frames: every frame is kept (``frames_indices`` = all), so the
    processor's ``sampled_fps`` equals ``frames.fps``."""
    n, h, w = (int(x) for x in frames.array.shape[:3])
    return {
        "total_num_frames": n,
        "fps": float(frames.fps),
        "duration": n / float(frames.fps),
        "width": w,
        "height": h,
        "frames_indices": list(range(n)),
    }


def to_processor_input(request: Request, metadata=None) -> ProcessorInput:
    """Check a request and convert it; raise :class:`BadRequest` with the reason when it is malformed.
    ``metadata``: the family's video-metadata function (default :func:`video_metadata`)."""
    if not isinstance(request, Request):
        raise BadRequest(f"expected a Request, got {type(request).__name__}")
    if not request.messages:
        raise BadRequest("request has no messages")
    out = ProcessorInput(conversation=[])
    for i, msg in enumerate(request.messages):
        role = getattr(msg, "role", None)
        content = getattr(msg, "content", None)
        if role not in ROLES:
            raise BadRequest(f"message {i}: role must be one of {ROLES}, got {role!r}")
        if isinstance(content, (str, Frames)):
            content = [content]
        if not isinstance(content, list) or not content:
            raise BadRequest(f"message {i}: content must be a non-empty list of text and Frames parts")
        parts = []
        for j, part in enumerate(content):
            if isinstance(part, str):
                parts.append({"type": "text", "text": part})
            elif isinstance(part, Frames):
                if part.num_frames < 1:
                    raise BadRequest(f"message {i} part {j}: Frames has no frames")
                if not part.fps or part.fps <= 0:
                    raise BadRequest(f"message {i} part {j}: Frames.fps must be > 0, got {part.fps}")
                if part.array.shape[1] < 2 or part.array.shape[2] < 2:
                    raise BadRequest(f"message {i} part {j}: frames of size {part.array.shape[1:3]} are too small")
                if role != "user":
                    raise BadRequest(f"message {i}: frames are only accepted in user messages")
                parts.append({"type": "video"})
                out.videos.append(processor_video(part))
                out.metadata.append((metadata or video_metadata)(part))
                out.resized_by.append(part.resized_by)
            else:
                raise BadRequest(f"message {i} part {j}: expected str or Frames, got {type(part).__name__}")
        out.conversation.append({"role": role, "content": parts})
    if request.config.max_new_tokens < 1:
        raise BadRequest(f"max_new_tokens must be >= 1, got {request.config.max_new_tokens}")
    return out


def text_conversation(request: Request) -> list[dict]:
    """Plain-string conversation for text-only language models (the open-ended judges); a message's text parts
    are joined by newlines."""
    pi = to_processor_input(request)
    if pi.videos:
        raise BadRequest("this model is text-only and cannot take video frames")
    return [{"role": m["role"], "content": "\n".join(p["text"] for p in m["content"])} for m in pi.conversation]


def render_text_prompt(tokenizer, conversation: list[dict]) -> str:
    """A text LM's prompt: its chat template, or for a base model without one a plain transcript ending with
    the assistant's turn."""
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(conversation, tokenize=False, add_generation_prompt=True)
    turns = [f"{m['role'].capitalize()}: {m['content']}" for m in conversation]
    return "\n\n".join(turns) + "\n\nAssistant:"


# qwen-vl-utils' reference per-frame cap for video (VIDEO_MAX_PIXELS = 768 x 28 x 28): 768 merged-token cells.
REFERENCE_MAX_CELLS = 768


def qwen_pixel_kwargs(video_processor, max_pixels_per_frame: int | None, cap: int | None = None) -> dict:
    """Video-processor kwargs bounding the pixels of each frame, for processors that resize to a pixel area
    (the Qwen-VL family: ``size = {shortest_edge, longest_edge}`` in pixels, rounded to whole merged patches).

    ``max_pixels_per_frame`` (explicit, honoured as given) else the smallest of the processor's own
    ``longest_edge``, the reference cap of 768 cells, and ``cap`` (the memory planner's choice). Hub configs of
    Qwen2/2.5-VL leave the video cap at the image cap (12.8 M pixels), i.e. native resolution, which is what makes
    32 full-HD frames overflow a 24 GB GPU.

    Returns no ``size`` for processors with a fixed input resolution (LLaVA-OneVision, Video-LLaVA, InternVL),
    whose per-frame token count does not depend on a pixel budget.
    """
    size = getattr(video_processor, "size", None)
    patch = getattr(video_processor, "patch_size", None)
    merge = getattr(video_processor, "merge_size", None)
    kw: dict = {}
    if hasattr(video_processor, "cap_pixels_per_frame"):
        kw["cap_pixels_per_frame"] = True  # the reference (qwen-vl-utils) behaviour; silences the warning
    if getattr(video_processor, "do_sample_frames", False):
        kw["do_sample_frames"] = False  # we pass exactly the frames we sampled
    if not isinstance(patch, int) or not isinstance(merge, int) or "longest_edge" not in (size or {}):
        return kw
    unit = (patch * merge) ** 2
    if max_pixels_per_frame is not None:
        budget = int(max_pixels_per_frame)
    else:
        budget = min(int(size["longest_edge"]), REFERENCE_MAX_CELLS * unit, cap or 1 << 62)
    budget = max(unit, (budget // unit) * unit)
    kw["size"] = {"shortest_edge": min(int(size["shortest_edge"]), budget), "longest_edge": budget}
    return kw
