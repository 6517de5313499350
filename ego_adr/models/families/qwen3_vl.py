"""Qwen3-VL (paper Tables 3-4): 16-px patches (32x32-pixel token cells), and a video layout with a text
timestamp ``<t seconds>`` before every temporal patch, computed from the video metadata's fps and frame indices
(so the metadata must describe the *sampled* frames)."""

from __future__ import annotations

from ego_adr.models.families.spec import Arch, Family, HubModel, qwen_vl_arch
from ego_adr.models.families.tokenizer import chat_template
from ego_adr.models.hf_inputs import REFERENCE_MAX_CELLS

_8B = dict(hidden=4096, layers=36, kv_heads=8, head_dim=128, intermediate=12288)
_32B = dict(hidden=5120, layers=64, kv_heads=8, head_dim=128, intermediate=25600)

# Qwen3-VL's own template: no default system turn (unlike Qwen2/2.5-VL).
CHAT_TEMPLATE = chat_template(None)

TINY_MAX_PIXELS = 128 * 128  # per frame: 4x4 cells of 32x32 px
TINY_MIN_PIXELS = 64 * 64


def pixel_kwargs(video_processor, max_pixels_per_frame: int | None, cap: int | None) -> dict:
    """Qwen3-VL's video processor reads ``size["longest_edge"]`` as the budget of the *whole clip* (frames x
    pixels), unlike Qwen2/2.5-VL where it bounds each frame; with ``cap_pixels_per_frame`` it also caps each frame
    at ``max_video_tokens`` token cells (qwen-vl-utils' reference behaviour). So a per-frame budget becomes
    ``max_video_tokens``: the explicit one as given, else the smallest of the processor's own cap, the reference
    768 cells and the memory planner's ``cap``; the clip budget stays the processor's own."""
    unit = (int(video_processor.patch_size) * int(video_processor.merge_size)) ** 2
    if max_pixels_per_frame is not None:
        budget = int(max_pixels_per_frame)
    else:
        own = int(getattr(video_processor, "max_video_tokens", REFERENCE_MAX_CELLS)) * unit
        budget = min(own, REFERENCE_MAX_CELLS * unit, cap or 1 << 62)
    cells = max(1, budget // unit)
    # its resize reads the cap from the processor itself, not from call kwargs: set it on our loaded instance
    video_processor.max_video_tokens = cells
    kw: dict = {"cap_pixels_per_frame": True, "max_video_tokens": cells}
    if getattr(video_processor, "do_sample_frames", False):
        kw["do_sample_frames"] = False  # we pass exactly the frames we sampled
    return kw


def v4_clips(video_processor, clips: list, kwargs: dict) -> tuple[list, dict]:
    """transformers 4.57's Qwen3-VL video processor predates the per-frame cap: ``cap_pixels_per_frame`` and
    ``max_video_tokens`` came with 5.x, and 4.57 bounds the *whole clip* by ``size.longest_edge``, one value for
    every clip of a call. So on 4.57 each clip is resized here to the size 5.x's capped resize gives it (the
    processor's own ``smart_resize`` with 5.x's per-frame share, an antialiased bicubic resize), and the processor
    gets a clip budget that keeps that size. Token counts, and with them the planner's numbers and the timestamp
    layout, are then the same on both lines (tests/models/test_families.py runs under both)."""
    if "max_video_tokens" not in kwargs:
        return clips, kwargs
    import numpy as np
    import torch
    from torchvision.transforms.v2 import InterpolationMode
    from torchvision.transforms.v2.functional import resize
    from transformers.models.qwen3_vl.video_processing_qwen3_vl import smart_resize

    unit = int(video_processor.patch_size) * int(video_processor.merge_size)
    size = dict(video_processor.size)
    shortest, longest = int(size["shortest_edge"]), int(size["longest_edge"])
    frame_cap = int(kwargs["max_video_tokens"]) * unit * unit
    out = []
    for clip in clips:  # (T, H, W, 3), uint8 or float32 (see hf_inputs)
        n, h, w = (int(x) for x in clip.shape[:3])
        per_frame = max(min(frame_cap, longest // n), int(shortest * 1.05))  # 5.x's share per frame
        rh, rw = smart_resize(n, h, w, temporal_factor=int(video_processor.temporal_patch_size), factor=unit,
                              min_pixels=shortest, max_pixels=per_frame * n)
        if (rh, rw) != (h, w):
            t = torch.from_numpy(np.ascontiguousarray(clip)).permute(0, 3, 1, 2)
            t = resize(t, [rh, rw], interpolation=InterpolationMode.BICUBIC, antialias=True)
            clip = t.permute(0, 2, 3, 1).numpy()
        out.append(clip)
    kw = {k: v for k, v in kwargs.items() if k not in ("cap_pixels_per_frame", "max_video_tokens")}
    kw["size"] = {"shortest_edge": shortest, "longest_edge": 1 << 40}  # keep the size set here
    return out, kw


def tiny_parts():
    from transformers import Qwen2VLImageProcessor, Qwen3VLConfig, Qwen3VLProcessor, Qwen3VLVideoProcessor

    from ego_adr.models.families._qwen import text_config, vision_token_ids
    from ego_adr.models.families.tokenizer import build_tokenizer

    tok = build_tokenizer(chat_template=CHAT_TEMPLATE)
    text = text_config(tok, mrope_interleaved=True)
    text["head_dim"] = 16
    vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64, patch_size=16,
                  spatial_merge_size=2, temporal_patch_size=2, num_position_embeddings=16,
                  deepstack_visual_indexes=[1])
    config = Qwen3VLConfig(text_config=text, vision_config=vision, **vision_token_ids(tok))
    image_size = {"shortest_edge": TINY_MIN_PIXELS, "longest_edge": TINY_MAX_PIXELS}
    clip_size = {"shortest_edge": TINY_MIN_PIXELS, "longest_edge": TINY_MAX_PIXELS * 64}  # whole clip: 64 frames
    proc = Qwen3VLProcessor(
        image_processor=Qwen2VLImageProcessor(size=image_size, patch_size=16, merge_size=2), tokenizer=tok,
        video_processor=Qwen3VLVideoProcessor(size=clip_size, patch_size=16, merge_size=2, temporal_patch_size=2,
                                              max_video_tokens=TINY_MAX_PIXELS // (32 * 32)),
        chat_template=CHAT_TEMPLATE)
    return config, proc


FAMILY = Family(
    name="qwen3-vl",
    kind="vlm",
    model_types=("qwen3_vl", "qwen3_vl_moe"),
    text_only=True,
    chat_style="ChatML turns without a default system turn; a video is <|vision_start|><|video_pad|><|vision_end|>, "
               "expanded by the processor to '<t seconds>' + tokens per temporal patch",
    hub=(
        HubModel("qwen3-vl", "Qwen/Qwen3-VL-8B-Instruct", "paper Tables 3-4",
                 Arch(8.77, **_8B, v_hidden=1152, v_intermediate=4304, patch=16)),
        HubModel("qwen3-vl-32b", "Qwen/Qwen3-VL-32B-Instruct", "paper Tables 3-4; needs > 24 GB",
                 Arch(33.4, **_32B, v_hidden=1152, v_intermediate=4304, patch=16)),
    ),
    tiny_parts=tiny_parts,
    arch_from_config=qwen_vl_arch,
    video_kwargs=pixel_kwargs,
    v4_clips=v4_clips,
    pixel_budget=True,
)
