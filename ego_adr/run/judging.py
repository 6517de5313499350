"""Loading the open-ended judges: the model side of judging, kept out of ``ego_adr.eval`` (which only scores
files and never loads a model).

The paper's judges (Section 3.4) are two text-only chat LLMs, Qwen2.5-7B-Instruct and DeepSeek-LLM-7B-Chat,
decoded greedily with 256 new tokens (Appendix H). A local judge runs on the same Hugging Face backend as the
video models (:class:`ego_adr.models.hf.HFVideoLM`, whose text path is ``AutoModelForCausalLM`` + the tokenizer's
chat template, batched with left padding), so there is one generation path for both; :class:`HFTextLM` only keeps
the judges' own identity string (it is written into every judgement row). An OpenAI-compatible endpoint goes
through :class:`ego_adr.models.openai_api.OpenAIChatModel`.
"""

from __future__ import annotations

import os
from pathlib import Path

from ego_adr.eval.judges import JudgeSpec
from ego_adr.models.base import Generation, Request
from ego_adr.models.hf import HFVideoLM
from ego_adr.store import folder_fingerprint


def load_judge(spec: JudgeSpec, device: str | None = None, max_batch_size: int = 8):
    """Instantiate the model of a judge. Loading a hub id needs its weights in the local HF cache (or network)."""
    if spec.backend == "openai":
        from ego_adr.models.openai_api import OpenAIChatModel

        return OpenAIChatModel(spec.model, base_url=spec.base_url, api_key_env=spec.api_key_env)
    model, family = spec.model, None
    if not Path(model).exists():  # the registry's short aliases (e.g. "qwen2.5-7b") as well as hub ids
        from ego_adr.models.registry import resolve

        model, family = resolve(model)
    return HFTextLM(model, device=device, max_batch_size=max_batch_size, spec=family)


class HFTextLM(HFVideoLM):
    """A text-only judge on the HF backend. Requests with frames are answered with an error (a text judge cannot
    look at video); everything else is :class:`HFVideoLM`'s text path."""

    def __init__(self, model: str, *, revision: str | None = None, device: str | None = None, dtype: str = "auto",
                 max_batch_size: int = 8, spec=None) -> None:
        super().__init__(str(model), spec=spec, device=device or "auto", dtype=dtype, batch_size=max_batch_size,
                         revision=revision)
        if Path(model).is_dir():
            self._judge_id = f"{Path(model).name}@sha:{folder_fingerprint(model)}"
        else:
            self._judge_id = f"{model}@{revision or self._commit or 'unknown-revision'}"

    @property
    def fingerprint(self) -> str:
        return self._judge_id

    def generate(self, requests: list[Request]) -> list[Generation]:
        out: list[Generation | None] = [None] * len(requests)
        todo = [i for i, r in enumerate(requests) if not r.has_frames]
        for i in set(range(len(requests))) - set(todo):
            out[i] = Generation(None, error="text-only model received video frames")
        for i, g in zip(todo, super().generate([requests[i] for i in todo])):
            out[i] = g
        return out  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"HFTextLM({self.model_id!r})"


def build_tiny_text_lm(out_dir: str | os.PathLike, seed: int = 0, tokenizer=None) -> Path:
    """A tiny random Qwen2 causal LM (hidden 64, 2 layers) with the tokenizer of :mod:`ego_adr.models.tiny`, saved
    as a normal HF folder: the demo's stand-in judges (their bytes are kept: the demo's judgements depend on
    them). Pass ``tokenizer`` (from ``ego_adr.models.tiny.build_tokenizer()``) to skip re-training it."""
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig, Qwen2Config

    from ego_adr.models.tiny import TINY_TEXT_DIMS, build_tokenizer, tiny_vocab_size

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok = tokenizer if tokenizer is not None else build_tokenizer()
    pad, eos = tok.convert_tokens_to_ids("<|endoftext|>"), tok.convert_tokens_to_ids("<|im_end|>")
    cfg = Qwen2Config(
        vocab_size=tiny_vocab_size(tok),
        **TINY_TEXT_DIMS,
        max_position_embeddings=4096,
        bos_token_id=pad,
        eos_token_id=eos,
        pad_token_id=pad,
        tie_word_embeddings=False,  # tied random embeddings just repeat the last prompt token
    )
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
    model.generation_config = GenerationConfig(bos_token_id=pad, eos_token_id=eos, pad_token_id=pad, do_sample=False)
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    return out
