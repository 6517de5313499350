"""LLM judges of open-ended answers: which models judge (:class:`JudgeSpec`, the paper's defaults) and how
their replies are read (:func:`parse_score`).

The paper's judges (Section 3.4) are two text-only chat LLMs, Qwen2.5-7B-Instruct and DeepSeek-LLM-7B-Chat,
decoded greedily with 256 new tokens (Appendix H). Loading them is the model side and lives in
:mod:`ego_adr.run.judging` (they run on the same Hugging Face backend as the video models); nothing here loads a
model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

BACKENDS = ("hf", "openai", "llamacpp")


@dataclass(frozen=True)
class JudgeSpec:
    """A judge: a short ``name`` (column in results), the ``model`` (hub id, local folder or endpoint model name)
    and the ``backend`` ("hf", "openai" with ``base_url``/``api_key_env``, or "llamacpp": a GGUF file or packaged
    alias on a llama.cpp server the run starts)."""

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
        """``NAME=MODEL[@BACKEND]``, ``NAME=MODEL@http(s)://HOST:PORT/v1`` (an OpenAI-compatible server of its own:
        each judge may live on another endpoint) or just ``MODEL`` (name = last path component), for CLI flags."""
        name, _, model = text.partition("=") if "=" in text else ("", "", text)
        backend, base_url = "hf", None
        for scheme in ("@http://", "@https://"):
            if scheme in model:
                model, _, rest = model.partition(scheme)
                backend, base_url = "openai", scheme[1:] + rest
        if "@" in model and model.rsplit("@", 1)[1] in BACKENDS:
            model, backend = model.rsplit("@", 1)
        name = name or Path(model.rstrip("/")).name.lower()
        if not model:
            raise ValueError(f"judge spec {text!r} names no model; use NAME=MODEL[@hf|@openai|@llamacpp|"
                             "@http://HOST:PORT/v1]")
        return JudgeSpec(name=name, model=model, backend=backend, base_url=base_url)


# Section 3.4: "Qwen2.5-7B-Instruct and DeepSeek-LLM-7B-Chat as judges".
DEFAULT_JUDGES: tuple[JudgeSpec, ...] = (
    JudgeSpec("qwen2.5-7b-instruct", "Qwen/Qwen2.5-7B-Instruct"),
    JudgeSpec("deepseek-llm-7b-chat", "deepseek-ai/deepseek-llm-7b-chat"),
)
DEFAULT_JUDGE_NAMES: tuple[str, ...] = tuple(j.name for j in DEFAULT_JUDGES)  # the run's ``--judges`` default


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
