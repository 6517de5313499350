"""Qwen2.5-VL: the paper's main model (Tables 3-6; deep decoupling, Section 4.1)."""

from __future__ import annotations

from ego_adr.models.families._qwen import CHAT_STYLE, TINY_MAX_PIXELS, TINY_MIN_PIXELS, pixel_kwargs
from ego_adr.models.families.spec import Arch, Family, HubModel, qwen_vl_arch

_QWEN2_7B_TEXT = dict(hidden=3584, layers=28, kv_heads=4, head_dim=128, intermediate=18944)


def tiny_parts():
    """The demo model: its bytes must not change (the demo's predictions are checked byte for byte)."""
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLProcessor,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
    )

    from ego_adr.models.families._qwen import text_config, video_processor_extra, vision_token_ids
    from ego_adr.models.families.tokenizer import CHAT_TEMPLATE, build_tokenizer

    tok = build_tokenizer()
    vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64, patch_size=14,
                  spatial_merge_size=2, temporal_patch_size=2, window_size=112, fullatt_block_indexes=[1],
                  tokens_per_second=2)
    config = Qwen2_5_VLConfig(text_config=text_config(tok), vision_config=vision, **vision_token_ids(tok))
    size = {"shortest_edge": TINY_MIN_PIXELS, "longest_edge": TINY_MAX_PIXELS}
    proc = Qwen2_5_VLProcessor(image_processor=Qwen2VLImageProcessor(size=size), tokenizer=tok,
                               video_processor=Qwen2VLVideoProcessor(size=size, **video_processor_extra()),
                               chat_template=CHAT_TEMPLATE)
    return config, proc


FAMILY = Family(
    name="qwen2.5-vl",
    kind="vlm",
    model_types=("qwen2_5_vl",),
    text_only=True,
    chat_style=CHAT_STYLE,
    hub=(
        HubModel("qwen2.5-vl", "Qwen/Qwen2.5-VL-7B-Instruct", "paper's main model (Tables 3-6)",
                 Arch(8.29, **_QWEN2_7B_TEXT, v_hidden=1280, v_intermediate=3420)),
        HubModel("qwen2.5-vl-3b", "Qwen/Qwen2.5-VL-3B-Instruct", "smaller sibling, not in the paper",
                 Arch(3.75, 2048, 36, 2, 128, 11008, v_hidden=1280, v_intermediate=3420)),
    ),
    tiny_parts=tiny_parts,
    arch_from_config=qwen_vl_arch,
    video_kwargs=pixel_kwargs,
    pixel_budget=True,
    notes="video metadata fps sets the temporal position ids (second_per_grid_ts = temporal_patch / fps)",
)
