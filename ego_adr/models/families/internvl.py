"""InternVL3.5, the HF-native checkpoints (``OpenGVLab/InternVL3_5-*-HF``; paper Tables 3-4): InternViT at a
fixed 448 px with a 0.5 pixel shuffle (256 tokens per frame) and a Qwen3 language model. The processor reads four
named tokens from the tokenizer (``<img>``, ``</img>``, ``<IMG_CONTEXT>``, ``<video>``) and lays a video out as
``Frame1: <img><IMG_CONTEXT>...</img>`` lines, one per frame."""

from __future__ import annotations

from ego_adr.models.families.spec import Arch, Family, HubModel, fixed_arch

_8B = dict(hidden=4096, layers=36, kv_heads=8, head_dim=128, intermediate=12288)
_38B = dict(hidden=5120, layers=64, kv_heads=8, head_dim=128, intermediate=25600)

CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['content'] is string -%}{{- message['content'] -}}"
    "{%- else -%}{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'image' -%}{{- '<IMG_CONTEXT>\\n' -}}"
    "{%- elif part['type'] == 'video' -%}{{- '<video>\\n' -}}"
    "{%- elif part['type'] == 'text' -%}{{- part['text'] -}}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)
NAMED = {"start_image_token": "<img>", "end_image_token": "</img>", "context_image_token": "<IMG_CONTEXT>",
         "video_token": "<video>"}
SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", *NAMED.values())


def arch_from_config(cfg: dict, params_b: float) -> Arch | None:
    vis = cfg.get("vision_config") or {}
    size, patch = vis.get("image_size", 448), vis.get("patch_size", 14)
    side = (size[0] if isinstance(size, list) else int(size)) // (patch[0] if isinstance(patch, list) else int(patch))
    tokens = int(cfg.get("image_seq_length") or side * side * float(cfg.get("downsample_ratio", 0.5)) ** 2)
    return fixed_arch(cfg, params_b, tokens, side * side + 1)


def tiny_parts():
    from transformers import GotOcr2ImageProcessor, InternVLConfig, InternVLProcessor, InternVLVideoProcessor

    from ego_adr.models.families.tokenizer import TINY_TEXT_DIMS, build_tokenizer, tiny_vocab_size

    tok = build_tokenizer(special_tokens=SPECIAL, chat_template=CHAT_TEMPLATE, named=NAMED)
    ctx, eos, pad = tok.convert_tokens_to_ids(["<IMG_CONTEXT>", "<|im_end|>", "<|endoftext|>"])
    size = {"height": 56, "width": 56}
    proc = InternVLProcessor(
        image_processor=GotOcr2ImageProcessor(size=size, crop_to_patches=False),
        video_processor=InternVLVideoProcessor(size=size), tokenizer=tok, image_seq_length=4,
        chat_template=CHAT_TEMPLATE,
    )
    config = InternVLConfig(
        text_config=dict(model_type="qwen3", vocab_size=tiny_vocab_size(tok), **TINY_TEXT_DIMS, head_dim=16,
                         bos_token_id=pad, eos_token_id=eos, pad_token_id=pad),
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                           image_size=[56, 56], patch_size=[14, 14]),
        image_token_id=ctx, image_seq_length=4, downsample_ratio=0.5, vision_feature_layer=-1,
        tie_word_embeddings=False,
    )
    return config, proc


FAMILY = Family(
    name="internvl3.5",
    kind="vlm",
    model_types=("internvl",),
    text_only=True,
    chat_style="ChatML turns, no default system turn; '<video>\\n' expanded to one 'FrameN: <img>...</img>' "
               "line per frame",
    hub=(
        HubModel("internvl3.5", "OpenGVLab/InternVL3_5-8B-HF", "8B sibling of the paper's 38B",
                 # InternViT at 448 px: 1024 patches, pixel shuffle 0.5 -> 256 tokens per frame.
                 Arch(8.53, **_8B, v_hidden=1024, v_intermediate=4096, tokens_per_frame=256, patches_per_frame=1025)),
        HubModel("internvl3.5-38b", "OpenGVLab/InternVL3_5-38B-HF", "paper Tables 3-4; needs > 24 GB",
                 Arch(38.4, **_38B, v_hidden=3200, v_intermediate=12800, tokens_per_frame=256,
                      patches_per_frame=1025)),
    ),
    tiny_parts=tiny_parts,
    arch_from_config=arch_from_config,
    equal_frames_in_batch=True,
)
