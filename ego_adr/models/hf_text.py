"""A text-only model on the Hugging Face backend: the open-ended judges (paper Section 3.4: Qwen2.5-7B-Instruct and
DeepSeek-LLM-7B-Chat) and any other text LLM a stage asks.

Why a class of its own: the generation path is :class:`~ego_adr.models.hf.HFVideoLM`'s text path (one path for
video models and judges), but a judge's identity is what its judgements are recorded under, so it is the folder's
content digest (a local folder) or hub id plus revision, and a request with frames is refused per request rather
than silently answered without them.
"""

from __future__ import annotations

from pathlib import Path

from ego_adr.models.base import Generation, Request
from ego_adr.models.hf import HFVideoLM
from ego_adr.store import folder_fingerprint


class HFTextLM(HFVideoLM):
    """A text-only judge on the HF backend. Requests with frames are answered with an error (a text judge cannot
    look at video); everything else is :class:`HFVideoLM`'s text path."""

    def __init__(self, model: str, *, revision: str | None = None, device: str | None = None, dtype: str = "auto",
                 max_batch_size: int = 8, spec=None) -> None:
        super().__init__(str(model), spec=spec, device=device or "auto", dtype=dtype, batch_size=max_batch_size,
                         revision=revision)
        if Path(model).is_dir():
            self._judge_id = f"{Path(model).name}@sha:{folder_fingerprint(model)}"
        elif Path(model).is_file():  # a GGUF checkpoint (a packaged real model, docs/real_models.md)
            from ego_adr.models.packaged import file_fingerprint

            self._judge_id = f"{Path(model).name}@sha:{file_fingerprint(Path(model))}"
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
