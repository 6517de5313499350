"""LLM judges of open-ended answers: which models, and a text-only Hugging Face backend to run them.

The paper's judges (Section 3.4) are two text-only chat LLMs, Qwen2.5-7B-Instruct and DeepSeek-LLM-7B-Chat,
decoded greedily with 256 new tokens (Appendix H). They are causal LMs, not vision models, so the video backend
(``AutoModelForImageTextToText``) cannot load them: :class:`HFTextLM` is the small text-only implementation of the
VLM protocol (``AutoModelForCausalLM`` + the tokenizer's chat template, batched with left padding). Any hub id or
local folder works; an OpenAI-compatible endpoint goes through :class:`ego_adr.models.openai_api.OpenAIChatModel`.

torch/transformers are imported inside functions only.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from ego_adr.models.base import Capabilities, Generation, Request
from ego_adr.store import folder_fingerprint

BACKENDS = ("hf", "openai")


@dataclass(frozen=True)
class JudgeSpec:
    """A judge: a short ``name`` (column in results), the ``model`` (hub id, local folder or endpoint model name)
    and the ``backend`` ("hf" or "openai"; ``base_url``/``api_key_env`` for the latter)."""

    name: str
    model: str
    backend: str = "hf"
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"judge {self.name!r}: backend must be one of {BACKENDS}, got {self.backend!r}")

    @staticmethod
    def parse(text: str) -> JudgeSpec:
        """``NAME=MODEL[@BACKEND]`` or just ``MODEL`` (name = last path component), for CLI flags."""
        name, _, model = text.partition("=") if "=" in text else ("", "", text)
        backend = "hf"
        if "@" in model and model.rsplit("@", 1)[1] in BACKENDS:
            model, backend = model.rsplit("@", 1)
        name = name or Path(model.rstrip("/")).name.lower()
        if not model:
            raise ValueError(f"judge spec {text!r} names no model; use NAME=MODEL[@hf|@openai]")
        return JudgeSpec(name=name, model=model, backend=backend)


# Section 3.4: "Qwen2.5-7B-Instruct and DeepSeek-LLM-7B-Chat as judges".
DEFAULT_JUDGES: tuple[JudgeSpec, ...] = (
    JudgeSpec("qwen2.5-7b-instruct", "Qwen/Qwen2.5-7B-Instruct"),
    JudgeSpec("deepseek-llm-7b-chat", "deepseek-ai/deepseek-llm-7b-chat"),
)


# --- score parsing: only the form the judge prompt asks for ------------------------------------------------------
SCORE_RANGE = (0.0, 5.0)  # Section 3.4: a 0-5 similarity scale
PARSE_FAILURES = frozenset({"empty", "unparseable", "ambiguous", "out_of_range"})
_REASON_KEYS = ("reason", "reasoning", "explanation")


def json_objects(text: str) -> list[dict]:
    """Every JSON object that decodes somewhere in ``text`` (bare, in a code fence, or inside prose)."""
    dec = json.JSONDecoder()
    out, i = [], text.find("{")
    while i != -1:
        try:
            obj, end = dec.raw_decode(text, i)
        except json.JSONDecodeError:
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, dict):
            out.append(obj)
        i = text.find("{", end)
    return out


def parse_score(text: str | None) -> tuple[float | None, str | None, str]:
    """``(score, reason, method)`` from a judge's reply to :data:`ego_adr.reasoning.prompts.JUDGE`.

    Why strict: the prompt asks for ``{"score": <0-5>, "reason": "..."}`` and nothing else. Reading a score out
    of any other text means guessing which number the judge meant ("...the person added 2 eggs..." is not a
    score of 2), so only that form is accepted: a JSON object (alone, in a code fence or with prose around it)
    whose ``score`` key (any case) holds a number. Everything else is a recorded failure, never a number:
    ``empty`` (no text), ``unparseable`` (no such object), ``ambiguous`` (objects with different scores),
    ``out_of_range`` (outside 0-5). A value inside the range that is not a whole number (3.5) is kept.
    """
    if text is None or not text.strip():
        return None, None, "empty"
    found: list[tuple[float, str | None]] = []
    for obj in json_objects(text):
        key = next((k for k in obj if str(k).strip().lower() == "score"), None)
        if key is None:
            continue
        v = obj[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        reason = next((obj[k] for k in obj if str(k).lower() in _REASON_KEYS), None)
        found.append((float(v), None if reason is None else str(reason)))
    if not found:
        return None, None, "unparseable"
    if len({v for v, _ in found}) > 1:
        return None, None, "ambiguous"
    v, reason = found[0]
    if not SCORE_RANGE[0] <= v <= SCORE_RANGE[1]:
        return None, reason, "out_of_range"
    return v, reason, "json"


def load_judge(spec: JudgeSpec, device: str | None = None, max_batch_size: int = 8):
    """Instantiate the VLM for a judge. Loading a hub id needs its weights in the local HF cache (or network)."""
    if spec.backend == "openai":
        from ego_adr.models.openai_api import OpenAIChatModel

        return OpenAIChatModel(spec.model, base_url=spec.base_url, api_key_env=spec.api_key_env)
    model = spec.model
    if not Path(model).exists():
        try:  # accept the registry's short aliases (e.g. "qwen2.5-7b") as well as hub ids
            from ego_adr.models.registry import resolve

            model = resolve(model)[0]
        except (ImportError, KeyError, ValueError):
            pass
    return HFTextLM(model, device=device, max_batch_size=max_batch_size)


class HFTextLM:
    """Text-only chat LLM through transformers, implementing the VLM protocol.

    Requests with frames are answered with an error (a text judge cannot look at video). Requests are grouped by
    generation config and run in batches of ``max_batch_size`` with left padding; greedy decoding when
    ``do_sample`` is false (the model's other generation defaults, e.g. repetition penalty, are kept). A batch that
    fails (e.g. out of memory) is retried one request at a time, so one bad request never fails the others.
    """

    def __init__(
        self,
        model: str,
        *,
        revision: str | None = None,
        device: str | None = None,
        dtype: str = "auto",
        max_batch_size: int = 8,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self._model_id = str(model)
        if device is None:
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if dtype == "auto":
            torch_dtype = torch.bfloat16 if str(device).startswith("cuda") else torch.float32
        else:
            torch_dtype = getattr(torch, dtype)
        self.device = device
        self.tokenizer = AutoTokenizer.from_pretrained(model, revision=revision)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(model, revision=revision, dtype=torch_dtype)
        self.model.to(device).eval()
        if Path(model).is_dir():
            self._fingerprint = f"{Path(model).name}@sha:{folder_fingerprint(model)}"
        else:
            commit = revision or getattr(self.model.config, "_commit_hash", None) or "unknown-revision"
            self._fingerprint = f"{model}@{commit}"
        self._capabilities = Capabilities(video=False, text_only=True, max_batch_size=max_batch_size)

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def fingerprint(self) -> str:
        return self._fingerprint

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    def render(self, request: Request) -> str:
        msgs = [
            {"role": m.role, "content": "\n".join(p for p in m.content if isinstance(p, str))}
            for m in request.messages
        ]
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
        # No template (base models): a plain transcript ending with the assistant's turn.
        turns = [f"{m['role'].capitalize()}: {m['content']}" for m in msgs]
        return "\n\n".join(turns) + "\n\nAssistant:"

    def generate(self, requests: list[Request]) -> list[Generation]:
        out: list[Generation | None] = [None] * len(requests)
        groups: dict[tuple, list[int]] = {}
        texts: dict[int, str] = {}
        for i, r in enumerate(requests):
            if r.has_frames:
                out[i] = Generation(None, error="text-only model received video frames")
                continue
            try:
                texts[i] = self.render(r)
            except Exception as e:  # a template that rejects this conversation fails only this request
                out[i] = Generation(None, error=f"chat template: {type(e).__name__}: {e}")
                continue
            groups.setdefault(tuple(sorted(r.config.key().items())), []).append(i)
        bs = max(1, self._capabilities.max_batch_size)
        for idxs in groups.values():
            cfg = requests[idxs[0]].config
            for s in range(0, len(idxs), bs):
                chunk = idxs[s : s + bs]
                for i, g in zip(chunk, self._run_safe([texts[i] for i in chunk], cfg), strict=True):
                    out[i] = g
        return out  # type: ignore[return-value]

    def _run_safe(self, texts: list[str], cfg) -> list[Generation]:
        try:
            return self._run(texts, cfg)
        except Exception as e:
            self._free()
            if len(texts) == 1:
                return [Generation(None, error=f"{type(e).__name__}: {e}")]
            return [g for t in texts for g in self._run_safe([t], cfg)]

    def _run(self, texts: list[str], cfg) -> list[Generation]:
        import torch

        t0 = time.perf_counter()
        enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        with torch.inference_mode():
            ids = self.model.generate(
                **enc,
                max_new_tokens=cfg.max_new_tokens,
                do_sample=cfg.do_sample,
                pad_token_id=self.tokenizer.pad_token_id,
            )
        new = ids[:, enc["input_ids"].shape[1] :]
        decoded = self.tokenizer.batch_decode(new, skip_special_tokens=True)
        secs = (time.perf_counter() - t0) / len(texts)
        return [Generation(text=d.strip(), seconds=secs) for d in decoded]

    def _free(self) -> None:
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except Exception:
            pass

    def __repr__(self) -> str:
        return f"HFTextLM({self._model_id!r})"


def build_tiny_text_lm(out_dir: str | os.PathLike, seed: int = 0, tokenizer=None) -> Path:
    """A tiny random Qwen2 causal LM (hidden 64, 2 layers) with the tokenizer of :mod:`ego_adr.models.tiny`, saved
    as a normal HF folder: the judge code path of a 7B judge, offline, for tests. Its outputs are random text.
    Pass ``tokenizer`` (from ``ego_adr.models.tiny.build_tokenizer()``) to skip re-training it."""
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
