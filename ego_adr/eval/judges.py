"""LLM judges of open-ended answers: which models judge (:class:`JudgeSpec`, the paper's defaults).

The paper's judges (Section 3.4) are two text-only chat LLMs, Qwen2.5-7B-Instruct and DeepSeek-LLM-7B-Chat,
decoded greedily with 256 new tokens (Appendix H). Loading them is the model side and lives in
:mod:`ego_adr.run.judging` (they run on the same Hugging Face backend as the video models); nothing here loads a
model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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
