"""LLaVA-OneVision (paper Tables 3-4): SigLIP at a fixed resolution plus a Qwen2 language model. A video is one
``<video>`` placeholder that the processor expands to a fixed number of tokens per frame (the vision grid pooled
2x2), so no pixel budget applies."""

from __future__ import annotations

import math

from ego_adr.models.families.spec import Arch, Family, HubModel, fixed_arch

CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['content'] is string -%}{{- message['content'] -}}"
    "{%- else -%}{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'image' -%}{{- '<image>\\n' -}}"
    "{%- elif part['type'] == 'video' -%}{{- '<video>\\n' -}}{%- endif -%}"
    "{%- endfor -%}{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'text' -%}{{- part['text'] -}}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)
SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<image>", "<video>")


def arch_from_config(cfg: dict, params_b: float) -> Arch | None:
    vis = cfg.get("vision_config") or {}
    side = int(vis.get("image_size", 384)) // int(vis.get("patch_size", 14))
    pooled = math.ceil(side / 2) ** 2  # video frames are pooled 2x2 (bilinear) before the projector
    return fixed_arch(cfg, params_b, pooled, side * side, tokens_per_clip=1)  # + one newline token per clip


def tiny_parts():
    from transformers import (
        LlavaOnevisionConfig,
        LlavaOnevisionImageProcessor,
        LlavaOnevisionProcessor,
        LlavaOnevisionVideoProcessor,
    )

    from ego_adr.models.families.tokenizer import TINY_TEXT_DIMS, build_tokenizer, tiny_vocab_size

    tok = build_tokenizer(special_tokens=SPECIAL, chat_template=CHAT_TEMPLATE)
    image_id, video_id, eos, pad = tok.convert_tokens_to_ids(["<image>", "<video>", "<|im_end|>", "<|endoftext|>"])
    proc = LlavaOnevisionProcessor(
        image_processor=LlavaOnevisionImageProcessor(size={"height": 56, "width": 56},
                                                     image_grid_pinpoints=[[56, 56]]),
        tokenizer=tok, video_processor=LlavaOnevisionVideoProcessor(size={"height": 56, "width": 56}),
        chat_template=CHAT_TEMPLATE, num_image_tokens=16, vision_feature_select_strategy="full",
    )
    config = LlavaOnevisionConfig(
        text_config=dict(model_type="qwen2", vocab_size=tiny_vocab_size(tok), **TINY_TEXT_DIMS,
                         eos_token_id=eos, pad_token_id=pad, bos_token_id=pad),
        vision_config=dict(model_type="siglip_vision_model", hidden_size=32, intermediate_size=64,
                           num_hidden_layers=2, num_attention_heads=2, image_size=56, patch_size=14),
        image_token_index=image_id, video_token_index=video_id, vision_feature_select_strategy="full",
        vision_feature_layer=-1, image_grid_pinpoints=[[56, 56]],
    )
    return config, proc


FAMILY = Family(
    name="llava-onevision",
    kind="vlm",
    model_types=("llava_onevision",),
    text_only=True,
    chat_style="ChatML turns, no default system turn; '<video>\\n' before the turn's text",
    hub=(HubModel("llava-onevision", "llava-hf/llava-onevision-qwen2-7b-ov-hf", "paper Tables 3-4",
                  # SigLIP-400M at 384 px: 27x27 patches, pooled 2x2 to 196 tokens per video frame.
                  Arch(8.03, 3584, 28, 4, 128, 18944, v_hidden=1152, v_intermediate=4304, tokens_per_frame=196,
                       patches_per_frame=729, tokens_per_clip=1)),),
    tiny_parts=tiny_parts,
    arch_from_config=arch_from_config,
    equal_frames_in_batch=True,
)
