"""Llama-architecture text LMs: DeepSeek-LLM-7B-Chat, the paper's second open-ended judge (Section 3.4)."""

from __future__ import annotations

from ego_adr.models.families.spec import Arch, Family, HubModel, text_arch

BOS, EOS = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"
# DeepSeek-LLM chat turns: the system text first, then "User: ...\n\nAssistant: ..." ended by the EOS token.
CHAT_TEMPLATE = (
    "{{- bos_token -}}"
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'system' -%}{{- message['content'] + '\\n\\n' -}}"
    "{%- elif message['role'] == 'user' -%}{{- 'User: ' + message['content'] + '\\n\\n' -}}"
    "{%- else -%}{{- 'Assistant: ' + message['content'] + eos_token -}}{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- 'Assistant:' -}}{%- endif -%}"
)


def tiny_parts():
    from transformers import LlamaConfig

    from ego_adr.models.families.tokenizer import TINY_TEXT_DIMS, build_tokenizer, tiny_vocab_size

    tok = build_tokenizer(special_tokens=(BOS, EOS), eos=EOS, pad=EOS, bos=BOS, chat_template=CHAT_TEMPLATE)
    bos, eos = tok.convert_tokens_to_ids([BOS, EOS])
    return LlamaConfig(vocab_size=tiny_vocab_size(tok), **TINY_TEXT_DIMS, bos_token_id=bos, eos_token_id=eos,
                       pad_token_id=eos), tok


FAMILY = Family(
    name="llama",
    kind="text",
    model_types=("llama",),
    text_only=True,
    chat_style="DeepSeek-LLM turns: BOS, system text, 'User: ...\\n\\nAssistant: ...' + EOS",
    hub=(HubModel("deepseek-7b", "deepseek-ai/deepseek-llm-7b-chat", "open-ended judge (Section 3.4)",
                  Arch(6.91, 4096, 30, 32, 128, 11008, tokens_per_frame=0)),),
    tiny_parts=tiny_parts,
    arch_from_config=text_arch,
)
