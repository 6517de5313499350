"""Tiny randomly initialised video-language models of real architectures, built offline.

Why: tests, the demo and CI must exercise the *same* Hugging Face code path as a 7B hub model (processor chat
template, video processor, ``AutoModelForImageTextToText.from_pretrained``, batched ``generate``) without
network or GPU. So we build a real Qwen2.5-VL / Qwen2-VL model with a tiny config (text hidden 64, 2 layers;
vision depth 2), a byte-level BPE tokenizer trained here on a small built-in English corpus, our own chat
template and the stock image/video processors, and save it as a normal Hugging Face folder.

Its outputs are random words: the pipeline records them as unparseable answers, which is the point (the code
around the model is what is under test). Building is deterministic: the same ``seed`` gives byte-identical
weights.

    python -m ego_adr.models.tiny OUT_DIR [--arch qwen2.5-vl|qwen2-vl] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

ARCHS = ("qwen2.5-vl", "qwen2-vl")
TINY_VERSION = "v1"

SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
)

# Our own template (Qwen-style turns). Text, image and video parts, plain-string content and system messages.
# A default system turn is added when none is given, as the Qwen-VL templates do.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if loop.first and message['role'] != 'system' -%}"
    "{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['content'] is string -%}{{- message['content'] -}}"
    "{%- else -%}{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'text' -%}{{- part['text'] -}}"
    "{%- elif part['type'] == 'image' -%}{{- '<|vision_start|><|image_pad|><|vision_end|>' -}}"
    "{%- elif part['type'] == 'video' -%}{{- '<|vision_start|><|video_pad|><|vision_end|>' -}}"
    "{%- endif -%}{%- endfor -%}{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)

# Per-frame pixel budget of the tiny model's video processor: 8x8 patches of 14 px -> 16 tokens per 2 frames.
# Small on purpose so that 8 frames with 256 new tokens stay around a second on CPU.
TINY_MAX_PIXELS = 112 * 112
TINY_MIN_PIXELS = 56 * 56

_PROCEDURE_SENTENCES = """
The person picks up the knife and cuts the tomato into small pieces on the cutting board.
Then they pour the water into the pot and wait until it boils.
The person opens the drawer, takes out a spoon and stirs the mixture in the bowl.
They attach the tent pole to the corner of the tent and push the stake into the ground.
The person connects the cable to the battery and tightens the screw with a screwdriver.
Next, the person adds two cups of flour and one egg to the bowl and mixes them together.
The step is skipped: the person does not wash the vegetables before cutting them.
They place the pan on the stove, turn on the heat and add a spoon of oil.
The person searches around the kitchen for the measuring cup, which is not part of the task.
The screwdriver breaks while the person is assembling the shelf.
The person notices the mistake, removes the wrong part and puts the correct part in place.
The person measures the coffee, grinds the beans and pours hot water over the filter.
They fold the paper, cut along the line with scissors and glue the two pieces together.
The hand moves slowly; the person holds the phone and looks at the screen for a long time.
Step one: take the bread. Step two: spread the butter. Step three: put the cheese on the bread.
The action matches the procedure. There is no error in this segment.
The video shows a person in a kitchen holding a knife, a plate, a cup and a bottle.
Narration: the person grabs the lid, closes the jar, and puts it back on the shelf.
Answer: the error type is wrong order because the step happens before the previous step.
The person uses the wrong tool and the wrong ingredient; the object is incorrect.
The answer is correct. The answer is omission. The answer is wrong action.
"""


def _corpus() -> list[str]:
    """Built-in English corpus: the taxonomy option strings and definitions plus procedure-like sentences,
    so that a random model's output is made of real words the parser can at least tokenize."""
    from ego_adr.taxonomy import TAXONOMY

    lines = [s.strip() for s in _PROCEDURE_SENTENCES.strip().splitlines() if s.strip()]
    for t in TAXONOMY:
        lines += [t.option, t.option.lower(), t.definition, f"Answer: {t.option}"]
    # Repeat so that BPE merges of frequent words are learnt; order is fixed, so training is deterministic.
    return lines * 4


def build_tokenizer(vocab_size: int = 1500):
    """Train a byte-level BPE tokenizer on the built-in corpus and wrap it for transformers."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token=None,
        additional_special_tokens=list(SPECIAL_TOKENS[1:]),
        chat_template=CHAT_TEMPLATE,
        padding_side="left",
        model_max_length=32768,
    )
    return fast


# The tiny language model's shape (STACK-NOTES: hidden 64, 2 layers, 4 heads, 2 KV heads); also the tiny judges'.
TINY_TEXT_DIMS = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2)


def tiny_vocab_size(tokenizer) -> int:
    """The tokenizer's size rounded up to a multiple of 64, as real checkpoints' embedding sizes are."""
    return len(tokenizer) + (-len(tokenizer) % 64)


def _model_config(arch: str, tokenizer):
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    text = dict(
        vocab_size=tiny_vocab_size(tokenizer),
        **TINY_TEXT_DIMS,
        max_position_embeddings=8192,
        # mrope_section must sum to head_dim / 2 = 8 (STACK-NOTES).
        rope_parameters={"rope_type": "default", "rope_theta": 1_000_000.0, "mrope_section": [2, 3, 3]},
        bos_token_id=ids["<|endoftext|>"],
        eos_token_id=ids["<|im_end|>"],
        pad_token_id=ids["<|endoftext|>"],
    )
    tokens = dict(
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    if arch == "qwen2.5-vl":
        from transformers import Qwen2_5_VLConfig

        vision = dict(
            depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=64, patch_size=14,
            spatial_merge_size=2, temporal_patch_size=2, window_size=112, fullatt_block_indexes=[1],
            tokens_per_second=2,
        )
        return Qwen2_5_VLConfig(text_config=text, vision_config=vision, **tokens)
    if arch == "qwen2-vl":
        from transformers import Qwen2VLConfig

        vision = dict(
            depth=2, embed_dim=32, hidden_size=64, mlp_ratio=2, num_heads=2, patch_size=14,
            spatial_merge_size=2, temporal_patch_size=2,
        )
        return Qwen2VLConfig(text_config=text, vision_config=vision, **tokens)
    raise ValueError(f"unknown tiny arch {arch!r}; choose one of {', '.join(ARCHS)}")


def _processor(arch: str, tokenizer):
    from transformers import Qwen2VLImageProcessor, Qwen2VLVideoProcessor

    size = {"shortest_edge": TINY_MIN_PIXELS, "longest_edge": TINY_MAX_PIXELS}
    image_processor = Qwen2VLImageProcessor(size=size)
    video_processor = Qwen2VLVideoProcessor(size=size, cap_pixels_per_frame=True)
    if arch == "qwen2.5-vl":
        from transformers import Qwen2_5_VLProcessor as P
    else:
        from transformers import Qwen2VLProcessor as P
    return P(
        image_processor=image_processor, tokenizer=tokenizer, video_processor=video_processor,
        chat_template=CHAT_TEMPLATE,
    )


def build_tiny(out_dir: str | os.PathLike, arch: str = "qwen2.5-vl", seed: int = 0) -> Path:
    """Build the tiny model into ``out_dir`` (created; must be empty or absent) and return its path."""
    if arch not in ARCHS:
        raise ValueError(f"unknown tiny arch {arch!r}; choose one of {', '.join(ARCHS)}")
    import torch
    from transformers import AutoModelForImageTextToText, GenerationConfig

    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty; pick a new folder or delete it first")
    out.mkdir(parents=True, exist_ok=True)

    tokenizer = build_tokenizer()
    config = _model_config(arch, tokenizer)
    torch.manual_seed(seed)
    model = AutoModelForImageTextToText.from_config(config, dtype=torch.float32)
    model.eval()
    model.generation_config = GenerationConfig(
        bos_token_id=config.text_config.bos_token_id,
        eos_token_id=config.text_config.eos_token_id,
        pad_token_id=config.text_config.pad_token_id,
        do_sample=False,
    )
    model.save_pretrained(out, safe_serialization=True)
    _processor(arch, tokenizer).save_pretrained(out)
    (out / "TINY_MODEL.txt").write_text(
        f"Randomly initialised {arch} built by ego_adr.models.tiny (seed={seed}, {TINY_VERSION}). "
        "Outputs are random text; for tests and demos only.\n"
    )
    return out


def ensure_tiny(arch: str = "qwen2.5-vl") -> Path:
    """Build the tiny model once into the cache root (atomically, :func:`ego_adr.store.build_once`) and return
    its path."""
    from ego_adr.store import build_once, cache_root

    final = cache_root() / f"tiny-{arch}-{TINY_VERSION}"
    return build_once(final, lambda dest: build_tiny(dest, arch=arch), lambda f: (f / "config.json").exists())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m ego_adr.models.tiny", description="Build a tiny random video-language model offline."
    )
    ap.add_argument("out_dir")
    ap.add_argument("--arch", choices=ARCHS, default="qwen2.5-vl")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    path = build_tiny(a.out_dir, arch=a.arch, seed=a.seed)
    size = sum(f.stat().st_size for f in path.iterdir() if f.is_file())
    print(f"built tiny {a.arch} (seed {a.seed}) in {path} ({size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
