"""The backend registry: every way ego_adr can run a model, one :class:`BackendSpec` each.

``--backend`` choices and help, the default batch size of a run, whether the memory planner applies, and which
run settings reach the backend all derive from :data:`BACKENDS`. A backend is imported only when used, so
``import ego_adr`` never loads torch or vLLM. A new backend is one module with a class that implements the
protocol of :mod:`ego_adr.models.base` (reporting its own ``backend`` name and ``fingerprint``) plus one spec here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ego_adr.registry import Registry


@dataclass(frozen=True)
class BackendSpec:
    name: str
    description: str
    load: Callable[..., Any]  # (name_or_path, **settings) -> VLM
    default_batch_size: int  # requests per call when --batch-size is not given
    plans_memory: bool = False  # the memory planner sizes the pixel budget for --gpu-memory (local GPU only)
    settings: tuple[str, ...] = ()  # RunConfig fields forwarded to `load` besides the common ones
    any_model_name: bool = False  # the model name is the server's business: no alias/folder/hub check here
    local_device: bool = False  # runs on this machine's devices, so a named CUDA device must exist
    extra_settings: tuple[str, ...] = ()  # keys of RunConfig.extra forwarded to `load` when set
    memory_note: str = ""  # --dry-run: who manages GPU memory when the planner does not apply (plans_memory False)
    check_name: Callable[[str | None], None] | None = None  # --model checked its own way (a UserError) before work


def _load_hf(name_or_path: str, *, device="auto", dtype=None, batch_size=1, max_pixels_per_frame=None,
             gpu_memory=None, revision=None, frames=32, **kw):
    from ego_adr.models.hf import HFVideoLM
    from ego_adr.models.registry import resolve

    path, spec = resolve(name_or_path)
    planned = None
    if gpu_memory is not None and max_pixels_per_frame is None:
        from ego_adr.models.memory_planner import plan_for_load

        planned = plan_for_load(name_or_path, path, gpu_memory, frames=int(frames), batch_size=batch_size,
                                device=device)
    return HFVideoLM(path, spec=spec, device=device, dtype=dtype, batch_size=batch_size,
                     max_pixels_per_frame=max_pixels_per_frame, planned_max_pixels=planned, revision=revision, **kw)


def _load_openai(name_or_path: str, *, device=None, dtype=None, batch_size=None, max_pixels_per_frame=None,
                 gpu_memory=None, revision=None, frames=None, **kw):
    from ego_adr.models.openai_api import OpenAIChatModel

    return OpenAIChatModel(name_or_path, **kw)  # its parallelism is `concurrency`, not a batch


def _load_vllm(name_or_path: str, *, device=None, batch_size=64, frames=None, **kw):
    from ego_adr.models.registry import resolve
    from ego_adr.models.vllm_engine import VLLMModel

    path, _spec = resolve(name_or_path)
    return VLLMModel(path, batch_size=batch_size, **{k: v for k, v in kw.items() if v is not None})


def _load_llamacpp(name_or_path: str, **kw):
    from ego_adr.models.llamacpp_backend import LlamaCppModel

    return LlamaCppModel(name_or_path)


def _check_llamacpp(name: str | None) -> None:
    from ego_adr.models.llamacpp_backend import check_name

    check_name(name)


_BUILTIN = (
    BackendSpec("hf", "transformers on this machine (bf16 on GPU, fp32 on CPU), batched with left padding",
                _load_hf, default_batch_size=1, plans_memory=True, settings=("frames",), local_device=True),
    BackendSpec("openai", "any OpenAI-compatible server (vLLM, SGLang, ego_adr.models.serve, hosted APIs)",
                _load_openai, default_batch_size=8, settings=("base_url",), any_model_name=True,
                extra_settings=("max_retries", "frame_transfer"),
                memory_note="the server manages GPU memory, no local plan"),
    BackendSpec("vllm", "an in-process vLLM engine (CUDA only; tensor parallel inside a node)",
                _load_vllm, default_batch_size=64, settings=("tensor_parallel_size",), local_device=True,
                memory_note="vLLM manages GPU memory, no local plan"),
    BackendSpec("llamacpp", "a GGUF file or packaged alias on a llama.cpp server the run starts and stops (CPU; "
                "text only; candidate likelihoods)", _load_llamacpp, default_batch_size=1,
                memory_note="llama.cpp runs the GGUF on the CPU, no GPU plan", check_name=_check_llamacpp),
)
#: The backends in ``--backend`` order; a backend kept outside the package registers from a module named in
#: ``$EGO_ADR_PLUGINS`` (:func:`ego_adr.registry.load_plugins`, run before the first lookup).
REGISTRY: Registry[BackendSpec] = Registry("backend", _BUILTIN, plugins=True)
BACKENDS: dict[str, BackendSpec] = REGISTRY.specs  # name -> spec (the live dict of the registry)


def register(spec: BackendSpec, replace: bool = False) -> BackendSpec:
    """Add a backend (from its own module, which ``EGO_ADR_PLUGINS=module`` imports before any lookup): every
    entry point's ``--backend`` choices and the loaders take it from here. Its name must be new unless ``replace``."""
    return REGISTRY.register(spec, replace)


def names() -> tuple[str, ...]:
    """The registered backends, plugins (``$EGO_ADR_PLUGINS``) included: the ``--backend`` choices."""
    return tuple(REGISTRY.names())


def get(name: str) -> BackendSpec:
    """The spec of backend ``name``; an unknown one is one line listing the choices (exit 2)."""
    return REGISTRY.get(name)


def backend_help() -> str:
    return REGISTRY.help()
