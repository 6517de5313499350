"""Tiny randomly initialised models of every supported architecture, built offline.

Why: tests, the demo and CI must exercise the *same* Hugging Face code path as a 7B hub model (processor chat
template, video processor, ``AutoModelForImageTextToText`` / ``AutoModelForCausalLM.from_pretrained``, batched
``generate``) without network or GPU. For each family of :mod:`ego_adr.models.families` (Qwen2-VL, Qwen2.5-VL,
Qwen3-VL, LLaVA-OneVision, Video-LLaVA, InternVL3.5, and the judges' Qwen2 and Llama text architectures) the
family's recipe gives the real config class with small sizes (text hidden 64, 2 layers; vision depth 2), a
byte-level BPE tokenizer trained here on a small built-in English corpus with the special tokens that family's
processor looks for, a chat template in that family's style and the family's own image/video processor classes;
this module seeds, instantiates and saves it as a normal Hugging Face folder.

Their outputs are random words: the pipeline records them as unparseable answers, which is the point (the code
around the model is what is under test). Building is deterministic: the same ``seed`` gives byte-identical
weights. ``tiny`` (the demo model) is the tiny Qwen2.5-VL.

    python -m ego_adr.models.tiny OUT_DIR [--arch ARCH] [--seed 0]      # ARCH: see --help
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ego_adr.models.families._qwen import TINY_MAX_PIXELS, TINY_MIN_PIXELS  # noqa: F401 (re-exported)


def _archs() -> tuple[str, ...]:
    from ego_adr.models.families import FAMILIES

    return tuple(FAMILIES)


ARCHS = _archs()  # every family of ego_adr.models.families has a tiny model
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


def build_tokenizer(vocab_size: int = 1500, *, special_tokens=SPECIAL_TOKENS, eos: str = "<|im_end|>",
                    pad: str = "<|endoftext|>", bos: str | None = None, chat_template: str = CHAT_TEMPLATE,
                    named: dict[str, str] | None = None):
    """Train a byte-level BPE tokenizer on the built-in corpus and wrap it for transformers.

    The defaults are the tiny Qwen-VL tokenizer (its bytes must not change: the demo's predictions depend on it).
    Other families pass their own ``special_tokens`` (the placeholders their processor looks for), end/pad/begin
    tokens and chat template; ``named`` gives model-specific token attributes that a processor reads from the
    tokenizer (e.g. InternVL's ``start_image_token``)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    extra: dict = {"extra_special_tokens": dict(named)} if named else {
        "additional_special_tokens": [t for t in special_tokens if t not in (pad, bos)]}
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=bos,
        eos_token=eos,
        pad_token=pad,
        unk_token=None,
        chat_template=chat_template,
        padding_side="left",
        model_max_length=32768,
        **extra,
    )
    return fast


# The tiny language model's shape (STACK-NOTES: hidden 64, 2 layers, 4 heads, 2 KV heads); also the tiny judges'.
TINY_TEXT_DIMS = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2)


def tiny_vocab_size(tokenizer) -> int:
    """The tokenizer's size rounded up to a multiple of 64, as real checkpoints' embedding sizes are."""
    return len(tokenizer) + (-len(tokenizer) % 64)


def build_tiny(out_dir: str | os.PathLike, arch: str = "qwen2.5-vl", seed: int = 0) -> Path:
    """Build the tiny model of family ``arch`` into ``out_dir`` (created; must be empty or absent) and return its
    path. The recipe (config, tokenizer, chat template, processor) is the family's
    (:mod:`ego_adr.models.families`); this function only seeds, instantiates and saves."""
    from ego_adr.models.families import FAMILIES

    if arch not in FAMILIES:
        raise ValueError(f"unknown tiny arch {arch!r}; choose one of {', '.join(ARCHS)}")
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, GenerationConfig

    out = Path(out_dir)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty; pick a new folder or delete it first")
    out.mkdir(parents=True, exist_ok=True)

    family = FAMILIES[arch]
    config, processor = family.tiny_parts()
    text = getattr(config, "text_config", None) or config
    auto = AutoModelForImageTextToText if family.kind == "vlm" else AutoModelForCausalLM
    torch.manual_seed(seed)
    model = auto.from_config(config, dtype=torch.float32)
    model.eval()
    model.generation_config = GenerationConfig(
        bos_token_id=text.bos_token_id,
        eos_token_id=text.eos_token_id,
        pad_token_id=text.pad_token_id,
        do_sample=False,
    )
    model.save_pretrained(out, safe_serialization=True)
    processor.save_pretrained(out)
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
        prog="python -m ego_adr.models.tiny", description="Build a tiny random model of one architecture offline."
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
