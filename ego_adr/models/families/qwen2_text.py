"""Qwen2 text LMs: Qwen2.5-7B-Instruct, one of the paper's two open-ended judges (Section 3.4)."""

from __future__ import annotations

from ego_adr.models.families.spec import Arch, Family, HubModel, text_arch

# ChatML with string content and Qwen2.5's default system turn.
CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if loop.first and message['role'] != 'system' -%}"
    "{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' -}}"
    "{%- endif -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)
SPECIAL = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")


def tiny_parts():
    from transformers import Qwen2Config

    from ego_adr.models.families.tokenizer import TINY_TEXT_DIMS, build_tokenizer, tiny_vocab_size

    tok = build_tokenizer(special_tokens=SPECIAL, chat_template=CHAT_TEMPLATE)
    eos, pad = tok.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"])
    return Qwen2Config(vocab_size=tiny_vocab_size(tok), **TINY_TEXT_DIMS, bos_token_id=pad, eos_token_id=eos,
                       pad_token_id=pad), tok


FAMILY = Family(
    name="qwen2",
    kind="text",
    model_types=("qwen2",),
    text_only=True,
    chat_style="ChatML turns with string content and a default system turn",
    hub=(HubModel("qwen2.5-7b", "Qwen/Qwen2.5-7B-Instruct", "open-ended judge (Section 3.4)",
                  Arch(7.62, 3584, 28, 4, 128, 18944, tokens_per_frame=0)),),
    tiny_parts=tiny_parts,
    arch_from_config=text_arch,
)
