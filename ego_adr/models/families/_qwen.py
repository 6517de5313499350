"""What the three Qwen-VL families share: their placeholder tokens, the ChatML-with-vision chat template of the
tiny models, the language model's tiny config and the pixel-budget video settings."""

from __future__ import annotations

from ego_adr.models.hf_inputs import qwen_pixel_kwargs

# Per-frame pixel budget of the tiny models' video processors: 8x8 patches of 14 px -> 16 tokens per 2 frames.
# Small on purpose so that 8 frames with 256 new tokens stay around a second on CPU.
TINY_MAX_PIXELS = 112 * 112
TINY_MIN_PIXELS = 56 * 56

CHAT_STYLE = ("ChatML turns (<|im_start|>role ... <|im_end|>), a default system turn; a video is "
              "<|vision_start|><|video_pad|><|vision_end|>, which the processor expands to the clip's tokens")


def pixel_kwargs(video_processor, max_pixels_per_frame: int | None, cap: int | None) -> dict:
    """The Qwen-VL processors resize each frame to a pixel area: bound it (see ``qwen_pixel_kwargs``)."""
    return qwen_pixel_kwargs(video_processor, max_pixels_per_frame, cap)


def video_processor_extra() -> dict:
    """5.x's Qwen-VL video processors cap each frame like qwen-vl-utils only when asked; 4.57's have no switch."""
    from ego_adr.models.compat import is_v4

    return {} if is_v4() else {"cap_pixels_per_frame": True}


def text_config(tokenizer, **extra) -> dict:
    """The tiny language model of a Qwen-VL family (docs/stack-notes.md: hidden 64, 2 layers, 4 heads, 2 KV heads);
    mrope_section must sum to head_dim / 2 = 8."""
    from ego_adr.models.compat import rope_config
    from ego_adr.models.families.tokenizer import SPECIAL_TOKENS, TINY_TEXT_DIMS, tiny_vocab_size

    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    return dict(
        vocab_size=tiny_vocab_size(tokenizer),
        **TINY_TEXT_DIMS,
        max_position_embeddings=8192,
        **rope_config(1_000_000.0, [2, 3, 3], **extra),
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
    )


def vision_token_ids(tokenizer) -> dict:
    t = tokenizer.convert_tokens_to_ids
    return dict(image_token_id=t("<|image_pad|>"), video_token_id=t("<|video_pad|>"),
                vision_start_token_id=t("<|vision_start|>"), vision_end_token_id=t("<|vision_end|>"))
