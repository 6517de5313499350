"""Qwen2-VL: deep decoupling in the paper (Tables 3-6)."""

from __future__ import annotations

from ego_adr.models.families._qwen import CHAT_STYLE, TINY_MAX_PIXELS, TINY_MIN_PIXELS, pixel_kwargs
from ego_adr.models.families.spec import Arch, Family, HubModel, qwen_vl_arch


def tiny_parts():
    from transformers import Qwen2VLConfig, Qwen2VLImageProcessor, Qwen2VLProcessor, Qwen2VLVideoProcessor

    from ego_adr.models.families._qwen import text_config, video_processor_extra, vision_token_ids
    from ego_adr.models.families.tokenizer import CHAT_TEMPLATE, build_tokenizer

    tok = build_tokenizer()
    vision = dict(depth=2, embed_dim=32, hidden_size=64, mlp_ratio=2, num_heads=2, patch_size=14,
                  spatial_merge_size=2, temporal_patch_size=2)
    config = Qwen2VLConfig(text_config=text_config(tok), vision_config=vision, **vision_token_ids(tok))
    size = {"shortest_edge": TINY_MIN_PIXELS, "longest_edge": TINY_MAX_PIXELS}
    proc = Qwen2VLProcessor(image_processor=Qwen2VLImageProcessor(size=size), tokenizer=tok,
                            video_processor=Qwen2VLVideoProcessor(size=size, **video_processor_extra()),
                            chat_template=CHAT_TEMPLATE)
    return config, proc


FAMILY = Family(
    name="qwen2-vl",
    kind="vlm",
    model_types=("qwen2_vl",),
    text_only=True,
    chat_style=CHAT_STYLE,
    hub=(HubModel("qwen2-vl", "Qwen/Qwen2-VL-7B-Instruct", "paper Tables 3-6; Ego-ADR deep decoupling",
                  Arch(8.29, 3584, 28, 4, 128, 18944, v_hidden=1280, v_intermediate=5120)),),
    tiny_parts=tiny_parts,
    arch_from_config=qwen_vl_arch,
    video_kwargs=pixel_kwargs,
    pixel_budget=True,
)
