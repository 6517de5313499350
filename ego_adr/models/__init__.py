"""Model backends behind one protocol (:mod:`ego_adr.models.base`) and the one way to get a model:
:func:`load_model`. Backends are imported only when asked for, so ``import ego_adr`` never loads torch."""

from __future__ import annotations

from ego_adr.models.backends import BACKENDS  # noqa: E402  (the registry: name -> spec)
from ego_adr.models.base import (
    VLM,
    Capabilities,
    Frames,
    Generation,
    GenerationConfig,
    Message,
    Request,
    generate_one,
)

__all__ = [
    "BACKENDS",
    "VLM",
    "Capabilities",
    "Frames",
    "Generation",
    "GenerationConfig",
    "Message",
    "Request",
    "generate_one",
    "load_model",
]


def load_model(
    name_or_path: str,
    *,
    backend: str = "hf",
    device: str = "auto",
    dtype: str | None = None,
    batch_size: int = 1,
    max_pixels_per_frame: int | None = None,
    gpu_memory: str | None = None,
    revision: str | None = None,
    **kw,
) -> VLM:
    """Load a model by alias (see :data:`ego_adr.models.registry.ALIASES`), hub id or local folder.

    ``backend="hf"``: transformers on this machine (bf16 on GPU, float32 on CPU). ``gpu_memory`` (e.g. "24GB")
    with no explicit ``max_pixels_per_frame`` lets the memory planner cap the per-frame pixel budget at the
    largest that fits ``frames`` frames (keyword, default 32, the paper's largest setting) at this batch size,
    or refuse up front with the reason (:class:`ego_adr.models.memory_planner.MemoryPlanError`). ``"openai"`` / ``"vllm"`` are forwarded to their backends.
    """
    from ego_adr.models.backends import get

    return get(backend).load(name_or_path, device=device, dtype=dtype, batch_size=batch_size,
                             max_pixels_per_frame=max_pixels_per_frame, gpu_memory=gpu_memory, revision=revision,
                             **kw)
