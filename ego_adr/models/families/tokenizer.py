"""The tokenizer and the language-model size shared by every tiny model: a byte-level BPE trained locally on a small
procedural corpus with the special tokens the families' processors need, a ChatML-style chat template, and the
tiny text dimensions (docs/stack-notes.md: hidden 64, 2 layers, 4 heads, 2 KV heads). A leaf of ``models/families`` so
the families' tiny recipes and :mod:`ego_adr.models.tiny` both use it without importing each other."""

from __future__ import annotations

SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
)

# Our own template (Qwen-style ChatML turns). Text, image and video parts, plain-string content and system messages.
_TURNS = (
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['content'] is string -%}{{- message['content'] -}}"
    "{%- else -%}{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'text' -%}{{- part['text'] -}}"
    "{%- elif part['type'] == 'image' -%}{{- '<|vision_start|><|image_pad|><|vision_end|>' -}}"
    "{%- elif part['type'] == 'video' -%}{{- '<|vision_start|><|video_pad|><|vision_end|>' -}}"
    "{%- endif -%}{%- endfor -%}{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
)


def chat_template(default_system: str | None) -> str:
    """The ChatML template of the tiny Qwen-style models; ``default_system`` is the system turn added when a
    conversation has none (the Qwen2/2.5-VL templates add one, Qwen3-VL's does not: ``None``)."""
    first = ("{%- if loop.first and message['role'] != 'system' -%}"
             f"{{{{- '<|im_start|>system\\n{default_system}<|im_end|>\\n' -}}}}"
             "{%- endif -%}") if default_system else ""
    return ("{%- for message in messages -%}" + first + _TURNS + "{%- endfor -%}"
            "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}")


# A default system turn is added when none is given, as the Qwen-VL templates do.
CHAT_TEMPLATE = chat_template("You are a helpful assistant.")


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

    from ego_adr.models.compat import is_v4

    if is_v4() and "<|im_start|>" in special_tokens:  # 4.57's Qwen processors accept only a Qwen2 tokenizer
        from transformers import Qwen2TokenizerFast as PreTrainedTokenizerFast
    else:
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


# The tiny language model's shape (docs/stack-notes.md: hidden 64, 2 layers, 4 heads, 2 KV heads); also the tiny judges'.
TINY_TEXT_DIMS = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2)


def tiny_vocab_size(tokenizer) -> int:
    """The tokenizer's size rounded up to a multiple of 64, as real checkpoints' embedding sizes are."""
    return len(tokenizer) + (-len(tokenizer) % 64)
