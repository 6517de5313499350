"""Video-LLaVA (paper Tables 3-5): CLIP-L/14 at 224 px per frame plus Vicuna-7B, trained on 8-frame clips.

Its quirk that matters to Ego-ADR: it cannot take a prompt without visual input (paper Section 3.2), so
``text_only`` is false and the pipeline's text-only stages send a black clip instead (Section 6.4), and the probe
routes it to shallow decoupling. Vicuna-style turns (``USER: ... ASSISTANT:``)."""

from __future__ import annotations

from ego_adr.models.families.spec import Arch, Family, HubModel, fixed_arch

CHAT_TEMPLATE = (
    "{{- bos_token -}}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'system' -%}"
    "{%- if message['content'] is string -%}{{- message['content'] + ' ' -}}"
    "{%- else -%}{%- for part in message['content'] -%}{{- part['text'] + ' ' -}}{%- endfor -%}{%- endif -%}"
    "{%- else -%}"
    "{{- message['role'].upper() + ': ' -}}"
    "{%- if message['content'] is string -%}{{- message['content'] -}}"
    "{%- else -%}{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'image' -%}{{- '<image>\\n' -}}"
    "{%- elif part['type'] == 'video' -%}{{- '<video>\\n' -}}"
    "{%- elif part['type'] == 'text' -%}{{- part['text'] -}}{%- endif -%}"
    "{%- endfor -%}{%- endif -%}"
    "{%- if message['role'] == 'assistant' -%}{{- eos_token -}}{%- endif -%}{{- ' ' -}}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- 'ASSISTANT:' -}}{%- endif -%}"
)
SPECIAL = ("<pad>", "<s>", "</s>", "<image>", "<video>")


def arch_from_config(cfg: dict, params_b: float) -> Arch | None:
    vis = cfg.get("vision_config") or {}
    patches = (int(vis.get("image_size", 224)) // int(vis.get("patch_size", 14))) ** 2 + 1  # + CLS
    return fixed_arch(cfg, params_b, patches, patches, max_frames=8)


def tiny_parts():
    from transformers import (
        VideoLlavaConfig,
        VideoLlavaImageProcessor,
        VideoLlavaProcessor,
        VideoLlavaVideoProcessor,
    )

    from ego_adr.models.families.tokenizer import TINY_TEXT_DIMS, build_tokenizer, tiny_vocab_size

    tok = build_tokenizer(special_tokens=SPECIAL, eos="</s>", pad="<pad>", bos="<s>", chat_template=CHAT_TEMPLATE)
    image_id, video_id, bos, eos, pad = tok.convert_tokens_to_ids(["<image>", "<video>", "<s>", "</s>", "<pad>"])
    size, crop = {"shortest_edge": 28}, {"height": 28, "width": 28}
    proc = VideoLlavaProcessor(
        image_processor=VideoLlavaImageProcessor(size=size, crop_size=crop),
        video_processor=VideoLlavaVideoProcessor(size=size, crop_size=crop),
        tokenizer=tok, patch_size=14, vision_feature_select_strategy="default", num_additional_image_tokens=1,
        chat_template=CHAT_TEMPLATE,
    )
    config = VideoLlavaConfig(
        text_config=dict(model_type="llama", vocab_size=tiny_vocab_size(tok), **TINY_TEXT_DIMS,
                         bos_token_id=bos, eos_token_id=eos, pad_token_id=pad),
        vision_config=dict(model_type="clip_vision_model", hidden_size=32, intermediate_size=64,
                           num_hidden_layers=2, num_attention_heads=2, image_size=28, patch_size=14,
                           projection_dim=32),
        image_token_index=image_id, video_token_index=video_id, vision_feature_select_strategy="default",
        vision_feature_layer=-2, image_seq_length=4, video_seq_length=4 * 8,
    )
    return config, proc


FAMILY = Family(
    name="video-llava",
    kind="vlm",
    model_types=("video_llava",),
    text_only=False,
    chat_style="Vicuna turns: '<s>SYSTEM USER: <video>\\n... ASSISTANT:'",
    hub=(HubModel("video-llava", "LanguageBind/Video-LLaVA-7B-hf",
                  "no text-only input: shallow decoupling (Section 3.2)",
                  # Vicuna-7B (no grouped KV) + CLIP-L/14 at 224 px: 256 patches + CLS per frame, 8 frames.
                  Arch(7.36, 4096, 32, 32, 128, 11008, v_hidden=1024, v_intermediate=4096, tokens_per_frame=257,
                       patches_per_frame=257, max_frames=8)),),
    tiny_parts=tiny_parts,
    arch_from_config=arch_from_config,
    equal_frames_in_batch=True,
    max_frames=8,
    notes="trained on 8-frame clips; the planner refuses more frames, the backend passes what it is given",
)
